// Appending events on PostgreSQL. The append transaction locks the address row by bumping
// `last_sequence`, so appends to one address queue behind each other across instances:
// gapless sequences, one winner per idempotency key (a unique index backs it up), and the
// append policy (append-policy.ts) applied to a state no one else changes meanwhile.
// Appends that arrive together go as one statement (batches.ts); what it cannot decide
// alone runs through the full transaction. A committed append is announced with
// `NOTIFY roost_wake, '<addressId>'` after its commit, one announcement under way at a
// time and, under load, one every ANNOUNCE_SPACING_MS at most — not inside the append's
// transaction, where a NOTIFY's lock, one for the whole server (docs/scale-out.md), would
// make every commit, and its WAL flush, wait for the one before.
import type pg from 'pg';
import type { Logger } from 'pino';
import { fitsAsIs, makeRoom, type Evictable, type RoomDecision } from '../append-policy.js';
import { Batches } from '../batches.js';
import { newEventId } from '../event-ids.js';
import { ADDRESSES, EVENTS, insertedEvent, pgArrays, placeholders, type Column } from '../tables.js';
import {
  eventSize,
  type AppendInput,
  type AppendParams,
  type AppendResult,
  type InboxCredentials,
} from '../storage.js';
import { binaryArrays } from './binary-arrays.js';
import { namedStatements, statement, type Outcome, type PgConnection } from './connection.js';
import { isUnavailableFailure, isUniqueViolation, storageError } from './errors.js';
import { insertParts } from './email-parts.js';
import { LIVE } from './addresses.js';
import { WAKE_CHANNEL } from './listener.js';

/**
 * Under sustained load, announcements start at least this far apart. Each is a transaction
 * of its own on the database that takes the server-wide NOTIFY lock; sent as fast as they
 * complete, they take a share of the instance's and the database's CPU that the wake-ups do
 * not need (BENCHMARKS.md, "announcements spaced"). A lone announcement goes at once; under
 * load, other instances' polls hear of a commit up to this much later.
 */
export const ANNOUNCE_SPACING_MS = 5;

/**
 * Append batches run two at a time, each on its own pooled connection: one travels and is
 * executed while the other waits for its WAL flush. One statement holds at most 500 events
 * or 8 MiB, so that a burst of large deliveries is split.
 */
const APPEND_BATCHES = { inFlight: 2, maxItems: 500, maxWeight: 8 * 1024 * 1024 } as const;
/** Acknowledged events read first when an append must make room; all of them if those are not enough. */
const FIRST_EVICTABLE = 8;

/**
 * What admitted a delivery on an address read lately (storage.ts AppendParams.admittedBy),
 * compared with the address row under its lock: each field of the credentials (a mapped
 * type, so that a field added to them cannot be left unchecked here) with its column.
 */
const ADMITTED_FIELDS: { [F in keyof InboxCredentials]-?: true } = {
  ingressSecretDigest: true,
  previousIngressDigest: true,
  previousIngressUntil: true,
};
const ADMISSION = (Object.keys(ADMITTED_FIELDS) as Array<keyof InboxCredentials>).map(
  (field) => [ADDRESSES.columns[ADDRESSES.fields.indexOf(field)], field] as const,
);
const ADMISSION_COLUMNS = ADMISSION.map(([column]) => column.name).join(', ');

/** Whether the address row (read under its lock) still admits what it admitted: no sender, the same credentials. */
function stillAdmits(row: Record<string, unknown>, admittedBy: InboxCredentials): boolean {
  return (
    row.has_sender === false &&
    ADMISSION.every(([column, field]) => column.decode(row[column.name]) === admittedBy[field])
  );
}

/** The batch's input: each event column, then what the batch decides by; roost_append_batch's arguments, in order. */
const BATCH_INPUT: ReadonlyArray<Column<unknown>> = [
  ...EVENTS.columns,
  { name: 'size_bytes', pgType: 'bigint', decode: Number },
  { name: 'capacity', pgType: 'bigint', decode: Number },
  { name: 'max_bytes', pgType: 'bigint', decode: Number },
  { name: 'key_scope', pgType: 'text', decode: String },
  // AppendParams.admittedBy, all null when the delivery was admitted on a fresh look-up.
  ...ADMISSION.map(([column]) => ({ ...column, name: `admitted_${column.name}` })),
];
const BATCH_TYPES = BATCH_INPUT.map((column) => column.pgType);

