// The embedded engine: one SQLite file through better-sqlite3, for one process.
// WAL with synchronous=FULL, so a 202 survives power loss. Appends that arrive together
// share one transaction and one fsync (group commit): each caller's promise resolves only
// after the COMMIT that holds its event, so "202 means durable" still holds per request.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { takeFromBucket } from '../core/token-bucket.js';
import { EVENT_COLUMNS, insertedEvent, toAddress, toEvent, type AddressRow, type EventRow } from './rows.js';
import { SQLITE_MIGRATIONS } from './sqlite-migrations.js';
import type {
  AddressRecord, AppendInput, AppendResult, EventPageRecord, EventRecord, PurgeResult, Storage, TokenBucketResult,
} from './storage.js';

/** A row of the page query in raw mode: the columns of EVENT_COLUMNS, in that order. */
type EventTuple = [string, string, number, string, string, string, string | null, string | null, number, number | null];

const pageRowToEvent = (row: EventTuple): EventRecord => ({
  id: row[0],
  addressId: row[1],
  sequence: row[2],
  type: row[3],
  source: row[4],
  dataJson: row[5],
  metadataJson: row[6],
  dedupeKey: row[7],
  createdAt: row[8],
  acknowledgedAt: row[9],
});

interface PendingAppend {
  input: AppendInput;
  capacity: number;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

const LIVE = '(expires_at IS NULL OR expires_at > @now)';

/** Address records kept in memory (about 1 KiB each); the oldest read goes first. */
const ADDRESS_CACHE_SIZE = 20_000;

export interface SqliteOptions {
  /** PRAGMA synchronous; FULL unless a benchmark asks otherwise. */
  synchronous?: 'FULL' | 'NORMAL';
  /** Turn group commit off (one transaction per append) for comparison in benchmarks. */
  groupCommit?: boolean;
}

export class SqliteStorage implements Storage {
  readonly engine = 'sqlite' as const;
  readonly description: string;
  private readonly db: Database.Database;
  private pending: PendingAppend[] = [];
  private closed = false;
  /**
   * Group-commit counters, read by the benchmarks: appends / commits is the mean batch, and
   * busyMs the time the event loop spent blocked in flushes (statements, COMMIT and fsync).
   */
  readonly commitStats = { commits: 0, appends: 0, largestBatch: 0, busyMs: 0 };
  private readonly groupCommit: boolean;
  /**
   * Addresses by id, for the inbox and bearer checks that begin almost every request (a
   * lookup through SQLite costs ~10 µs, a read transaction included). A record never
   * changes once written (last_sequence is not part of it) and this process is the only
   * writer of the file, so the cache only has to forget deleted and expired addresses;
   * expiry itself is checked against `now` on every hit, as the SQL does.
   */
  private readonly addressCache = new Map<string, AddressRecord>();
  private readonly appendOne: Database.Transaction<(input: AppendInput, capacity: number) => AppendResult>;

  private readonly sql;

