// What an operator sees of PostgreSQL trouble: /readyz answers 503 while wake-ups from other
// instances cannot arrive (the LISTEN connection, on its own ROOST_PG_LISTEN_URL, is gone)
// and 200 once they can; a LISTEN that goes deaf is logged; 503s log their cause, once
// per cause however many requests they answer.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { startRoost, type RunningRoost } from '../src/server.js';
import { PostgresStorage } from '../src/storage/postgres/engine.js';
import { createLogger } from '../src/logger.js';
import { eventually } from './helpers/engines.js';
import { createAddress, request } from './helpers/http.js';
import {
  POSTGRES_TEST_SECRET_KEY,
  createTestDatabase,
  postgresSkipReason,
  type TestDatabase,
} from './helpers/postgres.js';

const pgSkip = await postgresSkipReason();
const skip = pgSkip ? `skipped: ${pgSkip}` : false;

/** A TCP proxy to PostgreSQL that can be cut (every connection closed, new ones refused) and restored on its port. */
async function cuttableProxy(targetPort: number) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const listen = async () => {
    server = net.createServer((inbound) => {
      const outbound = net.connect(targetPort, '127.0.0.1');
      inbound.pipe(outbound).pipe(inbound);
      for (const socket of [inbound, outbound]) {
        sockets.add(socket);
        socket.on('error', () => {});
        socket.on('close', () => sockets.delete(socket));
      }
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as net.AddressInfo).port;
  };
  await listen();
  return {
    port,
    async cut() {
      const closed = new Promise((resolve) => server!.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    restore: listen,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server!.close(resolve));
    },
  };
}

function capture() {
  let text = '';
  const destination = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { destination, text: () => text };
}

describe('PostgreSQL health as operators see it', { skip }, () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.drop();
  });

  test('/readyz is 503 while the LISTEN connection (ROOST_PG_LISTEN_URL) cannot reach the database, 200 once it can', async () => {
    const proxy = await cuttableProxy(Number(new URL(db.url).port || 5432));
    const listenUrl = new URL(db.url);
    listenUrl.port = String(proxy.port);
    const config = loadConfig({
      DATABASE_URL: db.url,
      ROOST_PG_LISTEN_URL: listenUrl.toString(),
      ROOST_SECRET_KEY: POSTGRES_TEST_SECRET_KEY,
      PORT: '0',
      ROOST_SMTP_PORT: '0',
    });
    const logs = capture();
    const logger = createLogger('info', logs.destination);
    const storage = await PostgresStorage.open(config, logger, {
      listenerHeartbeat: { everyMs: 100, timeoutMs: 1000 },
    });
    let roost: RunningRoost | undefined;
    try {
      roost = await startRoost(config, { storage, logDestination: logs.destination });
      assert.equal((await request(roost.url, 'GET', '/readyz')).status, 200);
      await proxy.cut();
      await eventually(async () => (await request(roost!.url, 'GET', '/readyz')).status === 503, '/readyz 503', 10_000);
      const notReady = await request(roost.url, 'GET', '/readyz');
      assert.match(notReady.body.error.message, /wake-ups from other instances are not arriving/);
      // The database itself answers all along: requests are served meanwhile.
      assert.equal((await request(roost.url, 'POST', '/api/v1/addresses', { body: {} })).status, 201);
      await proxy.restore();
      await eventually(async () => (await request(roost!.url, 'GET', '/readyz')).status === 200, '/readyz 200', 10_000);
      assert.match(logs.text(), /PostgreSQL LISTEN connection lost/);
      assert.match(logs.text(), /PostgreSQL LISTEN connection restored/);
    } finally {
      await (roost ? roost.close() : storage.close());
      await proxy.close();
    }
  });

  test('a LISTEN that stops hearing is logged, and replaced by one that hears', async () => {
    const config = loadConfig({ DATABASE_URL: db.url });
    const logs = capture();
    const storage = await PostgresStorage.open(config, createLogger('info', logs.destination), {
      listenerHeartbeat: { everyMs: 100, timeoutMs: 1000 },
    });
    try {
      const listener = (storage as unknown as { listener: { client: { query(sql: string): Promise<unknown> } } })
        .listener;
      const pid = await storage.listenerBackendPid();
      await listener.client.query('UNLISTEN *'); // connected, answering, and deaf
      await eventually(
        () => /wake-ups from other instances are not arriving/.test(logs.text()),
        'the deaf listener noticed',
        10_000,
      );
      await eventually(
        async () => storage.wakeupsArriving && (await storage.listenerBackendPid()) !== pid,
        'a new listener that hears',
        10_000,
      );
    } finally {
      await storage.close();
    }
  });

  test('503s log their cause: one line per cause, however many requests it answers', async () => {
    const proxy = await cuttableProxy(Number(new URL(db.url).port || 5432));
    const viaProxy = new URL(db.url);
    viaProxy.port = String(proxy.port);
    const logs = capture();
    const config = loadConfig({
      DATABASE_URL: viaProxy.toString(),
      ROOST_PG_LISTEN_URL: db.url,
      ROOST_SECRET_KEY: POSTGRES_TEST_SECRET_KEY,
      ROOST_PG_CONNECT_TIMEOUT_MS: '500',
      PORT: '0',
      ROOST_SMTP_PORT: '0',
    });
    const roost = await startRoost(config, { logDestination: logs.destination });
    try {
      const address = await createAddress(roost.url);
      await proxy.cut();
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++)
        statuses.push((await request(roost.url, 'POST', address.inbox, { body: { data: i } })).status);
      assert.deepEqual([...new Set(statuses)], [503]);
      roost.logger.flush();
      const lines = logs
        .text()
        .split('\n')
        .filter((line) => line.includes('answered 503 unavailable'))
        .map((line) => JSON.parse(line) as { cause: { code?: string; message: string } });
      assert.ok(lines.length >= 1, 'the cause is logged');
      assert.ok(lines.length < 20, `${lines.length} lines for 20 answers`);
      const causes = lines.map((line) => line.cause.code ?? line.cause.message);
      assert.deepEqual(causes, [...new Set(causes)], 'each cause once');
      assert.ok(
        causes.some((cause) => /ECONNREFUSED|terminated|timeout/i.test(cause)),
        causes.join(', '),
      );
    } finally {
      await roost.close();
      await proxy.close();
    }
  });
});
