// Fixed limits of the contract (docs/api.md §9.1); configurable ones live in Config.

/** Events one return address may hold (docs/api.md §9.1). */
export const EVENT_CAPACITY = 1000;
/** Events are purged this long after created_at, acknowledged or not (docs/api.md §9.1). */
export const RETENTION_MS = 30 * 24 * 3600 * 1000;
/** Page size bounds and default (docs/api.md §4). */
export const LIMIT_MIN = 1;
export const LIMIT_MAX = 100;
export const LIMIT_DEFAULT = 50;
/** Long-poll bounds in seconds (docs/api.md §4). */
export const WAIT_MAX_SECONDS = 25;
/** Lifetime bounds in seconds (docs/api.md §2.2). */
export const TTL_MIN_SECONDS = 60;
export const TTL_MAX_SECONDS = 31_536_000;
/** Deepest JSON nesting accepted in `data` (docs/api.md §3). */
export const MAX_JSON_DEPTH = 64;
/** The longest idempotency key, header or body, in characters (docs/api.md §3.4). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 1024;
/** An Idempotency-Key header: what a header value carries, visible ASCII and spaces (docs/api.md §3.4). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7e]{1,1024}$/;
/**
 * A dedupe_key: any text without NUL (which PostgreSQL's text cannot hold) or a lone
 * surrogate (which UTF-8 cannot), counted in code points as JSON Schema's maxLength counts
 * (docs/api.md §3.4). The same source, with the `u` flag, is the schema's pattern.
 */
export const DEDUPE_KEY_SOURCE = '^[^\\u0000\\uD800-\\uDFFF]{1,1024}$';
export const DEDUPE_KEY_PATTERN = new RegExp(DEDUPE_KEY_SOURCE, 'u');
/** The longest grace period of a rotated inbox secret (a day). */
export const GRACE_MAX_SECONDS = 86_400;
/** Seconds a client refused a long-poll or stream slot is asked to wait (a held poll lasts at most 25 s). */
export const WAITER_RETRY_AFTER_SECONDS = 5;
/** A sender's secrets (docs/api.md §3.2): 1–3, newest first, each at most this long. */
export const SENDER_SECRETS_MAX = 3;
export const SENDER_SECRET_MAX_LENGTH = 512;
/** How far a signed timestamp may be from now: 300 s unless set, at most a day. */
export const SENDER_TOLERANCE_DEFAULT_SECONDS = 300;
export const SENDER_TOLERANCE_MAX_SECONDS = 86_400;
/** hmac_sha256: the signature header's name and its prefix. */
export const SENDER_HEADER_MAX_LENGTH = 100;
export const SENDER_PREFIX_MAX_LENGTH = 50;
/** Bounds of a callback's fields (docs/api.md §3.6). */
export const CALLBACK_LIMITS = {
  key: 200,
  label: 100,
  question: 500,
  options: 10,
  option: 100,
  comment: 2000,
  /** complete_when's pattern, as JSON text. */
  pattern: 4096,
  patternDepth: 16,
  /** Callbacks one list answers with at most. */
  list: 1000,
} as const;
