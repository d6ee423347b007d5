// Every write to the SQLite file, on the one connection that makes them (the writer thread's,
// see sqlite-writer-thread.ts). Synchronous: each method is one transaction, except appendBatch,
// which puts a whole batch of appends in one transaction and one fsync (group commit).
import type Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import { takeFromBucket } from './token-bucket.js';
import {
  ADDRESS_COLUMNS,
  EVENT_COLUMNS,
  SENDER_COLUMNS,
  toAddress,
  toEvent,
  type AddressRow,
  type EventRow,
} from './rows.js';
import { firstKeyOf, KEYS_PER_MS, LOW_KEYS, msOfId } from './event-ids.js';
import { KEY_OF_ID } from './sqlite-migrations.js';
import { SqliteEmailPartWrites } from './sqlite-email-parts.js';
import {
  eventSize,
  type AddressChanges,
  type AddressRecord,
  type AppendInput,
  type EmailPart,
  type EventRecord,
  type KeyScope,
  type PurgeResult,
  type SenderRecord,
  type TokenBucketResult,
  type ViewTokenRecord,
} from './storage.js';

/** What one append came to; `created` carries only the sequence (the caller holds the rest). */
export type AppendOutcome =
  | { status: 'created'; sequence: number }
  | { status: 'duplicate'; event: EventRecord }
  | { status: 'queue_full' }
  | { status: 'bytes_full' }
  | { status: 'address_not_found' }
  /** This append failed alone (nothing of it was written); the rest of its batch stands. */
  | { status: 'failed'; error: unknown };

/**
 * One append as it crosses to the writer thread: the AppendInput's fields with the new
 * event's id, and the capacity, in this order. A flat tuple is cloned by postMessage at
 * about half the cost of an object.
 */
export type AppendTuple = [
  addressId: string,
  eventId: string,
  type: string,
  source: string,
  dataJson: string,
  metadataJson: string | null,
  dedupeKey: string | null,
  createdAt: number,
  capacity: number,
  maxBytes: number,
  keyScope: KeyScope,
  parts: EmailPart[] | null,
];

export const toAppendTuple = (input: AppendInput, eventId: string, capacity: number, maxBytes = 0): AppendTuple => [
  input.addressId,
  eventId,
  input.type,
  input.source,
  input.dataJson,
  input.metadataJson,
  input.dedupeKey,
  input.createdAt,
  capacity,
  maxBytes,
  input.keyScope,
  input.parts ?? null,
];

/** An inserted row after its key (rowid): its address's key, then EVENT_COLUMNS in order (acknowledged_at is NULL). */
type EventColumns = readonly [
  addressKey: number,
  id: string,
  addressId: string,
  sequence: number,
  type: string,
  source: string,
  dataJson: string,
  metadataJson: string | null,
  dedupeKey: string | null,
  createdAt: number,
];

export interface CommitStats {
  commits: number;
  appends: number;
  largestBatch: number;
  /** Time spent in batches: statements, COMMIT and fsync. */
  busyMs: number;
}

/**
 * What an append needs to know about its address: its key (migration 3), whether it is live,
 * and the bounds of its queue. `floor` is the highest sequence of an event that is gone
 * (migration 2); `low` and `high` those of the events held (null when none).
 */
interface QueueState {
  key: number;
  expiresAt: number | null;
  floor: number;
  low: number | null;
  high: number | null;
  /** Bytes its events hold: the sum of their size_bytes (migration 6), then kept up to date here. */
  bytes: number;
}

/** Queue states kept in memory (~100 bytes each); the oldest loaded goes first. */
const QUEUE_STATES = 20_000;