const SQL = namedStatements('append', {
  // Every append that arrives while the previous batches run, in one call (one round trip,
  // one transaction, one WAL flush) of the function of migration 13, which locks the
  // addresses, numbers the events and inserts those that go in as they are; what it leaves
  // out, the full transaction below decides (postgres/migrations.ts, version 13). A
  // function keeps its plan on each server connection, a pooler's included.
  batch: `SELECT event_id AS id, event_sequence AS sequence FROM roost_append_batch(${pgArrays(BATCH_INPUT)})`,

  // The full append transaction, in order. The UPDATE takes the address row lock (held until
  // COMMIT) and hands out the next sequence; it finds no row when the address is unknown,
  // deleted or expired at the delivery's time. What admitted the delivery is compared after.
  bumpSequence: `
    UPDATE addresses SET last_sequence = last_sequence + 1
    WHERE id = $1 AND ${LIVE}
    RETURNING last_sequence, stored_bytes, has_sender, ${ADMISSION_COLUMNS}`,
  lockLiveAddress: `SELECT id FROM addresses WHERE id = $1 AND ${LIVE} FOR UPDATE`,
  // Runs after the lock, so it sees every append to this address that committed before.
  // A key is matched only among events of its scope (docs/api.md §3).
  eventByKey: `SELECT ${EVENTS.list} FROM events WHERE address_id = $1 AND key_scope = $3 AND dedupe_key = $2`,
  count: 'SELECT count(*)::int AS held FROM events WHERE address_id = $1',
  // Oldest first, with their sizes: what may make room.
  acknowledged: `
    SELECT id, size_bytes FROM events WHERE address_id = $1 AND acknowledged_at IS NOT NULL
    ORDER BY sequence LIMIT $2`,
  evict: 'DELETE FROM events WHERE id = ANY($1::text[])',
  addBytes: 'UPDATE addresses SET stored_bytes = stored_bytes + $2 WHERE id = $1',
  insert: `INSERT INTO events (${EVENTS.list}, size_bytes, key_scope) VALUES (${placeholders('postgres', EVENTS.names.length + 2)})`,
  // The wake-ups of the appends committed since the last announcement, sent after their
  // commits in a transaction of their own; one row back, not one a wake-up.
  announce: `SELECT count(pg_notify('${WAKE_CHANNEL}', id)) FROM unnest($1::text[]) AS id`,
});

/** One append, with its event's id and size. */
interface Append {
  input: AppendInput;
  admittedBy: InboxCredentials | null;
  eventId: string;
  size: number;
  capacity: number;
  maxBytes: number;
}

/** An append waiting for its batch, with what its caller awaits. */
interface QueuedAppend extends Append {
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

export class PgAppends {
  private readonly batches: Batches<QueuedAppend>;
  /** Addresses with an append committed since the last announcement, to be announced to other instances. */
  private toAnnounce = new Set<string>();
  /** The announcement under way, if any. */
  private announcing: Promise<void> | undefined;
  /** Cancels the next announcement's timer, while one is set. */
  private cancelNext: (() => void) | undefined;
  /** When the last announcement started (performance.now()). */
  private lastAnnouncedAt = -Infinity;
  /** Closing: what is left goes at once, without spacing. */
  private closing = false;
  private closed = false;

  constructor(
    private readonly db: PgConnection,
    waitLimits: { maxWaitMs: number; expire: (item: { reject: (error: unknown) => void }) => void },
    private readonly logger?: Logger,
  ) {
    this.batches = new Batches<QueuedAppend>((batch) => this.appendBatch(batch), {
      ...APPEND_BATCHES,
      weight: (append) => append.size,
      ...waitLimits,
    });
  }

