// The typed client (src/client) end to end against a real server, and its events()
// iterator across server restarts: it must lose nothing and repeat nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RoostClient, RoostError, RoostNetworkError, fromCredentials, type Event } from '../src/index.js';
import { freePort } from './helpers/ports.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describe('RoostClient against a running server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(() => server.close());

  test('create, deliver (with idempotency), list, ack, get and delete', async () => {
    const anonymous = new RoostClient({ baseUrl: server.url });
    const created = await anonymous.createAddress({ name: 'client test', task_id: 'T-1' });
    assert.match(created.credentials.read_token, /^roost_read_/);

    // The saved response is all a later run needs; the test reaches the server at its real origin.
    const client = fromCredentials(JSON.stringify(created), { baseUrl: server.url });
    assert.equal(client.addressId, created.address.id);
    const address = await client.getAddress();
    assert.equal(address.taskId, 'T-1');

    const inbox = created.endpoints.inbox_url;
    const first = await anonymous.deliver(inbox, { type: 'job.done', data: { n: 1 } }, { idempotencyKey: 'job-1' });
    assert.equal(first.duplicate, false);
    assert.equal(first.event.sequence, 1);
    const repeat = await anonymous.deliver(inbox, { data: { n: 'ignored' } }, { idempotencyKey: 'job-1' });
    assert.equal(repeat.duplicate, true);
    assert.equal(repeat.event.id, first.event.id);
    assert.deepEqual(repeat.event.data, { n: 1 });
    const second = await anonymous.deliver(inbox);
    assert.equal(second.event.type, 'message.received');

    const page = await client.listEvents({ after: 0, limit: 1 });
    assert.deepEqual(
      page.events.map((e) => e.id),
      [first.event.id],
    );
    assert.equal(page.has_more, true);
    const rest = await client.listEvents({ after: page.next_cursor });
    assert.deepEqual(
      rest.events.map((e) => e.sequence),
      [2],
    );

    const acked = await client.ack(first.event.id);
    assert.ok(acked.acknowledged_at);

    await client.deleteAddress();
    await assert.rejects(client.getAddress(), (error: unknown) => {
      assert.ok(error instanceof RoostError);
      assert.equal(error.status, 404);
      assert.equal(error.code, 'address_not_found');
      assert.equal(error instanceof RoostNetworkError, false);
      return true;
    });
  });

  test('rotates, shares read-only and updates; a client keeps working after rotating its own token', async () => {
    const created = await new RoostClient({ baseUrl: server.url }).createAddress({ name: 'rotating' });
    const client = fromCredentials(JSON.stringify(created), { baseUrl: server.url });
    const { read_token } = await client.rotateReadToken();
    assert.notEqual(read_token, created.credentials.read_token);
    assert.equal((await client.getAddress()).name, 'rotating', 'this client uses the new token');
    const stale = fromCredentials(JSON.stringify(created), { baseUrl: server.url });
    await assert.rejects(stale.getAddress(), (error: RoostError) => error.code === 'unauthorized');

    const inboxUrl = await client.rotateInboxSecret({ graceSeconds: 30 });
    assert.notEqual(inboxUrl, created.endpoints.inbox_url);
    const view = await client.createViewToken({ label: 'watcher', expires_in_seconds: 600 });
    assert.deepEqual(
      (await client.listViewTokens()).map((t) => [t.id, t.label]),
      [[view.id, 'watcher']],
    );
    const viewer = new RoostClient({ baseUrl: server.url, addressId: created.address.id, readToken: view.token });
    assert.deepEqual((await viewer.listEvents()).events, []);
    await assert.rejects(
      viewer.deleteAddress(),
      (error: RoostError) => error.status === 403 && error.code === 'forbidden',
    );
    await client.revokeViewToken(view.id);
    await assert.rejects(viewer.getAddress(), (error: RoostError) => error.status === 401);
    const updated = await client.updateAddress({ name: 'renamed', expires_in_seconds: 3600 });
    assert.equal(updated.name, 'renamed');
    assert.ok(updated.expiresAt);
  });

  test('errors are typed: the service said no, or the service was not reached', async () => {
    const created = await new RoostClient({ baseUrl: server.url }).createAddress();
    const wrong = new RoostClient({
      baseUrl: server.url,
      addressId: created.address.id,
      readToken: 'roost_read_not-the-token',
    });
    await assert.rejects(wrong.listEvents(), (error: unknown) => {
      assert.ok(error instanceof RoostError);
      assert.equal(error.status, 401);
      assert.equal(error.code, 'unauthorized');
      assert.equal(error.retryable, false);
      return true;
    });
    await assert.rejects(
      new RoostClient({ baseUrl: server.url }).deliver(
        `${server.url}/api/v1/inbox/${created.address.id}/roost_ingress_wrong`,
        {},
      ),
      {
        status: 404,
        code: 'inbox_not_found',
      },
    );
    await assert.rejects(new RoostClient({ baseUrl: server.url }).createAddress({ name: 'x'.repeat(101) }), {
      status: 400,
      code: 'invalid_request',
    });

    const unreachable = new RoostClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      addressId: 'addr_x',
      readToken: 'roost_read_x',
    });
    await assert.rejects(unreachable.getAddress(), (error: unknown) => {
      assert.ok(error instanceof RoostNetworkError);
      assert.equal(error.code, 'network_error');
      assert.equal(error.status, 0);
      assert.equal(error.retryable, true);
      return true;
    });
  });

  test('events() with ack: each event is acknowledged once the next one is asked for', async () => {
    const created = await new RoostClient({ baseUrl: server.url }).createAddress();
    const client = RoostClient.fromCredentials(created, { baseUrl: server.url });
    for (let i = 1; i <= 3; i++)
      await client.deliver(`${server.url}${new URL(created.endpoints.inbox_url).pathname}`, { data: i });

    const seen: number[] = [];
    for await (const event of client.events({ ack: true, wait: 1 })) {
      seen.push(event.sequence);
      if (seen.length === 3) break; // leaving the loop: the last one stays unacknowledged
    }
    assert.deepEqual(seen, [1, 2, 3]);
    const page = await client.listEvents();
    assert.deepEqual(
      page.events.map((e) => Boolean(e.acknowledged_at)),
      [true, true, false],
    );

    // Resuming after the last cursor yields nothing old; aborting ends a held poll quietly.
    const controller = new AbortController();
    const later: Event[] = [];
    const iteration = (async () => {
      for await (const event of client.events({ after: 3, wait: 25, signal: controller.signal })) later.push(event);
    })();
    controller.abort();
    await iteration;
    assert.deepEqual(later, []);
  });

  test('filters on listEvents and events(), and ackUpTo acknowledges a run', async () => {
    const created = await new RoostClient({ baseUrl: server.url }).createAddress();
    const client = RoostClient.fromCredentials(created, { baseUrl: server.url });
    const inbox = `${server.url}${new URL(created.endpoints.inbox_url).pathname}`;
    for (const event of [
      { type: 'job.done', data: { job: { id: 1 } } },
      { type: 'job.progress', data: { job: { id: 2 } } },
      { type: 'job.done', data: { job: { id: 2 }, body: '{"ok":true}' } },
      { type: 'other', source: 'callback', metadata: { callback_id: 'cb_9', callback_key: 'k' } },
    ])
      await client.deliver(inbox, event);
    const page = await client.listEvents({ type: ['job.*'], dataContains: { job: { id: 2 } } });
    assert.deepEqual([page.events.map((e) => e.sequence), page.next_cursor], [[2, 3], 4]);
    assert.deepEqual(
      (await client.listEvents({ bodyContains: { ok: true } })).events.map((e) => e.sequence),
      [3],
    );
    assert.deepEqual(
      (await client.listEvents({ callback: 'k', source: 'callback' })).events.map((e) => e.sequence),
      [4],
    );
    await assert.rejects(client.listEvents({ type: 'a*b' }), { status: 400, code: 'invalid_request' });

    // events() follows a filter: it waits through what does not match.
    const seen: number[] = [];
    const following = (async () => {
      for await (const event of client.events({ type: 'job.done', dataContains: { job: { id: 3 } }, wait: 25 })) {
        seen.push(event.sequence);
        break;
      }
    })();
    await client.deliver(inbox, { type: 'job.done', data: { job: { id: 4 } } });
    await client.deliver(inbox, { type: 'job.done', data: { job: { id: 3 } } });
    await following;
    assert.deepEqual(seen, [6]);

    assert.equal(await client.ackUpTo(3), 3);
    assert.equal(await client.ackUpTo(3), 0);
    assert.deepEqual(
      (await client.listEvents({ unacked: true })).events.map((e) => e.sequence),
      [4, 5, 6],
    );
  });
});

