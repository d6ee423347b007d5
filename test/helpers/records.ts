// Storage records for tests that drive an engine directly (below HTTP): a fresh address,
// an append and a sender with plausible defaults, each overridable.
import { newAddressId } from '../../src/core/secrets.js';
import type { AddressRecord, AppendInput, SenderRecord } from '../../src/storage/storage.js';

let counter = 0;

/** A live address with a unique id and slug; digests are placeholders (no secret is checked below HTTP). */
export function addressRecord(overrides: Partial<AddressRecord> = {}): AddressRecord {
  counter++;
  return {
    id: newAddressId(),
    slug: `test-${counter}-${Math.random().toString(36).slice(2)}`,
    name: 'Storage test',
    taskId: null,
    email: `test-${counter}@localhost`,
    createdAt: Date.now(),
    expiresAt: null,
    readTokenDigest: 'a'.repeat(64),
    ingressSecretDigest: 'b'.repeat(64),
    previousIngressDigest: null,
    previousIngressUntil: null,
    hasSender: false,
    ...overrides,
  };
}

/** An append of a message.received event to `addressId`, created now. */
export function appendInput(addressId: string, overrides: Partial<AppendInput> = {}): AppendInput {
  return {
    addressId,
    type: 'message.received',
    source: 'https',
    dataJson: '{}',
    metadataJson: null,
    dedupeKey: null,
    keyScope: 'http',
    createdAt: Date.now(),
    ...overrides,
  };
}

/** A GitHub sender of `addressId`; its secrets are a placeholder (storage never opens them). */
export function senderRecord(addressId: string, overrides: Partial<SenderRecord> = {}): SenderRecord {
  return {
    addressId,
    provider: 'github',
    enforce: true,
    toleranceSeconds: 300,
    secretCount: 1,
    sealedSecrets: 'sealed:abc',
    sealedVerifyToken: null,
    optionsJson: null,
    updatedAt: Date.now(),
    ...overrides,
  };
}