  /** Each promise resolves only after the COMMIT of the statement or transaction that stored its event. */
  append({ event: input, capacity, maxBytes = 0, admittedBy }: AppendParams): Promise<AppendResult> {
    // Time-led (newEventId): the primary key's index grows at its end.
    const append: Append = {
      input,
      admittedBy: admittedBy ?? null,
      eventId: input.id ?? newEventId(input.createdAt),
      size: eventSize(input),
      capacity,
      maxBytes,
    };
    // An email goes in a transaction of its own with its parts, whose bytes travel there as
    // binary parameters; in the batch's statement they would be bytea[] text, twice as
    // large, and up to megabytes of them would hold up every append sent with them.
    if (input.parts) return this.appendAlone(append);
    return new Promise<AppendResult>((resolve, reject) => this.batches.add({ ...append, resolve, reject }));
  }

  /**
   * One batch: its appends in one statement, except a repeat of a key that an earlier
   * append of the same batch carries (it waits for that one: docs/api.md §3, the first
   * event wins). What the statement left out runs through the full transaction, one append
   * at a time, after the batch has committed.
   */
  private async appendBatch(batch: QueuedAppend[]): Promise<void> {
    const first = new Map<string, QueuedAppend>();
    const sent: QueuedAppend[] = [];
    const repeats: Array<{ append: QueuedAppend; of: QueuedAppend }> = [];
    for (const append of batch) {
      const { addressId, dedupeKey, keyScope } = append.input;
      if (dedupeKey !== null) {
        // Keys are matched within their scope (docs/api.md §3.4): the same text from an
        // email and from HTTP names two deliveries.
        const key = `${addressId}\u0000${keyScope}\u0000${dedupeKey}`;
        const earlier = first.get(key);
        if (earlier) {
          repeats.push({ append, of: earlier });
          continue;
        }
        first.set(key, append);
      }
      sent.push(append);
    }
    const outcomes = new Map<QueuedAppend, Promise<AppendResult>>();
    let stored = new Map<string, number>();
    for (let attempt = 1; ; attempt++) {
      try {
        stored = await this.insertBatch(sent);
        break;
      } catch (error) {
        // Away or overloaded: every append of the batch would fail alike.
        if (isUnavailableFailure(error)) {
          const failure = storageError(error);
          for (const append of batch) append.reject(failure);
          return;
        }
        // A key that a racing batch committed after this statement's snapshot: the next
        // try sees it, and leaves that append to the full transaction (a duplicate).
        if (attempt < 3 && isUniqueViolation(error, 'events_by_dedupe_key')) continue;
        // Anything else (a value the database refuses) is settled per append, so that
        // one bad append fails only itself.
        break;
      }
    }
    for (const append of sent) {
      const sequence = stored.get(append.eventId);
      const outcome =
        sequence === undefined
          ? this.appendAlone(append)
          : Promise.resolve<AppendResult>({
              status: 'created',
              event: insertedEvent(append.input, append.eventId, sequence),
            });
      outcomes.set(append, outcome);
    }
    if (stored.size > 0)
      for (const append of sent) if (stored.has(append.eventId)) this.announce(append.input.addressId);
    for (const { append, of } of repeats) {
      const outcome = outcomes.get(of)!.then(
        (result) =>
          result.status === 'created' || result.status === 'duplicate'
            ? { status: 'duplicate' as const, event: result.event }
            : this.appendAlone(append),
        () => this.appendAlone(append),
      );
      outcomes.set(append, outcome);
    }
    for (const append of batch) outcomes.get(append)!.then(append.resolve, append.reject);
  }

