// The PostgreSQL engine below the HTTP suite: migrations when instances start together,
// the purge lock, the LISTEN connection's reconnect (and the wake-all after it), also when
// it stops answering without closing (heartbeat), held polls not holding pool connections,
// and 503 instead of 500 while the database refuses connections, then recovery without a
// restart. Real PostgreSQL; a fresh database each.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { Logger } from 'pino';
import { loadConfig } from '../src/config.js';
import { ADVISORY_LOCKS, PostgresStorage } from '../src/storage/postgres/engine.js';
import { PG_MIGRATIONS } from '../src/storage/postgres/migrations.js';
import { ANY_ADDRESS, type AppendInput } from '../src/storage/storage.js';
import { addressRecord, appendInput } from './helpers/records.js';
import { eventually } from './helpers/engines.js';
import { createAddress, deliver, listEvents, request } from './helpers/http.js';
import {
  ADMIN_URL,
  createTestDatabase,
  postgresSkipReason,
  withClient,
  type TestDatabase,
} from './helpers/postgres.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const skip = await postgresSkipReason();

const openStorage = (url: string, env: Record<string, string> = {}) =>
  PostgresStorage.open(loadConfig({ DATABASE_URL: url, ...env }));

const address = addressRecord;
// Key order kept as delivered is part of what the engine is checked for.
const event = (addressId: string, overrides: Partial<AppendInput> = {}) =>
  appendInput(addressId, { dataJson: '{"b":1,"a":2}', ...overrides });

/** Resolves with the poll's response, or with 'not woken' if nothing answers in `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'not woken'> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<'not woken'>((resolve) => (timer = setTimeout(() => resolve('not woken'), ms))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * A TCP proxy to `target` whose open connections can be frozen: from then on they pass no
 * byte either way and are not closed either — what a dropped NAT entry or a partition
 * looks like from both ends. Connections opened after a freeze pass normally.
 */