export class SqliteWrites {
  readonly commitStats: CommitStats = { commits: 0, appends: 0, largestBatch: 0, busyMs: 0 };
  private readonly sql;
  /**
   * Queue states by address id, so that an append is one INSERT instead of three seeks
   * first. Exact because this connection makes every write to the file:
   * an append updates its entry, anything else that removes events or addresses drops
   * entries (they are read again when next needed), and a failed COMMIT drops them all.
   */
  private readonly queues = new Map<string, QueueState>();
  /**
   * The highest key given out in a millisecond's range (event-ids.ts): the next
   * event of that millisecond, or of a later one, needs no query for its key. Exact for
   * the reason `queues` is; a key given to an append that then failed is a gap, no clash.
   */
  private lastKey: number;
  /**
   * An insert that writes more than its row (an eviction, an unplaced id, email parts), in
   * a savepoint of the batch's transaction: a failure undoes all of it and nothing else.
   */
  private readonly insertWithMore: Database.Transaction<
    (
      evictKeys: readonly number[],
      key: number | null,
      columns: EventColumns,
      size: number,
      scope: KeyScope,
      parts: readonly EmailPart[] | null,
    ) => void
  >;
  private readonly emailParts: SqliteEmailPartWrites;
  /** A repeat's parts, those its held event lacks, in a savepoint likewise. */
  private readonly keepParts: Database.Transaction<(key: number, eventId: string, parts: readonly EmailPart[]) => void>;

