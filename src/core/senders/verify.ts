// What several providers' schemes share: HMAC over the exact bytes against any of the
// secrets in constant time, and the provider's names (event type, delivery id) taken from
// hostile headers only when they look like what the provider sends.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Whether `presented` (the signature's bytes) is HMAC(`algorithm`, secret, data) for any secret. */
export function hmacMatchesAny(
  secrets: readonly string[],
  data: Buffer | string,
  presented: Buffer,
  algorithm: 'sha256' | 'sha1' = 'sha256',
): boolean {
  let matched = false;
  // Every secret is tried, so the time does not tell which one (or whether any) matched.
  for (const secret of secrets) {
    const expected = createHmac(algorithm, secret).update(data).digest();
    if (expected.length === presented.length && timingSafeEqual(expected, presented)) matched = true;
  }
  return matched;
}

/** Hex or base64 text as bytes, or undefined when it is not that encoding. */
export function decodeSignature(text: string, encoding: 'hex' | 'base64'): Buffer | undefined {
  const trimmed = text.trim();
  if (encoding === 'hex') return /^(?:[0-9a-fA-F]{2})+$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : undefined;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return undefined;
  return Buffer.from(trimmed, 'base64');
}

/** A provider's event name as a part of an event type: letters, digits, `_ . : -`, at most 100. */
export function eventName(value: string | undefined): string | undefined {
  return value !== undefined && /^[A-Za-z0-9_.:-]{1,100}$/.test(value) ? value : undefined;
}

/** A provider's delivery id as an idempotency key: 1–200 visible ASCII characters (docs/api.md §3). */
export function deliveryId(value: string | undefined): string | undefined {
  return value !== undefined && /^[\x21-\x7e]{1,200}$/.test(value) ? value : undefined;
}