async function freezableProxy(target: { host: string; port: number }) {
  const pairs: Array<[net.Socket, net.Socket]> = [];
  const frozen: net.Socket[] = [];
  const server = net.createServer((inbound) => {
    const outbound = net.connect(target);
    inbound.pipe(outbound).pipe(inbound);
    for (const socket of [inbound, outbound]) socket.on('error', () => {});
    pairs.push([inbound, outbound]);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    freezeAll() {
      for (const [inbound, outbound] of pairs.splice(0)) {
        inbound.unpipe(outbound);
        outbound.unpipe(inbound);
        inbound.pause();
        outbound.pause();
        frozen.push(inbound, outbound);
      }
    },
    close() {
      for (const socket of [...frozen, ...pairs.flat()]) socket.destroy();
      server.close();
    },
  };
}

describe('PostgreSQL engine', { skip: skip ? `skipped: ${skip}` : false }, () => {
  test('instances starting together apply each migration once, and reopening is a no-op', async () => {
    const db = await createTestDatabase();
    try {
      const opened = await Promise.all([openStorage(db.url), openStorage(db.url), openStorage(db.url)]);
      await Promise.all(opened.map((s) => s.close()));
      const again = await openStorage(db.url);
      await again.close();
      const rows = await withClient(
        db.url,
        async (c) => (await c.query('SELECT version FROM schema_migrations ORDER BY version')).rows,
      );
      assert.deepEqual(
        rows.map((r) => r.version),
        PG_MIGRATIONS.map((m) => m.version),
      );
    } finally {
      await db.drop();
    }
  });

  test('migration 7 drops parts left pointing at no blob, then holds every part to its blob', async () => {
    const db = await createTestDatabase();
    try {
      const storage = await openStorage(db.url);
      const owner = address();
      await storage.insertAddress(owner);
      const appended = await storage.appendEvent({ event: event(owner.id), capacity: 1000 });
      assert.equal(appended.status, 'created');
      const held = (appended as { event: { id: string } }).event;
      await storage.close();
      // As the old race could leave it: a part whose blob is gone, from before the foreign key.
      await withClient(db.url, async (c) => {
        await c.query('ALTER TABLE email_parts DROP CONSTRAINT email_parts_blob');
        await c.query('DELETE FROM schema_migrations WHERE version = 7');
        await c.query(
          `INSERT INTO email_parts (event_id, part, sha256, content_type) VALUES ($1, -1, 'gone', 'message/rfc822')`,
          [held.id],
        );
      });
      await (await openStorage(db.url)).close();
      await withClient(db.url, async (c) => {
        assert.equal((await c.query('SELECT 1 FROM email_parts')).rowCount, 0, 'the part without its blob went');
        await assert.rejects(
          c.query(`INSERT INTO email_parts (event_id, part, sha256, content_type) VALUES ($1, -1, 'gone', 'x')`, [
            held.id,
          ]),
          /email_parts_blob/,
        );
      });
    } finally {
      await db.drop();
    }
  });

  describe('on one database', () => {
    let db: TestDatabase;
    let storage: PostgresStorage;
    before(async () => {
      db = await createTestDatabase();
      storage = await openStorage(db.url);
    });
    after(async () => {
      await storage?.close();
      await db?.drop();
    });

    test('a LISTEN connection that stops answering without closing is noticed and replaced, then everything is woken', async () => {
      const upstream = new URL(db.url);
      const proxy = await freezableProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
      const viaProxy = new URL(db.url);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      const warnings: string[] = [];
      const logger = { warn: (message: string) => warnings.push(message), info: () => {} } as unknown as Logger;
      const watched = await PostgresStorage.open(loadConfig({ DATABASE_URL: viaProxy.href }), logger, {
        listenerHeartbeat: { everyMs: 100, timeoutMs: 500 },
      });
      try {
        const wakes: string[] = [];
        watched.onExternalChange((id) => wakes.push(id));
        const pid = await watched.listenerBackendPid();
        assert.ok(pid);
        proxy.freezeAll(); // the listener's socket stays open but carries nothing any more
        await eventually(
          () => warnings.some((w) => /LISTEN connection lost/.test(w)),
          'the silent connection noticed',
          10_000,
        );
        await eventually(() => watched.listening, 'listener reconnected', 10_000);
        const now = await watched.listenerBackendPid();
        assert.ok(now !== undefined && now !== pid, 'a new backend listens');
        assert.ok(wakes.includes(ANY_ADDRESS), 'every local waiter re-reads: wake-ups may have been missed');
      } finally {
        proxy.close(); // closing the storage waits for its connections, frozen ones included
        await watched.close();
      }
    });

    test('prepared statements survive a column added by another instance (a rolling deploy)', async () => {
      // Statements are prepared once per pooled connection; one that selected * would fail
      // with "cached plan must not change result type" after a migration elsewhere.
      const a = address();
      await storage.insertAddress(a);
      await Promise.all(Array.from({ length: 12 }, () => storage.getAddress(a.id, Date.now()))); // prepared on every connection
      assert.ok((await storage.appendEvent({ event: event(a.id), capacity: 1000 })).status === 'created');
      await withClient(db.url, async (c) => {
        await c.query('ALTER TABLE addresses ADD COLUMN added_by_a_later_version text');
        await c.query('ALTER TABLE events ADD COLUMN added_by_a_later_version text');
      });
      try {
        for (let i = 0; i < 12; i++) assert.equal((await storage.getAddress(a.id, Date.now()))?.id, a.id);
        assert.equal((await storage.appendEvent({ event: event(a.id), capacity: 1000 })).status, 'created');
        assert.equal((await storage.listEvents({ addressId: a.id, after: 0, limit: 10 })).events.length, 2);
      } finally {
        await withClient(db.url, async (c) => {
          await c.query('ALTER TABLE addresses DROP COLUMN added_by_a_later_version');
          await c.query('ALTER TABLE events DROP COLUMN added_by_a_later_version');
        });
      }
    });

    test('appends keep data text verbatim, allocate gapless sequences, and roll a duplicate back', async () => {
      const a = address();
      assert.equal(await storage.insertAddress(a), 'ok');
      assert.equal(await storage.insertAddress({ ...address(), slug: a.slug }), 'slug_taken');
      const first = await storage.appendEvent({
        event: event(a.id, { dedupeKey: 'k', dataJson: '{"z":1,"a":[1,{"y":2,"b":3}]}' }),
        capacity: 1000,
      });
      assert.equal(first.status, 'created');
      const repeat = await storage.appendEvent({
        event: event(a.id, { dedupeKey: 'k', dataJson: '{}' }),
        capacity: 1000,
      });
      assert.equal(repeat.status, 'duplicate');
      assert.equal(repeat.status === 'duplicate' && repeat.event.id, first.status === 'created' && first.event.id);
      const second = await storage.appendEvent({ event: event(a.id), capacity: 1000 });
      // The duplicate did not use up sequence 2.
      assert.equal(second.status === 'created' && second.event.sequence, 2);
      const page = await storage.listEvents({ addressId: a.id, after: 0, limit: 10 });
      assert.deepEqual(
        page.events.map((e) => e.sequence),
        [1, 2],
      );
      assert.equal(page.events[0].dataJson, '{"z":1,"a":[1,{"y":2,"b":3}]}');
      assert.equal(typeof page.events[0].createdAt, 'number');
      // Expired at the delivery's time: no row is bumped.
      const gone = address({ expiresAt: Date.now() - 1 });
      await storage.insertAddress(gone);
      assert.deepEqual(await storage.appendEvent({ event: event(gone.id), capacity: 1000 }), {
        status: 'address_not_found',
      });
    });

    test('concurrent appends from two engines: one winner per key, sequences 1..n without a gap', async () => {
      const other = await openStorage(db.url);
      try {
        const a = address();
        await storage.insertAddress(a);
        const keyed = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            (i % 2 ? storage : other).appendEvent({ event: event(a.id, { dedupeKey: 'same' }), capacity: 1000 }),
          ),
        );
        assert.equal(keyed.filter((r) => r.status === 'created').length, 1);
        const winner = keyed.find((r) => r.status === 'created');
        for (const r of keyed) {
          if (r.status === 'duplicate') assert.equal(r.event.id, winner?.status === 'created' && winner.event.id);
          else assert.equal(r.status, 'created');
        }
        const plain = await Promise.all(
          Array.from({ length: 60 }, (_, i) =>
            (i % 2 ? storage : other).appendEvent({ event: event(a.id), capacity: 1000 }),
          ),
        );
        const sequences = plain.map((r) => (r.status === 'created' ? r.event.sequence : -1)).sort((x, y) => x - y);
        assert.deepEqual(
          sequences,
          Array.from({ length: 60 }, (_, i) => i + 2),
        );
      } finally {
        await other.close();
      }
    });

    test('at capacity the oldest acknowledged event makes room; with none acknowledged the queue is full', async () => {
      const a = address();
      await storage.insertAddress(a);
      for (let i = 0; i < 3; i++)
        assert.equal((await storage.appendEvent({ event: event(a.id), capacity: 3 })).status, 'created');
      assert.deepEqual(await storage.appendEvent({ event: event(a.id), capacity: 3 }), { status: 'queue_full' });
      assert.equal(await storage.hasRoom(a.id, 3), false);
      assert.equal(await storage.ackUpTo(a.id, 2, Date.now()), 2);
      assert.equal(await storage.hasRoom(a.id, 3), true);
      const fourth = await storage.appendEvent({ event: event(a.id), capacity: 3 });
      // Sequence 4, not 5: the refused delivery did not take a number either.
      assert.equal(fourth.status === 'created' && fourth.event.sequence, 4);
      assert.deepEqual(
        (await storage.listEvents({ addressId: a.id, after: 0, limit: 10 })).events.map((e) => e.sequence),
        [2, 3, 4],
      );
    });

    test('purge runs on one instance at a time: while another holds the lock it skips', async () => {
      const now = Date.now();
      const expired = address({ expiresAt: now - 1000 });
      await storage.insertAddress(expired);
      await storage.appendEvent({ event: event(expired.id, { createdAt: now - 2000 }), capacity: 1000 });
      const live = address();
      await storage.insertAddress(live);
      await storage.appendEvent({ event: event(live.id, { createdAt: now - 40 * 86_400_000 }), capacity: 1000 });
      await storage.appendEvent({ event: event(live.id), capacity: 1000 });

      const holder = new pg.Client({ connectionString: db.url });
      await holder.connect();
      try {
        await holder.query('SELECT pg_advisory_lock($1, $2)', [ADVISORY_LOCKS.namespace, ADVISORY_LOCKS.purge]);
        assert.deepEqual(await storage.purge(now, now - 30 * 86_400_000), { expiredAddressIds: [], eventsPurged: 0 });
        assert.ok(
          await withClient(
            db.url,
            async (c) => (await c.query('SELECT 1 FROM addresses WHERE id = $1', [expired.id])).rowCount,
          ),
        );
        await holder.query('SELECT pg_advisory_unlock($1, $2)', [ADVISORY_LOCKS.namespace, ADVISORY_LOCKS.purge]);
      } finally {
        await holder.end();
      }
      const result = await storage.purge(now, now - 30 * 86_400_000);
      assert.ok(result.expiredAddressIds.includes(expired.id));
      assert.ok(result.eventsPurged >= 2, `one expired address's event and one old event, got ${result.eventsPurged}`);
      assert.equal(await storage.getAddress(expired.id, now - 5000), null, 'the expired row itself is gone');
      assert.deepEqual(
        (await storage.listEvents({ addressId: live.id, after: 0, limit: 10 })).events.map((e) => e.sequence),
        [2],
      );
      // The lock was released: another instance can take it now.
      const other = await openStorage(db.url);
      try {
        assert.deepEqual(await other.purge(now, now - 30 * 86_400_000), { expiredAddressIds: [], eventsPurged: 0 });
        const locks = await withClient(
          db.url,
          async (c) =>
            // pg_locks shows every database's locks: other tests' instances take the same keys in theirs.
            (
              await c.query(
                `SELECT count(*)::int AS n FROM pg_locks
                 WHERE locktype = 'advisory' AND classid = $1
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
                [ADVISORY_LOCKS.namespace],
              )
            ).rows[0].n,
        );
        assert.equal(locks, 0, 'no instance keeps the purge lock after a sweep');
      } finally {
        await other.close();
      }
    });

    test('the rate bucket is one row shared by every connection', async () => {
      const other = await openStorage(db.url);
      try {
        const now = Date.now();
        const takes = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 ? storage : other).takeToken({ key: 'create:192.0.2.1', limit: 5, periodMs: 60_000, now }),
          ),
        );
        assert.equal(takes.filter((t) => t.allowed).length, 5);
        const refused = takes.find((t) => !t.allowed)!;
        assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 12_000);
      } finally {
        await other.close();
      }
    });
  });

  describe('a server on PostgreSQL', () => {
    let server: TestServer;
    let storage: PostgresStorage;
    let peer: PostgresStorage;
    before(async () => {
      // A pool of one: held polls must not keep it (they wait on Waiters, not in SQL).
      server = await startTestServer('postgres', { env: { ROOST_PG_POOL_SIZE: '1' } });
      storage = server.roost.storage as PostgresStorage;
      peer = await openStorage(server.databaseUrl!);
    });
    after(async () => {
      await peer?.close();
      await server?.close();
    });

    test('held polls do not hold pool connections', async () => {
      const a = await createAddress(server.url);
      const polls = [1, 2, 3].map(() => listEvents(server.url, a, 'wait=20'));
      await eventually(() => server.roost.waiters.held === 3, 'three polls held');
      // With a pool of one, each of these would wait behind a held poll if polls kept it.
      const other = await createAddress(server.url);
      assert.equal((await deliver(other.inbox, { data: 1 })).status, 202);
      assert.equal((await deliver(a.inbox, { data: 2 })).status, 202);
      for (const poll of polls)
        assert.deepEqual(
          (await poll).body.events.map((e: { data: number }) => e.data),
          [2],
        );
    });

    test('a commit by another instance wakes a held poll, also after the LISTEN connection was killed', async () => {
      const a = await createAddress(server.url);
      const poll = listEvents(server.url, a, 'wait=20');
      await eventually(() => server.roost.waiters.held === 1, 'poll held');
      await peer.appendEvent({ event: event(a.id), capacity: 1000 });
      const woken = await within(poll, 10_000);
      assert.notEqual(woken, 'not woken', 'a NOTIFY from the peer woke the poll');

      const pid = await storage.listenerBackendPid();
      assert.ok(pid);
      await withClient(ADMIN_URL, (c) => c.query('SELECT pg_terminate_backend($1)', [pid]));
      await eventually(
        async () => {
          const now = await storage.listenerBackendPid();
          return now !== undefined && now !== pid;
        },
        'listener reconnected',
        10_000,
      );

      const again = listEvents(server.url, a, 'after=1&wait=20');
      await eventually(() => server.roost.waiters.held === 1, 'poll held');
      await peer.appendEvent({ event: event(a.id), capacity: 1000 });
      const answer = await within(again, 10_000);
      assert.notEqual(answer, 'not woken', 'the reconnected listener still hears the peer');
      assert.deepEqual(
        (answer as { body: { events: Array<{ sequence: number }> } }).body.events.map((e) => e.sequence),
        [2],
      );
    });

    test('a change missed while the listener was away wakes held polls once it is back', async () => {
      const a = await createAddress(server.url);
      const poll = listEvents(server.url, a, 'wait=20');
      await eventually(() => server.roost.waiters.held === 1, 'poll held');
      const pid = await storage.listenerBackendPid();
      // An event committed without any NOTIFY: only the wake-all after reconnecting can find it.
      await withClient(server.databaseUrl!, async (c) => {
        await c.query('BEGIN');
        await c.query('UPDATE addresses SET last_sequence = 1 WHERE id = $1', [a.id]);
        await c.query(
          "INSERT INTO events (id, address_id, sequence, type, source, data, created_at) VALUES ('evt_silent', $1, 1, 't', 's', '1', $2)",
          [a.id, Date.now()],
        );
        await c.query('COMMIT');
      });
      await withClient(ADMIN_URL, (c) => c.query('SELECT pg_terminate_backend($1)', [pid]));
      const answer = await within(poll, 10_000);
      assert.notEqual(answer, 'not woken');
      assert.deepEqual(
        (answer as { body: { events: Array<{ id: string }> } }).body.events.map((e) => e.id),
        ['evt_silent'],
      );
    });

    test('while the database refuses connections requests get 503 unavailable, then it recovers', async () => {
      const a = await createAddress(server.url);
      const name = new URL(server.databaseUrl!).pathname.slice(1);
      await withClient(ADMIN_URL, async (c) => {
        await c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
      });
      try {
        const refused = await deliver(a.inbox, { data: 'lost' });
        assert.equal(refused.status, 503);
        assert.equal(refused.body.error.code, 'unavailable');
        assert.equal((await request(server.url, 'GET', '/readyz')).status, 503);
      } finally {
        await withClient(ADMIN_URL, (c) => c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
      }
      assert.equal((await request(server.url, 'GET', '/readyz')).status, 200);
      const accepted = await deliver(a.inbox, { data: 'kept' });
      assert.equal(accepted.status, 202);
      assert.equal(accepted.body.event.sequence, 1);
      // The listener came back too: a peer's commit wakes a poll here again.
      await eventually(() => storage.listening, 'listener reconnected', 15_000);
      const poll = listEvents(server.url, a, 'after=1&wait=20');
      await eventually(() => server.roost.waiters.held === 1, 'poll held');
      await peer.appendEvent({ event: event(a.id), capacity: 1000 });
      assert.notEqual(await within(poll, 10_000), 'not woken');
    });
  });
});
