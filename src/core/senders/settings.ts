// An address's sender between the wire and storage (docs/api.md §3.2): checked and sealed on
// the way in, opened for the inbox, shown without a secret on the way out.
import type { Sender, PutSender } from '../../contract/sender-schemas.js';
import type { SenderRecord } from '../../storage/storage.js';
import { errors } from '../errors.js';
import { isoTime } from '../iso-time.js';
import { SENDER_TOLERANCE_DEFAULT_SECONDS } from '../limits.js';
import type { SecretBox } from '../secret-box.js';
import type { HmacSettings, ProviderName, SenderProvider, SenderSettings } from './provider.js';
import { senderProvider } from './registry.js';

/** A sender ready to verify deliveries: its provider, its settings with the secrets opened. */
export interface LoadedSender {
  provider: SenderProvider;
  settings: SenderSettings;
  enforce: boolean;
}

// What a sealed value is bound to: it opens only for this address and this field.
const secretsContext = (addressId: string) => `sender-secrets:${addressId}`;
const verifyTokenContext = (addressId: string) => `sender-verify-token:${addressId}`;

/** Checks a PUT beyond its schema, and seals its secrets with the server key. */
export function sealSender(addressId: string, input: PutSender, box: SecretBox, now: number): SenderRecord {
  const { provider } = input;
  if (input.verify_token !== undefined && provider !== 'meta')
    throw errors.invalidRequest({ message: 'verify_token is only for the provider meta.' });
  if (provider === 'meta' && input.verify_token === undefined)
    throw errors.invalidRequest({
      message: 'The provider meta needs verify_token: the token its subscription handshake presents.',
    });
  const hmacFields = (['header', 'encoding', 'prefix'] as const).filter((field) => input[field] !== undefined);
  if (provider !== 'hmac_sha256' && hmacFields.length > 0)
    throw errors.invalidRequest({ message: `${hmacFields.join(', ')}: only for the provider hmac_sha256.` });
  let options: HmacSettings | null = null;
  if (provider === 'hmac_sha256') {
    if (input.header === undefined)
      throw errors.invalidRequest({
        message: 'The provider hmac_sha256 needs header: the name of the header that carries the signature.',
      });
    options = { header: input.header.toLowerCase(), encoding: input.encoding ?? 'hex', prefix: input.prefix ?? '' };
  }
  return {
    addressId,
    provider,
    enforce: input.enforce ?? true,
    toleranceSeconds: input.tolerance_seconds ?? SENDER_TOLERANCE_DEFAULT_SECONDS,
    secretCount: input.secrets.length,
    sealedSecrets: box.seal(JSON.stringify(input.secrets), secretsContext(addressId)),
    sealedVerifyToken:
      input.verify_token === undefined ? null : box.seal(input.verify_token, verifyTokenContext(addressId)),
    optionsJson: options === null ? null : JSON.stringify(options),
    updatedAt: now,
  };
}

/**
 * The sender as the inbox uses it. Throws SecretKeyMismatch (secret-box.ts) when the server
 * key cannot open its secrets, and undefined when this version knows no provider of its name.
 */
export function openSender(record: SenderRecord, box: SecretBox): LoadedSender | undefined {
  const provider = senderProvider(record.provider);
  if (!provider) return undefined;
  const secrets = JSON.parse(box.open(record.sealedSecrets, secretsContext(record.addressId))) as string[];
  const settings: SenderSettings = { secrets, toleranceSeconds: record.toleranceSeconds };
  if (record.sealedVerifyToken !== null)
    settings.verifyToken = box.open(record.sealedVerifyToken, verifyTokenContext(record.addressId));
  if (record.optionsJson !== null) settings.hmac = JSON.parse(record.optionsJson) as HmacSettings;
  return { provider, settings, enforce: record.enforce };
}

/** The sender as GET shows it: never a secret, only how many. */
export function toWireSender(record: SenderRecord): Sender {
  const sender: Sender = {
    provider: record.provider as ProviderName,
    enforce: record.enforce,
    tolerance_seconds: record.toleranceSeconds,
    secrets: record.secretCount,
    updated_at: isoTime(record.updatedAt),
  };
  if (record.optionsJson !== null) Object.assign(sender, JSON.parse(record.optionsJson) as HmacSettings);
  return sender;
}
