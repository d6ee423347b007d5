// Two Roost processes on one PostgreSQL database, as behind a load balancer: a poll held
// on one is woken by a delivery to the other; concurrent deliveries split across both take
// sequences 1..N exactly; one idempotency key wins once across both; a rotated inbox secret,
// a sender or a delete on one holds at once on the other; the create rate limit is one
// bucket for both (docs/api.md §3, §4, §9).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from './helpers/engines.js';
import { assertError, createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { createTestDatabase, postgresSkipReason, type TestDatabase } from './helpers/postgres.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';

const skip = await postgresSkipReason();

/** The same inbox path on another instance. */
const inboxOn = (server: ServerProcess, address: CreatedAddress) => `${server.url}${new URL(address.inbox).pathname}`;

/** Each test creates from its own client address, so that only the rate-limit test meets the limit. */
const from = (ip: string) => ({ 'x-forwarded-for': ip });

async function heldPolls(server: ServerProcess): Promise<number> {
  const metrics = await request(server.url, 'GET', '/metrics');
  const match = /^roost_polls_held (\d+)/m.exec(metrics.text);
  return match ? Number(match[1]) : -1;
}

describe('two instances on one PostgreSQL database', { skip: skip ? `skipped: ${skip}` : false }, () => {
  let db: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;

  before(async () => {
    db = await createTestDatabase();
    const env = {
      DATABASE_URL: db.url,
      ROOST_CREATE_RATE: '5/min',
      ROOST_TRUST_PROXY: 'true',
      ROOST_PG_POOL_SIZE: '5',
    };
    // Started together: both run the migrations at once.
    [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.drop();
  });

  test('a poll held on one instance is woken by a delivery to the other', async () => {
    const address = await createAddress(a.url, {}, from('198.51.100.1'));
    for (const [poller, sender, after] of [
      [a, b, 0],
      [b, a, 1],
    ] as const) {
      const poll = listEvents(poller.url, address, `after=${after}&wait=20`);
      await eventually(async () => (await heldPolls(poller)) === 1, 'poll held');
      const sent = await deliver(inboxOn(sender, address), { data: { via: sender.url } });
      assert.equal(sent.status, 202);
      let timer: NodeJS.Timeout | undefined;
      // The wait is 20 s; an answer well before it can only come from the wake-up.
      const answer = await Promise.race([
        poll,
        new Promise<'not woken'>((resolve) => (timer = setTimeout(() => resolve('not woken'), 10_000))),
      ]).finally(() => clearTimeout(timer));
      assert.notEqual(answer, 'not woken', `the poll on ${poller.url} was woken by ${sender.url}`);
      if (answer === 'not woken') return;
      assert.equal(answer.status, 200);
      assert.deepEqual(
        answer.body.events.map((e: { data: unknown }) => e.data),
        [{ via: sender.url }],
      );
    }
  });

  test('a filtered poll held on one instance sleeps through deliveries to the other that do not match, and answers the first that does', async () => {
    const address = await createAddress(a.url, {}, from('198.51.100.3'));
    const filter = `type=${encodeURIComponent('job.*')}&data_contains=${encodeURIComponent('{"job":{"id":2}}')}`;
    const poll = listEvents(a.url, address, `${filter}&wait=20`);
    await eventually(async () => (await heldPolls(a)) === 1, 'poll held');
    for (const body of [
      { type: 'job.done', data: { job: { id: 1 } } },
      { type: 'other', data: { job: { id: 2 } } },
    ]) {
      assert.equal((await deliver(inboxOn(b, address), body)).status, 202);
    }
    // Woken by each, the poll finds nothing that matches and is held again.
    await eventually(async () => (await heldPolls(a)) === 1, 'poll held again');
    assert.equal((await deliver(inboxOn(b, address), { type: 'job.done', data: { job: { id: 2 } } })).status, 202);
    const answer = await poll;
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(
      [answer.body.events.map((e: { sequence: number }) => e.sequence), answer.body.next_cursor, answer.body.has_more],
      [[3], 3, false],
    );
  });

  test('200 concurrent deliveries split across both instances take sequences 1..200 exactly', async () => {
    const address = await createAddress(b.url, {}, from('198.51.100.2'));
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => deliver(inboxOn(i % 2 ? a : b, address), { data: i })),
    );
    assert.deepEqual([...new Set(results.map((r) => r.status))], [202]);
    const sequences = results.map((r) => r.body.event.sequence as number).sort((x, y) => x - y);
    assert.deepEqual(
      sequences,
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    // And the queue, read from either instance, holds each delivery once under its sequence.
    const first = await listEvents(a.url, address, 'limit=100');
    const second = await listEvents(b.url, address, 'after=100&limit=100');
    const stored = [...first.body.events, ...second.body.events];
    assert.equal(first.body.has_more, true);
    assert.equal(second.body.has_more, false);
    assert.deepEqual(
      stored.map((e: { sequence: number }) => e.sequence),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    const bySequence = new Map(results.map((r) => [r.body.event.sequence, r.body.event.data]));
    for (const e of stored) assert.equal(e.data, bySequence.get(e.sequence));
  });

  test('one idempotency key sent concurrently to both instances is queued once', async () => {
    const address = await createAddress(a.url, {}, from('198.51.100.3'));
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        deliver(inboxOn(i % 2 ? a : b, address), { data: { attempt: i } }, { 'Idempotency-Key': 'order-42' }),
      ),
    );
    const created = results.filter((r) => r.status === 202);
    const repeats = results.filter((r) => r.status === 200);
    assert.equal(created.length, 1, 'exactly one 202');
    assert.equal(repeats.length, 11);
    const winner = created[0].body.event;
    assert.equal(created[0].body.duplicate, false);
    for (const r of repeats) {
      assert.equal(r.body.duplicate, true);
      assert.deepEqual(r.body.event, winner);
    }
    const page = await listEvents(b.url, address);
    assert.deepEqual(
      page.body.events.map((e: { id: string }) => e.id),
      [winner.id],
    );
    assert.equal(winner.sequence, 1);
  });

  test('a delivery admitted on an address read lately is refused once the other instance rotated, set a sender or deleted', async () => {
    const address = await createAddress(a.url, {}, from('198.51.100.4'));
    const call = (method: string, path: string, body?: unknown) =>
      request(a.url, method, `/api/v1/addresses/${address.id}${path}`, { token: address.token, body });
    const newInboxOf = (res: { body: { endpoints: { inbox_url: string } } }) =>
      `${b.url}${new URL(res.body.endpoints.inbox_url).pathname}`;
    const oldInbox = inboxOn(b, address);
    // B reads the address once, then admits its deliveries on that read (docs/scale-out.md).
    for (const type of ['first', 'second']) assert.equal((await deliver(oldInbox, { type })).status, 202);

    const rotated = await call('POST', '/inbox-secret');
    assert.equal(rotated.status, 200, rotated.text);
    const newInbox = newInboxOf(rotated);
    assertError(await deliver(oldInbox, { type: 'old-after-rotation' }), 404, 'inbox_not_found');
    assertError(
      await request(b.url, 'POST', `${oldInbox}?raw=1`, { rawBody: 'raw', headers: { 'content-type': 'text/plain' } }),
      404,
      'inbox_not_found',
    );
    assert.equal((await deliver(newInbox, { type: 'new' })).status, 202);

    // With a grace period B's read names the secret before: the old URL still opens, by the previous digest.
    const graced = await call('POST', '/inbox-secret', { grace_seconds: 120 });
    assert.equal(graced.status, 200, graced.text);
    assert.equal((await deliver(newInbox, { type: 'previous-in-grace' })).status, 202);
    const latest = newInboxOf(graced);
    assert.equal((await deliver(latest, { type: 'latest' })).status, 202);

    // A sender set on A: B's next delivery goes through the sender's check, unsigned, and is refused.
    const put = await call('PUT', '/sender', { provider: 'github', secrets: ['s3cret-github-one'] });
    assert.equal(put.status, 200, put.text);
    assertError(await deliver(latest, { type: 'unsigned' }), 401, 'signature_invalid');

    const types = (await listEvents(a.url, address)).body.events.map((e: { type: string }) => e.type);
    assert.deepEqual(types, ['first', 'second', 'new', 'previous-in-grace', 'latest']);

    assert.equal((await call('DELETE', '/sender')).status, 204);
    assert.equal((await deliver(latest, { type: 'plain-again' })).status, 202);
    // A body B would refuse (400) is answered as the inbox stands: the secret no longer opens it.
    assert.equal((await call('POST', '/inbox-secret')).status, 200);
    assertError(await deliver(latest, { type: 7 }), 404, 'inbox_not_found');
    const last = newInboxOf(await call('POST', '/inbox-secret'));
    assert.equal((await deliver(last, { type: 'last' })).status, 202);
    assert.equal((await call('DELETE', '')).status, 204);
    assertError(await deliver(last, { type: 'after-delete' }), 404, 'inbox_not_found');
  });

  test('the create rate limit is one bucket shared by both instances', async () => {
    const client = from('203.0.113.7');
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const created = await request(i % 2 ? a.url : b.url, 'POST', '/api/v1/addresses', { body: {}, headers: client });
      assert.equal(created.status, 201, created.text);
      remaining.push(created.headers.get('ratelimit-remaining')!);
    }
    // One bucket: each create, on whichever instance, leaves one token fewer.
    assert.deepEqual(remaining, ['4', '3', '2', '1', '0']);
    for (const server of [a, b]) {
      const refused = await request(server.url, 'POST', '/api/v1/addresses', { body: {}, headers: client });
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'rate_limited');
      assert.match(refused.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    }
    // Another client is unaffected.
    assert.equal(
      (await request(a.url, 'POST', '/api/v1/addresses', { body: {}, headers: from('203.0.113.8') })).status,
      201,
    );
  });
});
