// The durable baselines' appends (bench/baseline.ts --durable-sqlite, --durable-postgres):
// the least a server must do to answer 202 only once a delivery is committed, the way
// Roost's engines commit — SQLite: one writer thread, group commit, `synchronous = FULL`,
// sequences in the writer's memory as Roost's writer keeps its queues' bounds
// (bench/durable-writer.ts); PostgreSQL: each turn's appends in one statement that locks
// and bumps each address's sequence, two batches under way at most (src/storage/batches.ts,
// as Roost's engine uses it). Each address's events go under its own sequence in an
// (address, sequence) index. No checks, caps, ids, idempotency or wake-ups: Roost's rate
// against these is what all of those cost, on top of the database's wait that both share.
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
  // Named as Roost's writer, so that the bench puts its CPU under the same kind of thread.
  const writer = new Worker(new URL(here.endsWith('.ts') ? './durable-writer.ts' : './durable-writer.js', here), {
    workerData: { path },
    name: 'roost-writer',
  });
  // Appends made in this turn of the event loop, sent to the writer as one message, as Roost does.
  let outbox: Array<{ item: DurableAppend; resolve: (sequence: number) => void }> = [];
  const committing = new Map<number, typeof outbox>();
  let nextBatch = 1;
  // A failed commit must not leave the bench's requests waiting: the baseline stops with it.
  writer.on('error', (error) => {
    throw error;
  });
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
  data: string;
  resolve: (sequence: number) => void;
  reject: (error: unknown) => void;
}

/** Addresses the baseline serves: bench/ingest.ts baselineInboxes names them addr_0…. */
const POSTGRES_ADDRESSES = 10_000;

// One statement a batch: the addresses' rows locked in id order (two batches under way must
// not deadlock), each address's sequence bumped by its appends, the events numbered after it
// in arrival order and inserted. What many instances sharing one database need, as Roost's
// statement does (src/storage/postgres/events-append.ts), without its checks.
const APPEND = `
  WITH input AS (
    SELECT * FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS t(address, data, n)
  ),
  locked AS MATERIALIZED (
    SELECT id FROM addresses WHERE id = ANY($1::int[]) ORDER BY id FOR UPDATE
  ),
  per AS (SELECT address, count(*) AS events FROM input GROUP BY address),
  bumped AS (
    UPDATE addresses a SET last_sequence = a.last_sequence + per.events
    FROM per, locked WHERE a.id = per.address AND locked.id = a.id
    RETURNING a.id, a.last_sequence - per.events AS base
  ),
  numbered AS MATERIALIZED (
    SELECT i.n, i.address, i.data, b.base + row_number() OVER (PARTITION BY i.address ORDER BY i.n) AS sequence
    FROM input i JOIN bumped b ON b.id = i.address
  ),
  inserted AS (
    INSERT INTO events (address, sequence, data, created_at) SELECT address, sequence, data, $3 FROM numbered
  )
  SELECT n, sequence FROM numbered ORDER BY n`;

export async function postgresAppends(url: string): Promise<DurableAppends> {
  // One generic plan, as Roost's own batch statement gets: left to choose, PostgreSQL plans
  // this one again at every call (each batch's arrays change its estimate), 0.21 ms a batch
  // that Roost does not pay (BENCHMARKS.md, "each headline ratio taken in turn").
  const pool = new pg.Pool({ connectionString: url, max: 10, options: '-c plan_cache_mode=force_generic_plan' });
  await pool.query(`
    CREATE TABLE IF NOT EXISTS addresses (id integer PRIMARY KEY, last_sequence bigint NOT NULL DEFAULT 0);
    INSERT INTO addresses (id) SELECT generate_series(0, ${POSTGRES_ADDRESSES - 1}) ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS events (
      key        bigserial PRIMARY KEY,
      address    integer NOT NULL REFERENCES addresses (id),
      sequence   bigint NOT NULL,
      data       text NOT NULL,
      created_at bigint NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS events_by_sequence ON events (address, sequence);
  `);
  const insert = async (batch: QueuedAppend[]) => {
    try {
      const { rows } = await pool.query<{ n: string; sequence: string }>(APPEND, [
        batch.map((a) => a.address),
        batch.map((a) => a.data),
        Date.now(),
      ]);
      if (rows.length !== batch.length) throw new Error(`${batch.length - rows.length} appends found no address`);
      rows.forEach((row, i) => batch[i].resolve(Number(row.sequence)));
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
      new Promise((resolve, reject) => batches.add({ address, data: JSON.stringify(body), resolve, reject })),
    close: () => pool.end(),
  };
}
