// The create rate-limit buckets on PostgreSQL (docs/api.md §9): one row per client, taken
// under its row lock, so all instances share one bucket per client. The arithmetic is
// token-bucket.ts, the same rule SQLite applies.
import { takeFromBucket } from '../token-bucket.js';
import type { TokenBucketResult } from '../storage.js';
import { namedStatements, statement, type PgConnection } from './connection.js';

/** How often (at most) one instance clears full rate buckets, which need no row. */
const BUCKET_CLEANUP_EVERY_MS = 60_000;

const SQL = namedStatements('bucket', {
  // Creates the row (full: `limit` tokens) if missing, and either way locks it until
  // COMMIT: concurrent takes from any instance queue on this row.
  lock: `
    INSERT INTO rate_buckets (key, tokens, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key
    RETURNING tokens, updated_at`,
  save: 'UPDATE rate_buckets SET tokens = $2, updated_at = $3 WHERE key = $1',
  // A bucket untouched for a whole period is full again: its row can go.
  forgetFull: `
    DELETE FROM rate_buckets WHERE key IN (
      SELECT key FROM rate_buckets WHERE updated_at < $1 LIMIT 1000 FOR UPDATE SKIP LOCKED
    )`,
});

export class PgRateBuckets {
  private lastCleanup = 0;

  constructor(private readonly db: PgConnection) {}

  async take(key: string, limit: number, periodMs: number, now: number): Promise<TokenBucketResult> {
    const result = await this.db.transaction(async (db) => {
      const { rows } = await db.query<{ tokens: number; updated_at: number }>(statement(SQL.lock, [key, limit, now]));
      const { next, result } = takeFromBucket(
        { tokens: rows[0].tokens, updatedAt: rows[0].updated_at },
        limit,
        periodMs,
        now,
      );
      await db.query(statement(SQL.save, [key, next.tokens, next.updatedAt]));
      return { commit: result };
    });
    if (now - this.lastCleanup >= BUCKET_CLEANUP_EVERY_MS) {
      this.lastCleanup = now;
      // Housekeeping only: a failure here must not fail the request that took the token.
      this.db.query(SQL.forgetFull, [now - periodMs]).catch(() => {});
    }
    return result;
  }
}
