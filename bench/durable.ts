// The durable baselines' appends (bench/baseline.ts --durable-sqlite, --durable-postgres):
// the least a server must do to answer 202 only once a delivery is committed, the way
// Roost's engines commit — SQLite: one writer thread, group commit, `synchronous = FULL`
// (bench/durable-writer.ts); PostgreSQL: each turn's appends in one statement, two batches
// under way at most (src/storage/batches.ts, as Roost's engine uses it). Each address's
// events go under its own sequence in an (address, sequence) index; sequences are kept in
// memory, as one process may. No checks, caps, ids, idempotency or wake-ups: Roost's rate
// against these is what all of those cost, on top of the disk's wait that both share.
import pg from 'pg';
import { Worker } from 'node:worker_threads';
import { Batches } from '../src/storage/batches.js';
import type { DurableAppend, DurableBatch, DurableReply } from './durable-writer.js';

export interface DurableAppends {
  /** Resolves with the delivery's sequence once the transaction holding it has committed. */
  append(address: number, body: unknown): Promise<number>;
  close(): Promise<void>;
}

export function sqliteAppends(path: string): DurableAppends {
  const here = import.meta.url;
  const writer = new Worker(new URL(here.endsWith('.ts') ? './durable-writer.ts' : './durable-writer.js', here), {
    workerData: { path },
  });
  // Appends made in this turn of the event loop, sent to the writer as one message, as Roost does.
  let outbox: Array<{ item: DurableAppend; resolve: (sequence: number) => void }> = [];
  const committing = new Map<number, typeof outbox>();
  let nextBatch = 1;
  writer.on('message', (replies: DurableReply[]) => {
    for (const { id, sequences } of replies) {
      committing.get(id)!.forEach((append, i) => append.resolve(sequences[i]));
      committing.delete(id);
    }
  });
  const send = () => {
    const id = nextBatch++;
    committing.set(id, outbox);
    writer.postMessage({ id, items: outbox.map((append) => append.item) } satisfies DurableBatch);
    outbox = [];
  };
  return {
    append: (address, body) =>
      new Promise((resolve) => {
        if (outbox.push({ item: [address, JSON.stringify(body)], resolve }) === 1) setImmediate(send);
      }),
    close: async () => void (await writer.terminate()),
  };
}

interface QueuedAppend {
  address: number;
  sequence: number;
  data: string;
  resolve: (sequence: number) => void;
  reject: (error: unknown) => void;
}

export async function postgresAppends(url: string): Promise<DurableAppends> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  await pool.query(`
    CREATE TABLE IF NOT EXISTS events (
      key        bigserial PRIMARY KEY,
      address    integer NOT NULL,
      sequence   bigint NOT NULL,
      data       text NOT NULL,
      created_at bigint NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS events_by_sequence ON events (address, sequence);
  `);
  const last = new Map<number, number>();
  const insert = async (batch: QueuedAppend[]) => {
    try {
      await pool.query(
        'INSERT INTO events (address, sequence, data, created_at) SELECT a, s, d, $4 FROM unnest($1::int[], $2::bigint[], $3::text[]) AS t(a, s, d)',
        [batch.map((a) => a.address), batch.map((a) => a.sequence), batch.map((a) => a.data), Date.now()],
      );
      for (const append of batch) append.resolve(append.sequence);
    } catch (error) {
      for (const append of batch) append.reject(error);
    }
  };
  const batches = new Batches<QueuedAppend>(insert, {
    inFlight: 2,
    maxItems: 500,
    maxWaitMs: 30_000,
    expire: (append) => append.reject(new Error('no batch took this append')),
  });
  return {
    append: (address, body) =>
      new Promise((resolve, reject) => {
        const sequence = (last.get(address) ?? 0) + 1;
        last.set(address, sequence);
        batches.add({ address, sequence, data: JSON.stringify(body), resolve, reject });
      }),
    close: () => pool.end(),
  };
}
