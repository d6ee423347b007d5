// Delivering through the secret inbox URL (docs/api.md §3, §6, docs/api.md §3): validation,
// idempotency, capacity and the uniform 404, over real HTTP on every engine.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createAddress, deliver, listEvents, request, assertErrorBody } from './helpers/http.js';
import { forEachEngine } from './helpers/engines.js';

/** `depth` arrays around a leaf: data nested `depth` levels deep. */
const nested = (depth: number): unknown => {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

await forEachEngine('deliver', (server) => {
  it('queues with 202 and the EventDeliveryResponse, with the spec defaults', async () => {
    const a = await createAddress(server().url);
    const res = await deliver(a.inbox, { data: { ok: true } });
    assert.equal(res.status, 202);
    assert.deepEqual(Object.keys(res.body).sort(), ['duplicate', 'event']);
    assert.equal(res.body.duplicate, false);
    assert.equal(res.body.event.type, 'message.received');
    assert.equal(res.body.event.source, 'https');
    assert.equal(res.body.event.sequence, 1);
    assert.equal(res.body.event.address_id, a.id);
    assert.equal((await deliver(a.inbox, { data: 2 })).body.event.sequence, 2);
  });

  it('accepts any JSON value as data, and +json media types', async () => {
    const a = await createAddress(server().url);
    for (const data of ['text', 42, -1.5e-7, true, null, [], {}, [1, { a: 'b' }], nested(64)]) {
      const res = await deliver(a.inbox, { data });
      assert.equal(res.status, 202, JSON.stringify(data));
      assert.deepEqual(res.body.event.data, data);
    }
    const cloud = await request(server().url, 'POST', a.inbox, {
      rawBody: JSON.stringify({ type: 'ce' }),
      headers: { 'content-type': 'application/cloudevents+json; charset=UTF-8' },
    });
    assert.equal(cloud.status, 202);
  });

  it('deduplicates by Idempotency-Key: 200, duplicate true, the first event unchanged', async () => {
    const a = await createAddress(server().url);
    const first = await deliver(a.inbox, { data: 'first' }, { 'idempotency-key': 'retry-1' });
    assert.equal(first.status, 202);
    assert.equal(first.body.event.dedupe_key, 'retry-1');
    const repeat = await deliver(a.inbox, { data: 'second', type: 'other' }, { 'idempotency-key': 'retry-1' });
    assert.equal(repeat.status, 200);
    assert.equal(repeat.body.duplicate, true);
    assert.deepEqual(repeat.body.event, first.body.event);
    // The body field is the same key space.
    const viaBody = await deliver(a.inbox, { data: 'third', dedupe_key: 'retry-1' });
    assert.equal(viaBody.status, 200);
    assert.equal(viaBody.body.event.id, first.body.event.id);
    assert.equal((await listEvents(server().url, a)).body.events.length, 1);
  });

  it('keys are per address', async () => {
    const a = await createAddress(server().url);
    const b = await createAddress(server().url);
    assert.equal((await deliver(a.inbox, {}, { 'idempotency-key': 'k' })).status, 202);
    assert.equal((await deliver(b.inbox, {}, { 'idempotency-key': 'k' })).status, 202);
  });

  it('exactly one of many concurrent deliveries with one key gets 202', async () => {
    const a = await createAddress(server().url);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => deliver(a.inbox, { data: i }, { 'idempotency-key': 'race' })),
    );
    assert.equal(results.filter((r) => r.status === 202).length, 1);
    assert.equal(results.filter((r) => r.status === 200 && r.body.duplicate).length, 29);
    assert.equal(new Set(results.map((r) => r.body.event.id)).size, 1);
  });

  it('accepts the same key in header and body; refuses different ones with idempotency_key_mismatch', async () => {
    const a = await createAddress(server().url);
    assert.equal((await deliver(a.inbox, { dedupe_key: 'same' }, { 'idempotency-key': 'same' })).status, 202);
    const res = await deliver(a.inbox, { dedupe_key: 'one' }, { 'idempotency-key': 'two' });
    assert.equal(res.status, 400);
    assertErrorBody(res.body, 'idempotency_key_mismatch');
  });

  it('bounds keys to 1–1,024 characters: visible ASCII and spaces in the header, any text without NUL in the body', async () => {
    const a = await createAddress(server().url);
    assert.equal((await deliver(a.inbox, {}, { 'idempotency-key': '~'.repeat(1024) })).status, 202);
    assert.equal((await deliver(a.inbox, { dedupe_key: '!'.repeat(1024) })).status, 202);
    for (const key of ['', 'x'.repeat(1025), 'tab\tkey', 'M\u00e4rz']) {
      const res = await deliver(a.inbox, {}, { 'idempotency-key': key });
      assert.equal(res.status, 400, JSON.stringify(key));
      assertErrorBody(res.body, 'invalid_request');
    }
    for (const key of ['', 'x'.repeat(1025), 'nul\u0000', 'lone \ud800']) {
      const res = await deliver(a.inbox, { dedupe_key: key });
      assert.equal(res.status, 400, JSON.stringify(key));
      assertErrorBody(res.body, 'invalid_request');
    }
  });

  const invalid: Array<[string, unknown]> = [
    ['an unknown property', { data: 1, extra: true }],
    ['type not a string', { type: 1 }],
    ['source not a string', { source: ['https'] }],
    ['metadata with a non-string value', { metadata: { n: 1 } }],
    ['metadata not an object', { metadata: 'x' }],
    ['an array body', [{ data: 1 }]],
    ['a string body', 'data'],
    ['a null body', null],
    ['data nested 65 levels', { data: nested(65) }],
  ];
  for (const [what, body] of invalid) {
    it(`refuses ${what} with 400 invalid_request`, async () => {
      const a = await createAddress(server().url);
      const res = await request(server().url, 'POST', a.inbox, {
        rawBody: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400, res.text);
      assertErrorBody(res.body, 'invalid_request');
      assert.equal((await listEvents(server().url, a)).body.events.length, 0);
    });
  }

  it('refuses unparsable JSON (400 invalid_json), non-JSON types (415) and oversized bodies (413)', async () => {
    const a = await createAddress(server().url);
    const cases: Array<[Record<string, string>, string | Buffer, number, string]> = [
      [{ 'content-type': 'application/json' }, '{"data": tru', 400, 'invalid_json'],
      [{ 'content-type': 'application/json' }, '', 400, 'invalid_json'],
      [{ 'content-type': 'text/plain' }, '{"data":1}', 415, 'unsupported_media_type'],
      [{}, Buffer.from('{"data":1}'), 415, 'unsupported_media_type'],
      [{ 'content-type': 'application/json; charset=latin1' }, '{"data":1}', 415, 'unsupported_media_type'],
      [
        { 'content-type': 'application/json' },
        JSON.stringify({ data: 'x'.repeat(256 * 1024) }),
        413,
        'payload_too_large',
      ],
    ];
    for (const [headers, rawBody, status, code] of cases) {
      const res = await request(server().url, 'POST', a.inbox, { headers, rawBody });
      assert.equal(res.status, status, `${JSON.stringify(headers)} → ${res.text}`);
      assertErrorBody(res.body, code);
    }
  });

  it('answers the same 404 inbox_not_found for a wrong secret, an unknown address or a malformed secret', async () => {
    const a = await createAddress(server().url);
    const secret = a.inbox.split('/').pop()!;
    const paths = [
      `/api/v1/inbox/${a.id}/roost_ingress_${'A'.repeat(43)}`,
      `/api/v1/inbox/${a.id}/${secret}x`,
      `/api/v1/inbox/addr_unknown/${secret}`,
      `/api/v1/inbox/${a.id}/not-a-secret`,
      `/api/v1/inbox/${a.id}/${a.token}`,
    ];
    const bodies = new Set<string>();
    for (const path of paths) {
      const res = await request(server().url, 'POST', path, { body: { data: 1 } });
      assert.equal(res.status, 404, path);
      assertErrorBody(res.body, 'inbox_not_found');
      bodies.add(res.text);
      // A wrong inbox answers 404 whatever the body: it reveals nothing about the address.
      for (const [rawBody, type] of [
        ['{"bogus":1}', 'application/json'],
        ['{"data": tru', 'application/json'],
        ['hello', 'text/plain'],
      ]) {
        const invalid = await request(server().url, 'POST', path, { rawBody, headers: { 'content-type': type } });
        assert.equal(invalid.status, 404, `${rawBody} → ${invalid.text}`);
      }
    }
    assert.equal(bodies.size, 1, 'every miss looks the same');
  });

  it('cannot read the queue with the inbox secret', async () => {
    const a = await createAddress(server().url);
    const secret = a.inbox.split('/').pop()!;
    const res = await request(server().url, 'GET', `/api/v1/addresses/${a.id}/events`, { token: secret });
    assert.equal(res.status, 401);
    const get = await request(server().url, 'GET', a.inbox);
    assert.equal(get.status, 405);
    assertErrorBody(get.body, 'method_not_allowed');
  });

  it('at capacity evicts the oldest acknowledged event, and refuses with 429 queue_full when none is', async () => {
    const a = await createAddress(server().url);
    // 1000 deliveries, sent in concurrent batches to keep the test short.
    for (let batch = 0; batch < 10; batch++) {
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => deliver(a.inbox, { data: batch * 100 + i })),
      );
      assert.ok(results.every((r) => r.status === 202));
    }
    const full = await deliver(a.inbox, { data: 'overflow' });
    assert.equal(full.status, 429);
    assertErrorBody(full.body, 'queue_full');
    assert.ok(Number(full.headers.get('retry-after')) >= 1);
    // A repeated key is still answered while full: nothing new would be queued.
    const page = await listEvents(server().url, a, 'limit=3');
    const [e1, e2, e3] = page.body.events;
    for (const e of [e3, e2]) {
      assert.equal(
        (await request(server().url, 'POST', `/api/v1/addresses/${a.id}/events/${e.id}/ack`, { token: a.token }))
          .status,
        200,
      );
    }
    const accepted = await deliver(a.inbox, { data: 'room' });
    assert.equal(accepted.status, 202);
    assert.equal(accepted.body.event.sequence, 1001);
    const after = await listEvents(server().url, a, 'limit=3');
    // The oldest acknowledged (sequence 2) went; sequence 1, unacknowledged, stayed.
    assert.deepEqual(
      after.body.events.map((e: any) => e.sequence),
      [1, 3, 4],
    );
    assert.equal(after.body.events[0].id, e1.id);
    assert.equal((await deliver(a.inbox, { data: 'room 2' })).body.event.sequence, 1002);
    assert.equal((await deliver(a.inbox, { data: 'full again' })).status, 429);
  });
});
