// What every provider scheme does the same way (docs/api.md §3.2): HMACs over the exact body
// bytes compared in constant time against any of the address's secrets, signed timestamps
// held to the tolerance, JSON read without ever throwing, and the type, key and handshake
// values a sender chooses bounded before they leave this module.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { IDEMPOTENCY_KEY_PATTERN } from '../../limits.js';
import type {
  ProviderEventFields,
  SenderRequest,
  SenderSettings,
  SenderVerdict,
  VerificationFailure,
} from '../provider.js';

export const NOT_ALLOWED: SenderVerdict = { kind: 'not_allowed' };

/** Whether a request is a read (GET or HEAD): the inbox answers one only as a provider's handshake. */
export function isRead(request: SenderRequest): boolean {
  return request.method === 'GET' || request.method === 'HEAD';
}

export function verified(fields: ProviderEventFields): SenderVerdict {
  return { kind: 'event', verified: true, ...fields };
}

export function unverified(reason: VerificationFailure, fields: ProviderEventFields): SenderVerdict {
  return { kind: 'event', verified: false, reason, ...fields };
}

/** A header's value, or undefined when absent or empty. */
export function header(request: SenderRequest, name: string): string | undefined {
  const value = request.headers[name];
  return value === undefined || value === '' ? undefined : value;
}

export function hmac(algorithm: 'sha1' | 'sha256', key: string | Buffer, ...parts: (string | Buffer)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * Whether two byte strings are equal, in time independent of their content. A length
 * difference answers at once: the expected length is the digest's, fixed and public.
 */
export function sameBytes(provided: Buffer, expected: Buffer): boolean {
  return provided.length === expected.length && timingSafeEqual(provided, expected);
}

/**
 * Whether two texts (a verify token, a Graph clientState) are equal, without the time
 * telling their length or where they differ: compared as SHA-256 digests.
 */
export function sameText(provided: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(provided), digest(expected));
}

/**
 * The index of the first secret whose signature (or one of its signatures, when the scheme
 * allows several forms) is among those provided, or -1. Every secret and every provided
 * signature is compared (no early exit on a match).
 */
export function matchingSecret(
  secrets: readonly string[],
  provided: readonly Buffer[],
  sign: (secret: string) => Buffer | readonly Buffer[] | undefined,
): number {
  let found = -1;
  secrets.forEach((secret, index) => {
    const signed = sign(secret);
    if (signed === undefined) return;
    let match = false;
    for (const expected of Buffer.isBuffer(signed) ? [signed] : signed) {
      for (const signature of provided) match = sameBytes(signature, expected) || match;
    }
    if (match && found === -1) found = index;
  });
  return found;
}

// Longest signature text decoded: a SHA-256 digest is 64 hex or 44 base64 characters.
const MAX_SIGNATURE_TEXT = 256;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Hex text as bytes, or undefined when it is not hex (Node's decoder would stop silently). */
export function decodeHex(text: string): Buffer | undefined {
  return text.length <= MAX_SIGNATURE_TEXT && HEX.test(text) ? Buffer.from(text, 'hex') : undefined;
}

/** Padded base64 text as bytes, or undefined when it is not base64 (Node's decoder skips junk). */
export function decodeBase64(text: string): Buffer | undefined {
  return text.length > 0 && text.length <= MAX_SIGNATURE_TEXT && BASE64.test(text)
    ? Buffer.from(text, 'base64')
    : undefined;
}

/** `prefix` + hex, decoded (e.g. `sha256=…`, `v0=…`), or undefined when the text has another shape. */
export function prefixedHex(text: string | undefined, prefix: string): Buffer | undefined {
  return text?.startsWith(prefix) ? decodeHex(text.slice(prefix.length)) : undefined;
}

/** Unix seconds written as digits only, or undefined. */
export function unixSeconds(text: string | undefined): number | undefined {
  return text !== undefined && /^\d{1,12}$/.test(text) ? Number(text) : undefined;
}

/** Whether a signed time (seconds) lies within the tolerance of now, before or after. */
export function isFresh(timestampSeconds: number, nowMs: number, toleranceSeconds: number): boolean {
  return Number.isFinite(timestampSeconds) && Math.abs(nowMs / 1000 - timestampSeconds) <= toleranceSeconds;
}

/** The body parsed as JSON, or undefined when it is not JSON (never throws). */
export function parseJson(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    // Not JSON, or nested past the engine's own limit: an event without provider fields.
    return undefined;
  }
}

