// Filtered reads over REST on both engines (docs/api.md §4.2): type patterns, source,
// callback, data_contains and body_contains; next_cursor past what was scanned; the scan
// bound; a filtered long poll sleeping through events that do not match; 400s naming the
// parameter; and the acknowledgement of a run (POST …/events/ack).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventually, forEachEngine } from './helpers/engines.js';
import { assertError, createAddress, deliver, listEvents, request } from './helpers/http.js';

const q = (params: Record<string, string | number>) =>
  Object.entries(params)
    .map(([key, value]) => `${key}=${encodeURIComponent(value)}`)
    .join('&');

const sequences = (body: { events: Array<{ sequence: number }> }) => body.events.map((event) => event.sequence);

async function heldPolls(base: string): Promise<number> {
  const metrics = await request(base, 'GET', '/metrics');
  const match = /^roost_polls_held (\d+)/m.exec(metrics.text);
  return match ? Number(match[1]) : -1;
}

await forEachEngine('filtered reads', (server) => {
  test('type patterns, source, callback and data_contains pick their events; next_cursor moves past the scan', async () => {
    const base = server().url;
    const address = await createAddress(base);
    const sent = [
      { type: 'stripe.payment_intent.succeeded', source: 'stripe', data: { job: { id: 2, tags: ['a', 'b'] } } },
      { type: 'stripe.charge.refunded', source: 'stripe', data: { job: { id: 1 } } },
      {
        type: 'callback.delivery',
        source: 'callback',
        data: { body: '{"status":"done"}' },
        metadata: { callback_id: 'cb_abc', callback_key: 'job-2' },
      },
      { type: 'build.done', source: 'ci', data: { items: [{ sku: 'x', qty: 2 }, { sku: 'y' }] } },
      { type: 'other', source: 'ci', data: {} },
    ];
    for (const body of sent) assert.equal((await deliver(address.inbox, body)).status, 202);

    const read = async (params: Record<string, string | number>) => {
      const res = await listEvents(base, address, q(params));
      assert.equal(res.status, 200, res.text);
      return res.body;
    };
    assert.deepEqual(sequences(await read({ type: 'stripe.payment_intent.*' })), [1]);
    assert.deepEqual(sequences(await read({ type: 'stripe.*,build.done' })), [1, 2, 4]);
    assert.deepEqual(sequences(await read({ source: 'ci' })), [4, 5]);
    assert.deepEqual(sequences(await read({ callback: 'job-2' })), [3]);
    assert.deepEqual(sequences(await read({ callback: 'cb_abc', source: 'callback' })), [3]);
    assert.deepEqual(sequences(await read({ data_contains: '{"job":{"tags":["b"]}}' })), [1]);
    assert.deepEqual(sequences(await read({ data_contains: '{"items":[{"sku":"y"},{"qty":2}]}' })), [4]);
    assert.deepEqual(sequences(await read({ body_contains: '{"status":"done"}' })), [3]);

    // The page holds every match it scanned: its cursor is past the whole scan, and says so.
    const page = await read({ type: 'stripe.*' });
    assert.deepEqual(
      { next: page.next_cursor, more: page.has_more, limited: page.scan_limited },
      { next: 5, more: false, limited: undefined },
    );
    // A page full of matches: its cursor is its last event, the rest is for the next page.
    const short = await read({ type: 'stripe.*', limit: 1 });
    assert.deepEqual(
      { events: sequences(short), next: short.next_cursor, more: short.has_more },
      {
        events: [1],
        next: 1,
        more: true,
      },
    );
    // Nothing matches: an empty page whose cursor still moves past what it scanned.
    const none = await read({ type: 'nothing.*' });
    assert.deepEqual(
      { events: none.events, next: none.next_cursor, more: none.has_more, latest: none.latest_sequence },
      {
        events: [],
        next: 5,
        more: false,
        latest: 5,
      },
    );
  });

  test('body_contains looks into a raw capture body that is JSON', async () => {
    const base = server().url;
    const address = await createAddress(base);
    const raw = (body: string) =>
      request(address.inbox, 'POST', `${address.inbox}?raw=1`, {
        rawBody: body,
        headers: { 'content-type': 'application/json' },
      });
    assert.equal((await raw('{"type":"invoice.paid","data":{"object":{"id":"in_1","lines":[1,2]}}}')).status, 202);
    assert.equal((await raw('{"type":"invoice.created","data":{"object":{"id":"in_2"}}}')).status, 202);
    assert.equal((await raw('{"type":"invoice.paid"')).status, 202);
    const res = await listEvents(
      base,
      address,
      q({ body_contains: '{"type":"invoice.paid","data":{"object":{"lines":[2]}}}' }),
    );
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(sequences(res.body), [1]);
    assert.deepEqual(sequences((await listEvents(base, address, q({ body_contains: '{}' }))).body), [1, 2]);
  });

  test('a malformed or oversized filter is 400 naming the parameter', async () => {
    const base = server().url;
    const address = await createAddress(base);
    for (const [params, name] of [
      [{ type: 'a*b' }, 'type'],
      [{ type: '' }, 'type'],
      [{ type: Array.from({ length: 21 }, (_, i) => `t${i}`).join(',') }, 'type'],
      [{ type: 'x'.repeat(201) }, 'type'],
      [{ source: 'x'.repeat(201) }, 'source'],
      [{ callback: '' }, 'callback'],
      [{ data_contains: '{"a":' }, 'data_contains'],
      [{ data_contains: JSON.stringify({ pad: 'x'.repeat(5000) }) }, 'data_contains'],
      [{ data_contains: '['.repeat(20) + ']'.repeat(20) }, 'data_contains'],
      [{ body_contains: '{"a":"\\u0000"}' }, 'body_contains'],
      [{ body_contains: 'nope' }, 'body_contains'],
    ] as const) {
      const res = await listEvents(base, address, q(params));
      assertError(res, 400, 'invalid_request');
      assert.match(res.body.error.message, new RegExp(`"${name}"`), JSON.stringify(params));
    }
  });

  test('a filtered long poll sleeps through events that do not match and answers with the first that does', async () => {
    const base = server().url;
    const address = await createAddress(base);
    const poll = listEvents(base, address, q({ type: 'job.done', data_contains: '{"job":2}', wait: 20 }));
    await eventually(async () => (await heldPolls(base)) === 1, 'poll held');
    assert.equal((await deliver(address.inbox, { type: 'job.done', data: { job: 1 } })).status, 202);
    assert.equal((await deliver(address.inbox, { type: 'job.progress', data: { job: 2 } })).status, 202);
    assert.equal((await deliver(address.inbox, { type: 'job.done', data: { job: 2 } })).status, 202);
    const answer = await poll;
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(sequences(answer.body), [3]);
    assert.equal(answer.body.next_cursor, 3);
    assert.equal(answer.body.has_more, false);
  });

  test('REST acknowledges a run: up_to_sequence, as MCP ack_event', async () => {
    const base = server().url;
    const address = await createAddress(base);
    for (let i = 0; i < 3; i++) assert.equal((await deliver(address.inbox, { type: 'x' })).status, 202);
    const ack = (body: unknown, token = address.token) =>
      request(base, 'POST', `/api/v1/addresses/${address.id}/events/ack`, { body, token });
    const first = await ack({ up_to_sequence: 2 });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { acknowledged: 2, up_to_sequence: 2 });
    assert.deepEqual(sequences((await listEvents(base, address, 'unacked=1')).body), [3]);
    assert.deepEqual((await ack({ up_to_sequence: 2 })).body, { acknowledged: 0, up_to_sequence: 2 });
    assert.deepEqual((await ack({ up_to_sequence: 99 })).body, { acknowledged: 1, up_to_sequence: 99 });
    assertError(await ack({ up_to_sequence: 0 }), 400, 'invalid_request');
    assertError(await ack({ up_to_sequence: '2' }), 400, 'invalid_request');
    assertError(await ack({}), 400, 'invalid_request');
    assertError(await ack({ up_to_sequence: 1 }, 'rt_wrong'), 401, 'unauthorized');
    assertError(await ack({ up_to_sequence: 1, also: true }), 400, 'invalid_request');
    // A view token reads (with filters too) but acknowledges nothing.
    const created = await request(base, 'POST', `/api/v1/addresses/${address.id}/view-tokens`, {
      token: address.token,
      body: {},
    });
    const view: string = created.body.view_token.token;
    assertError(await ack({ up_to_sequence: 3 }, view), 403, 'forbidden');
    const viewed = await request(base, 'GET', `/api/v1/addresses/${address.id}/events?type=x`, {
      token: view,
    });
    assert.deepEqual(sequences(viewed.body), [1, 2, 3]);
  });
});

