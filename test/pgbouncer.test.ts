// Roost behind a real PgBouncer (docs/scale-out.md § Deploying), in session and in
// transaction pooling mode, two instances each: they start with the defaults (no startup
// parameter PgBouncer refuses), deliver, read and wake each other across instances, the
// server-side statement timeout holds, and the sweeper's lock lives in one transaction.
// Transaction pooling without a session URL for LISTEN is refused at start, never served.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from './helpers/engines.js';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { pgbouncerSkipReason, pgbouncerVersion, startPgBouncer, type Bouncer } from './helpers/pgbouncer.js';
import { createTestDatabase, postgresSkipReason, withClient, type TestDatabase } from './helpers/postgres.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { ADVISORY_LOCKS, type PostgresStorage } from '../src/storage/postgres/engine.js';

const reason = pgbouncerSkipReason ?? (await postgresSkipReason());
const skip = reason && process.env.CI !== 'true' ? `skipped: ${reason}` : false;

const inboxOn = (server: TestServer, address: CreatedAddress) => `${server.url}${new URL(address.inbox).pathname}`;

async function heldPolls(server: TestServer): Promise<number> {
  const metrics = await request(server.url, 'GET', '/metrics');
  return Number(/^roost_polls_held (\d+)/m.exec(metrics.text)?.[1] ?? -1);
}

/** The engine's own query path (private), for what no route shows: the session's settings. */
const engineQuery = (server: TestServer, sql: string) =>
  (
    server.roost.storage as unknown as {
      db: { query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }> };
    }
  ).db.query(sql);

