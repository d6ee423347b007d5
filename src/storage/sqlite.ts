// The embedded engine: one SQLite file through better-sqlite3, for one process.
// WAL with synchronous=FULL, so a 202 survives power loss. Reads run here, on the event
// loop's own connection; every write goes, in order, to the writer thread
// (sqlite-writer-thread.ts), which commits appends that arrive together in one transaction and
// one fsync (group commit). Each caller's promise resolves only after the COMMIT that holds
// its write, so "202 means durable" holds per request, and a read started after that sees it.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import { newEventId } from './event-ids.js';
import {
  ADDRESS_COLUMNS,
  EVENT_COLUMNS,
  SENDER_COLUMNS,
  insertedEvent,
  toAddress,
  toSender,
  toViewToken,
  type AddressRow,
  type SenderRow,
  type ViewTokenRow,
} from './rows.js';
import { KEY_OF_ID } from './sqlite-migrations.js';
import { prepareEmailPartRead } from './sqlite-email-parts.js';
import { lockForThisProcess, migrate, openSqlite, restrictToOwner, type Synchronous } from './sqlite-connection.js';
import { StorageUnavailableError } from './errors.js';
import { cannotOpen, sqliteError } from './sqlite-errors.js';
import type {
  CallableWrite,
  WriteArgs,
  WriteResult,
  WireError,
  WireOutcome,
  WriteReply,
  WriteRequest,
  WriterMessage,
  WriterOptions,
} from './sqlite-writer-thread.js';
import { toAppendTuple, type AppendTuple, type CommitStats } from './sqlite-write-transactions.js';
import type {
  AddressChanges,
  AckRecord,
  AddressRecord,
  AppendInput,
  EmailPart,
  AppendResult,
  EventPageRecord,
  EventRecord,
  PurgeResult,
  SenderRecord,
  Storage,
  TokenBucketResult,
  ViewTokenRecord,
} from './storage.js';

/** A row of the page query in raw mode: the columns of EVENT_COLUMNS, in that order. */
type EventTuple = [string, string, number, string, string, string, string | null, string | null, number, number | null];
/** A row of the page query: the event, then how many candidates the page had, then the latest sequence. */
type PageTuple = [...EventTuple, number, number];