describe('events() across server restarts', () => {
  let dir: string;
  let current: ServerProcess | undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'roost-client-restart-'));
  });
  after(async () => {
    await current?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test(
    'a follower loses nothing and repeats nothing when the server stops, and when it is killed',
    { timeout: 90_000 },
    async () => {
      const port = await freePort();
      const env = { PORT: String(port), ROOST_DB: join(dir, 'roost.db') };
      current = await spawnServer(env);
      const base = current.url;
      const created = await new RoostClient({ baseUrl: base }).createAddress();
      const inbox = `${base}${new URL(created.endpoints.inbox_url).pathname}`;
      const client = RoostClient.fromCredentials(created, {
        baseUrl: base,
        backoff: { initialDelayMs: 50, maxDelayMs: 400 },
      });

      const received: Event[] = [];
      let retries = 0;
      const controller = new AbortController();
      let arrived: () => void = () => {};
      const follower = (async () => {
        for await (const event of client.events({ wait: 25, signal: controller.signal, onRetry: () => retries++ })) {
          received.push(event);
          arrived();
        }
      })();
      // Waits for n events, failing at once if the follower gave up instead.
      const receivedCount = (n: number) =>
        Promise.race([
          new Promise<void>((resolve) => {
            arrived = () => received.length >= n && resolve();
            arrived();
          }),
          follower.then(() => Promise.reject(new Error(`the follower ended after ${received.length} events`))),
        ]);

      const deliverBatch = async (from: number) => {
        for (let i = from; i < from + 3; i++) await client.deliver(inbox, { data: { i } }, { idempotencyKey: `k${i}` });
      };

      await deliverBatch(1);
      await receivedCount(3);
      // SIGTERM while the follower's poll is held: the poll answers empty, then the port is closed.
      assert.equal(await current.stop(), 0);
      current = await spawnServer(env);
      await deliverBatch(4);
      await receivedCount(6);
      // SIGKILL: the held poll's connection dies without an answer.
      await current.kill();
      current = await spawnServer(env);
      await deliverBatch(7);
      await receivedCount(9);

      controller.abort();
      await follower;
      assert.deepEqual(
        received.map((e) => e.sequence),
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
      );
      assert.deepEqual(
        received.map((e) => (e.data as { i: number }).i),
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
      );
      assert.equal(new Set(received.map((e) => e.id)).size, 9);
      assert.ok(retries > 0, 'the follower should have had to retry while the server was down');
    },
  );
});
