// The embedded engine: one SQLite file through better-sqlite3, for one process.
// WAL with synchronous=FULL, so a 202 survives power loss. Reads run here, on the event
// loop's own connection; every write goes, in order, to the writer thread
// (writer-thread.ts), which commits appends that arrive together in one transaction and
// one fsync (group commit). Each caller's promise resolves only after the COMMIT that holds
// its write, so "202 means durable" holds per request, and a read started after that sees it.
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import { AddressCache, ADDRESS_CACHE_SIZE } from '../address-cache.js';
import { newEventId } from '../event-ids.js';
import { insertedEvent } from '../tables.js';
import { lockForThisProcess, migrate, openSqlite, restrictToOwner, type Synchronous } from './connection.js';
import { StorageUnavailableError } from '../errors.js';
import { cannotOpen, sqliteError } from './errors.js';
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
} from './writer-thread.js';
import { toAppendTuple, type AppendTuple, type CommitStats } from './events-append.js';
import { AddressReads } from './addresses.js';
import { ViewTokenReads } from './credentials.js';
import { SenderReads } from './senders.js';
import { EventReads } from './events-read.js';
import { CallbackReads } from './callbacks.js';
import { prepareEmailPartRead } from './email-parts.js';
import type {
  AddressChanges,
  AckRecord,
  AddressRecord,
  AppendInput,
  AppendParams,
  EmailPart,
  AppendResult,
  CallbackRecord,
  CompleteCallbackParams,
  CreateCallbackParams,
  CreateCallbackResult,
  ListCallbacksParams,
  EventPageRecord,
  EventRecord,
  ListAcknowledgedParams,
  ListEventsParams,
  PurgeResult,
  ReplaceIngressSecretParams,
  ReplaceReadTokenParams,
  SenderRecord,
  Storage,
  TakeTokenParams,
  TokenBucketResult,
  ViewTokenRecord,
} from '../storage.js';

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

/** Events one purge step removes: a few milliseconds of the writer, then appends go first. */
const PURGE_STEP_EVENTS = 1000;

/**
 * Starts the writer thread from its module beside this one (its .ts source under tsx, which
 * workers inherit). Named, so that `top -H` and /proc show it (Node 24 names the OS thread).
 */
function startWriter(options: WriterOptions): Worker {
  const here = import.meta.url;
  const entry = new URL(here.endsWith('.ts') ? './writer-thread.ts' : './writer-thread.js', here);
  return new Worker(entry, { workerData: options, name: 'roost-writer' });
}

/** A writer's error as the caller gets it: 503 for a full disk or an I/O error (errors.ts). */
const fromWire = (error: WireError): unknown =>
  sqliteError(Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code }));