const pageRowToEvent = (row: PageTuple): EventRecord => ({
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
  /** The new event's id, from its created_at: the writer stores it by that millisecond (event-ids.ts). */
  id: string;
  capacity: number;
  maxBytes: number;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

interface InFlight {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** A request before it is numbered (Omit that keeps a union a union). */
type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

const LIVE = '(expires_at IS NULL OR expires_at > @now)';

/**
 * The highest sequence the address whose id is the next parameter has given out: its
 * newest event's, or the floor that remembers removed ones (migration 2), whichever is higher.
 */
const LATEST_SEQUENCE = `(SELECT max(last_sequence, coalesce((SELECT MAX(sequence) FROM events WHERE address_key = addresses.key), 0))
   FROM addresses WHERE id = ?)`;

/**
 * A page bounded by count and by bytes: `sized` numbers the candidates (limit + 1) and sums
 * their sizes (octet_length does not load the text); only the events kept are read — the
 * first always, then each while the sum stays within the bound. More candidates than events
 * returned means has_more. The latest sequence comes in the same statement (one snapshot),
 * so it is at least every sequence of the page. Rows as arrays, in EVENT_COLUMNS order then
 * the count and the latest: an object per row made better-sqlite3 markedly slower here.
 * `unacknowledged`: only events without acknowledged_at, filtered on the same index scan,
 * which the address's capacity bounds (docs/api.md §9.1); an index of its own would cost
 * every append another B-tree write.
 */
const pageSql = (unacknowledged: boolean) => `
  WITH sized AS (
    SELECT sequence, row_number() OVER w AS n,
           sum(octet_length(data) + coalesce(octet_length(metadata), 0)) OVER w AS running
    FROM events
    WHERE address_key = ${KEY_OF_ID} AND sequence > ?${unacknowledged ? ' AND acknowledged_at IS NULL' : ''}
    WINDOW w AS (ORDER BY sequence ROWS UNBOUNDED PRECEDING)
    ORDER BY sequence LIMIT ?
  )
  SELECT ${EVENT_COLUMNS}, (SELECT count(*) FROM sized) AS candidates, ${LATEST_SEQUENCE} AS latest
  FROM events
  WHERE address_key = ${KEY_OF_ID}
    AND sequence IN (SELECT sequence FROM sized WHERE n <= ? AND (n = 1 OR running <= ?))
  ORDER BY sequence`;

/** Address records kept in memory (about 1 KiB each); the oldest read goes first. */
const ADDRESS_CACHE_SIZE = 20_000;
/** Events one purge step removes: a few milliseconds of the writer, then appends go first. */
const PURGE_STEP_EVENTS = 1000;

/** Starts the writer thread from its module beside this one. */
function startWriter(options: WriterOptions): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./sqlite-writer-thread.js', here), { workerData: options });
  // Run from TypeScript source (the tests, through tsx): Node 20 does not apply the parent's
  // `--import tsx` hooks to a worker's entry module, so the worker loads it through tsx's API.
  const entry = JSON.stringify(new URL('./sqlite-writer-thread.ts', here).href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then((api) => api.tsImport(${entry}, ${entry}))`, {
    eval: true,
    workerData: options,
  });
}

/** A writer's error as the caller gets it: 503 for a full disk or an I/O error (sqlite-errors.ts). */
const fromWire = (error: WireError): unknown =>
  sqliteError(Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code }));

/** Runs a read on the event loop's connection; an I/O failure becomes 503 (sqlite-errors.ts). */
function read<T>(query: () => T): T {
  try {
    return query();
  } catch (error) {
    throw sqliteError(error);
  }
}

export interface SqliteOptions {
  /** PRAGMA synchronous; FULL unless a benchmark asks otherwise. */
  synchronous?: Synchronous;
  /** Turn group commit off (one transaction per append) for comparison in benchmarks. */
  groupCommit?: boolean;
  /** Told if the writer thread stops unexpectedly (every write fails from then on, /readyz too). */
  logger?: Pick<Logger, 'fatal'>;
}

export class SqliteStorage implements Storage {
  readonly engine = 'sqlite' as const;
  readonly description: string;
  /** Held while this storage is open: no second process may use the file (lockForThisProcess). */
  private readonly processLock: Database.Database;
  /** The event loop's connection: reads only (migrations aside, run before the writer starts). */
  private readonly db: Database.Database;
  private readonly writer: Worker;
  /** Appends made in this turn of the event loop, sent to the writer as one message. */
  private outbox: PendingAppend[] = [];
  private readonly inFlight = new Map<number, InFlight>();
  private nextRequestId = 1;
  private closing: Promise<void> | undefined;
  /** Set when the writer thread is gone; every write fails with it from then on. */
  private writerFailure: Error | undefined;
  /**
   * Group-commit counters of the writer thread, read by the benchmarks: appends / commits
   * is the mean batch, busyMs the time the writer spent in batches (statements, COMMIT, fsync).
   */
  readonly commitStats: CommitStats = { commits: 0, appends: 0, largestBatch: 0, busyMs: 0 };
  private readonly groupCommit: boolean;
  /**
   * Addresses by id, for the inbox and bearer checks that begin almost every request (a
   * lookup through SQLite costs a read transaction). This process is the
   * only writer of the file, so the cache stays exact by forgetting an address around every
   * write that changes or removes it (see forgetAround); expiry itself is checked against
   * `now` on every hit, as the SQL does.
   */
  private readonly addressCache = new Map<string, AddressRecord>();
  private readonly logger: SqliteOptions['logger'];
  private readonly sql;

  constructor(path: string, options: SqliteOptions = {}) {
    // Two connections (this one and the writer's) share the file: an in-memory database cannot.
    if (path === ':memory:' || path === '')
      throw new Error('the SQLite storage needs a file path (ROOST_DB), not an in-memory database');
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      restrictToOwner(path);
      this.processLock = lockForThisProcess(path);
    } catch (error) {
      // "another Roost process is using …" is already the sentence to show.
      throw (error as { code?: unknown }).code === undefined ? error : cannotOpen(path, error);
    }
    let opened: Database.Database | undefined;
    try {
      this.description = `sqlite:${path}`;
      this.groupCommit = options.groupCommit ?? true;
      const synchronous = options.synchronous ?? 'FULL';
      this.db = opened = openSqlite(path, synchronous);
      migrate(this.db);
      const db = this.db;
      this.sql = {
        addressById: db.prepare<{ id: string; now: number }, AddressRow>(
          `SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE id = @id AND ${LIVE}`,
        ),
        addressBySlug: db.prepare<{ slug: string; now: number }, AddressRow>(
          `SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE slug = @slug AND ${LIVE}`,
        ),
        countEvents: db.prepare<[string], { n: number }>(
          `SELECT COUNT(*) AS n FROM events WHERE address_key = ${KEY_OF_ID}`,
        ),
        acknowledged: db.prepare<[string, number, number, number], AckRecord>(
          `SELECT id, sequence, acknowledged_at AS acknowledgedAt FROM events
           WHERE address_key = ${KEY_OF_ID} AND acknowledged_at >= ? AND sequence <= ? ORDER BY sequence LIMIT ?`,
        ),
        anyAcknowledged: db.prepare<[string], { one: number }>(
          `SELECT 1 AS one FROM events WHERE address_key = ${KEY_OF_ID} AND acknowledged_at IS NOT NULL LIMIT 1`,
        ),
        page: db.prepare<[string, number, number, string, string, number, number], PageTuple>(pageSql(false)).raw(true),
        unacknowledgedPage: db
          .prepare<[string, number, number, string, string, number, number], PageTuple>(pageSql(true))
          .raw(true),
        // For an empty page, which has no row to carry it.
        latestSequence: db.prepare<[string], number>(`SELECT ${LATEST_SEQUENCE}`).pluck(),
        viewTokens: db.prepare<[string, number], ViewTokenRow>(
          `SELECT id, address_id, token_digest, label, created_at, expires_at FROM view_tokens
           WHERE address_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id`,
        ),
        viewToken: db.prepare<[string, string, number], ViewTokenRow>(
          `SELECT id, address_id, token_digest, label, created_at, expires_at FROM view_tokens
           WHERE address_id = ? AND token_digest = ? AND (expires_at IS NULL OR expires_at > ?)`,
        ),
        sender: db.prepare<[string], SenderRow>(`SELECT ${SENDER_COLUMNS} FROM senders WHERE address_id = ?`),
        ping: db.prepare('SELECT 1'),
        emailPart: prepareEmailPartRead(db),
      };
      this.writer = startWriter({ path, synchronous, groupCommit: this.groupCommit });
      this.writer.on('message', (replies: WriterMessage) => replies.forEach((reply) => this.settle(reply)));
      this.writer.on('error', (error: Error) => this.writerGone(error));
      this.writer.on('exit', (code) => this.writerGone(new Error(`the SQLite writer thread exited (code ${code})`)));
      this.logger = options.logger;
    } catch (error) {
      // A storage that did not open holds nothing: not its connection, not the file.
      opened?.close();
      this.processLock.close();
      throw cannotOpen(path, error);
    }
  }

  private settle(reply: WriteReply): void {
    const waiting = this.inFlight.get(reply.id);
    if (!waiting) return;
    this.inFlight.delete(reply.id);
    if (!reply.ok) return waiting.reject(fromWire(reply.error));
    if (reply.stats) Object.assign(this.commitStats, reply.stats);
    waiting.resolve(reply.value);
  }

  private writerGone(error: Error): void {
    if (!this.writerFailure && !this.closing)
      this.logger?.fatal({ err: error }, 'the SQLite writer thread stopped: writes fail until Roost is restarted');
    // Every write fails from now on: 503, and /readyz says so, until Roost is restarted.
    this.writerFailure ??= new StorageUnavailableError(
      'The storage writer thread stopped; writes fail until Roost is restarted.',
      { cause: error },
    );
    for (const waiting of this.inFlight.values()) waiting.reject(this.writerFailure);
    this.inFlight.clear();
  }

  /** Sends one request to the writer thread; resolves with its answer after the COMMIT. */
  private send<T>(request: WithoutId<WriteRequest>): Promise<T> {
    if (this.writerFailure) return Promise.reject(this.writerFailure);
    const id = this.nextRequestId++;
    return new Promise<T>((resolve, reject) => {
      this.inFlight.set(id, { resolve: resolve, reject });
      this.writer.postMessage({ ...request, id });
    });
  }

  /** Any write but an append: appends sent earlier in this turn go first, to keep the order. */
  private call<M extends CallableWrite>(method: M, ...args: WriteArgs<M>): Promise<WriteResult<M>> {
    if (this.closing) return Promise.reject(new Error('storage is closed'));
    this.sendAppends();
    return this.send<WriteResult<M>>({ op: 'call', method, args });
  }

  async insertAddress(address: AddressRecord): Promise<'ok' | 'slug_taken'> {
    return this.call('insertAddress', address);
  }

  async getAddress(id: string, now: number): Promise<AddressRecord | null> {
    const cached = this.addressCache.get(id);
    if (cached) return cached.expiresAt === null || cached.expiresAt > now ? cached : null;
    const row = read(() => this.sql.addressById.get({ id, now }));
    if (!row) return null;
    const record = Object.freeze(toAddress(row));
    if (this.addressCache.size >= ADDRESS_CACHE_SIZE) this.addressCache.delete(this.addressCache.keys().next().value!);
    this.addressCache.set(id, record);
    return record;
  }

  async getAddressBySlug(slug: string, now: number): Promise<AddressRecord | null> {
    const row = read(() => this.sql.addressBySlug.get({ slug, now }));
    return row ? toAddress(row) : null;
  }

  async deleteAddress(id: string): Promise<boolean> {
    // Appends queued before the delete land first, then go with it.
    return this.forgetAround(id, this.call('deleteAddress', id));
  }

  /** Drops the cached address now and once the write lands: a read meanwhile may cache it again. */
  private async forgetAround<T>(id: string, write: Promise<T>): Promise<T> {
    this.addressCache.delete(id);
    try {
      return await write;
    } finally {
      this.addressCache.delete(id);
    }
  }

  updateAddress(id: string, changes: AddressChanges, now: number): Promise<AddressRecord | null> {
    return this.forgetAround(id, this.call('updateAddress', id, changes, now));
  }

  replaceReadToken(id: string, digest: string, now: number, revokeViewTokens = false): Promise<AddressRecord | null> {
    return this.forgetAround(id, this.call('replaceReadToken', id, digest, now, revokeViewTokens));
  }

  replaceIngressSecret(id: string, digest: string, previousUntil: number | null, now: number) {
    return this.forgetAround(id, this.call('replaceIngressSecret', id, digest, previousUntil, now));
  }

  // The cached address carries hasSender: it is forgotten around both writes.
  putSender(sender: SenderRecord, now: number): Promise<boolean> {
    return this.forgetAround(sender.addressId, this.call('putSender', sender, now));
  }

  async getSender(addressId: string): Promise<SenderRecord | null> {
    const row = read(() => this.sql.sender.get(addressId));
    return row ? toSender(row) : null;
  }

  deleteSender(addressId: string): Promise<boolean> {
    return this.forgetAround(addressId, this.call('deleteSender', addressId));
  }

  async insertViewToken(token: ViewTokenRecord, max: number, now: number) {
    return this.call('insertViewToken', token, max, now);
  }

  async listViewTokens(addressId: string, now: number): Promise<ViewTokenRecord[]> {
    return this.sql.viewTokens.all(addressId, now).map(toViewToken);
  }

  async findViewToken(addressId: string, digest: string, now: number): Promise<ViewTokenRecord | null> {
    const row = this.sql.viewToken.get(addressId, digest, now);
    return row ? toViewToken(row) : null;
  }

  async deleteViewToken(addressId: string, tokenId: string): Promise<boolean> {
    return this.call('deleteViewToken', addressId, tokenId);
  }

  appendEvent(input: AppendInput, capacity: number, maxBytes = 0): Promise<AppendResult> {
    if (this.closing) return Promise.reject(new Error('storage is closed'));
    return new Promise((resolve, reject) => {
      this.outbox.push({ input, id: input.id ?? newEventId(input.createdAt), capacity, maxBytes, resolve, reject });
      if (!this.groupCommit) this.sendAppends();
      // Everything parsed in this turn of the event loop goes to the writer in one message.
      else if (this.outbox.length === 1) setImmediate(() => this.sendAppends());
    });
  }

  /** Sends the outbox to the writer; each append is answered after the COMMIT that holds it. */
  private sendAppends(): void {
    if (this.outbox.length === 0) return;
    const batch = this.outbox;
    this.outbox = [];
    // Pushed, not mapped: a packed array crosses postMessage faster than map's holey one.
    const items: AppendTuple[] = [];
    for (const item of batch) items.push(toAppendTuple(item.input, item.id, item.capacity, item.maxBytes));
    this.send<WireOutcome[]>({ op: 'append', items }).then(
      (outcomes) =>
        batch.forEach((item, i) => {
          const outcome = outcomes[i];
          if (typeof outcome === 'number')
            item.resolve({ status: 'created', event: insertedEvent(item.input, item.id, outcome) });
          else if (outcome.status === 'failed') item.reject(fromWire(outcome.error));
          else item.resolve(outcome);
        }),
      // The COMMIT failed, or the writer is gone: nothing in the batch is durable.
      (error) => batch.forEach((item) => item.reject(error)),
    );
  }

  async hasRoom(addressId: string, capacity: number): Promise<boolean> {
    return read(
      () => this.sql.countEvents.get(addressId)!.n < capacity || this.sql.anyAcknowledged.get(addressId) !== undefined,
    );
  }

  async listEvents(
    addressId: string,
    after: number,
    limit: number,
    maxBytes = Number.MAX_SAFE_INTEGER,
    unacknowledgedOnly = false,
  ): Promise<EventPageRecord> {
    const page = unacknowledgedOnly ? this.sql.unacknowledgedPage : this.sql.page;
    const rows = read(() => page.all(addressId, after, limit + 1, addressId, addressId, limit, maxBytes));
    if (rows.length === 0)
      return { events: [], hasMore: false, latestSequence: read(() => this.sql.latestSequence.get(addressId)) ?? 0 };
    return { events: rows.map(pageRowToEvent), hasMore: rows[0][10] > rows.length, latestSequence: rows[0][11] };
  }

  async ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    return this.call('ackEvent', addressId, eventId, now);
  }

  async ackUpTo(addressId: string, upTo: number, now: number): Promise<number> {
    return this.call('ackUpTo', addressId, upTo, now);
  }

  async listAcknowledged(addressId: string, since: number, upTo: number, limit: number): Promise<AckRecord[]> {
    return this.sql.acknowledged.all(addressId, since, upTo, limit);
  }

  async getEmailPart(addressId: string, eventId: string, part: number): Promise<EmailPart | null> {
    return this.sql.emailPart(addressId, eventId, part);
  }

  /**
   * In steps of PURGE_STEP_EVENTS, each its own message to the writer: appends sent while a
   * step runs are committed before the next one, so a large purge delays them by one step.
   */
  async purge(now: number, retainAfter: number): Promise<PurgeResult> {
    const result: PurgeResult = { expiredAddressIds: [], eventsPurged: 0 };
    for (;;) {
      const step = await this.call('purgeStep', now, retainAfter, PURGE_STEP_EVENTS);
      for (const id of step.expiredAddressIds) this.addressCache.delete(id);
      result.expiredAddressIds.push(...step.expiredAddressIds);
      result.eventsPurged += step.eventsPurged;
      if (step.done) return result;
    }
  }

  async takeToken(key: string, limit: number, periodMs: number, now: number): Promise<TokenBucketResult> {
    return this.call('takeToken', key, limit, periodMs, now);
  }

  async ping(): Promise<void> {
    if (this.writerFailure) throw this.writerFailure;
    this.sql.ping.get();
  }

  /** Commits what is pending, stops the writer thread and closes both connections. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.sendAppends();
      if (!this.writerFailure) {
        const exited = new Promise((resolve) => this.writer.once('exit', resolve));
        await this.send({ op: 'close' });
        await exited;
      }
      this.db.close();
      this.processLock.close(); // rolls the lock's transaction back: the file is free
    })();
    return this.closing;
  }
}
