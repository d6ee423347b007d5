// Every write to the SQLite file, on the one connection that makes them (the writer thread's,
// see writer-thread.ts): the entity modules' writes put together, each method one
// transaction except appendBatch, which puts a whole batch of appends in one transaction
// and one fsync (group commit). What the append side keeps in memory about each queue is
// dropped here around every other write that changes a queue.
import type Database from 'better-sqlite3';
import type {
  AddressChanges,
  AddressRecord,
  CallbackRecord,
  CompleteCallbackParams,
  CreateCallbackResult,
  EventRecord,
  PurgeResult,
  SenderRecord,
  TokenBucketResult,
  ViewTokenRecord,
} from '../storage.js';
import { AckWrites } from './acks.js';
import { AddressWrites } from './addresses.js';
import { CallbackWrites } from './callbacks.js';
import { ViewTokenWrites } from './credentials.js';
import { SqliteAppends, type AppendOutcome, type AppendTuple, type CommitStats } from './events-append.js';
import { PurgeWrites } from './purge.js';
import { RateBucketWrites } from './rate-buckets.js';
import { SenderWrites } from './senders.js';

export { toAppendTuple, type AppendOutcome, type AppendTuple, type CommitStats } from './events-append.js';

export class SqliteWrites {
  private readonly addresses: AddressWrites;
  private readonly viewTokens: ViewTokenWrites;
  private readonly senders: SenderWrites;
  private readonly appends: SqliteAppends;
  private readonly acks: AckWrites;
  private readonly purges: PurgeWrites;
  private readonly buckets: RateBucketWrites;
  private readonly callbacks: CallbackWrites;

  constructor(db: Database.Database) {
    this.addresses = new AddressWrites(db);
    const isLive = (id: string, now: number) => this.addresses.live(id, now) !== null;
    this.viewTokens = new ViewTokenWrites(db, isLive);
    this.senders = new SenderWrites(db, isLive);
    this.appends = new SqliteAppends(db);
    this.acks = new AckWrites(db);
    this.purges = new PurgeWrites(db);
    this.buckets = new RateBucketWrites(db);
    this.callbacks = new CallbackWrites(db, isLive);
  }

  get commitStats(): CommitStats {
    return this.appends.commitStats;
  }

  appendBatch(batch: readonly AppendTuple[]): AppendOutcome[] {
    return this.appends.appendBatch(batch);
  }

  insertAddress(address: AddressRecord): 'ok' | 'slug_taken' {
    return this.addresses.insert(address);
  }

  deleteAddress(id: string): boolean {
    this.appends.forget(id);
    return this.addresses.delete(id);
  }

  updateAddress(id: string, changes: AddressChanges, now: number): AddressRecord | null {
    this.appends.forget(id); // its expiry may change
    return this.addresses.update(id, changes, now);
  }

  replaceReadToken(id: string, digest: string, now: number, revokeViewTokens: boolean): AddressRecord | null {
    return this.addresses.replaceReadToken(id, digest, now, revokeViewTokens);
  }

  replaceIngressSecret(id: string, digest: string, previousUntil: number | null, now: number): AddressRecord | null {
    return this.addresses.replaceIngressSecret(id, digest, previousUntil, now);
  }

  insertViewToken(token: ViewTokenRecord, max: number, now: number): 'ok' | 'limit' | 'address_not_found' {
    return this.viewTokens.insert(token, max, now);
  }

  deleteViewToken(addressId: string, tokenId: string): boolean {
    return this.viewTokens.delete(addressId, tokenId);
  }

  putSender(sender: SenderRecord, now: number): boolean {
    return this.senders.put(sender, now);
  }

  deleteSender(addressId: string): boolean {
    return this.senders.delete(addressId);
  }

  ackEvent(addressId: string, eventId: string, now: number): EventRecord | null {
    return this.acks.ack(addressId, eventId, now);
  }

  ackUpTo(addressId: string, upTo: number, now: number): number {
    return this.acks.ackUpTo(addressId, upTo, now);
  }

  /** A whole purge at once (tests and tools; the service purges in steps, see engine.ts). */
  purge(now: number, retainAfter: number): PurgeResult {
    return this.forgettingOnFailure(() =>
      this.purges.purge(now, retainAfter, (step) => this.appends.forgetEmptied(step.emptied)),
    );
  }

  purgeStep(now: number, retainAfter: number, budget: number): PurgeResult & { done: boolean } {
    const { emptied, ...step } = this.forgettingOnFailure(() => this.purges.step(now, retainAfter, budget));
    // Only the queues the step removed events from: the others' states hold, and reading
    // them all again after every sweep would cost a sum over each queue's events.
    this.appends.forgetEmptied(emptied);
    return step;
  }

  /** A purge that fails may have committed a part (a step is two transactions): then no queue state is trusted. */
  private forgettingOnFailure<T>(purge: () => T): T {
    try {
      return purge();
    } catch (error) {
      this.appends.forgetAll();
      throw error;
    }
  }

  takeToken(key: string, limit: number, periodMs: number, now: number): TokenBucketResult {
    return this.buckets.take(key, limit, periodMs, now);
  }

  createCallback(callback: CallbackRecord, maxWaiting: number, now: number): CreateCallbackResult {
    return this.callbacks.create(callback, maxWaiting, now);
  }

  countCallbackDelivery(addressId: string, id: string): void {
    this.callbacks.countDelivery(addressId, id);
  }

  completeCallback(params: CompleteCallbackParams): CallbackRecord | null {
    return this.callbacks.complete(params);
  }

  cancelCallback(addressId: string, id: string): CallbackRecord | null {
    return this.callbacks.cancel(addressId, id);
  }

  expireCallback(addressId: string, id: string): boolean {
    return this.callbacks.expire(addressId, id);
  }

  purgeCallbacks(before: number): number {
    return this.callbacks.purge(before);
  }
}