  constructor(private readonly db: Database.Database) {
    this.sql = {
      insertAddress: db.prepare(
        `INSERT INTO addresses (id, slug, name, task_id, email, created_at, expires_at, read_token_digest, ingress_secret_digest)
         VALUES (@id, @slug, @name, @taskId, @email, @createdAt, @expiresAt, @readTokenDigest, @ingressSecretDigest)`,
      ),
      deleteEventsOf: db.prepare(`DELETE FROM events WHERE address_key = ${KEY_OF_ID}`),
      deleteAddress: db.prepare('DELETE FROM addresses WHERE id = ?'),
      liveAddress: db.prepare<[string, number], AddressRow>(
        `SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`,
      ),
      updateAddress: db.prepare(
        `UPDATE addresses SET name = @name, task_id = @taskId, expires_at = @expiresAt WHERE id = @id`,
      ),
      replaceReadToken: db.prepare('UPDATE addresses SET read_token_digest = ? WHERE id = ?'),
      replaceIngressSecret: db.prepare(
        `UPDATE addresses SET previous_ingress_digest = CASE WHEN @until IS NULL THEN NULL ELSE ingress_secret_digest END,
                              previous_ingress_until = @until, ingress_secret_digest = @digest
         WHERE id = @id`,
      ),
      forgetExpiredViewTokens: db.prepare(
        'DELETE FROM view_tokens WHERE address_id = ? AND expires_at IS NOT NULL AND expires_at <= ?',
      ),
      countViewTokens: db.prepare<[string], { n: number }>(
        'SELECT COUNT(*) AS n FROM view_tokens WHERE address_id = ?',
      ),
      insertViewToken: db.prepare(
        `INSERT INTO view_tokens (id, address_id, token_digest, label, created_at, expires_at)
         VALUES (@id, @addressId, @tokenDigest, @label, @createdAt, @expiresAt)`,
      ),
      deleteViewToken: db.prepare('DELETE FROM view_tokens WHERE address_id = ? AND id = ?'),
      deleteViewTokens: db.prepare('DELETE FROM view_tokens WHERE address_id = ?'),
      putSender: db.prepare(
        `INSERT INTO senders (${SENDER_COLUMNS})
         VALUES (@addressId, @provider, @enforce, @toleranceSeconds, @secretCount, @sealedSecrets, @sealedVerifyToken, @optionsJson, @updatedAt)
         ON CONFLICT (address_id) DO UPDATE SET provider = excluded.provider, enforce = excluded.enforce,
           tolerance_seconds = excluded.tolerance_seconds, secret_count = excluded.secret_count,
           sealed_secrets = excluded.sealed_secrets, sealed_verify_token = excluded.sealed_verify_token,
           options = excluded.options, updated_at = excluded.updated_at`,
      ),
      deleteSender: db.prepare('DELETE FROM senders WHERE address_id = ?'),
      markSender: db.prepare('UPDATE addresses SET has_sender = ? WHERE id = ?'),
      // The address with the bounds of its queue (see QueueState). Each MIN/MAX is one seek
      // in events_by_sequence.
      queueState: db.prepare<{ id: string }, QueueState>(
        `SELECT key, expires_at AS expiresAt, last_sequence AS floor,
                (SELECT COALESCE(SUM(size_bytes), 0) FROM events WHERE address_key = addresses.key) AS bytes,
                (SELECT MIN(sequence) FROM events WHERE address_key = addresses.key) AS low,
                (SELECT MAX(sequence) FROM events WHERE address_key = addresses.key) AS high
         FROM addresses WHERE id = @id`,
      ),
      eventByKey: db.prepare<[number, KeyScope, string], EventRow & { key: number }>(
        `SELECT rowid AS key, ${EVENT_COLUMNS} FROM events WHERE address_key = ? AND key_scope = ? AND dedupe_key = ?`,
      ),
      countEvents: db.prepare<[number], { n: number }>('SELECT COUNT(*) AS n FROM events WHERE address_key = ?'),
      oldestAcknowledged: db.prepare<[number], { key: number }>(
        'SELECT rowid AS key FROM events WHERE address_key = ? AND acknowledged_at IS NOT NULL ORDER BY sequence LIMIT 1',
      ),
      // Oldest first, with their sizes: what may make room under the byte cap.
      acknowledgedBySize: db.prepare<[number], { key: number; size: number }>(
        'SELECT rowid AS key, size_bytes AS size FROM events WHERE address_key = ? AND acknowledged_at IS NOT NULL ORDER BY sequence',
      ),
      deleteEvent: db.prepare('DELETE FROM events WHERE rowid = ?'),
      insertEvent: db.prepare(
        `INSERT INTO events (rowid, address_key, ${EVENT_COLUMNS}, size_bytes, key_scope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
      ),
      highestKeyIn: db.prepare<[number, number], { key: number | null }>(
        'SELECT MAX(rowid) AS key FROM events WHERE rowid >= ? AND rowid < ?',
      ),
      recordUnplaced: db.prepare('INSERT OR REPLACE INTO unplaced_event_ids (event_key, id) VALUES (?, ?)'),
      // An event by id: among the keys of the millisecond its id carries...
      ackInRange: db.prepare<[number, number, number, string, string], EventRow>(
        `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, ?)
         WHERE rowid >= ? AND rowid < ? AND id = ? AND address_id = ? RETURNING ${EVENT_COLUMNS}`,
      ),
      // ...or, when it is not there, by unplaced_event_ids (event-ids.ts; almost always empty).
      ackUnplaced: db.prepare<[number, string, string, string], EventRow>(
        `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, ?)
         WHERE rowid = (SELECT event_key FROM unplaced_event_ids WHERE id = ?) AND id = ? AND address_id = ? RETURNING ${EVENT_COLUMNS}`,
      ),
      ackUpTo: db.prepare(
        `UPDATE events SET acknowledged_at = ? WHERE address_key = ${KEY_OF_ID} AND sequence <= ? AND acknowledged_at IS NULL`,
      ),
      expired: db.prepare<[number], { id: string }>(
        'SELECT id FROM addresses WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT 100',
      ),
      // Past retention: a range of keys (event-ids.ts), which holds the unplaced
      // events too (below LOW_KEYS): for those, created_at decides.
      purgeOld: db.prepare(
        'DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE rowid < ? AND created_at < ? LIMIT ?)',
      ),
      deleteSomeEventsOf: db.prepare(
        `DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE address_key = ${KEY_OF_ID} LIMIT ?)`,
      ),
      bucket: db.prepare<[string], { tokens: number; updated_at: number }>(
        'SELECT tokens, updated_at FROM rate_buckets WHERE key = ?',
      ),
      saveBucket: db.prepare(
        `INSERT INTO rate_buckets (key, tokens, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at`,
      ),
      forgetFullBuckets: db.prepare('DELETE FROM rate_buckets WHERE updated_at < ?'),
    };
    this.emailParts = new SqliteEmailPartWrites(db);
    this.insertWithMore = db.transaction(
      (
        evictKeys: readonly number[],
        key: number | null,
        columns: EventColumns,
        size: number,
        scope: KeyScope,
        parts: readonly EmailPart[] | null,
      ) => {
        for (const evictKey of evictKeys) this.sql.deleteEvent.run(evictKey);
        let eventKey = key;
        if (eventKey !== null) this.sql.insertEvent.run(eventKey, ...columns, size, scope);
        else {
          eventKey = (this.sql.highestKeyIn.get(0, LOW_KEYS)!.key ?? 0) + 1;
          this.sql.insertEvent.run(eventKey, ...columns, size, scope);
          this.sql.recordUnplaced.run(eventKey, columns[1]);
        }
        if (parts !== null) this.emailParts.insert(eventKey, columns[1], parts);
      },
    );
    this.keepParts = db.transaction((key: number, eventId: string, parts: readonly EmailPart[]) =>
      this.emailParts.insert(key, eventId, parts),
    );
    this.lastKey = db.prepare<[], { key: number | null }>('SELECT MAX(rowid) AS key FROM events').get()!.key ?? 0;
  }

  insertAddress(address: AddressRecord): 'ok' | 'slug_taken' {
    try {
      this.sql.insertAddress.run(address);
      return 'ok';
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' && /slug/.test(String(error)))
        return 'slug_taken';
      throw error;
    }
  }

  updateAddress(id: string, changes: AddressChanges, now: number): AddressRecord | null {
    this.queues.delete(id); // its expiry may change
    return this.db.transaction(() => {
      const row = this.sql.liveAddress.get(id, now);
      if (!row) return null;
      const current = toAddress(row);
      const next = {
        id,
        name: changes.name ?? current.name,
        taskId: changes.taskId === undefined ? current.taskId : changes.taskId,
        expiresAt: changes.expiresAt === undefined ? current.expiresAt : changes.expiresAt,
      };
      this.sql.updateAddress.run(next);
      return { ...current, ...next };
    })();
  }

  replaceReadToken(id: string, digest: string, now: number, revokeViewTokens = false): AddressRecord | null {
    return this.db.transaction(() => {
      if (!this.sql.liveAddress.get(id, now)) return null;
      this.sql.replaceReadToken.run(digest, id);
      if (revokeViewTokens) this.sql.deleteViewTokens.run(id);
      return toAddress(this.sql.liveAddress.get(id, now)!);
    })();
  }

  replaceIngressSecret(id: string, digest: string, previousUntil: number | null, now: number): AddressRecord | null {
    return this.db.transaction(() => {
      if (!this.sql.liveAddress.get(id, now)) return null;
      this.sql.replaceIngressSecret.run({ id, digest, until: previousUntil });
      return toAddress(this.sql.liveAddress.get(id, now)!);
    })();
  }

  insertViewToken(token: ViewTokenRecord, max: number, now: number): 'ok' | 'limit' | 'address_not_found' {
    return this.db.transaction(() => {
      if (!this.sql.liveAddress.get(token.addressId, now)) return 'address_not_found';
      this.sql.forgetExpiredViewTokens.run(token.addressId, now);
      if (this.sql.countViewTokens.get(token.addressId)!.n >= max) return 'limit';
      this.sql.insertViewToken.run(token);
      return 'ok';
    })();
  }

  deleteViewToken(addressId: string, tokenId: string): boolean {
    return this.sql.deleteViewToken.run(addressId, tokenId).changes > 0;
  }

  putSender(sender: SenderRecord, now: number): boolean {
    return this.db.transaction(() => {
      if (!this.sql.liveAddress.get(sender.addressId, now)) return false;
      this.sql.putSender.run({ ...sender, enforce: sender.enforce ? 1 : 0 });
      this.sql.markSender.run(1, sender.addressId);
      return true;
    })();
  }

  deleteSender(addressId: string): boolean {
    return this.db.transaction(() => {
      if (this.sql.deleteSender.run(addressId).changes === 0) return false;
      this.sql.markSender.run(0, addressId);
      return true;
    })();
  }

  deleteAddress(id: string): boolean {
    this.queues.delete(id);
    return this.db.transaction(() => {
      this.sql.deleteEventsOf.run(id);
      return this.sql.deleteAddress.run(id).changes > 0;
    })();
  }

  /**
   * Commits the batch in one transaction (one fsync). One failed append does not sink the
   * rest (see appendOrFail). Throws when the COMMIT itself fails, or when a failure ended
   * the transaction, and then nothing in the batch is durable.
   */
  appendBatch(batch: readonly AppendTuple[]): AppendOutcome[] {
    const outcomes: AppendOutcome[] = [];
    const startedAt = performance.now();
    try {
      this.db
        .transaction(() => {
          for (const append of batch) outcomes.push(this.appendOrFail(append));
        })
        .immediate();
    } catch (error) {
      this.queues.clear(); // nothing of the batch is in the file: forget what it changed
      throw error;
    }
    const stats = this.commitStats;
    stats.busyMs += performance.now() - startedAt;
    stats.commits++;
    stats.appends += batch.length;
    if (batch.length > stats.largestBatch) stats.largestBatch = batch.length;
    return outcomes;
  }

  /**
   * One append inside the batch's transaction. A failed statement undoes only itself, and
   * an append that writes more than once (evict, then insert; an event and its email
   * parts) does so in a savepoint, so a failure leaves the batch as it was before this
   * append. Some failures end the whole transaction (an I/O error, a full disk): the rest
   * of the batch must then not run outside it, each statement committing on its own, so
   * the error goes up and the batch fails as a whole.
   */
  private appendOrFail(append: AppendTuple): AppendOutcome {
    try {
      return this.append(append);
    } catch (error) {
      this.queues.delete(append[0]); // its bounds may not have moved as recorded
      if (!this.db.inTransaction) throw error;
      return { status: 'failed', error };
    }
  }

  private append(append: AppendTuple): AppendOutcome {
    const [
      addressId,
      eventId,
      type,
      source,
      dataJson,
      metadataJson,
      dedupeKey,
      createdAt,
      capacity,
      maxBytes,
      keyScope,
      parts,
    ] = append;
    const state = this.queueState(addressId);
    if (!state || (state.expiresAt !== null && state.expiresAt <= createdAt)) return { status: 'address_not_found' };
    if (dedupeKey !== null) {
      const held = this.sql.eventByKey.get(state.key, keyScope, dedupeKey);
      if (held) {
        if (parts !== null) this.keepParts(held.key, held.id, parts);
        return { status: 'duplicate', event: toEvent(held) };
      }
    }
    // The queue holds at most high - low + 1 events; only when that span reaches the
    // capacity can it be full, and only then is counting (up to 1,000 rows) needed.
    const span = state.high === null ? 0 : state.high - state.low! + 1;
    // Never reused: the floor covers removed events, the newest of them included.
    const sequence = Math.max(state.high ?? 0, state.floor) + 1;
    const size = eventSize({ type, source, dataJson, metadataJson, dedupeKey });
    let evictKeys: number[] = [];
    if (span >= capacity && this.sql.countEvents.get(state.key)!.n >= capacity) {
      const oldest = this.sql.oldestAcknowledged.get(state.key);
      if (!oldest) return { status: 'queue_full' };
      evictKeys = [oldest.key];
    }
    if (maxBytes > 0 && state.bytes + size > maxBytes) {
      // The oldest acknowledged events make room, as they do for the count; never others.
      let freed = 0;
      evictKeys = [];
      for (const row of this.sql.acknowledgedBySize.iterate(state.key)) {
        if (state.bytes - freed + size <= maxBytes && evictKeys.length > 0) break;
        evictKeys.push(row.key);
        freed += row.size;
      }
      if (state.bytes - freed + size > maxBytes) return { status: 'bytes_full' };
    }
    const key = this.keyFor(createdAt);
    const columns = [
      state.key,
      eventId,
      addressId,
      sequence,
      type,
      source,
      dataJson,
      metadataJson,
      dedupeKey,
      createdAt,
    ] as const;
    if (evictKeys.length === 0 && key !== null && parts === null) {
      // One statement: no savepoint needed (a failed statement undoes only itself).
      this.sql.insertEvent.run(key, ...columns, size, keyScope);
    } else {
      this.insertWithMore(evictKeys, key, columns, size, keyScope, parts);
    }
    if (evictKeys.length === 0) {
      state.high = sequence;
      state.low ??= sequence;
      state.bytes += size;
    } else this.queues.delete(addressId); // low, floor and bytes moved: read them again next time
    return { status: 'created', sequence };
  }

  /**
   * The key of a new event created at `createdAt`: the next one of its millisecond's range,
   * or null when that range is full or starts below LOW_KEYS (event-ids.ts).
   */
  private keyFor(createdAt: number): number | null {
    const first = firstKeyOf(createdAt);
    if (first === null) return null;
    const end = first + KEYS_PER_MS;
    // A later millisecond than any before (almost every append), or the same one.
    if (this.lastKey < first) return (this.lastKey = first);
    if (this.lastKey < end) return this.lastKey + 1 < end ? ++this.lastKey : null;
    // An earlier millisecond: the clock stepped back, or the append was made with an earlier time.
    const held = this.sql.highestKeyIn.get(first, end)!.key;
    const key = held === null ? first : held + 1;
    return key < end ? key : null;
  }

  private queueState(addressId: string): QueueState | undefined {
    const known = this.queues.get(addressId);
    if (known) return known;
    const state = this.sql.queueState.get({ id: addressId });
    if (!state) return undefined;
    if (this.queues.size >= QUEUE_STATES) this.queues.delete(this.queues.keys().next().value!);
    this.queues.set(addressId, state);
    return state;
  }

  ackEvent(addressId: string, eventId: string, now: number): EventRecord | null {
    const ms = msOfId(eventId);
    const first = ms === null ? null : firstKeyOf(ms);
    const row =
      (first === null ? undefined : this.sql.ackInRange.get(now, first, first + KEYS_PER_MS, eventId, addressId)) ??
      this.sql.ackUnplaced.get(now, eventId, eventId, addressId);
    return row ? toEvent(row) : null;
  }

  ackUpTo(addressId: string, upTo: number, now: number): number {
    return this.sql.ackUpTo.run(now, addressId, upTo).changes;
  }

  /** A whole purge at once (tests and tools; the service purges in steps, see sqlite.ts). */
  purge(now: number, retainAfter: number): PurgeResult {
    const result: PurgeResult = { expiredAddressIds: [], eventsPurged: 0 };
    for (;;) {
      const step = this.purgeStep(now, retainAfter, 1000);
      result.expiredAddressIds.push(...step.expiredAddressIds);
      result.eventsPurged += step.eventsPurged;
      if (step.done) return result;
    }
  }

  /**
   * One bounded step of a purge: at most `budget` events removed, in one short transaction,
   * so that appends queued meanwhile run between steps (sqlite.ts calls it until `done`).
   * Expired addresses lose their events first, a slice at a time, then go themselves.
   */
  purgeStep(now: number, retainAfter: number, budget: number): PurgeResult & { done: boolean } {
    this.queues.clear(); // events and addresses may go: every queue's bounds may move
    const expiredAddressIds: string[] = [];
    let eventsPurged = 0;
    this.db.transaction(() => {
      for (const { id } of this.sql.expired.all(now)) {
        const removed = this.sql.deleteSomeEventsOf.run(id, budget - eventsPurged).changes;
        eventsPurged += removed;
        if (eventsPurged >= budget) return; // maybe more left: the next step looks again
        this.sql.deleteAddress.run(id);
        expiredAddressIds.push(id);
      }
    })();
    if (eventsPurged >= budget) return { expiredAddressIds, eventsPurged, done: false };
    // Past retention: a range of keys (event-ids.ts), which holds the unplaced
    // events too (below LOW_KEYS): for those, created_at decides.
    const slice = budget - eventsPurged;
    const old = this.sql.purgeOld.run(retainAfter * KEYS_PER_MS, retainAfter, slice).changes;
    eventsPurged += old;
    return { expiredAddressIds, eventsPurged, done: old < slice && this.sql.expired.all(now).length === 0 };
  }

  takeToken(key: string, limit: number, periodMs: number, now: number): TokenBucketResult {
    return this.db.transaction(() => {
      const row = this.sql.bucket.get(key);
      const { next, result } = takeFromBucket(
        row ? { tokens: row.tokens, updatedAt: row.updated_at } : null,
        limit,
        periodMs,
        now,
      );
      this.sql.saveBucket.run(key, next.tokens, next.updatedAt);
      // A bucket untouched for a whole period is full again: its row can go.
      this.sql.forgetFullBuckets.run(now - periodMs);
      return result;
    })();
  }
}
