// The create rate-limit buckets on SQLite (docs/api.md §9), one row per client, written on
// the writer thread's connection. The arithmetic is token-bucket.ts, as on PostgreSQL.
import type Database from 'better-sqlite3';
import { takeFromBucket } from '../token-bucket.js';
import type { TokenBucketResult } from '../storage.js';

export class RateBucketWrites {
  private readonly sql;

  constructor(private readonly db: Database.Database) {
    this.sql = {
      bucket: db.prepare<[string], { tokens: number; updated_at: number }>(
        'SELECT tokens, updated_at FROM rate_buckets WHERE key = ?',
      ),
      save: db.prepare(
        `INSERT INTO rate_buckets (key, tokens, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at`,
      ),
      // A bucket untouched for a whole period is full again: its row can go.
      forgetFull: db.prepare('DELETE FROM rate_buckets WHERE updated_at < ?'),
    };
  }

  take(key: string, limit: number, periodMs: number, now: number): TokenBucketResult {
    return this.db.transaction(() => {
      const row = this.sql.bucket.get(key);
      const { next, result } = takeFromBucket(
        row ? { tokens: row.tokens, updatedAt: row.updated_at } : null,
        limit,
        periodMs,
        now,
      );
      this.sql.save.run(key, next.tokens, next.updatedAt);
      this.sql.forgetFull.run(now - periodMs);
      return result;
    })();
  }
}
