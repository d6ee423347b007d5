// Credentials that can be rotated, revoked and shared read-only, and addresses that can be
// updated (docs/api.md §5, §2): over real HTTP on every engine, with a clock the test moves.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import {
  assertError,
  createAddress,
  deliver,
  listEvents,
  request,
  type CreatedAddress,
  type WireResponse,
} from './helpers/http.js';
import { eventually } from './helpers/engines.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';
import { ENGINES, engineSkipReason, startTestServer, type TestServer } from './helpers/server.js';

/** Opens the event stream and collects its text until `until` matches or the stream ends. */
async function streamUntil(url: string, token: string, until: RegExp, act: () => Promise<unknown>): Promise<string> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  assert.equal(res.status, 200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  const first = await reader.read(); // the stream is open and subscribed
  text += first.value ?? '';
  await act();
  const deadline = setTimeout(() => controller.abort(), 5000);
  try {
    while (!until.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
  } finally {
    clearTimeout(deadline);
    controller.abort();
  }
  return text;
}

for (const engine of ENGINES) {
  const skip = await engineSkipReason(engine);
  describe(`credentials and updates [${engine}]`, { skip: skip ? `skipped: ${skip}` : false }, () => {
    let now = Date.UTC(2026, 10, 22, 12);
    let server: TestServer;
    let base: string;
    const call = (address: CreatedAddress, method: string, path: string, options: Parameters<typeof request>[3] = {}) =>
      request(base, method, `/api/v1/addresses/${address.id}${path}`, { token: address.token, ...options });
    const viewTokenOf = async (address: CreatedAddress, body: object = {}) => {
      const res = await call(address, 'POST', '/view-tokens', { body });
      assert.equal(res.status, 201, res.text);
      return res.body.view_token as { id: string; token: string; label: string | null; expires_at: string | null };
    };

    before(async () => {
      server = await startTestServer(engine, { clock: () => now, env: { ROOST_MAX_VIEW_TOKENS: '3' } });
      base = server.url;
    });
    after(() => server.close());

    it('rotates the read token: the new one works, the old one is refused at once', async () => {
      const address = await createAddress(base);
      const res = await call(address, 'POST', '/read-token');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body), ['credentials']);
      assert.match(res.body.credentials.read_token, /^roost_read_[A-Za-z0-9_-]{43}$/);
      assert.ok(res.body.credentials.note.length > 20);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assertError(await call(address, 'GET', ''), 401, 'unauthorized');
      const fresh = { ...address, token: res.body.credentials.read_token as string };
      assert.equal((await call(fresh, 'GET', '')).status, 200);
    });

    it('ends a held poll (401) and an open stream (`event: revoked`) of the rotated token', async () => {
      const address = await createAddress(base);
      const held = listEvents(base, address, 'wait=20');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = Date.now();
      let rotated: WireResponse | undefined;
      const text = await streamUntil(
        `${base}/api/v1/addresses/${address.id}/events/stream`,
        address.token,
        /event: revoked/,
        async () => (rotated = await call(address, 'POST', '/read-token')),
      );
      assert.equal(rotated?.status, 200);
      assert.match(text, /event: revoked\ndata: \{"error":\{"code":"unauthorized"/);
      assertError(await held, 401, 'unauthorized');
      assert.ok(Date.now() - started < 5000, 'the held poll ended at the rotation, not at its timeout');
    });

    it('rotates the inbox secret: without grace the old URL is a 404 at once', async () => {
      const address = await createAddress(base);
      const res = await call(address, 'POST', '/inbox-secret');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body), ['endpoints']);
      const newInbox = `${base}${new URL(res.body.endpoints.inbox_url as string).pathname}`;
      assert.match(newInbox, /\/api\/v1\/inbox\/addr_[^/]+\/roost_ingress_[A-Za-z0-9_-]{43}$/);
      assert.notEqual(newInbox, address.inbox);
      assertError(await deliver(address.inbox, { type: 'old' }), 404, 'inbox_not_found');
      assert.equal((await deliver(newInbox, { type: 'new' })).status, 202);
    });

    it('keeps the old inbox URL for grace_seconds, then answers 404 like any wrong URL', async () => {
      const address = await createAddress(base);
      const res = await call(address, 'POST', '/inbox-secret', { body: { grace_seconds: 120 } });
      assert.equal(res.status, 200, res.text);
      const newInbox = `${base}${new URL(res.body.endpoints.inbox_url as string).pathname}`;
      assert.equal((await deliver(address.inbox, { type: 'during-grace' })).status, 202);
      assert.equal((await deliver(newInbox, { type: 'new' })).status, 202);
      now += 121_000;
      assertError(await deliver(address.inbox, { type: 'after-grace' }), 404, 'inbox_not_found');
      assert.equal((await deliver(newInbox, { type: 'still-new' })).status, 202);
      const types = (await listEvents(base, address)).body.events.map((e: { type: string }) => e.type);
      assert.deepEqual(types, ['during-grace', 'new', 'still-new']);
    });

    it('refuses a grace period out of bounds, or of the wrong type (400)', async () => {
      const address = await createAddress(base);
      for (const grace of [-1, 86_401, 1.5, '60']) {
        assertError(
          await call(address, 'POST', '/inbox-secret', { body: { grace_seconds: grace } }),
          400,
          'invalid_request',
        );
      }
      assert.equal((await deliver(address.inbox, {})).status, 202, 'a refused rotation changed nothing');
    });

    it('creates a view token that reads the address, the events (long-poll too) and the stream', async () => {
      const address = await createAddress(base, { name: 'watched' });
      await deliver(address.inbox, { type: 'one' });
      const view = await viewTokenOf(address, { label: 'for Ana', expires_in_seconds: 3600 });
      assert.deepEqual(Object.keys(view).sort(), ['created_at', 'expires_at', 'id', 'label', 'token']);
      assert.match(view.id, /^vt_/);
      assert.match(view.token, /^roost_view_[A-Za-z0-9_-]{43}$/);
      assert.equal(view.label, 'for Ana');
      assert.equal(view.expires_at, new Date(now + 3600_000).toISOString());
      const viewer = { ...address, token: view.token };
      assert.equal((await call(viewer, 'GET', '')).body.address.name, 'watched');
      assert.equal((await listEvents(base, viewer)).body.events.length, 1);
      const held = listEvents(base, viewer, 'after=1&wait=10');
      await new Promise((resolve) => setTimeout(resolve, 100));
      await deliver(address.inbox, { type: 'two' });
      assert.deepEqual(
        (await held).body.events.map((e: { type: string }) => e.type),
        ['two'],
      );
      const text = await streamUntil(
        `${base}/api/v1/addresses/${address.id}/events/stream`,
        view.token,
        /"type":"two"/,
        async () => {},
      );
      assert.match(text, /id: 2\n/);
    });

    it('refuses every write with a view token: 403 forbidden, and nothing changes', async () => {
      const address = await createAddress(base);
      await deliver(address.inbox, { type: 'one' });
      const eventId = (await listEvents(base, address)).body.events[0].id as string;
      const viewer = { ...address, token: (await viewTokenOf(address)).token };
      const writes: Array<[string, string, object?]> = [
        ['POST', `/events/${eventId}/ack`],
        ['DELETE', ''],
        ['PATCH', '', { name: 'taken over' }],
        ['POST', '/read-token'],
        ['POST', '/inbox-secret'],
        ['POST', '/view-tokens'],
        ['GET', '/view-tokens'],
        ['DELETE', '/view-tokens/vt_anything'],
      ];
      for (const [method, path, body] of writes) {
        assertError(await call(viewer, method, path, body ? { body } : {}), 403, 'forbidden');
      }
      const after = await call(address, 'GET', '');
      assert.equal(after.status, 200);
      assert.equal(after.body.address.name, 'Untitled');
      assert.equal((await listEvents(base, address)).body.events[0].acknowledged_at, undefined);
      assert.equal((await deliver(address.inbox, { type: 'two' })).status, 202, 'the inbox secret is unchanged');
    });

    it('lists view tokens without secrets, revokes one at once, and ends what it held open', async () => {
      const address = await createAddress(base);
      const kept = await viewTokenOf(address, { label: 'kept' });
      now += 1; // listed oldest first
      const revoked = await viewTokenOf(address);
      const list = await call(address, 'GET', '/view-tokens');
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.view_tokens.map((t: { id: string }) => t.id),
        [kept.id, revoked.id],
      );
      assert.ok(!list.text.includes('roost_view_'), 'no secret in the listing');
      assert.deepEqual(list.body.view_tokens[1], {
        id: revoked.id,
        label: null,
        created_at: new Date(now).toISOString(),
        expires_at: null,
      });

      const viewer = { ...address, token: revoked.token };
      const held = listEvents(base, viewer, 'wait=20');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const text = await streamUntil(
        `${base}/api/v1/addresses/${address.id}/events/stream`,
        revoked.token,
        /event: revoked/,
        async () => assert.equal((await call(address, 'DELETE', `/view-tokens/${revoked.id}`)).status, 204),
      );
      assert.match(text, /event: revoked/);
      assertError(await held, 401, 'unauthorized');
      assertError(await call(viewer, 'GET', ''), 401, 'unauthorized');
      assert.equal((await call({ ...address, token: kept.token }, 'GET', '')).status, 200, 'the other one still works');
      assertError(await call(address, 'DELETE', `/view-tokens/${revoked.id}`), 404, 'view_token_not_found');
    });

    it('rotation keeps view tokens; with revoke_view_tokens it revokes every one in the same call and ends what they hold open', async () => {
      const address = await createAddress(base);
      const survivor = await viewTokenOf(address);
      const plain = await call(address, 'POST', '/read-token', { body: {} });
      assert.equal(plain.status, 200, plain.text);
      let owner = { ...address, token: plain.body.credentials.read_token as string };
      assert.equal((await call({ ...address, token: survivor.token }, 'GET', '')).status, 200, 'kept by default');
      assert.equal((await call(owner, 'GET', '/view-tokens')).body.view_tokens.length, 1);

      const second = await viewTokenOf(owner);
      const viewer = { ...address, token: second.token };
      const held = listEvents(base, viewer, 'wait=20');
      await eventually(() => server.roost.waiters.held === 1, 'the view token’s poll is held');
      let rotated: WireResponse | undefined;
      const text = await streamUntil(
        `${base}/api/v1/addresses/${address.id}/events/stream`,
        survivor.token,
        /event: revoked/,
        async () => (rotated = await call(owner, 'POST', '/read-token', { body: { revoke_view_tokens: true } })),
      );
      assert.equal(rotated?.status, 200, rotated?.text);
      assert.match(text, /event: revoked/);
      assertError(await held, 401, 'unauthorized');
      for (const token of [survivor.token, second.token, owner.token])
        assertError(await call({ ...address, token }, 'GET', ''), 401, 'unauthorized');
      owner = { ...address, token: rotated.body.credentials.read_token as string };
      assert.deepEqual((await call(owner, 'GET', '/view-tokens')).body.view_tokens, []);

      // The flag is a boolean, and nothing else may come with it.
      assertError(
        await call(owner, 'POST', '/read-token', { body: { revoke_view_tokens: 'yes' } }),
        400,
        'invalid_request',
      );
      assertError(await call(owner, 'POST', '/read-token', { body: { revoke: true } }), 400, 'invalid_request');
      assert.equal((await call(owner, 'GET', '')).status, 200, 'a refused rotation changed nothing');
    });

    it('MCP rotate_read_token passes revoke_view_tokens through', async () => {
      const address = await createAddress(base);
      const kept = await viewTokenOf(address);
      const mcp = new Client({ name: 'credentials-test', version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${address.id}`)));
      try {
        const first = await mcp.callTool({ name: 'rotate_read_token', arguments: { read_token: address.token } });
        assert.notEqual(first.isError, true, JSON.stringify(first.content));
        const token = (first.structuredContent as { credentials: { read_token: string } }).credentials.read_token;
        assert.equal((await call({ ...address, token: kept.token }, 'GET', '')).status, 200, 'kept without the flag');
        const second = await mcp.callTool({
          name: 'rotate_read_token',
          arguments: { read_token: token, revoke_view_tokens: true },
        });
        assert.notEqual(second.isError, true, JSON.stringify(second.content));
        assertError(await call({ ...address, token: kept.token }, 'GET', ''), 401, 'unauthorized');
      } finally {
        await mcp.close();
      }
    });

    it('caps the view tokens of one address (ROOST_MAX_VIEW_TOKENS) and lets expired ones lapse', async () => {
      const address = await createAddress(base);
      const short = await viewTokenOf(address, { expires_in_seconds: 60 });
      await viewTokenOf(address);
      await viewTokenOf(address);
      assertError(await call(address, 'POST', '/view-tokens', { body: {} }), 409, 'view_token_limit');
      now += 61_000;
      assertError(await call({ ...address, token: short.token }, 'GET', ''), 401, 'unauthorized');
      assert.equal((await call(address, 'GET', '/view-tokens')).body.view_tokens.length, 2);
      await viewTokenOf(address); // the expired one no longer counts
      for (const body of [{ label: 'x'.repeat(101) }, { expires_in_seconds: 59 }, { surprise: true }]) {
        assertError(await call(address, 'POST', '/view-tokens', { body }), 400, 'invalid_request');
      }
    });

    it('PATCH updates name, task_id and the lifetime, within the same bounds as creation', async () => {
      const address = await createAddress(base, { name: 'before', task_id: 'job-1', expires_in_seconds: 600 });
      const email = address.email;
      const renamed = await call(address, 'PATCH', '', { body: { name: 'after', task_id: null } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.deepEqual(Object.keys(renamed.body), ['address']);
      assert.equal(renamed.body.address.name, 'after');
      assert.equal(renamed.body.address.taskId, undefined);
      assert.equal(renamed.body.address.email, email, 'the email address stays');
      const extended = await call(address, 'PATCH', '', { body: { expires_in_seconds: 7200 } });
      assert.equal(extended.body.address.expiresAt, new Date(now + 7200_000).toISOString());
      const forever = await call(address, 'PATCH', '', { body: { expires_in_seconds: null } });
      assert.equal(forever.status, 200);
      assert.equal(forever.body.address.expiresAt, undefined);
      assert.equal((await call(address, 'GET', '')).body.address.expiresAt, undefined, 'stored, not just answered');
      for (const body of [{}, { expires_in_seconds: 59 }, { name: 7 }, { slug: 'mine' }]) {
        assertError(await call(address, 'PATCH', '', { body }), 400, 'invalid_request');
      }
      const shortened = await call(address, 'PATCH', '', { body: { expires_in_seconds: 60 } });
      assert.equal(shortened.status, 200);
      now += 61_000;
      assertError(await call(address, 'GET', ''), 404, 'address_not_found');
      assertError(await call(address, 'PATCH', '', { body: { name: 'too late' } }), 404, 'address_not_found');
    });

    it('keeps every new secret out of the database and the logs', async () => {
      const address = await createAddress(base);
      const token = (await call(address, 'POST', '/read-token')).body.credentials.read_token as string;
      const fresh = { ...address, token };
      const inbox = (await call(fresh, 'POST', '/inbox-secret')).body.endpoints.inbox_url as string;
      const secret = inbox.split('/').pop()!;
      const view = await viewTokenOf(fresh);
      const secrets = [token, secret, view.token];
      if (engine === 'sqlite') {
        const files = ['', '-wal'].map((suffix) => {
          try {
            return readFileSync(`${server.dbPath}${suffix}`).toString('latin1');
          } catch {
            return '';
          }
        });
        for (const value of secrets) assert.ok(!files.some((text) => text.includes(value)), 'not in the file');
      } else {
        const client = new pg.Client({ connectionString: server.databaseUrl });
        await client.connect();
        try {
          const dump = JSON.stringify([
            (await client.query('SELECT * FROM addresses')).rows,
            (await client.query('SELECT * FROM view_tokens')).rows,
          ]);
          for (const value of secrets) assert.ok(!dump.includes(value), 'not in the database');
        } finally {
          await client.end();
        }
      }
      for (const value of secrets) assert.ok(!server.logs().includes(value), 'not in the logs');
    });
  });
}

describe('PATCH with an operator lifetime cap', () => {
  it('refuses null and a lifetime above ROOST_MAX_TTL_SECONDS (400)', async () => {
    const server = await startTestServer('sqlite', { env: { ROOST_MAX_TTL_SECONDS: '3600' } });
    try {
      const address = await createAddress(server.url);
      for (const expires_in_seconds of [null, 3601]) {
        const res = await request(server.url, 'PATCH', `/api/v1/addresses/${address.id}`, {
          token: address.token,
          body: { expires_in_seconds },
        });
        assertError(res, 400, 'invalid_request');
      }
    } finally {
      await server.close();
    }
  });
});

const postgresSkip = await engineSkipReason('postgres');
describe(
  'a rotation on two instances of one PostgreSQL database',
  { skip: postgresSkip ? `skipped: ${postgresSkip}` : false },
  () => {
    let db: TestDatabase;
    let a: ServerProcess;
    let b: ServerProcess;
    before(async () => {
      db = await createTestDatabase();
      [a, b] = await Promise.all([spawnServer({ DATABASE_URL: db.url }), spawnServer({ DATABASE_URL: db.url })]);
    });
    after(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await db?.drop();
    });

    it('is seen by the other instance at once: its old token is refused and its held poll and stream end', async () => {
      const address = await createAddress(a.url);
      const view = (
        await request(a.url, 'POST', `/api/v1/addresses/${address.id}/view-tokens`, { token: address.token })
      ).body.view_token as { id: string; token: string };
      const heldOnB = listEvents(b.url, address, 'wait=20');
      const viewHeldOnB = listEvents(b.url, { ...address, token: view.token }, 'wait=20');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const text = await streamUntil(
        `${b.url}/api/v1/addresses/${address.id}/events/stream`,
        address.token,
        /event: revoked/,
        async () => {
          const rotated = await request(a.url, 'POST', `/api/v1/addresses/${address.id}/read-token`, {
            token: address.token,
          });
          assert.equal(rotated.status, 200);
          const revoked = await request(a.url, 'DELETE', `/api/v1/addresses/${address.id}/view-tokens/${view.id}`, {
            token: rotated.body.credentials.read_token,
          });
          assert.equal(revoked.status, 204);
        },
      );
      assert.match(text, /event: revoked/);
      assertError(await heldOnB, 401, 'unauthorized');
      assertError(await viewHeldOnB, 401, 'unauthorized');
      assertError(
        await request(b.url, 'GET', `/api/v1/addresses/${address.id}`, { token: address.token }),
        401,
        'unauthorized',
      );
    });
  },
);
