// Idempotency keys as senders send them (docs/api.md §3.4): the Idempotency-Key header and
// the body's dedupe_key are checked here, and a key too long for the unique index is
// stored as its digest.
import { hash } from 'node:crypto';
import { errors } from './errors.js';
import { DEDUPE_KEY_PATTERN, IDEMPOTENCY_KEY_MAX_LENGTH, IDEMPOTENCY_KEY_PATTERN } from './limits.js';

/**
 * The longest key stored as sent, in UTF-8 bytes. PostgreSQL's unique index takes entries of
 * at most about 2.7 kB, which 1,024 characters of non-ASCII text can exceed; any header key
 * (ASCII) fits.
 */
const STORED_KEY_MAX_BYTES = 1024;

/** The effective key of a delivery (header, else body), or undefined; throws 400 on a bad one. */
export function effectiveIdempotencyKey(header: string | undefined, body: string | undefined): string | undefined {
  if (header !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(header)) {
    throw errors.invalidRequest({
      message: `The Idempotency-Key header must be 1–${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters or spaces.`,
    });
  }
  if (body !== undefined && !DEDUPE_KEY_PATTERN.test(body)) {
    throw errors.invalidRequest({
      message: `dedupe_key must be 1–${IDEMPOTENCY_KEY_MAX_LENGTH} characters of Unicode text without NUL (\\u0000) or lone surrogates.`,
    });
  }
  if (header !== undefined && body !== undefined && header !== body) {
    throw errors.idempotencyKeyMismatch();
  }
  return header ?? body;
}

/** The form a key is stored and shown in: as sent, or `sha256:` + the hex digest of its UTF-8 when too long. */
export function storedIdempotencyKey(key: string): string {
  return Buffer.byteLength(key, 'utf8') <= STORED_KEY_MAX_BYTES ? key : `sha256:${hash('sha256', key, 'hex')}`;
}
