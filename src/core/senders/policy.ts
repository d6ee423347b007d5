// What an inbox with a sender does with one request (docs/api.md §3.2), decided whole from
// the provider's verdict before anything is answered or stored: answer a handshake (and
// store nothing), refuse, or store one event under a key a replay cannot change. Pure: the
// service carries the plan out, and every transport gets the same answer.
import { hash } from 'node:crypto';
import { errors, type ServiceError } from '../errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../limits.js';
import type { ProviderName, SenderRequest, SenderVerdict, VerificationFailure } from './provider.js';

/** What a stored event's `data.verification` says. */
export type Verification =
  { provider: ProviderName; verified: true } | { provider: ProviderName; verified: false; reason: VerificationFailure };

/** The sender's settings the policy reads. */
export interface SenderPolicy {
  provider: ProviderName;
  enforce: boolean;
}

/** How a request is counted in roost_sender_deliveries_total. */
export type SenderOutcomeLabel = 'handshake' | 'not_allowed' | 'rejected' | 'verified' | 'unverified';

export type SenderPlan =
  /** Answered as given; nothing is stored, whatever body or query rides with it. */
  | { kind: 'handshake'; outcome: 'handshake'; status: number; contentType: string; body: string }
  /** Refused with this error; nothing is stored. */
  | { kind: 'refused'; outcome: 'not_allowed' | 'rejected'; error: ServiceError }
  /** One event: the provider's type (undefined: the inbox's default), under `key`, of `body`. */
  | {
      kind: 'store';
      outcome: 'verified' | 'unverified';
      type: string | undefined;
      key: string | undefined;
      body: Buffer;
      verification: Verification;
    };

const UNVERIFIED_PREFIX = 'unverified:';
const REPLAY_PREFIX = 'sha256:';

/**
 * The key an unverified delivery is stored under: apart from the verified ones, so that a
 * forged delivery naming a real delivery id cannot make the real one a duplicate.
 */
export function unverifiedKey(key: string): string {
  const prefixed = `${UNVERIFIED_PREFIX}${key}`;
  return prefixed.length <= 255 ? prefixed : `${UNVERIFIED_PREFIX}${hash('sha256', key, 'hex')}`;
}

/**
 * The key of a verified delivery whose delivery id the signature does not cover (or that has
 * none): a digest of the signed body, which a replay must repeat byte for byte and the
 * provider's own retries repeat too.
 */
export function replayKey(body: Buffer): string {
  return `${REPLAY_PREFIX}${hash('sha256', body, 'hex')}`;
}

function usableKey(key: string | undefined): string | undefined {
  return key !== undefined && IDEMPOTENCY_KEY_PATTERN.test(key) ? key : undefined;
}

/** The plan for one request to an inbox with this sender, given its provider's verdict. */
export function planSenderRequest(sender: SenderPolicy, request: SenderRequest, verdict: SenderVerdict): SenderPlan {
  const { provider } = sender;
  switch (verdict.kind) {
    case 'handshake': {
      const { status, contentType, body } = verdict;
      return { kind: 'handshake', outcome: 'handshake', status, contentType, body };
    }
    case 'not_allowed':
      return {
        kind: 'refused',
        outcome: 'not_allowed',
        error: errors.inboxTakesPost({ provider }),
      };
  }
  const body = verdict.storedBody ?? request.body;
  if (verdict.verified) {
    const signedKey = verdict.keySigned ? usableKey(verdict.idempotencyKey) : undefined;
    return {
      kind: 'store',
      outcome: 'verified',
      type: verdict.type,
      key: signedKey ?? replayKey(body),
      body,
      verification: { provider, verified: true },
    };
  }
  // A read is only ever a handshake: one that failed (a wrong Meta verify token) is refused
  // whatever `enforce` says, so that no GET is stored as an event.
  if (sender.enforce || request.method === 'GET' || request.method === 'HEAD')
    return { kind: 'refused', outcome: 'rejected', error: errors.signatureInvalid({ reason: verdict.reason }) };
  const key = usableKey(verdict.idempotencyKey) ?? request.headers['idempotency-key'];
  return {
    kind: 'store',
    outcome: 'unverified',
    type: verdict.type,
    key: key === undefined ? undefined : unverifiedKey(key),
    body,
    verification: { provider, verified: false, reason: verdict.reason },
  };
}
