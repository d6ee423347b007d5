// The writer thread of the durable SQLite baseline (bench/durable.ts): one thread owns the
// file, appends that arrive while it commits go in the next transaction (group commit),
// `synchronous = FULL` in WAL mode, as in Roost's SQLite engine, and nothing else.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

/** One append as it crosses: the address's number and the body's JSON text. */
export type DurableAppend = [address: number, data: string];
export interface DurableBatch {
  id: number;
  items: DurableAppend[];
}
/** The sequences given, in the batch's order. */
export interface DurableReply {
  id: number;
  sequences: number[];
}

const db = new Database((workerData as { path: string }).path);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
// Roost's writer's own settings (src/storage/sqlite/writer-thread.ts): the same tuning.
db.pragma('wal_autocheckpoint = 16000');
db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
db.pragma('cache_size = -8000');
db.exec(`
  CREATE TABLE IF NOT EXISTS events (
    key        INTEGER PRIMARY KEY,
    address    INTEGER NOT NULL,
    sequence   INTEGER NOT NULL,
    data       TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX IF NOT EXISTS events_by_sequence ON events (address, sequence);
`);
const insert = db.prepare('INSERT INTO events (address, sequence, data, created_at) VALUES (?, ?, ?, ?)');
const begin = db.prepare('BEGIN');
const commit = db.prepare('COMMIT');
const last = new Map<number, number>();
const port = parentPort!;

let pending: DurableBatch[] = [];
function flush(): void {
  const batches = pending;
  pending = [];
  const now = Date.now();
  const replies: DurableReply[] = [];
  begin.run();
  for (const { id, items } of batches) {
    const sequences: number[] = [];
    for (const [address, data] of items) {
      const sequence = (last.get(address) ?? 0) + 1;
      insert.run(address, sequence, data, now);
      last.set(address, sequence);
      sequences.push(sequence);
    }
    replies.push({ id, sequences });
  }
  commit.run();
  port.postMessage(replies);
}

port.on('message', (batch: DurableBatch) => {
  // Batches already queued are delivered before this runs: they join the transaction.
  if (pending.push(batch) === 1) setImmediate(flush);
});
