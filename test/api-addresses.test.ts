// Behaviour of creating, reading and deleting return addresses (docs/api.md §2–5, docs/api.md §1,
// §2, §5, §9), over real HTTP against a real server, on every engine.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAddress, deliver, listEvents, request, assertErrorBody } from './helpers/http.js';
import { forEachEngine } from './helpers/engines.js';
import { ENGINES, engineSkipReason, startTestServer } from './helpers/server.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

await forEachEngine('create a return address', (server) => {
  const post = (options: Parameters<typeof request>[3]) => request(server().url, 'POST', '/api/v1/addresses', options);

  // (A Buffer body makes fetch send no Content-Type at all.)
  it('accepts no body at all, {}, an empty JSON body and JSON without Content-Type', async () => {
    for (const options of [
      {},
      { body: {} },
      { rawBody: '', headers: { 'content-type': 'application/json' } },
      { rawBody: Buffer.from('{}') },
    ]) {
      const res = await post(options);
      assert.equal(res.status, 201, res.text);
    }
  });

  it('returns the full creation response with the contract shapes and headers', async () => {
    const res = await post({
      body: { name: 'Stripe refund #42 for Ünïcode', task_id: 'task-7', expires_in_seconds: 3600 },
    });
    assert.equal(res.status, 201);
    const { address, credentials, endpoints } = res.body;
    assert.deepEqual(Object.keys(res.body).sort(), ['address', 'credentials', 'endpoints']);
    assert.match(address.id, /^addr_[A-Za-z0-9_-]{22,}$/);
    assert.match(address.slug, /^[a-z0-9]+(-[a-z0-9]+)*$/);
    assert.ok(address.slug.length <= 40);
    assert.ok(address.slug.startsWith('stripe-refund-42-for-uni'), address.slug);
    assert.equal(address.name, 'Stripe refund #42 for Ünïcode');
    assert.equal(address.taskId, 'task-7');
    assert.equal(address.email, `${address.slug}@localhost`);
    assert.match(address.createdAt, ISO_MS);
    assert.match(address.expiresAt, ISO_MS);
    assert.equal(Date.parse(address.expiresAt) - Date.parse(address.createdAt), 3600_000);
    assert.match(credentials.read_token, /^roost_read_[A-Za-z0-9_-]{43,}$/);
    assert.match(credentials.note, /once/i);
    assert.match(credentials.note, /Bearer/);
    const base = server().config.baseUrl;
    assert.match(
      endpoints.inbox_url,
      new RegExp(`^${base}/api/v1/inbox/${address.id}/roost_ingress_[A-Za-z0-9_-]{43,}$`),
    );
    assert.equal(endpoints.events_url, `${base}/api/v1/addresses/${address.id}/events`);
    assert.equal(endpoints.mcp_url, `${base}/mcp/${address.id}`);
    assert.equal(endpoints.inspect_url, `${base}/inspect/${address.id}`);
    assert.equal(res.headers.get('location'), `/api/v1/addresses/${address.id}`);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
      assert.ok(res.headers.get(header), header);
  });

  it('defaults: name "Untitled", no taskId, no expiresAt', async () => {
    const res = await post({});
    assert.equal(res.body.address.name, 'Untitled');
    assert.equal('taskId' in res.body.address, false);
    assert.equal('expiresAt' in res.body.address, false);
  });

  it('gives every address distinct ids, slugs and secrets', async () => {
    const created = await Promise.all(Array.from({ length: 20 }, () => post({ body: { name: 'same' } })));
    for (const key of ['id', 'slug', 'email']) {
      assert.equal(new Set(created.map((r) => r.body.address[key])).size, 20, key);
    }
    assert.equal(new Set(created.map((r) => r.body.credentials.read_token)).size, 20);
    assert.equal(new Set(created.map((r) => r.body.endpoints.inbox_url)).size, 20);
  });

  const bounds: Array<[string, unknown, number]> = [
    ['name of 100 characters', { name: 'n'.repeat(100) }, 201],
    ['name of 101 characters', { name: 'n'.repeat(101) }, 400],
    ['task_id of 200 characters', { task_id: 't'.repeat(200) }, 201],
    ['task_id of 201 characters', { task_id: 't'.repeat(201) }, 400],
    ['expires_in_seconds 60', { expires_in_seconds: 60 }, 201],
    ['expires_in_seconds 59', { expires_in_seconds: 59 }, 400],
    ['expires_in_seconds 31536000', { expires_in_seconds: 31536000 }, 201],
    ['expires_in_seconds 31536001', { expires_in_seconds: 31536001 }, 400],
    ['expires_in_seconds 60.5', { expires_in_seconds: 60.5 }, 400],
    ['expires_in_seconds as a string', { expires_in_seconds: '60' }, 400],
    ['name as a number', { name: 5 }, 400],
    ['name null', { name: null }, 400],
    ['an unknown property', { name: 'x', colour: 'red' }, 400],
    ['an array body', [], 400],
    ['a null body', null, 400],
    ['a string body', 'hello', 400],
  ];
  for (const [what, body, status] of bounds) {
    it(`${status === 201 ? 'accepts' : 'refuses'} ${what}`, async () => {
      const res = await post({ rawBody: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, status, res.text);
      if (status === 400) assertErrorBody(res.body, 'invalid_request');
    });
  }

  it('names the offending field in a 400', async () => {
    const res = await post({ body: { name: 'x', colour: 'red' } });
    assert.match(res.body.error.message, /colour/);
    const res2 = await post({ body: { task_id: 't'.repeat(201) } });
    assert.match(res2.body.error.message, /task_id/);
  });

  it('answers 400 invalid_json for unparsable JSON', async () => {
    const res = await post({ rawBody: '{"name": ', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400);
    assertErrorBody(res.body, 'invalid_json');
  });

  it('answers 415 for a non-empty body with a non-JSON Content-Type, and accepts +json types', async () => {
    const res = await post({ rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(res.status, 415);
    assertErrorBody(res.body, 'unsupported_media_type');
    const ok = await post({
      rawBody: '{"name":"v"}',
      headers: { 'content-type': 'application/vnd.roost+json; charset=utf-8' },
    });
    assert.equal(ok.status, 201);
  });

  it('answers 413 for a body over the limit', async () => {
    const res = await post({
      rawBody: JSON.stringify({ name: 'x'.repeat(300 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 413);
    assertErrorBody(res.body, 'payload_too_large');
  });
});

await forEachEngine('get and delete a return address', (server) => {
  it('gets the address with its token; the scheme name is case-insensitive', async () => {
    const a = await createAddress(server().url, { name: 'get me', task_id: 'T' });
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const res = await request(server().url, 'GET', `/api/v1/addresses/${a.id}`, {
        headers: { authorization: `${scheme} ${a.token}` },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { address: a.response.address });
    }
  });

  it('answers 401 with WWW-Authenticate for a missing, malformed, wrong or foreign token', async () => {
    const a = await createAddress(server().url);
    const b = await createAddress(server().url);
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: '' },
      { authorization: a.token },
      { authorization: `Basic ${a.token}` },
      { authorization: 'Bearer roost_read_wrong' },
      { authorization: `Bearer ${a.token}x` },
      { authorization: `Bearer ${b.token}` },
    ];
    for (const headers of cases) {
      for (const [method, path] of [
        ['GET', `/api/v1/addresses/${a.id}`],
        ['DELETE', `/api/v1/addresses/${a.id}`],
        ['GET', `/api/v1/addresses/${a.id}/events`],
        ['POST', `/api/v1/addresses/${a.id}/events/evt_x/ack`],
      ]) {
        const res = await request(server().url, method, path, { headers });
        assert.equal(res.status, 401, `${method} ${path} ${JSON.stringify(headers)}`);
        assertErrorBody(res.body, 'unauthorized');
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
    }
    // The address survived every attempt.
    assert.equal((await request(server().url, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 200);
  });

  it('answers 404 address_not_found for an unknown address, before checking the token', async () => {
    const a = await createAddress(server().url);
    for (const id of ['addr_doesnotexist', 'not-even-an-id']) {
      for (const options of [{}, { token: a.token }]) {
        const res = await request(server().url, 'GET', `/api/v1/addresses/${id}`, options);
        assert.equal(res.status, 404);
        assertErrorBody(res.body, 'address_not_found');
      }
    }
  });

  it('deletes the address and its events: token and inbox stop working at once', async () => {
    const a = await createAddress(server().url);
    assert.equal((await deliver(a.inbox, { data: 1 })).status, 202);
    const del = await request(server().url, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token });
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    const after = [
      await request(server().url, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token }),
      await listEvents(server().url, a),
      await request(server().url, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token }),
    ];
    for (const res of after) {
      assert.equal(res.status, 404);
      assertErrorBody(res.body, 'address_not_found');
    }
    const inbox = await deliver(a.inbox, { data: 2 });
    assert.equal(inbox.status, 404);
    assertErrorBody(inbox.body, 'inbox_not_found');
  });
});

describe('provisioning rate limit', () => {
  for (const engine of ENGINES) {
    it(`is a token bucket per client with RateLimit headers and Retry-After [${engine}]`, async (t) => {
      const skip = await engineSkipReason(engine);
      if (skip) return t.skip(`skipped: ${skip}`);
      const server = await startTestServer(engine, { env: { ROOST_CREATE_RATE: '3/hour' } });
      try {
        const statuses: number[] = [];
        const remaining: string[] = [];
        // An invalid request takes a token too (docs/api.md §9).
        const invalid = await request(server.url, 'POST', '/api/v1/addresses', { body: { bogus: true } });
        assert.equal(invalid.status, 400);
        assert.equal(invalid.headers.get('ratelimit-remaining'), '2');
        for (let i = 0; i < 3; i++) {
          const res = await request(server.url, 'POST', '/api/v1/addresses', { body: {} });
          statuses.push(res.status);
          remaining.push(res.headers.get('ratelimit-remaining') ?? '');
          assert.equal(res.headers.get('ratelimit-limit'), '3');
          if (res.status === 429) {
            assertErrorBody(res.body, 'rate_limited');
            const retryAfter = Number(res.headers.get('retry-after'));
            assert.ok(
              Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 1200,
              `Retry-After ${retryAfter}`,
            );
            assert.ok(Number(res.headers.get('ratelimit-reset')) >= retryAfter);
          }
        }
        assert.deepEqual(statuses, [201, 201, 429]);
        assert.deepEqual(remaining, ['1', '0', '0']);
      } finally {
        await server.close();
      }
    });
  }
});

describe('client identity behind a proxy', () => {
  for (const [trust, expected] of [
    ['', [201, 429]],
    ['true', [201, 201]],
  ] as const) {
    it(`ROOST_TRUST_PROXY=${trust || 'off'}: X-Forwarded-For ${trust ? 'picks' : 'does not pick'} the bucket`, async () => {
      const server = await startTestServer('sqlite', {
        env: { ROOST_CREATE_RATE: '1/hour', ROOST_TRUST_PROXY: trust },
      });
      try {
        const statuses = [];
        for (const client of ['203.0.113.7', '203.0.113.8']) {
          statuses.push(
            (await request(server.url, 'POST', '/api/v1/addresses', { headers: { 'x-forwarded-for': client } })).status,
          );
        }
        assert.deepEqual(statuses, expected);
      } finally {
        await server.close();
      }
    });
  }
});

describe('lifetimes', () => {
  it('applies ROOST_DEFAULT_TTL_SECONDS and refuses a lifetime above ROOST_MAX_TTL_SECONDS, naming the cap', async () => {
    const server = await startTestServer('sqlite', {
      env: { ROOST_DEFAULT_TTL_SECONDS: '600', ROOST_MAX_TTL_SECONDS: '3600' },
    });
    try {
      const a = await createAddress(server.url);
      const { createdAt, expiresAt } = a.response.address;
      assert.equal(Date.parse(expiresAt) - Date.parse(createdAt), 600_000);
      const tooLong = await request(server.url, 'POST', '/api/v1/addresses', { body: { expires_in_seconds: 3601 } });
      assert.equal(tooLong.status, 400);
      assertErrorBody(tooLong.body, 'invalid_request');
      assert.match(tooLong.body.error.message, /3600/);
      assert.equal(
        (await request(server.url, 'POST', '/api/v1/addresses', { body: { expires_in_seconds: 3600 } })).status,
        201,
      );
    } finally {
      await server.close();
    }
  });

  for (const engine of ENGINES) {
    it(`an expired address behaves as deleted and its events are purged [${engine}]`, async (t) => {
      const skip = await engineSkipReason(engine);
      if (skip) return t.skip(`skipped: ${skip}`);
      let now = Date.parse('2026-01-01T00:00:00.000Z');
      const server = await startTestServer(engine, { clock: () => now });
      try {
        const a = await createAddress(server.url, { expires_in_seconds: 60 });
        const keeper = await createAddress(server.url);
        assert.equal((await deliver(a.inbox, { data: 'before' })).status, 202);
        assert.equal((await deliver(keeper.inbox, { data: 'kept' })).status, 202);
        now += 59_999;
        assert.equal((await listEvents(server.url, a)).status, 200);
        now += 1; // expiresAt reached: from then on, as deleted (docs/api.md §2)
        const gone = [
          await request(server.url, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token }),
          await listEvents(server.url, a),
          await request(server.url, 'POST', `/api/v1/addresses/${a.id}/events/evt_x/ack`, { token: a.token }),
        ];
        for (const res of gone) assertErrorBody(res.body, 'address_not_found');
        assertErrorBody((await deliver(a.inbox, { data: 'after' })).body, 'inbox_not_found');

        await server.roost.sweeper.sweep();
        // Purged from storage itself, not only hidden; the live address keeps its events.
        assert.deepEqual((await server.roost.storage.listEvents({ addressId: a.id, after: 0, limit: 10 })).events, []);
        assert.equal(
          (await server.roost.storage.listEvents({ addressId: keeper.id, after: 0, limit: 10 })).events.length,
          1,
        );
      } finally {
        await server.close();
      }
    });

    it(`events are purged 30 days after created_at, acknowledged or not [${engine}]`, async (t) => {
      const skip = await engineSkipReason(engine);
      if (skip) return t.skip(`skipped: ${skip}`);
      let now = Date.parse('2026-01-01T00:00:00.000Z');
      const server = await startTestServer(engine, { clock: () => now });
      try {
        const a = await createAddress(server.url);
        const first = await deliver(a.inbox, { data: 'old' });
        now += 24 * 3600_000;
        await deliver(a.inbox, { data: 'newer' });
        await request(server.url, 'POST', `/api/v1/addresses/${a.id}/events/${first.body.event.id}/ack`, {
          token: a.token,
        });
        now = Date.parse(first.body.event.created_at) + 30 * 24 * 3600_000 + 1;
        await server.roost.sweeper.sweep();
        const page = await listEvents(server.url, a);
        assert.deepEqual(
          page.body.events.map((e: any) => e.data),
          ['newer'],
        );
        // Sequences are never reused after a purge.
        assert.equal((await deliver(a.inbox, { data: 'next' })).body.event.sequence, 3);
      } finally {
        await server.close();
      }
    });
  }
});
