// PostgreSQL faults under load, as an operator's bad day goes: two Roost instances on one
// throwaway cluster, 20 senders delivering through both, a follower (the client library's
// events()) holding a poll throughout. The database is crashed (`pg_ctl -m immediate`) and
// restarted; every Roost backend is terminated from inside PostgreSQL (the LISTEN
// connections included); the server is paused (SIGSTOP) and resumed; the pools are
// exhausted behind a lock; a connection dies right after its COMMIT was sent. After each:
// both processes still run, only 503 `unavailable` was answered meanwhile (and none once
// recovered), every accepted delivery is stored exactly once with gapless sequences,
// /readyz is back on both instances, and a poll held on one is woken by a delivery
// through the other.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { RoostClient } from '../src/client/index.js';
import { assertStoredExactlyOnce, readAll, startSenders, type LoadReport } from './helpers/fault-load.js';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { clusterSkip, createCluster, type Cluster } from './helpers/pg-cluster.js';
import { withClient } from './helpers/postgres.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';

const STATEMENT_TIMEOUT_MS = 2_000;
const CONNECT_TIMEOUT_MS = 1_000;

let cluster: Cluster | undefined;
let proxy: TcpProxy | undefined;
const instances: ServerProcess[] = [];

const alive = (proc: ServerProcess) => proc.child.exitCode === null && proc.child.signalCode === null;

/** Polls /readyz on every instance until all answer 200; the milliseconds it took. */
async function readyAgain(withinMs = 20_000): Promise<number> {
  const startedAt = Date.now();
  for (;;) {
    const statuses = await Promise.all(instances.map((i) => request(i.url, 'GET', '/readyz').then((r) => r.status)));
    if (statuses.every((s) => s === 200)) return Date.now() - startedAt;
    assert.ok(Date.now() - startedAt < withinMs, `/readyz still ${statuses.join(', ')} after ${withinMs} ms`);
    await sleep(100);
  }
}

/**
 * A poll held on the first instance is answered by a delivery through the second: only a
 * wake-up that crossed instances through PostgreSQL (or the listener's catch-up wake on
 * reconnecting) can answer it before its 20 s wait. Returns the milliseconds it took.
 */
async function crossInstanceWake(): Promise<number> {
  const [a, b] = instances;
  const quiet = await createAddress(a.url);
  const poll = listEvents(a.url, quiet, 'after=0&wait=20');
  await sleep(300); // held by now
  const sentAt = Date.now();
  const delivered = await deliver(`${b.url}${new URL(quiet.inbox).pathname}`, { data: 'wake' });
  assert.equal(delivered.status, 202, delivered.text);
  const woken = await poll;
  const tookMs = Date.now() - sentAt;
  assert.equal(woken.status, 200);
  assert.deepEqual(
    woken.body.events.map((e: any) => e.data),
    ['wake'],
  );
  assert.ok(tookMs < 5_000, `woken ${tookMs} ms after the delivery (a timeout would take 20 s)`);
  return tookMs;
}

/**
 * Runs `fault` under load and checks everything the issue asks afterwards. `fault` returns
 * once the fault is over (the database back, resumed, unlocked).
 */
async function underLoad(label: string, fault: () => Promise<void>, senders = 20): Promise<LoadReport> {
  const [a, b] = instances;
  const addresses: CreatedAddress[] = [];
  for (let i = 0; i < 4; i++) addresses.push(await createAddress(a.url));
  // The follower holds a poll on the first instance throughout, through the client library.
  const follower = new AbortController();
  const followed: any[] = [];
  const client = new RoostClient({
    baseUrl: a.url,
    addressId: addresses[0].id,
    readToken: addresses[0].token,
    backoff: { initialDelayMs: 100, maxDelayMs: 1_000 },
  });
  const following = (async () => {
    for await (const event of client.events({ wait: 10, signal: follower.signal })) followed.push(event);
  })();
  const load = startSenders([a.url, b.url], addresses, { senders, label });
  let report: LoadReport | undefined;
  try {
    await sleep(1_000);
    await fault();
    const readyMs = await readyAgain();
    const recoveredAt = Date.now();
    const wakeMs = await crossInstanceWake();
    await sleep(1_500); // and the load goes on, answered
    report = await load.stop();

    assert.ok(alive(a) && alive(b), `both Roost processes still run:\n${a.output()}\n${b.output()}`);
    assert.deepEqual(report.unexpected, [], 'only 200, 202 and 503 were answered');
    const late = report.unavailableAt.filter((t) => t > recoveredAt + 1_000);
    assert.equal(late.length, 0, `503s after recovery: ${late.length}`);
    // No answer waits past the statement timeout and the client's grace after it (2 s),
    // give or take a loaded machine; a hang would last as long as the fault (8 s when paused).
    assert.ok(report.slowestMs < STATEMENT_TIMEOUT_MS + 2_000 + 3_000, `slowest answer ${report.slowestMs} ms`);
    const stored = await assertStoredExactlyOnce(b.url, addresses, report.accepted);
    assert.equal(stored, report.accepted.size);

    // The follower lost its place nowhere: every event of its address, once, in order.
    const expected = await readAll(a.url, addresses[0]);
    for (let i = 0; i < 100 && followed.length < expected.length; i++) await sleep(50);
    assert.deepEqual(
      followed.map((e) => e.id),
      expected.map((e) => e.id),
    );
    process.stdout.write(
      `# ${label}: ${report.accepted.size} accepted, ${report.unavailableAt.length} answered 503, slowest ${report.slowestMs} ms, ` +
        `/readyz back ${readyMs} ms after the fault ended, cross-instance wake ${wakeMs} ms\n`,
    );
    return report;
  } finally {
    // A failed check must not leave senders retrying against dead instances forever.
    if (!report) await load.stop();
    follower.abort();
    await following.catch(() => {});
  }
}