  /** The batch statement: the sequence of each event it stored, by event id. */
  private async insertBatch(appends: QueuedAppend[]): Promise<Map<string, number>> {
    const columns: unknown[][] = BATCH_INPUT.map(() => []);
    for (const { input, eventId, size, capacity, maxBytes, admittedBy } of appends) {
      const values = EVENTS.values(insertedEvent(input, eventId, 0), 'postgres');
      values.push(size, capacity, maxBytes, input.keyScope);
      for (const [, field] of ADMISSION) values.push(admittedBy === null ? null : admittedBy[field]);
      for (let i = 0; i < values.length; i++) columns[i].push(values[i]);
    }
    const { rows } = await this.db.queryAsIs<{ id: string; sequence: number }>(
      SQL.batch,
      binaryArrays(BATCH_TYPES, columns),
    );
    const stored = new Map<string, number>();
    for (const row of rows) stored.set(row.id, row.sequence);
    return stored;
  }

  /** The full transaction for one append: it tells every case apart (full, duplicate, gone). */
  private async appendAlone(append: Append): Promise<AppendResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.db.transaction((db) => this.appendTransaction(db, append));
        if (result.status === 'created') this.announce(append.input.addressId);
        return result;
      } catch (error) {
        // The row lock already serialises appends to one address, so the key's unique
        // index should never fire; if it does, the other writer won: run again to return
        // its event as the duplicate (docs/api.md §3: exactly one 202 per key).
        if (attempt < 3 && isUniqueViolation(error, 'events_by_dedupe_key')) continue;
        throw error;
      }
    }
  }

  private async appendTransaction(
    db: pg.PoolClient,
    { input, eventId, capacity, maxBytes, size, admittedBy }: Append,
  ): Promise<Outcome<AppendResult>> {
    const { parts } = input;
    if (parts && input.dedupeKey !== null) {
      // A repeat of an email commits the parts its event may lack (one stored by a version
      // that wrote them apart), so its key is looked up under the address row lock before
      // a sequence is handed out: a repeat must not use one up.
      const live = await db.query(statement(SQL.lockLiveAddress, [input.addressId, input.createdAt]));
      if (live.rowCount === 0) return { rollback: { status: 'address_not_found' } };
      const held = await db.query<{ id: string }>(
        statement(SQL.eventByKey, [input.addressId, input.dedupeKey, input.keyScope]),
      );
      if (held.rows[0]) {
        await insertParts(db, held.rows[0].id, parts);
        return { commit: { status: 'duplicate', event: EVENTS.fromRow(held.rows[0]) } };
      }
    }
    const bumped = await db.query<{ last_sequence: number; stored_bytes: string }>(
      statement(SQL.bumpSequence, [input.addressId, input.createdAt]),
    );
    if (bumped.rows.length === 0) return { rollback: { status: 'address_not_found' } };
    if (admittedBy !== null && !stillAdmits(bumped.rows[0], admittedBy))
      return { rollback: { status: 'address_changed' } };
    const sequence = bumped.rows[0].last_sequence;
    if (input.dedupeKey !== null && !parts) {
      const held = await db.query<{ id: string }>(
        statement(SQL.eventByKey, [input.addressId, input.dedupeKey, input.keyScope]),
      );
      // Roll back: the repeat must not use up a sequence number.
      if (held.rows[0]) return { rollback: { status: 'duplicate', event: EVENTS.fromRow(held.rows[0]) } };
    }
    const room = await this.makeRoom(db, input.addressId, sequence, Number(bumped.rows[0].stored_bytes), size, {
      capacity,
      maxBytes,
    });
    if (room.status !== 'room') return { rollback: room };
    if (room.evict.length > 0) await db.query(statement(SQL.evict, [room.evict]));
    const freed = room.freed;
    await db.query(statement(SQL.addBytes, [input.addressId, size - freed]));
    const event = insertedEvent(input, eventId, sequence);
    await db.query(statement(SQL.insert, [...EVENTS.values(event, 'postgres'), size, input.keyScope]));
    if (parts) await insertParts(db, eventId, parts);
    return { commit: { status: 'created', event } };
  }

  /** The append policy on this address's queue, read under its row lock; `freed`: the bytes evicted. */
  private async makeRoom(
    db: pg.PoolClient,
    addressId: string,
    sequence: number,
    heldBytes: number,
    size: number,
    bounds: { capacity: number; maxBytes: number },
  ): Promise<Exclude<RoomDecision<string>, { status: 'room' }> | { status: 'room'; evict: string[]; freed: number }> {
    // An address holds at most as many events as sequences it handed out before this one,
    // so while those are below capacity there is nothing to count.
    let held = sequence - 1;
    if (held >= bounds.capacity) {
      const { rows } = await db.query<{ held: number }>(statement(SQL.count, [addressId]));
      held = rows[0].held;
    }
    const queue = { held, heldBytes };
    if (fitsAsIs(queue, size, bounds)) return { status: 'room', evict: [], freed: 0 };
    for (const limit of [FIRST_EVICTABLE, null]) {
      const { rows } = await db.query<{ id: string; size_bytes: string }>(
        statement(SQL.acknowledged, [addressId, limit]),
      );
      const evictable: Array<Evictable<string>> = rows.map((row) => ({ key: row.id, size: Number(row.size_bytes) }));
      const decision = makeRoom(queue, size, bounds, () => evictable);
      if (decision.status === 'room') {
        const freed = evictable.slice(0, decision.evict.length).reduce((sum, evicted) => sum + evicted.size, 0);
        return { ...decision, freed };
      }
      if (limit === null || rows.length < limit) return decision;
    }
    throw new Error('unreachable: the last read has no limit');
  }

  /**
   * Tells the other instances that `addressId` has a new event, once its append has
   * committed. One announcement is under way at a time: the wake-ups that come meanwhile
   * wait for it and go out together in the next, so that announcements hold one pooled
   * connection at most, however slow the database is to answer them (BENCHMARKS.md,
   * "wake-ups one at a time"), and under load they start ANNOUNCE_SPACING_MS apart. A
   * wake-up carries no data and a lost one costs latency, never correctness: should this
   * one fail (or the process die first), polls held elsewhere answer at their timeout and
   * find the event then. Acknowledgements are announced the same way (streams tell their
   * readers, docs/api.md §4.1).
   */
  announce(addressId: string): void {
    this.toAnnounce.add(addressId);
    this.scheduleAnnouncement();
  }

  /**
   * Sets off the next announcement, unless one is under way or already set off: a turn of the
   * event loop from now, so that the turn's appends go together, or ANNOUNCE_SPACING_MS after
   * the last one started, if that is later.
   */
  private scheduleAnnouncement(): void {
    if (this.announcing !== undefined || this.cancelNext !== undefined || this.toAnnounce.size === 0) return;
    if (this.closing) return this.sendAnnouncements();
    const wait = this.lastAnnouncedAt + ANNOUNCE_SPACING_MS - performance.now();
    if (wait > 0) {
      // Asks again when it fires: a timer can fire early by what the event loop's clock lags.
      const timer = setTimeout(() => {
        this.cancelNext = undefined;
        this.scheduleAnnouncement();
      }, wait);
      this.cancelNext = () => clearTimeout(timer);
    } else {
      const immediate = setImmediate(() => {
        this.cancelNext = undefined;
        this.sendAnnouncements();
      });
      this.cancelNext = () => clearImmediate(immediate);
    }
  }

  private sendAnnouncements(): void {
    if (this.announcing !== undefined || this.toAnnounce.size === 0 || this.closed) return;
    const ids = [...this.toAnnounce];
    this.toAnnounce.clear();
    this.lastAnnouncedAt = performance.now();
    this.announcing = this.db
      .query(SQL.announce, [ids])
      .then(
        () => undefined,
        (error) =>
          this.logger?.warn(
            { err: error, addresses: ids.length },
            'could not announce new events to other instances; their polls answer at their timeout',
          ),
      )
      .then(() => {
        this.announcing = undefined;
        this.scheduleAnnouncement();
      });
  }

  /** Sends the last appends' wake-ups; resolves once they are out. */
  async close(): Promise<void> {
    // What waits for its spacing goes now; each announcement, once done, sends what came meanwhile.
    this.closing = true;
    this.cancelNext?.();
    this.cancelNext = undefined;
    this.scheduleAnnouncement();
    while (this.announcing !== undefined) await this.announcing;
    this.closed = true;
  }
}
