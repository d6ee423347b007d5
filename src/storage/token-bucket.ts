// The token bucket behind the provisioning rate limit (docs/api.md §9): `limit` tokens,
// refilled evenly over `periodMs`. Pure arithmetic, so that both storage engines apply
// the same rule to the state they hold (SQLite: one process; PostgreSQL: all instances);
// the SMTP listener's per-IP limit applies it to buckets it keeps in memory.
import type { TokenBucketResult } from './storage.js';

export interface BucketState {
  tokens: number;
  updatedAt: number;
}

export function takeFromBucket(
  state: BucketState | null,
  limit: number,
  periodMs: number,
  now: number,
): { next: BucketState; result: TokenBucketResult } {
  const msPerToken = periodMs / limit;
  const elapsed = state ? Math.max(0, now - state.updatedAt) : 0;
  const available = state ? Math.min(limit, state.tokens + elapsed / msPerToken) : limit;
  const allowed = available >= 1;
  const tokens = allowed ? available - 1 : available;
  return {
    next: { tokens, updatedAt: now },
    result: {
      allowed,
      remaining: Math.floor(tokens),
      resetMs: Math.ceil((limit - tokens) * msPerToken),
      retryAfterMs: allowed ? 0 : Math.ceil((1 - tokens) * msPerToken),
    },
  };
}
