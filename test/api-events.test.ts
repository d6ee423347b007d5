// Reading the queue by cursor, long-polling and acknowledging (docs/api.md §4, §4.2, §6,
// docs/api.md §4), over real HTTP against a real server, on every engine.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createAddress, deliver, listEvents, request, type CreatedAddress, assertErrorBody } from './helpers/http.js';
import { eventually, forEachEngine } from './helpers/engines.js';

async function fill(address: CreatedAddress, count: number) {
  for (let i = 1; i <= count; i++) {
    const res = await deliver(address.inbox, { data: { i } });
    assert.equal(res.status, 202);
  }
}

await forEachEngine('read the queue', (server) => {
  let full: CreatedAddress;

  it('pages with the default limit 50, next_cursor and has_more', async () => {
    full = await createAddress(server().url);
    await fill(full, 60);
    const first = await listEvents(server().url, full);
    assert.equal(first.status, 200);
    assert.deepEqual(Object.keys(first.body).sort(), ['events', 'has_more', 'latest_sequence', 'next_cursor']);
    assert.equal(first.body.latest_sequence, 60);
    assert.equal(first.body.events.length, 50);
    assert.deepEqual(
      first.body.events.map((e: any) => e.sequence),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.equal(first.body.next_cursor, 50);
    assert.equal(first.body.has_more, true);
    const second = await listEvents(server().url, full, `after=${first.body.next_cursor}`);
    assert.deepEqual(
      second.body.events.map((e: any) => e.data.i),
      Array.from({ length: 10 }, (_, i) => i + 51),
    );
    assert.equal(second.body.next_cursor, 60);
    assert.equal(second.body.has_more, false);
  });

  it('an empty page keeps the cursor: next_cursor = after, has_more false; latest_sequence shows a cursor past the end', async () => {
    for (const after of [60, 1000, 9007199254740991]) {
      const res = await listEvents(server().url, full, `after=${after}`);
      assert.deepEqual(res.body, { events: [], next_cursor: after, has_more: false, latest_sequence: 60 });
    }
  });

  it('honours limit at both bounds and has_more exactly at the edge', async () => {
    const one = await listEvents(server().url, full, 'limit=1&after=59');
    assert.deepEqual(
      one.body.events.map((e: any) => e.sequence),
      [60],
    );
    assert.equal(one.body.has_more, false);
    const edge = await listEvents(server().url, full, 'limit=1&after=58');
    assert.equal(edge.body.has_more, true);
    const hundred = await listEvents(server().url, full, 'limit=100');
    assert.equal(hundred.body.events.length, 60);
  });

  const bad = [
    'limit=0',
    'limit=101',
    'wait=26',
    'after=-1',
    'after=1.5',
    'after=1e2',
    'after=%2B1',
    'after=',
    'limit=ten',
    'after=0x10',
    'wait=1&wait=2',
    'after=%201',
    'after=99999999999999999999',
  ];
  for (const query of bad) {
    it(`refuses ${query} with 400 invalid_request naming the parameter`, async () => {
      const res = await listEvents(server().url, full, query);
      assert.equal(res.status, 400, res.text);
      assertErrorBody(res.body, 'invalid_request');
      assert.match(res.body.error.message, new RegExp(query.split('=')[0]));
    });
  }

  it('accepts the upper bounds limit=100 and wait=25 (answers at once when events exist)', async () => {
    const res = await listEvents(server().url, full, 'limit=100&wait=25&after=0');
    assert.equal(res.status, 200);
    assert.equal(res.body.events.length, 60);
  });

  it('returns data as delivered, metadata and dedupe_key, and omits absent optional fields', async () => {
    const a = await createAddress(server().url);
    const data = { z: 1, a: [true, null, 'ü', { nested: { deep: 1.5 } }], m: '' };
    await deliver(a.inbox, { type: 't.x', source: 'ci', data, metadata: { k: 'v' }, dedupe_key: 'key-1' });
    await deliver(a.inbox, {});
    const page = await listEvents(server().url, a);
    // The page is written as text by the route (stored data spliced in), not by Fastify's serialiser.
    assert.equal(page.headers.get('content-type'), 'application/json; charset=utf-8');
    const [first, second] = page.body.events;
    assert.deepEqual(first.data, data);
    // Key order as delivered (docs/api.md §3: stored as JSON text, not normalised).
    assert.deepEqual(Object.keys(first.data), ['z', 'a', 'm']);
    assert.equal(first.type, 't.x');
    assert.equal(first.source, 'ci');
    assert.deepEqual(first.metadata, { k: 'v' });
    assert.equal(first.dedupe_key, 'key-1');
    assert.equal(first.address_id, a.id);
    assert.match(first.id, /^evt_[A-Za-z0-9_-]{22,}$/);
    assert.deepEqual(Object.keys(second).sort(), [
      'address_id',
      'created_at',
      'data',
      'id',
      'sequence',
      'source',
      'type',
    ]);
    assert.equal(second.type, 'message.received');
    assert.equal(second.source, 'https');
    assert.equal(second.data, null);
  });
});

await forEachEngine('long-poll', (server) => {
  it('is woken by the commit of a delivery, well before `wait` ends', async () => {
    const a = await createAddress(server().url);
    const started = Date.now();
    const poll = listEvents(server().url, a, 'wait=20');
    await eventually(() => server().roost.waiters.held > 0, 'the poll is held');
    const delivered = await deliver(a.inbox, { data: 'wake up' });
    const res = await poll;
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.events.map((e: any) => e.id),
      [delivered.body.event.id],
    );
    // Functional, not a benchmark: a timer-driven answer would take the full 20 s.
    assert.ok(Date.now() - started < 10_000, 'answered by the wake-up, not by the timeout');
  });

  it('answers an empty page when `wait` passes with nothing new', async () => {
    const a = await createAddress(server().url);
    await deliver(a.inbox, { data: 1 });
    const started = Date.now();
    const res = await listEvents(server().url, a, 'after=1&wait=1');
    assert.deepEqual(res.body, { events: [], next_cursor: 1, has_more: false, latest_sequence: 1 });
    assert.ok(Date.now() - started >= 900, 'held for about a second');
  });

  it('only wakes for events past `after`, and only for its own address', async () => {
    const a = await createAddress(server().url);
    const other = await createAddress(server().url);
    await deliver(a.inbox, { data: 'old' });
    const poll = listEvents(server().url, a, 'after=1&wait=20');
    await eventually(() => server().roost.waiters.held > 0, 'the poll is held');
    await deliver(other.inbox, { data: 'elsewhere' });
    const fresh = await deliver(a.inbox, { data: 'new' });
    const res = await poll;
    assert.deepEqual(
      res.body.events.map((e: any) => e.id),
      [fresh.body.event.id],
    );
  });

  it('frees the wait when the client goes away', async () => {
    const a = await createAddress(server().url);
    const before = server().roost.waiters.held;
    const controller = new AbortController();
    const poll = listEvents(server().url, a, 'wait=25').catch(() => 'aborted');
    void request(server().url, 'GET', `/api/v1/addresses/${a.id}/events?wait=25`, {
      token: a.token,
      signal: controller.signal,
    }).catch(() => undefined);
    await eventually(() => server().roost.waiters.held >= before + 2, 'both polls are held');
    controller.abort();
    await eventually(() => server().roost.waiters.held === before + 1, 'the abandoned poll is released');
    await deliver(a.inbox, { data: 'x' });
    assert.notEqual(await poll, 'aborted');
  });

  it('answers 404 address_not_found when the address is deleted while a poll is held', async () => {
    const a = await createAddress(server().url);
    const poll = listEvents(server().url, a, 'wait=20');
    await eventually(() => server().roost.waiters.held > 0, 'the poll is held');
    assert.equal((await request(server().url, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
    const res = await poll;
    assert.equal(res.status, 404);
    assertErrorBody(res.body, 'address_not_found');
  });

  it('wakes every poll held on one address', async () => {
    const a = await createAddress(server().url);
    const polls = Array.from({ length: 20 }, () => listEvents(server().url, a, 'wait=20'));
    await eventually(() => server().roost.waiters.held >= 20, 'all polls are held');
    const delivered = await deliver(a.inbox, { data: 'all' });
    for (const res of await Promise.all(polls))
      assert.deepEqual(
        res.body.events.map((e: any) => e.id),
        [delivered.body.event.id],
      );
  });
});

await forEachEngine('acknowledge', (server) => {
  it('sets acknowledged_at and returns the event; acknowledging again keeps the first time', async () => {
    const a = await createAddress(server().url);
    const { body } = await deliver(a.inbox, { data: 'ack me' });
    const path = `/api/v1/addresses/${a.id}/events/${body.event.id}/ack`;
    const first = await request(server().url, 'POST', path, { token: a.token });
    assert.equal(first.status, 200);
    assert.deepEqual(Object.keys(first.body), ['event']);
    assert.match(first.body.event.acknowledged_at, /Z$/);
    assert.deepEqual(
      { ...first.body.event, acknowledged_at: undefined },
      { ...body.event, acknowledged_at: undefined },
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await request(server().url, 'POST', path, { token: a.token });
    assert.equal(again.status, 200);
    assert.equal(again.body.event.acknowledged_at, first.body.event.acknowledged_at);
  });

  it('keeps acknowledged events in pages, marked', async () => {
    const a = await createAddress(server().url);
    const e1 = (await deliver(a.inbox, { data: 1 })).body.event;
    await deliver(a.inbox, { data: 2 });
    await request(server().url, 'POST', `/api/v1/addresses/${a.id}/events/${e1.id}/ack`, { token: a.token });
    const page = await listEvents(server().url, a);
    assert.equal(page.body.events.length, 2);
    assert.ok(page.body.events[0].acknowledged_at);
    assert.equal('acknowledged_at' in page.body.events[1], false);
  });

  it('ignores a body sent with the ack', async () => {
    const a = await createAddress(server().url);
    const e = (await deliver(a.inbox, { data: 1 })).body.event;
    const res = await request(server().url, 'POST', `/api/v1/addresses/${a.id}/events/${e.id}/ack`, {
      token: a.token,
      body: { anything: true },
    });
    assert.equal(res.status, 200);
  });

  it('answers 404 event_not_found for an unknown event or one of another address', async () => {
    const a = await createAddress(server().url);
    const b = await createAddress(server().url);
    const foreign = (await deliver(b.inbox, { data: 1 })).body.event;
    for (const id of ['evt_unknown', foreign.id]) {
      const res = await request(server().url, 'POST', `/api/v1/addresses/${a.id}/events/${id}/ack`, { token: a.token });
      assert.equal(res.status, 404);
      assertErrorBody(res.body, 'event_not_found');
    }
    const untouched = await listEvents(server().url, b);
    assert.equal('acknowledged_at' in untouched.body.events[0], false);
  });
});
