// Crash on PostgreSQL. "A 202 means the event is durable" (docs/api.md §3): deliveries
// stream into a child Roost process on PostgreSQL, it is killed with SIGKILL mid-load and
// started again on the same database. Every delivery answered 202 must be there with its
// id and sequence; sequences stay gapless (a transaction cut off by the kill gave its
// number back); re-sending the unanswered deliveries with their keys queues each at most
// once; the next delivery takes max+1.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { loadUntilKilled, verifyAfterRestart } from './helpers/crash.js';
import { createAddress } from './helpers/http.js';
import { createTestDatabase, postgresSkipReason, type TestDatabase } from './helpers/postgres.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';

const skip = await postgresSkipReason();

const SENDERS = 12;
const ADDRESSES = 3;
/** 202s to collect before the kill, so that it lands while deliveries are in flight. */
const KILL_AFTER = 300;

const processes: ServerProcess[] = [];
const databases: TestDatabase[] = [];
after(async () => {
  for (const proc of processes) await proc.kill();
  for (const db of databases) await db.drop();
});

async function start(databaseUrl: string): Promise<ServerProcess> {
  const proc = await spawnServer({ DATABASE_URL: databaseUrl, ROOST_CREATE_RATE: '100000/sec' });
  processes.push(proc);
  return proc;
}

describe(
  'SIGKILL under load on PostgreSQL (docs/api.md §3: a 202 is durable)',
  { skip: skip ? `skipped: ${skip}` : false },
  () => {
    test(
      'every 202 survives with its sequence; gapless; unanswered deliveries queue at most once',
      { timeout: 120_000 },
      async (t) => {
        const db = await createTestDatabase();
        databases.push(db);
        const first = await start(db.url);
        const addresses = await Promise.all(Array.from({ length: ADDRESSES }, () => createAddress(first.url)));
        const outcome = await loadUntilKilled(first, addresses, SENDERS, KILL_AFTER);
        const second = await start(db.url);
        const committed = await verifyAfterRestart(second.url, addresses, outcome);
        t.diagnostic(
          `${outcome.accepted.size} answered 202, ${outcome.unanswered.length} unanswered, of which ${committed} had committed`,
        );
        assert.equal(await second.stop(), 0, 'SIGTERM exits 0');
      },
    );
  },
);
