// Appending events on SQLite, on the writer thread's connection (the only one that writes):
// a batch of appends in one transaction and one fsync (group commit), each append placed
// under a key of its millisecond (event-ids.ts) and given room by the append policy
// (append-policy.ts). The state of each queue is kept in memory, exact because this
// connection makes every write to the file.
import type Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import { makeRoom, type Evictable } from '../append-policy.js';
import { firstKeyOf, KEYS_PER_MS, LOW_KEYS } from '../event-ids.js';
import { EVENTS, eventFromArray, insertedEvent, placeholders } from '../tables.js';
import { eventSize, type AppendInput, type EmailPart, type EventRecord, type KeyScope } from '../storage.js';
import { ownBytes } from '../own-bytes.js';
import { SqliteEmailPartWrites } from './email-parts.js';
import type { PurgeStep } from './purge.js';

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
 * One append as it crosses to the writer thread: the new event's columns (EVENTS, its
 * sequence still 0), then its capacity, byte bound, key scope and parts: postMessage clones
 * a flat array more cheaply than an object.
 */
export type AppendTuple = unknown[];
const CAPACITY = EVENTS.names.length;
const SEQUENCE = EVENTS.names.indexOf('sequence');
const MAX_BYTES = CAPACITY + 1;
const KEY_SCOPE = CAPACITY + 2;
const PARTS = CAPACITY + 3;

export const toAppendTuple = (input: AppendInput, eventId: string, capacity: number, maxBytes = 0): AppendTuple => {
  const tuple = EVENTS.values(insertedEvent(input, eventId, 0), 'sqlite');
  const parts = input.parts?.map((part) => ({ ...part, bytes: ownBytes(part.bytes) })) ?? null;
  tuple.push(capacity, maxBytes, input.keyScope, parts);
  return tuple;
};

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

/** An event row after its key and its address's key: EVENTS' columns in order. */
type EventValues = unknown[];

export class SqliteAppends {
  readonly commitStats: CommitStats = { commits: 0, appends: 0, largestBatch: 0, busyMs: 0 };
  private readonly sql;
  /**
   * Queue states by address id, so that an append is one INSERT instead of three seeks
   * first. An append updates its entry, anything else that removes events or addresses
   * drops entries (forget: they are read again when next needed), and a failed COMMIT
   * drops them all.
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
      addressKey: number,
      values: EventValues,
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
      // The address with the bounds of its queue (see QueueState). Each MIN/MAX is one seek
      // in events_by_sequence.
      queueState: db.prepare<{ id: string }, QueueState>(
        `SELECT key, expires_at AS expiresAt, last_sequence AS floor,
                (SELECT COALESCE(SUM(size_bytes), 0) FROM events WHERE address_key = addresses.key) AS bytes,
                (SELECT MIN(sequence) FROM events WHERE address_key = addresses.key) AS low,
                (SELECT MAX(sequence) FROM events WHERE address_key = addresses.key) AS high
         FROM addresses WHERE id = @id`,
      ),
      eventByKey: db.prepare<[number, KeyScope, string], { key: number }>(
        `SELECT rowid AS key, ${EVENTS.list} FROM events WHERE address_key = ? AND key_scope = ? AND dedupe_key = ?`,
      ),
      countEvents: db.prepare<[number], { n: number }>('SELECT COUNT(*) AS n FROM events WHERE address_key = ?'),
      // Oldest first, with their sizes: what may make room.
      acknowledged: db.prepare<[number], Evictable<number>>(
        'SELECT rowid AS key, size_bytes AS size FROM events WHERE address_key = ? AND acknowledged_at IS NOT NULL ORDER BY sequence',
      ),
      deleteEvent: db.prepare('DELETE FROM events WHERE rowid = ?'),
      insertEvent: db.prepare(
        `INSERT INTO events (rowid, address_key, ${EVENTS.list}, size_bytes, key_scope)
         VALUES (${placeholders('sqlite', EVENTS.names.length + 4)})`,
      ),
      highestKeyIn: db.prepare<[number, number], { key: number | null }>(
        'SELECT MAX(rowid) AS key FROM events WHERE rowid >= ? AND rowid < ?',
      ),
      recordUnplaced: db.prepare('INSERT OR REPLACE INTO unplaced_event_ids (event_key, id) VALUES (?, ?)'),
    };
    this.emailParts = new SqliteEmailPartWrites(db);
    this.insertWithMore = db.transaction((evictKeys, key, addressKey, values, size, scope, parts) => {
      for (const evictKey of evictKeys) this.sql.deleteEvent.run(evictKey);
      const eventId = values[0] as string;
      let eventKey = key;
      if (eventKey !== null) this.sql.insertEvent.run(eventKey, addressKey, ...values, size, scope);
      else {
        eventKey = (this.sql.highestKeyIn.get(0, LOW_KEYS)!.key ?? 0) + 1;
        this.sql.insertEvent.run(eventKey, addressKey, ...values, size, scope);
        this.sql.recordUnplaced.run(eventKey, eventId);
      }
      if (parts !== null) this.emailParts.insert(eventKey, eventId, parts);
    });
    this.keepParts = db.transaction((key: number, eventId: string, parts: readonly EmailPart[]) =>
      this.emailParts.insert(key, eventId, parts),
    );
    this.lastKey = db.prepare<[], { key: number | null }>('SELECT MAX(rowid) AS key FROM events').get()!.key ?? 0;
  }

  /** Drops what is known of this address's queue (its events or expiry changed otherwise than by an append). */
  forget(addressId: string): void {
    this.queues.delete(addressId);
  }