await forEachEngine(
  'filtered reads with a scan bound of 3',
  (server) => {
    test('the scan bound stops a page: has_more and scan_limited, and the cursor moves on', async () => {
      const base = server().url;
      const address = await createAddress(base);
      for (let i = 1; i <= 8; i++)
        assert.equal((await deliver(address.inbox, { type: i === 7 ? 'wanted' : 'noise' })).status, 202);
      const first = await listEvents(base, address, q({ type: 'wanted', wait: 5 }));
      assert.deepEqual(
        {
          events: first.body.events,
          next: first.body.next_cursor,
          more: first.body.has_more,
          limited: first.body.scan_limited,
        },
        { events: [], next: 3, more: true, limited: true },
      );
      const second = await listEvents(base, address, q({ type: 'wanted', after: 3 }));
      assert.deepEqual(
        { next: second.body.next_cursor, limited: second.body.scan_limited },
        { next: 6, limited: true },
      );
      const third = await listEvents(base, address, q({ type: 'wanted', after: 6 }));
      assert.deepEqual(
        {
          events: sequences(third.body),
          next: third.body.next_cursor,
          more: third.body.has_more,
          limited: third.body.scan_limited,
        },
        { events: [7], next: 8, more: false, limited: undefined },
      );
    });
  },
  { env: { ROOST_FILTER_SCAN_EVENTS: '3' } },
);