/** A member of a JSON object (not inherited, not of an array), or undefined. */
export function member(value: unknown, name: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return Object.hasOwn(value, name) ? (value as Record<string, unknown>)[name] : undefined;
}

/** The first element of a JSON array, or undefined. */
export function first(value: unknown): unknown {
  return Array.isArray(value) ? (value[0] as unknown) : undefined;
}

export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

// Event types are names shown in logs and terminals: as raw capture's `?type=` (docs/api.md §3.1).
const MAX_TYPE_LENGTH = 200;
const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * The provider's event type, its parts joined with dots (`stripe` + `charge.succeeded`), or
 * undefined when a part is missing, not a string, or the name would be too long or unprintable.
 */
export function eventType(...parts: unknown[]): string | undefined {
  if (!parts.every((part): part is string => typeof part === 'string' && part !== '')) return undefined;
  const type = parts.join('.');
  return type.length <= MAX_TYPE_LENGTH && !CONTROL_CHARACTER.test(type) ? type : undefined;
}

/** A delivery id usable as the event's idempotency key (docs/api.md §3), or undefined. */
export function deliveryKey(value: unknown): string | undefined {
  return typeof value === 'string' && IDEMPOTENCY_KEY_PATTERN.test(value) ? value : undefined;
}

// A handshake value is echoed back to whoever sent it: only a bounded, printable one is.
const MAX_REFLECTED_LENGTH = 1024;

/** A challenge or token that may be echoed, or undefined. */
export function reflectable(value: unknown): string | undefined {
  return typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_REFLECTED_LENGTH &&
    !CONTROL_CHARACTER.test(value)
    ? value
    : undefined;
}

export function textHandshake(body: string): SenderVerdict {
  return { kind: 'handshake', status: 200, contentType: 'text/plain; charset=utf-8', body };
}

export function jsonHandshake(body: unknown): SenderVerdict {
  return { kind: 'handshake', status: 200, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}

/**
 * A handshake that verified but carries no value that may be echoed (absent, too long or
 * unprintable): refused with the Error shape, nothing stored.
 */
export function handshakeRefused(what: string): SenderVerdict {
  return {
    kind: 'handshake',
    status: 400,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify({
      error: {
        code: 'invalid_request',
        message: `The ${what} must be 1–${MAX_REFLECTED_LENGTH} characters without control characters.`,
      },
    }),
  };
}

/**
 * The `v0` scheme Slack and Zoom share: `v0=` + hex HMAC-SHA256(secret, `v0:{timestamp}:{body}`),
 * the timestamp (Unix seconds, in its own header) held to the tolerance. The secret that
 * verified, or why none did.
 */
export function verifyV0(
  request: SenderRequest,
  settings: SenderSettings,
  nowMs: number,
  headers: { signature: string; timestamp: string },
): { secret: string } | { failure: VerificationFailure } {
  const signature = prefixedHex(header(request, headers.signature), 'v0=');
  const timestamp = unixSeconds(header(request, headers.timestamp));
  if (!signature || timestamp === undefined) return { failure: 'missing_signature' };
  const base = `v0:${timestamp}:`;
  const index = matchingSecret(settings.secrets, [signature], (secret) => hmac('sha256', secret, base, request.body));
  if (index < 0) return { failure: 'mismatch' };
  if (!isFresh(timestamp, nowMs, settings.toleranceSeconds)) return { failure: 'stale_timestamp' };
  return { secret: settings.secrets[index] };
}