  /** Drops what is known of the queues a purge step removed events from, or whose address it removed. */
  forgetEmptied({ ids, keys }: PurgeStep['emptied']): void {
    for (const id of ids) this.queues.delete(id);
    if (keys.length === 0) return;
    const emptied = new Set(keys);
    for (const [id, state] of this.queues) if (emptied.has(state.key)) this.queues.delete(id);
  }

  /** Drops what is known of every queue. */
  forgetAll(): void {
    this.queues.clear();
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
      this.queues.delete(eventFromArray(append).addressId); // its bounds may not have moved as recorded
      if (!this.db.inTransaction) throw error;
      return { status: 'failed', error };
    }
  }

  private append(append: AppendTuple): AppendOutcome {
    // One object shape (tables.ts eventFromArray), not the generic decoder's keyed stores.
    const event = eventFromArray(append);
    const capacity = append[CAPACITY] as number;
    const maxBytes = append[MAX_BYTES] as number;
    const keyScope = append[KEY_SCOPE] as KeyScope;
    const parts = append[PARTS] as EmailPart[] | null;
    const state = this.queueState(event.addressId);
    if (!state || (state.expiresAt !== null && state.expiresAt <= event.createdAt))
      return { status: 'address_not_found' };
    if (event.dedupeKey !== null) {
      const held = this.sql.eventByKey.get(state.key, keyScope, event.dedupeKey);
      if (held) {
        const found = EVENTS.fromRow(held);
        if (parts !== null) this.keepParts(held.key, found.id, parts);
        return { status: 'duplicate', event: found };
      }
    }
    // The queue holds at most high - low + 1 events; only when that span reaches the
    // capacity can it be full, and only then is counting (up to capacity rows) needed.
    const span = state.high === null ? 0 : state.high - state.low! + 1;
    const held = span >= capacity ? this.sql.countEvents.get(state.key)!.n : span;
    // Never reused: the floor covers removed events, the newest of them included.
    const sequence = Math.max(state.high ?? 0, state.floor) + 1;
    const size = eventSize(event);
    const room = makeRoom({ held, heldBytes: state.bytes }, size, { capacity, maxBytes }, () =>
      this.sql.acknowledged.iterate(state.key),
    );
    if (room.status !== 'room') return room;
    const evictKeys = room.evict;
    const key = this.keyFor(event.createdAt);
    // The tuple's columns are the row's (toAppendTuple), the sequence now known.
    const values = append.slice(0, CAPACITY);
    values[SEQUENCE] = sequence;
    if (evictKeys.length === 0 && key !== null && parts === null) {
      // One statement: no savepoint needed (a failed statement undoes only itself).
      this.sql.insertEvent.run(key, state.key, ...values, size, keyScope);
    } else {
      this.insertWithMore(evictKeys, key, state.key, values, size, keyScope, parts);
    }
    if (evictKeys.length === 0) {
      state.high = sequence;
      state.low ??= sequence;
      state.bytes += size;
    } else this.queues.delete(event.addressId); // low, floor and bytes moved: read them again next time
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
}