/** Runs a read on the event loop's connection; an I/O failure becomes 503 (errors.ts). */
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
  /** What the events read lately may hold (recent-events.ts); 0 keeps none, for comparison in benchmarks. */
  recentEventBytes?: number;
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
  private readonly addressCache = new AddressCache();
  /**
   * The id each slug named when last read (every email's recipient check asks by slug). A
   * slug names one address for as long as that address exists, so while the address is
   * cached the hint holds; once it is gone (deleted, purged, dropped) the slug is read again.
   */
  private readonly slugIds = new Map<string, string>();
  private readonly logger: SqliteOptions['logger'];
  /** Every read of the event loop's connection, by entity; each call goes through read(). */
  private readonly reads;

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
      this.reads = {
        addresses: new AddressReads(db),
        viewTokens: new ViewTokenReads(db),
        senders: new SenderReads(db),
        events: new EventReads(db, options.recentEventBytes),
        callbacks: new CallbackReads(db),
        emailPart: prepareEmailPartRead(db),
        ping: db.prepare('SELECT 1'),
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
    const cached = this.addressCache.get(id, now);
    if (cached !== undefined) return cached;
    const found = read(() => this.reads.addresses.byId(id, now));
    return found && this.addressCache.keep(found);
  }

  /** None: getAddress is exact and in memory here, and every change goes through this process. */
  recentAddress(): null {
    return null;
  }

  async getAddressBySlug(slug: string, now: number): Promise<AddressRecord | null> {
    const hinted = this.slugIds.get(slug);
    const cached = hinted === undefined ? undefined : this.addressCache.get(hinted, now);
    if (cached !== undefined) return cached;
    const found = read(() => this.reads.addresses.bySlug(slug, now));
    if (!found) return null;
    if (this.slugIds.size >= ADDRESS_CACHE_SIZE) this.slugIds.delete(this.slugIds.keys().next().value!);
    this.slugIds.set(slug, found.id);
    return this.addressCache.keep(found);
  }

  async deleteAddress(id: string): Promise<boolean> {
    this.reads.events.forget(id);
    // Appends queued before the delete land first, then go with it.
    return this.forgetAround(id, this.call('deleteAddress', id));
  }

  /** Drops the cached address now and once the write lands: a read meanwhile may cache it again. */
  private async forgetAround<T>(id: string, write: Promise<T>): Promise<T> {
    this.addressCache.forget(id);
    try {
      return await write;
    } finally {
      this.addressCache.forget(id);
    }
  }

  updateAddress(id: string, changes: AddressChanges, now: number): Promise<AddressRecord | null> {
    return this.forgetAround(id, this.call('updateAddress', id, changes, now));
  }

  replaceReadToken({ id, digest, now, revokeViewTokens }: ReplaceReadTokenParams): Promise<AddressRecord | null> {
    return this.forgetAround(id, this.call('replaceReadToken', id, digest, now, revokeViewTokens));
  }

  replaceIngressSecret({ id, digest, previousUntil, now }: ReplaceIngressSecretParams) {
    return this.forgetAround(id, this.call('replaceIngressSecret', id, digest, previousUntil, now));
  }

  // The cached address carries hasSender: it is forgotten around both writes.
  putSender(sender: SenderRecord, now: number): Promise<boolean> {
    return this.forgetAround(sender.addressId, this.call('putSender', sender, now));
  }

  async getSender(addressId: string): Promise<SenderRecord | null> {
    return read(() => this.reads.senders.get(addressId));
  }

  deleteSender(addressId: string): Promise<boolean> {
    return this.forgetAround(addressId, this.call('deleteSender', addressId));
  }

  async insertViewToken(token: ViewTokenRecord, max: number, now: number) {
    return this.call('insertViewToken', token, max, now);
  }

  async listViewTokens(addressId: string, now: number): Promise<ViewTokenRecord[]> {
    return read(() => this.reads.viewTokens.list(addressId, now));
  }

  async findViewToken(addressId: string, digest: string, now: number): Promise<ViewTokenRecord | null> {
    return read(() => this.reads.viewTokens.find(addressId, digest, now));
  }

  async deleteViewToken(addressId: string, tokenId: string): Promise<boolean> {
    return this.call('deleteViewToken', addressId, tokenId);
  }

  appendEvent({ event: input, capacity, maxBytes = 0 }: AppendParams): Promise<AppendResult> {
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
          if (typeof outcome === 'number') {
            const event = this.reads.events.appended(insertedEvent(item.input, item.id, outcome));
            item.resolve({ status: 'created', event });
          } else if (outcome.status === 'failed') item.reject(fromWire(outcome.error));
          else item.resolve(outcome);
        }),
      // The COMMIT failed, or the writer is gone: nothing in the batch is durable.
      (error) => batch.forEach((item) => item.reject(error)),
    );
  }

  async hasRoom(addressId: string, capacity: number): Promise<boolean> {
    return read(() => this.reads.events.hasRoom(addressId, capacity));
  }

  async listEvents(params: ListEventsParams): Promise<EventPageRecord> {
    return read(() => this.reads.events.list(params));
  }

  async ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    return this.call('ackEvent', addressId, eventId, now);
  }

  async ackUpTo(addressId: string, upTo: number, now: number): Promise<number> {
    return this.call('ackUpTo', addressId, upTo, now);
  }

  async listAcknowledged(params: ListAcknowledgedParams): Promise<AckRecord[]> {
    return read(() => this.reads.events.acknowledged(params));
  }

  async getEmailPart(addressId: string, eventId: string, part: number): Promise<EmailPart | null> {
    return read(() => this.reads.emailPart(addressId, eventId, part));
  }

  /**
   * In steps of PURGE_STEP_EVENTS, each its own message to the writer: appends sent while a
   * step runs are committed before the next one, so a large purge delays them by one step.
   */
  async purge(now: number, retainAfter: number): Promise<PurgeResult> {
    const result: PurgeResult = { expiredAddressIds: [], eventsPurged: 0 };
    for (;;) {
      const step = await this.call('purgeStep', now, retainAfter, PURGE_STEP_EVENTS);
      for (const id of step.expiredAddressIds) this.addressCache.forget(id);
      result.expiredAddressIds.push(...step.expiredAddressIds);
      result.eventsPurged += step.eventsPurged;
      if (step.done) return result;
    }
  }

  async takeToken({ key, limit, periodMs, now }: TakeTokenParams): Promise<TokenBucketResult> {
    return this.call('takeToken', key, limit, periodMs, now);
  }

  createCallback({ callback, maxWaiting, now }: CreateCallbackParams): Promise<CreateCallbackResult> {
    return this.call('createCallback', callback, maxWaiting, now);
  }

  async getCallback(addressId: string, id: string): Promise<CallbackRecord | null> {
    return read(() => this.reads.callbacks.get(addressId, id));
  }

  async listCallbacks(params: ListCallbacksParams): Promise<CallbackRecord[]> {
    return read(() => this.reads.callbacks.list(params));
  }

  countCallbackDelivery(addressId: string, id: string): Promise<void> {
    return this.call('countCallbackDelivery', addressId, id);
  }

  completeCallback(params: CompleteCallbackParams): Promise<CallbackRecord | null> {
    return this.call('completeCallback', params);
  }

  cancelCallback(addressId: string, id: string): Promise<CallbackRecord | null> {
    return this.call('cancelCallback', addressId, id);
  }

  async dueCallbacks(now: number, limit: number): Promise<CallbackRecord[]> {
    return read(() => this.reads.callbacks.due(now, limit));
  }

  expireCallback(addressId: string, id: string): Promise<boolean> {
    return this.call('expireCallback', addressId, id);
  }

  purgeCallbacks(before: number): Promise<number> {
    return this.call('purgeCallbacks', before);
  }

  async ping(): Promise<void> {
    if (this.writerFailure) throw this.writerFailure;
    read(() => this.reads.ping.get());
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
