// The SQLite writer thread: the only connection that writes the file. It takes the write
// requests of engine.ts in order and answers each one after its COMMIT. Appends that arrive
// while a batch is being committed — or in one message — are committed together in the next
// batch (group commit), so the event loop goes on parsing requests while the disk syncs,
// and a 202 still waits for the fsync of its own event.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite, type Synchronous } from './connection.js';
import { SqliteWrites, type AppendOutcome, type AppendTuple } from './writes.js';

export interface WriterOptions {
  path: string;
  synchronous: Synchronous;
  groupCommit: boolean;
}

/**
 * The writes the event loop calls by name (appends come in batches instead), typed from
 * the classes that make them: the compiler checks each call's arguments and result.
 */
type CallableWrites = Pick<
  SqliteWrites,
  | 'insertAddress'
  | 'deleteAddress'
  | 'updateAddress'
  | 'replaceReadToken'
  | 'replaceIngressSecret'
  | 'insertViewToken'
  | 'deleteViewToken'
  | 'putSender'
  | 'deleteSender'
  | 'ackEvent'
  | 'ackUpTo'
  | 'purgeStep'
  | 'takeToken'
  | 'createCallback'
  | 'countCallbackDelivery'
  | 'completeCallback'
  | 'cancelCallback'
  | 'expireCallback'
  | 'purgeCallbacks'
>;

export type CallableWrite = keyof CallableWrites;
export type WriteArgs<M extends CallableWrite> = Parameters<CallableWrites[M]>;
export type WriteResult<M extends CallableWrite> = ReturnType<CallableWrites[M]>;

/** One call: the method's name and its arguments, which belong together. */
export interface CallRequest<M extends CallableWrite = CallableWrite> {
  id: number;
  op: 'call';
  method: M;
  args: WriteArgs<M>;
}

/** What the event loop sends: appends in batches, any other write as a method call. */
export type WriteRequest =
  { id: number; op: 'append'; items: AppendTuple[] } | CallRequest | { id: number; op: 'close' };

/** An error as it crosses the thread boundary (its class is lost; message and code are kept). */
export interface WireError {
  message: string;
  code?: string;
}

export type WriteReply =
  | { id: number; ok: true; value: unknown; stats?: SqliteWrites['commitStats'] }
  | { id: number; ok: false; error: WireError };

/** What the writer sends back: the replies to every request of one batch, or to one call. */
export type WriterMessage = WriteReply[];

/**
 * An append's outcome as it crosses back: a created event as its bare sequence (almost
 * every append, and a number costs postMessage less than an object), the rest as objects.
 */
export type WireOutcome =
  | number
  | Exclude<AppendOutcome, { status: 'created' } | { status: 'failed' }>
  | { status: 'failed'; error: WireError };

const toWireError = (error: unknown): WireError => ({
  message: error instanceof Error ? error.message : String(error),
  code: (error as { code?: unknown })?.code === undefined ? undefined : String((error as { code?: unknown }).code),
});

const toWireOutcome = (outcome: AppendOutcome): WireOutcome =>
  outcome.status === 'created'
    ? outcome.sequence
    : outcome.status === 'failed'
      ? { status: 'failed', error: toWireError(outcome.error) }
      : outcome;

const port = parentPort!;
const options = workerData as WriterOptions;
const db = openSqlite(options.path, options.synchronous);
// Checkpoints run inside a COMMIT on this thread and every waiting append waits for them:
// fewer, larger ones copy each hot page back once instead of many times.
db.pragma('wal_autocheckpoint = 16000');
// After a checkpoint the WAL file is reused from its start; beyond this it is truncated.
db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
// A smaller page cache for the writer: a commit that splits an index page scans the whole
// cache, and the writer needs few pages beyond the ends of its indexes (reads keep the default).
db.pragma('cache_size = -8000');
const writes = new SqliteWrites(db);
const calls: { [M in CallableWrite]: (...args: WriteArgs<M>) => WriteResult<M> } = {
  insertAddress: (...args) => writes.insertAddress(...args),
  deleteAddress: (...args) => writes.deleteAddress(...args),
  updateAddress: (...args) => writes.updateAddress(...args),
  replaceReadToken: (...args) => writes.replaceReadToken(...args),
  replaceIngressSecret: (...args) => writes.replaceIngressSecret(...args),
  putSender: (...args) => writes.putSender(...args),
  deleteSender: (...args) => writes.deleteSender(...args),
  insertViewToken: (...args) => writes.insertViewToken(...args),
  deleteViewToken: (...args) => writes.deleteViewToken(...args),
  ackEvent: (...args) => writes.ackEvent(...args),
  ackUpTo: (...args) => writes.ackUpTo(...args),
  purgeStep: (...args) => writes.purgeStep(...args),
  takeToken: (...args) => writes.takeToken(...args),
  createCallback: (...args) => writes.createCallback(...args),
  countCallbackDelivery: (...args) => writes.countCallbackDelivery(...args),
  completeCallback: (...args) => writes.completeCallback(...args),
  cancelCallback: (...args) => writes.cancelCallback(...args),
  expireCallback: (...args) => writes.expireCallback(...args),
  purgeCallbacks: (...args) => writes.purgeCallbacks(...args),
};
const dispatch = <M extends CallableWrite>(request: CallRequest<M>): WriteResult<M> =>
  calls[request.method](...request.args);
let pending: Array<Extract<WriteRequest, { op: 'append' }>> = [];
let flushScheduled = false;

function flush(): void {
  flushScheduled = false;
  if (pending.length === 0) return;
  const requests = pending;
  pending = [];
  const items = requests.length === 1 ? requests[0].items : requests.flatMap((r) => r.items);
  let outcomes;
  try {
    outcomes = writes.appendBatch(items);
  } catch (error) {
    // The COMMIT failed, or a failure ended the transaction: nothing in the batch is durable.
    port.postMessage(
      requests.map((r): WriteReply => ({ id: r.id, ok: false, error: toWireError(error) })) satisfies WriterMessage,
    );
    return;
  }
  // One message for the whole batch: a postMessage (and a wake-up of the event loop) per
  // commit rather than one per request that joined it. Arrays are built by push, not map:
  // map makes holey arrays, which postMessage encodes element by element as sparse ones.
  const replies: WriterMessage = [];
  let at = 0;
  for (const request of requests) {
    const value: WireOutcome[] = [];
    for (const end = at + request.items.length; at < end; at++) value.push(toWireOutcome(outcomes[at]));
    replies.push({ id: request.id, ok: true, value });
  }
  (replies[replies.length - 1] as Extract<WriteReply, { ok: true }>).stats = writes.commitStats;
  port.postMessage(replies);
}

port.on('message', (request: WriteRequest) => {
  if (request.op === 'append') {
    pending.push(request);
    if (!options.groupCommit) flush();
    else if (!flushScheduled) {
      // Messages that are already queued are delivered before this runs: they join the batch.
      flushScheduled = true;
      setImmediate(flush);
    }
    return;
  }
  flush(); // appends sent before this request land first
  if (request.op === 'close') {
    db.close();
    port.postMessage([{ id: request.id, ok: true, value: null }] satisfies WriterMessage);
    port.close();
    return;
  }
  try {
    const value = dispatch(request);
    port.postMessage([{ id: request.id, ok: true, value }] satisfies WriterMessage);
  } catch (error) {
    port.postMessage([{ id: request.id, ok: false, error: toWireError(error) }] satisfies WriterMessage);
  }
});