for (const poolMode of ['session', 'transaction'] as const) {
  describe(`two instances through ${pgbouncerVersion}, pool_mode=${poolMode}`, { skip }, () => {
    let bouncer: Bouncer;
    let db: TestDatabase;
    let a: TestServer;
    let b: TestServer;

    before(async () => {
      bouncer = await startPgBouncer(poolMode);
      db = await createTestDatabase();
      const databaseUrl = bouncer.through(db.url);
      const env: Record<string, string> = {
        ROOST_PG_STATEMENT_TIMEOUT_MS: '1500',
        ROOST_PG_POOL_SIZE: '4',
        // A transaction pooler cannot carry LISTEN: the one connection that needs a session goes direct.
        ...(poolMode === 'transaction' ? { ROOST_PG_LISTEN_URL: db.url } : {}),
      };
      // Started together: both find the schema missing, one migrates, through the pooler.
      [a, b] = await Promise.all([
        startTestServer('postgres', { reuse: { databaseUrl }, env }),
        startTestServer('postgres', { reuse: { databaseUrl }, env }),
      ]);
    });

    after(async () => {
      await Promise.all([a?.close(), b?.close()]);
      await db?.drop();
      await bouncer?.stop();
    });

    test('the defaults start: the pooler is detected, statements go unnamed, and /readyz is ready', async () => {
      for (const server of [a, b]) {
        assert.match(server.logs(), /DATABASE_URL goes through a connection pooler: transaction pooling/);
        assert.equal((server.roost.storage as PostgresStorage).poolMode, 'transaction');
        const ready = await request(server.url, 'GET', '/readyz');
        assert.equal(ready.status, 200, ready.text);
      }
      assert.doesNotMatch(bouncer.log(), /unsupported startup parameter/);
    });

    // Through a transaction pooler the same setting is refused (below).
    if (poolMode === 'session')
      test('ROOST_PG_POOL_MODE=session is accepted through it: named statements, the timeout per session', async () => {
        const declared = await startTestServer('postgres', {
          reuse: { databaseUrl: bouncer.through(db.url) },
          env: { ROOST_PG_POOL_MODE: 'session', ROOST_PG_STATEMENT_TIMEOUT_MS: '1500' },
        });
        try {
          assert.equal((declared.roost.storage as PostgresStorage).poolMode, 'session');
          assert.equal((await engineQuery(declared, 'SHOW statement_timeout')).rows[0].statement_timeout, '1500ms');
          const address = await createAddress(declared.url);
          assert.equal((await deliver(address.inbox, { data: 'named' })).status, 202);
        } finally {
          await declared.close();
        }
      });

    test('a poll held on one instance is woken by a delivery through the other, both ways', async () => {
      const address = await createAddress(a.url);
      for (const [poller, sender, after] of [
        [a, b, 0],
        [b, a, 1],
      ] as const) {
        const poll = listEvents(poller.url, address, `after=${after}&wait=25`);
        await eventually(async () => (await heldPolls(poller)) === 1, 'poll held');
        assert.equal((await deliver(inboxOn(sender, address), { data: { via: sender.url } })).status, 202);
        let timer: NodeJS.Timeout | undefined;
        // The wait is 25 s; an answer before it can only come from the wake-up.
        const answer = await Promise.race([
          poll,
          new Promise<'not woken'>((resolve) => (timer = setTimeout(() => resolve('not woken'), 15_000))),
        ]).finally(() => clearTimeout(timer));
        assert.notEqual(answer, 'not woken');
        if (answer === 'not woken') return;
        assert.deepEqual(
          answer.body.events.map((e: { data: unknown }) => e.data),
          [{ via: sender.url }],
        );
      }
    });

    test('120 concurrent deliveries split across both take sequences 1..120, and either reads them all', async () => {
      const address = await createAddress(b.url);
      const results = await Promise.all(
        Array.from({ length: 120 }, (_, i) => deliver(inboxOn(i % 2 ? a : b, address), { data: i })),
      );
      assert.deepEqual([...new Set(results.map((r) => r.status))], [202]);
      const sequences = results.map((r) => r.body.event.sequence as number).sort((x, y) => x - y);
      assert.deepEqual(
        sequences,
        Array.from({ length: 120 }, (_, i) => i + 1),
      );
      for (const reader of [a, b]) {
        const first = await listEvents(reader.url, address, 'limit=100');
        const rest = await listEvents(reader.url, address, 'after=100&limit=100');
        assert.deepEqual(
          [...first.body.events, ...rest.body.events].map((e: { sequence: number }) => e.sequence),
          Array.from({ length: 120 }, (_, i) => i + 1),
        );
      }
      const key = { 'idempotency-key': 'through-the-pooler' };
      const twice = await Promise.all([
        deliver(inboxOn(a, address), { data: 'once' }, key),
        deliver(inboxOn(b, address), { data: 'once' }, key),
      ]);
      assert.deepEqual(twice.map((r) => r.status).sort(), [200, 202]);
    });

    test('the statement timeout holds on the server: a statement past it is cancelled by PostgreSQL', async () => {
      const shown = await engineQuery(a, 'SHOW statement_timeout');
      assert.equal(shown.rows[0].statement_timeout, '1500ms');
      // 57014 is PostgreSQL cancelling the statement; Roost's own deadline (3.5 s) would say otherwise.
      await assert.rejects(engineQuery(a, 'SELECT pg_sleep(4)'), (error: { cause?: { code?: string } }) => {
        assert.equal(error.cause?.code, '57014');
        return true;
      });
    });

    test("the sweeper's lock is taken and released inside each transaction: no lock is left, no error", async () => {
      const results = await Promise.all(
        [a, b, a, b].map((server) => server.roost.storage.purge(Date.now(), Date.now() - 86_400_000)),
      );
      for (const result of results) assert.ok(Array.isArray(result.expiredAddressIds));
      const locks = await withClient(
        db.url,
        async (c) =>
          // pg_locks is the whole cluster's: only this test's database counts (other tests'
          // sweepers hold the same kind of lock in theirs).
          (
            await c.query(
              `SELECT count(*)::int AS n FROM pg_locks
               WHERE locktype = 'advisory' AND classid = $1
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
              [ADVISORY_LOCKS.namespace],
            )
          ).rows[0].n as number,
      );
      assert.equal(locks, 0);
      assert.doesNotMatch(a.logs() + b.logs(), /you don't own a lock/);
    });
  });
}

describe(`transaction pooling (${pgbouncerVersion}) without a session URL for LISTEN`, { skip }, () => {
  let bouncer: Bouncer;
  let db: TestDatabase;
  before(async () => {
    bouncer = await startPgBouncer('transaction');
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.drop();
    await bouncer?.stop();
  });

  test('is refused at start, naming ROOST_PG_LISTEN_URL, whether detected or declared', async () => {
    const databaseUrl = bouncer.through(db.url);
    await assert.rejects(
      startTestServer('postgres', { reuse: { databaseUrl } }),
      /did not reach the LISTEN connection.*set ROOST_PG_LISTEN_URL/s,
    );
    await assert.rejects(
      startTestServer('postgres', { reuse: { databaseUrl }, env: { ROOST_PG_POOL_MODE: 'transaction' } }),
      /transaction pooler.*Set ROOST_PG_LISTEN_URL/s,
    );
  });

  test('ROOST_PG_POOL_MODE=session through it is refused at start, naming the setting', async () => {
    const databaseUrl = bouncer.through(db.url);
    await assert.rejects(
      startTestServer('postgres', {
        reuse: { databaseUrl },
        env: { ROOST_PG_POOL_MODE: 'session', ROOST_PG_LISTEN_URL: db.url },
      }),
      /ROOST_PG_POOL_MODE=session, but DATABASE_URL goes through a pooler in transaction mode/,
    );
  });
});