  constructor(path: string, options: SqliteOptions = {}) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.description = `sqlite:${path}`;
    this.groupCommit = options.groupCommit ?? true;
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    this.migrate();
    const db = this.db;
    this.sql = {
      insertAddress: db.prepare(
        `INSERT INTO addresses (id, slug, name, task_id, email, created_at, expires_at, read_token_digest, ingress_secret_digest)
         VALUES (@id, @slug, @name, @taskId, @email, @createdAt, @expiresAt, @readTokenDigest, @ingressSecretDigest)`,
      ),
      addressById: db.prepare<{ id: string; now: number }, AddressRow>(`SELECT * FROM addresses WHERE id = @id AND ${LIVE}`),
      addressBySlug: db.prepare<{ slug: string; now: number }, AddressRow>(`SELECT * FROM addresses WHERE slug = @slug AND ${LIVE}`),
      deleteEventsOf: db.prepare('DELETE FROM events WHERE address_id = ?'),
      deleteAddress: db.prepare('DELETE FROM addresses WHERE id = ?'),
      // The address (if live) with the bounds of its queue: `floor` is the highest sequence
      // of an event that is gone (migration 2), `low`/`high` those of the events held. Each
      // MIN/MAX is one seek in events_by_sequence.
      appendState: db.prepare<{ id: string; now: number }, { floor: number; low: number | null; high: number | null }>(
        `SELECT last_sequence AS floor,
                (SELECT MIN(sequence) FROM events WHERE address_id = @id) AS low,
                (SELECT MAX(sequence) FROM events WHERE address_id = @id) AS high
         FROM addresses WHERE id = @id AND ${LIVE}`,
      ),
      eventByKey: db.prepare<[string, string], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE address_id = ? AND dedupe_key = ?`),
      countEvents: db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM events WHERE address_id = ?'),
      oldestAcknowledged: db.prepare<[string], { id: string }>(
        'SELECT id FROM events WHERE address_id = ? AND acknowledged_at IS NOT NULL ORDER BY sequence LIMIT 1',
      ),
      anyAcknowledged: db.prepare<[string], { one: number }>(
        'SELECT 1 AS one FROM events WHERE address_id = ? AND acknowledged_at IS NOT NULL LIMIT 1',
      ),
      deleteEvent: db.prepare('DELETE FROM events WHERE id = ?'),
      insertEvent: db.prepare(
        `INSERT INTO events (${EVENT_COLUMNS})
         VALUES (@id, @addressId, @sequence, @type, @source, @dataJson, @metadataJson, @dedupeKey, @createdAt, NULL)`,
      ),
      // Rows as arrays, in EVENT_COLUMNS order: a page is up to 101 rows, and an object
      // per row made better-sqlite3 ~35% slower on this query (see pageRowToEvent).
      page: db.prepare<[string, number, number], EventTuple>(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE address_id = ? AND sequence > ? ORDER BY sequence LIMIT ?`,
      ).raw(true),
      ack: db.prepare<[number, string, string], EventRow>(
        `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, ?) WHERE id = ? AND address_id = ? RETURNING ${EVENT_COLUMNS}`,
      ),
      ackUpTo: db.prepare('UPDATE events SET acknowledged_at = ? WHERE address_id = ? AND sequence <= ? AND acknowledged_at IS NULL'),
      expired: db.prepare<[number], { id: string }>('SELECT id FROM addresses WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT 500'),
      purgeOld: db.prepare('DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE created_at < ? LIMIT 5000)'),
      bucket: db.prepare<[string], { tokens: number; updated_at: number }>('SELECT tokens, updated_at FROM rate_buckets WHERE key = ?'),
      saveBucket: db.prepare(
        `INSERT INTO rate_buckets (key, tokens, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at`,
      ),
      forgetFullBuckets: db.prepare('DELETE FROM rate_buckets WHERE updated_at < ?'),
    };
    this.appendOne = db.transaction((input: AppendInput, capacity: number) => this.appendTransaction(input, capacity));
  }

  private migrate(): void {
    this.db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    const applied = new Set(
      this.db.prepare<[], { version: number }>('SELECT version FROM schema_migrations').all().map((r) => r.version),
    );
    const apply = this.db.transaction((m: (typeof SQLITE_MIGRATIONS)[number]) => {
      this.db.exec(m.sql);
      this.db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    });
    for (const migration of SQLITE_MIGRATIONS) if (!applied.has(migration.version)) apply.immediate(migration);
  }

  async insertAddress(address: AddressRecord): Promise<'ok' | 'slug_taken'> {
    try {
      this.sql.insertAddress.run(address);
      return 'ok';
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' && /slug/.test(String(error))) return 'slug_taken';
      throw error;
    }
  }

  async getAddress(id: string, now: number): Promise<AddressRecord | null> {
    const cached = this.addressCache.get(id);
    if (cached) return cached.expiresAt === null || cached.expiresAt > now ? cached : null;
    const row = this.sql.addressById.get({ id, now });
    if (!row) return null;
    const record = Object.freeze(toAddress(row));
    if (this.addressCache.size >= ADDRESS_CACHE_SIZE) this.addressCache.delete(this.addressCache.keys().next().value!);
    this.addressCache.set(id, record);
    return record;
  }

  async getAddressBySlug(slug: string, now: number): Promise<AddressRecord | null> {
    const row = this.sql.addressBySlug.get({ slug, now });
    return row ? toAddress(row) : null;
  }

  async deleteAddress(id: string): Promise<boolean> {
    this.flush(); // appends queued before the delete land first, then go with it
    this.addressCache.delete(id);
    return this.db.transaction(() => {
      this.sql.deleteEventsOf.run(id);
      return this.sql.deleteAddress.run(id).changes > 0;
    })();
  }

  appendEvent(input: AppendInput, capacity: number): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('storage is closed'));
    return new Promise((resolve, reject) => {
      this.pending.push({ input, capacity, resolve, reject });
      if (!this.groupCommit) this.flush();
      // Everything parsed in this turn of the event loop joins the same transaction.
      else if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Commits every pending append in one transaction (one fsync), then answers each. */
  private flush(): void {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    const outcomes: Array<{ ok: true; result: AppendResult } | { ok: false; error: unknown }> = [];
    // The event loop is blocked from here to the end of the COMMIT (fsync included).
    const startedAt = performance.now();
    try {
      this.db.transaction(() => {
        for (const item of batch) {
          // A nested transaction is a savepoint: one failed append does not sink the rest.
          try {
            outcomes.push({ ok: true, result: this.appendOne.immediate(item.input, item.capacity) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      }).immediate();
    } catch (error) {
      // The COMMIT itself failed: nothing in the batch is durable.
      for (const item of batch) item.reject(error);
      return;
    }
    this.commitStats.busyMs += performance.now() - startedAt;
    this.commitStats.commits++;
    this.commitStats.appends += batch.length;
    if (batch.length > this.commitStats.largestBatch) this.commitStats.largestBatch = batch.length;
    batch.forEach((item, i) => {
      const outcome = outcomes[i];
      if (outcome.ok) item.resolve(outcome.result);
      else item.reject(outcome.error);
    });
  }

  private appendTransaction(input: AppendInput, capacity: number): AppendResult {
    const state = this.sql.appendState.get({ id: input.addressId, now: input.createdAt });
    if (!state) return { status: 'address_not_found' };
    if (input.dedupeKey !== null) {
      const held = this.sql.eventByKey.get(input.addressId, input.dedupeKey);
      if (held) return { status: 'duplicate', event: toEvent(held) };
    }
    // The queue holds at most high - low + 1 events; only when that span reaches the
    // capacity can it be full, and only then is counting (up to 1,000 rows) needed.
    const span = state.high === null ? 0 : state.high - state.low! + 1;
    if (span >= capacity && this.sql.countEvents.get(input.addressId)!.n >= capacity) {
      const oldest = this.sql.oldestAcknowledged.get(input.addressId);
      if (!oldest) return { status: 'queue_full' };
      this.sql.deleteEvent.run(oldest.id);
    }
    // Sequences are never reused: the floor covers events that were removed, the newest of them included.
    const sequence = Math.max(state.high ?? 0, state.floor) + 1;
    this.sql.insertEvent.run({ ...input, id: input.eventId, sequence });
    return { status: 'created', event: insertedEvent(input, sequence) };
  }

  async hasRoom(addressId: string, capacity: number): Promise<boolean> {
    return this.sql.countEvents.get(addressId)!.n < capacity || this.sql.anyAcknowledged.get(addressId) !== undefined;
  }

  async listEvents(addressId: string, after: number, limit: number): Promise<EventPageRecord> {
    const rows = this.sql.page.all(addressId, after, limit + 1) as unknown as EventTuple[];
    const hasMore = rows.length > limit;
    return { events: (hasMore ? rows.slice(0, limit) : rows).map(pageRowToEvent), hasMore };
  }

  async ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const row = this.sql.ack.get(now, eventId, addressId);
    return row ? toEvent(row) : null;
  }

  async ackUpTo(addressId: string, upTo: number, now: number): Promise<number> {
    return this.sql.ackUpTo.run(now, addressId, upTo).changes;
  }

  async purge(now: number, retainAfter: number): Promise<PurgeResult> {
    const expiredAddressIds: string[] = [];
    let eventsPurged = 0;
    for (;;) {
      const batch = this.sql.expired.all(now).map((r) => r.id);
      if (batch.length === 0) break;
      this.db.transaction(() => {
        for (const id of batch) {
          eventsPurged += this.sql.deleteEventsOf.run(id).changes;
          this.sql.deleteAddress.run(id);
          this.addressCache.delete(id);
        }
      })();
      expiredAddressIds.push(...batch);
    }
    // In slices, so that a large purge never holds the writer for long.
    for (let changes = -1; changes !== 0; ) {
      changes = this.sql.purgeOld.run(retainAfter).changes;
      eventsPurged += changes;
    }
    return { expiredAddressIds, eventsPurged };
  }

  async takeToken(key: string, limit: number, periodMs: number, now: number): Promise<TokenBucketResult> {
    return this.db.transaction(() => {
      const row = this.sql.bucket.get(key);
      const { next, result } = takeFromBucket(row ? { tokens: row.tokens, updatedAt: row.updated_at } : null, limit, periodMs, now);
      this.sql.saveBucket.run(key, next.tokens, next.updatedAt);
      // A bucket untouched for a whole period is full again: its row can go.
      this.sql.forgetFullBuckets.run(now - periodMs);
      return result;
    })();
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.db.close();
  }
}
