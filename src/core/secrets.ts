// Identifiers and secrets (docs/api.md §1). Ids carry 128 random bits, secrets 256, all from
// the CSPRNG. Secrets are kept only as SHA-256 digests and compared in constant time, so a
// copy of the database grants nothing and timing reveals nothing. Event ids are minted by
// the storage engine that stores the event (storage/event-ids.ts).
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { PRODUCT } from '../config.js';

/** Every kind of secret this service issues: `${PRODUCT}_${kind}_…`. A new kind goes here, so logs scrub it too. */
export const SECRET_KINDS = ['read', 'ingress', 'view', 'callback'] as const;
export const READ_TOKEN_PREFIX = `${PRODUCT}_read_`;
export const INGRESS_SECRET_PREFIX = `${PRODUCT}_ingress_`;
export const VIEW_TOKEN_PREFIX = `${PRODUCT}_view_`;
export const CALLBACK_SECRET_PREFIX = `${PRODUCT}_callback_`;

/** A character as written, or percent-encoded (a URL may encode any character of a secret). */
const literalOrEncoded = (c: string) =>
  `(?:${c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}|%${c.charCodeAt(0).toString(16).padStart(2, '0')})`;
const encodedWord = (word: string) => [...word].map(literalOrEncoded).join('');
const SECRET_BODY = '[A-Za-z0-9_-]';

/**
 * Text shaped like a secret of this service: a known kind with any body, or any
 * `${PRODUCT}_word_` followed by 32+ random-looking characters (a kind added later).
 */
export const SECRET_SHAPE = new RegExp(
  `${PRODUCT}_(?:(?:${SECRET_KINDS.join('|')})_${SECRET_BODY}*|[a-z]+_${SECRET_BODY}{32,})`,
  'g',
);
/** The same, with any of its characters percent-encoded (`%72oost_read_…`); case-insensitive hex. */
export const ENCODED_SECRET_SHAPE = new RegExp(
  `${encodedWord(PRODUCT)}${literalOrEncoded('_')}(?:(?:${SECRET_KINDS.map(encodedWord).join('|')})${literalOrEncoded('_')}(?:${SECRET_BODY}|%[0-9A-Fa-f]{2})*|(?:[a-z]|%[67][0-9a-fA-F])+${literalOrEncoded('_')}(?:${SECRET_BODY}|%[0-9A-Fa-f]{2}){32,})`,
  'gi',
);

const random = (bytes: number) => randomBytes(bytes).toString('base64url');

export const newAddressId = () => `addr_${random(16)}`;
export const newReadToken = () => `${READ_TOKEN_PREFIX}${random(32)}`;
export const newIngressSecret = () => `${INGRESS_SECRET_PREFIX}${random(32)}`;
export const newViewToken = () => `${VIEW_TOKEN_PREFIX}${random(32)}`;
export const newViewTokenId = () => `vt_${random(16)}`;
export const newCallbackId = () => `cb_${random(16)}`;

/**
 * The secret of a callback URL (docs/api.md §3.6): an HMAC of its id keyed by the read
 * token, so that the read token can show the URL again while only its digest is stored;
 * a view token cannot derive it, and a URL reveals nothing of the token.
 */
export const callbackSecret = (readToken: string, callbackId: string) =>
  `${CALLBACK_SECRET_PREFIX}${createHmac('sha256', readToken).update(callbackId).digest('base64url')}`;

/** The only form in which a secret is stored: hex SHA-256. */
export function digestSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/**
 * Constant-time check of a presented secret against a stored digest: the two hex digests
 * compared as bytes. It runs on every inbox delivery and every bearer request, and crypto.hash
 * gives hex for less than it gives a Buffer (BENCHMARKS.md, "instructions a request,
 * counted").
 */
export function secretMatches(presented: string, storedDigest: string): boolean {
  const a = Buffer.from(digestSecret(presented), 'latin1');
  const b = Buffer.from(storedDigest, 'latin1');
  return a.length === b.length && timingSafeEqual(a, b);
}

const SLUG_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** 10 characters of a 36-letter alphabet: ~51.7 bits, above the contract's 40. */
function randomSlugPart(): string {
  // Rejection sampling keeps every letter equally likely (256 is not a multiple of 36).
  let out = '';
  while (out.length < 10) {
    for (const byte of randomBytes(16)) {
      if (byte < 252 && out.length < 10) out += SLUG_ALPHABET[byte % 36];
    }
  }
  return out;
}

/** Slug per docs/api.md §1: ^[a-z0-9]+(-[a-z0-9]+)*$, ≤ 40 chars, led by the slugified name. */
export function newSlug(name?: string): string {
  const lead = (name ?? '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 24)
    .replace(/-+$/, '');
  return lead ? `${lead}-${randomSlugPart()}` : randomSlugPart();
}