describe('PostgreSQL faults under load', { skip: clusterSkip }, () => {
  before(async () => {
    cluster = await createCluster();
    cluster.start();
    proxy = await startTcpProxy(cluster.port);
    const env = {
      ROOST_CREATE_RATE: '100000/sec',
      ROOST_PG_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      ROOST_PG_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      LOG_LEVEL: 'warn',
    };
    instances.push(await spawnServer({ ...env, DATABASE_URL: cluster.url }));
    // The second instance reaches PostgreSQL through a proxy that can cut a connection mid-COMMIT.
    instances.push(await spawnServer({ ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/postgres` }));
  });

  after(async () => {
    for (const proc of instances) await proc.kill();
    await proxy?.close();
    cluster?.destroy();
  });

  test('a crash (pg_ctl -m immediate) for 4 s: 503 meanwhile, recovery on its own', { timeout: 90_000 }, async () => {
    const report = await underLoad('crash', async () => {
      cluster!.crash();
      await sleep(500);
      for (const proc of instances) {
        const ready = await request(proc.url, 'GET', '/readyz');
        assert.equal(ready.status, 503);
        assert.equal(ready.body.error.code, 'unavailable');
      }
      await sleep(3_500);
      cluster!.start();
    });
    assert.ok(report.unavailableAt.length > 0, 'the crash was felt');
  });

  test(
    'every Roost backend terminated from inside PostgreSQL, the LISTEN connections included',
    { timeout: 60_000 },
    async () => {
      await underLoad('terminate', async () => {
        for (let round = 0; round < 3; round++) {
          const ended = await withClient(cluster!.url, (db) =>
            db.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'roost' AND pid <> pg_backend_pid()",
            ),
          );
          assert.ok(ended.rowCount! >= 4, `terminated ${ended.rowCount} backends`);
          await sleep(500);
        }
      });
    },
  );

  test('a paused server (SIGSTOP for 8 s): timeouts answer 503, nothing hangs', { timeout: 60_000 }, async () => {
    const report = await underLoad('pause', async () => {
      const pausedAt = Date.now();
      cluster!.signalAll('SIGSTOP');
      try {
        await sleep(1_000);
        for (const proc of instances) {
          const startedAt = Date.now();
          const ready = await request(proc.url, 'GET', '/readyz');
          assert.equal(ready.status, 503);
          assert.ok(Date.now() - startedAt < 5_000, '/readyz answers while the database hangs');
          const health = await request(proc.url, 'GET', '/healthz');
          assert.equal(health.status, 200);
        }
        // Longer than any answer may take (the bound in underLoad), so that a hang shows.
        await sleep(8_000 - (Date.now() - pausedAt));
      } finally {
        cluster!.signalAll('SIGCONT');
      }
    });
    assert.ok(report.unavailableAt.length > 0, 'the pause was felt');
  });

  test(
    'exhausted pools (every connection blocked behind a lock): a bounded wait, then 503',
    { timeout: 60_000 },
    async () => {
      const report = await underLoad(
        'exhausted',
        () =>
          withClient(cluster!.url, async (db) => {
            await db.query('BEGIN');
            await db.query('LOCK TABLE events IN EXCLUSIVE MODE'); // reads pass, appends wait
            await sleep(4_000);
            await db.query('COMMIT');
          }),
        40,
      );
      assert.ok(report.unavailableAt.length > 0, 'the full pools were felt');
    },
  );

  test('a connection lost right after its statement was sent: 503, and the retry yields exactly one event', async () => {
    const [a, b] = instances;
    const address = await createAddress(a.url);
    const inboxB = `${b.url}${new URL(address.inbox).pathname}`;
    const key = 'outcome-unknown-7f3a';
    const cut = proxy!.cutAfterSending(key);
    const first = await deliver(inboxB, { data: 'once' }, { 'idempotency-key': key });
    await cut;
    assert.equal(first.status, 503, first.text);
    assert.equal(first.body.error.code, 'unavailable');
    assert.ok(alive(b), 'the instance whose connection died still runs');
    // The outcome was unknown to the instance: the commit usually happened (the retry finds
    // it), or the statement never committed (the retry stores it). Either way exactly once.
    const retry = await deliver(inboxB, { data: 'once' }, { 'idempotency-key': key });
    assert.ok(retry.status === 200 || retry.status === 202, retry.text);
    assert.equal(retry.body.duplicate, retry.status === 200);
    const again = await deliver(address.inbox, { data: 'once' }, { 'idempotency-key': key });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.event.id, retry.body.event.id);
    const events = await readAll(a.url, address);
    assert.deepEqual(
      events.map((e) => [e.sequence, e.dedupe_key]),
      [[1, key]],
    );
  });
});
