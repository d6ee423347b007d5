// Fixed limits of the specification (§8) and the contract; configurable ones live in Config.

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
/** Idempotency keys: 1–255 visible ASCII characters (docs/api.md §3). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** The longest grace period of a rotated inbox secret (a day). */
export const GRACE_MAX_SECONDS = 86_400;
/** Seconds a client refused a long-poll or stream slot is asked to wait (a held poll lasts at most 25 s). */
export const WAITER_RETRY_AFTER_SECONDS = 5;
