// The shared engine: PostgreSQL through node-postgres, for any number of Roost instances
// on one database. Every rule that concurrency could break is settled inside PostgreSQL:
// appends lock their address row (events-append.ts), the create rate-limit bucket is a row
// taken under its lock (rate-buckets.ts), purges run on one instance at a time (purge.ts).
// Commits are announced with NOTIFY; each instance keeps one LISTEN connection, outside
// the pool (listener.ts), that feeds onExternalChange so that polls held anywhere wake.
// This class only puts the entity modules together; the plumbing is connection.ts and
// the schema migrations.ts.
import type { Logger } from 'pino';
import type {
  AckRecord,
  AddressChanges,
  AddressRecord,
  AppendParams,
  AppendResult,
  CallbackRecord,
  CompleteCallbackParams,
  CreateCallbackParams,
  CreateCallbackResult,
  ListCallbacksParams,
  EmailPart,
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
import { PgConnection, type PostgresOptions } from './connection.js';
import { databaseUnavailable } from './errors.js';
import { WAKE_CHANNEL, WakeListener, type ListenerHeartbeat } from './listener.js';
import { ConnectionSettingError } from './connection-options.js';
import { DatabaseStartError, describeDatabase, prepareDatabase } from './start.js';
import { PgAddresses } from './addresses.js';
import { PgViewTokens } from './credentials.js';
import { PgSenders } from './senders.js';
import { PgAppends } from './events-append.js';
import { PgEventReads } from './events-read.js';
import { getEmailPart } from './email-parts.js';
import { purge } from './purge.js';
import { PgRateBuckets } from './rate-buckets.js';
import { PgCallbacks } from './callbacks.js';

export type { ListenerHeartbeat } from './listener.js';
export { ADVISORY_LOCKS, type PostgresOptions } from './connection.js';

/** A wake-up whose payload names no address: the listener's proof that NOTIFY reaches it. */
const PROBE_WAKE = `SELECT pg_notify('${WAKE_CHANNEL}', $1)`;

export class PostgresStorage implements Storage {
  readonly engine = 'postgres' as const;
  readonly description: string;
  private readonly db: PgConnection;
  private readonly listener: WakeListener;
  private readonly changeListeners = new Set<(addressId: string) => void>();
  private closing: Promise<void> | undefined;
  private readonly addresses: PgAddresses;
  private readonly viewTokens: PgViewTokens;
  private readonly senders: PgSenders;
  private readonly appends: PgAppends;
  private readonly events: PgEventReads;
  private readonly buckets: PgRateBuckets;
  private readonly callbacks: PgCallbacks;

  /**
   * Waits for the database, brings its schema to this build's (start.ts), then opens the
   * pool and the LISTEN connection, proving that a NOTIFY sent through the pool reaches it.
   * `options.listenerHeartbeat` is for tests, which cannot wait 30 s.
   */
  static async open(
    config: PostgresOptions,
    logger?: Logger,
    options: { listenerHeartbeat?: ListenerHeartbeat } = {},
  ): Promise<PostgresStorage> {
    const prepared = await prepareDatabase(config, logger).catch((error: unknown) => {
      if (error instanceof DatabaseStartError || error instanceof ConnectionSettingError) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(`Cannot open PostgreSQL at ${describeDatabase(config.databaseUrl ?? '')}: ${reason}`, {
        cause: error,
      });
    });
    const storage = new PostgresStorage(config, prepared.mode, logger, options.listenerHeartbeat);
    try {
      await storage.listener.start();
    } catch (error) {
      await storage.close();
      // At start the operator needs the real cause, not the 503 a request would get.
      const reason = (error as { cause?: unknown }).cause ?? error;
      throw new Error(
        `Cannot open PostgreSQL at ${storage.description}: ${reason instanceof Error ? reason.message : String(reason)}`,
        { cause: error },
      );
    }
    return storage;
  }

  private constructor(
    config: PostgresOptions,
    mode: 'session' | 'transaction',
    logger?: Logger,
    listenerHeartbeat?: ListenerHeartbeat,
  ) {
    this.db = new PgConnection(config, mode, logger);
    this.description = this.db.description;
    // Appends, and address look-ups, that arrive together go as one statement. One waits
    // for a batch to take it no longer than for a pooled connection (pgConnectTimeoutMs):
    // then it is `unavailable`, as it would be in a full pool.
    const waitLimits = {
      maxWaitMs: config.pgConnectTimeoutMs,
      expire: (item: { reject: (error: unknown) => void }) =>
        item.reject(databaseUnavailable(new Error('no database connection became free in time'))),
    };
    this.addresses = new PgAddresses(this.db, waitLimits);
    this.viewTokens = new PgViewTokens(this.db);
    this.senders = new PgSenders(this.db);
    this.appends = new PgAppends(this.db, waitLimits, logger);
    this.events = new PgEventReads(this.db);
    this.buckets = new PgRateBuckets(this.db);
    this.callbacks = new PgCallbacks(this.db);
    this.listener = new WakeListener(
      this.db.listenConnection,
      (addressId) => {
        for (const listener of this.changeListeners) listener(addressId);
      },
      logger,
      listenerHeartbeat,
      { setting: this.db.listenSetting, send: (payload) => this.db.query(PROBE_WAKE, [payload]) },
    );
  }

  insertAddress(address: AddressRecord): Promise<'ok' | 'slug_taken'> {
    return this.addresses.insert(address);
  }

  /** Batched (every delivery asks, just before its append): one statement for those that arrive together. */
  getAddress(id: string, now: number): Promise<AddressRecord | null> {
    return this.addresses.get(id, now);
  }

  recentAddress(id: string, now: number): AddressRecord | null {
    return this.addresses.recentlyRead(id, now);
  }

  getAddressBySlug(slug: string, now: number): Promise<AddressRecord | null> {
    return this.addresses.bySlug(slug, now);
  }

  deleteAddress(id: string): Promise<boolean> {
    return this.addresses.delete(id);
  }

  updateAddress(id: string, changes: AddressChanges, now: number): Promise<AddressRecord | null> {
    return this.addresses.update(id, changes, now);
  }

  replaceReadToken(params: ReplaceReadTokenParams): Promise<AddressRecord | null> {
    return this.addresses.replaceReadToken(params);
  }

  replaceIngressSecret({ id, digest, previousUntil, now }: ReplaceIngressSecretParams) {
    return this.addresses.replaceIngressSecret(id, digest, previousUntil, now);
  }

  putSender(sender: SenderRecord, now: number): Promise<boolean> {
    this.addresses.forget(sender.addressId);
    return this.senders.put(sender, now);
  }

  getSender(addressId: string): Promise<SenderRecord | null> {
    return this.senders.get(addressId);
  }

  deleteSender(addressId: string): Promise<boolean> {
    this.addresses.forget(addressId);
    return this.senders.delete(addressId);
  }

  insertViewToken(token: ViewTokenRecord, max: number, now: number): Promise<'ok' | 'limit' | 'address_not_found'> {
    return this.viewTokens.insert(token, max, now);
  }

  listViewTokens(addressId: string, now: number): Promise<ViewTokenRecord[]> {
    return this.viewTokens.list(addressId, now);
  }

  findViewToken(addressId: string, digest: string, now: number): Promise<ViewTokenRecord | null> {
    return this.viewTokens.find(addressId, digest, now);
  }

  deleteViewToken(addressId: string, tokenId: string): Promise<boolean> {
    return this.viewTokens.delete(addressId, tokenId);
  }

  appendEvent(params: AppendParams): Promise<AppendResult> {
    return this.appends.append(params);
  }

  hasRoom(addressId: string, capacity: number): Promise<boolean> {
    return this.events.hasRoom(addressId, capacity);
  }

  listEvents(params: ListEventsParams): Promise<EventPageRecord> {
    return this.events.list(params);
  }

  // An acknowledgement is announced after its commit, as a delivery is: streams on every
  // instance tell their readers (docs/api.md §4.1).
  async ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const record = await this.events.ack(addressId, eventId, now);
    if (record?.acknowledgedAt === now) this.appends.announce(addressId);
    return record;
  }

  async ackUpTo(addressId: string, upTo: number, now: number): Promise<number> {
    const acknowledged = await this.events.ackUpTo(addressId, upTo, now);
    if (acknowledged > 0) this.appends.announce(addressId);
    return acknowledged;
  }

  listAcknowledged(params: ListAcknowledgedParams): Promise<AckRecord[]> {
    return this.events.acknowledged(params);
  }

  getEmailPart(addressId: string, eventId: string, part: number): Promise<EmailPart | null> {
    return getEmailPart(this.db, addressId, eventId, part);
  }

  purge(now: number, retainAfter: number): Promise<PurgeResult> {
    return purge(this.db, now, retainAfter);
  }

  takeToken({ key, limit, periodMs, now }: TakeTokenParams): Promise<TokenBucketResult> {
    return this.buckets.take(key, limit, periodMs, now);
  }

  createCallback(params: CreateCallbackParams): Promise<CreateCallbackResult> {
    return this.callbacks.create(params);
  }

  getCallback(addressId: string, id: string): Promise<CallbackRecord | null> {
    return this.callbacks.get(addressId, id);
  }

  listCallbacks(params: ListCallbacksParams): Promise<CallbackRecord[]> {
    return this.callbacks.list(params);
  }

  countCallbackDelivery(addressId: string, id: string): Promise<void> {
    return this.callbacks.countDelivery(addressId, id);
  }

  completeCallback(params: CompleteCallbackParams): Promise<CallbackRecord | null> {
    return this.callbacks.complete(params);
  }

  cancelCallback(addressId: string, id: string): Promise<CallbackRecord | null> {
    return this.callbacks.cancel(addressId, id);
  }

  dueCallbacks(now: number, limit: number): Promise<CallbackRecord[]> {
    return this.callbacks.due(now, limit);
  }

  expireCallback(addressId: string, id: string): Promise<boolean> {
    return this.callbacks.expire(addressId, id);
  }

  purgeCallbacks(before: number): Promise<number> {
    return this.callbacks.purge(before);
  }

  onExternalChange(listener: (addressId: string) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** The LISTEN connection's backend pid (tests terminate it to prove the reconnect). */
  listenerBackendPid(): Promise<number | undefined> {
    return this.listener.backendPid();
  }

  get listening(): boolean {
    return this.listener.connected;
  }

  /** Whether wake-ups from other instances arrive (the LISTEN connection is up and hears), give or take a reconnect. */
  get wakeupsArriving(): boolean {
    return this.listener.arriving;
  }

  /** Whether statements are named and settings per session, or unnamed and per transaction. */
  get poolMode(): 'session' | 'transaction' {
    return this.db.poolMode;
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.appends.close(); // the last appends' wake-ups still go out
      await this.listener.stop();
      await this.db.end();
    })();
    return this.closing;
  }
}
