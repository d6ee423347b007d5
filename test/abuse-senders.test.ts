// Hostile senders and readers (issue 17): each finding of the security review reproduced
// over real sockets, and the behaviour that replaces it. Refusals are in the Error shape
// and counted in /metrics; findings that touch storage run on both engines.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { clientKey } from '../src/http/client-ip.js';
import { redactRequestUrl, scrubSecrets } from '../src/redact.js';
import { forEachEngine } from './helpers/engines.js';
import { startTestServer } from './helpers/server.js';
import { createAddress, deliver, listEvents, request } from './helpers/http.js';
import { SmtpDialogue, message } from './helpers/smtp.js';

/** A counter's value in /metrics (0 when the series is absent). */
export async function metric(base: string, series: string): Promise<number> {
  const text = (await request(base, 'GET', '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** /healthz answers, and within a generous bound, while an attack runs. */
export async function assertResponsive(base: string): Promise<void> {
  const started = performance.now();
  const res = await request(base, 'GET', '/healthz');
  assert.equal(res.status, 200);
  assert.ok(performance.now() - started < 2000, '/healthz answered within 2 s');
}

describe('secrets never reach the logs (LOG_LEVEL=trace)', () => {
  it('a ?token= query, a %69nbox path, an encoded secret, headers and unknown routes are all redacted', async () => {
    const server = await startTestServer('sqlite', { env: { LOG_LEVEL: 'trace' } });
    try {
      const base = server.url;
      const a = await createAddress(base);
      const secret = a.inbox.split('/').pop()!;
      const encodedSecret = `%72${secret.slice(1).replace('_', '%5F')}`;

      // The review's two findings: the read token as a query value, the inbox path half-encoded.
      const byQuery = await request(base, 'GET', `/api/v1/addresses/${a.id}/events?token=${a.token}&after=0`);
      assert.equal(byQuery.status, 401);
      const halfEncoded = await deliver(`${base}/api/v1/%69nbox/${a.id}/${secret}`, { type: 'x' });
      assert.equal(halfEncoded.status, 202, 'the router decodes the path: the delivery is accepted');
      const encoded = await deliver(`${base}/api/v1/inbox/${a.id}/${encodedSecret}`, { type: 'y' });
      assert.equal(encoded.status, 202);
      // Secrets where no route puts them: an unknown path, headers, a failing body, MCP arguments.
      assert.equal((await request(base, 'GET', `/nowhere/${a.token}/${secret}`)).status, 404);
      await request(base, 'POST', `/api/v1/inbox/${a.id}/${secret}`, {
        rawBody: `{"broken": "${a.token}`,
        headers: { 'content-type': 'application/json', 'x-api-key': secret, authorization: `Bearer ${a.token}` },
      });
      await request(base, 'POST', `/mcp/${a.id}`, {
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'get_return_address', arguments: { read_token: a.token } },
        },
        headers: { accept: 'application/json, text/event-stream' },
      });
      await new Promise((resolve) => setTimeout(resolve, 300)); // buffered lines (logger.ts)
      server.roost.logger.flush();
      const logs = server.logs();
      const lines = logs.trim().split('\n');
      assert.ok(lines.length > 6, 'requests were logged');
      assert.ok(logs.includes(`/api/v1/addresses/${a.id}/events?token=[REDACTED]&after=0`), logs);
      assert.ok(logs.includes(`/api/v1/inbox/${a.id}/[REDACTED]`));
      for (const value of [a.token, secret, encodedSecret, a.token.slice(11), secret.slice(14)]) {
        assert.ok(!logs.includes(value), `a secret (${value.slice(0, 14)}…) reached the logs`);
      }
    } finally {
      await server.close();
    }
  });
});

await forEachEngine('raw capture drops credential-like headers', (server) => {
  it('x-api-key, x-auth-token and friends are dropped; signatures and Idempotency-Key are kept', async () => {
    const base = server().url;
    const a = await createAddress(base);
    const res = await request(base, 'POST', `${a.inbox}?raw=1`, {
      rawBody: '{"ok":true}',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'k-123',
        'x-auth-token': 't-123',
        'x-gitlab-token': 'g-123',
        'x-client-secret': 's-123',
        'x-auth-user': 'u-123',
        'api-key': 'a-123',
        'proxy-authorization': 'Basic eA==',
        'x-hub-signature-256': 'sha256=abc',
        'stripe-signature': 't=1,v1=abc',
        'x-slack-signature': 'v0=abc',
        'x-slack-request-timestamp': '1',
        'idempotency-key': 'raw-1',
      },
    });
    assert.equal(res.status, 202, res.text);
    const stored = (await listEvents(base, a)).body.events[0].data.headers as Record<string, string>;
    for (const name of ['x-api-key', 'x-auth-token', 'x-gitlab-token', 'x-client-secret', 'x-auth-user', 'api-key']) {
      assert.equal(stored[name], undefined, `${name} was stored`);
    }
    assert.ok(!JSON.stringify(stored).includes('-123'));
    assert.equal(stored['x-hub-signature-256'], 'sha256=abc');
    assert.equal(stored['stripe-signature'], 't=1,v1=abc');
    assert.equal(stored['x-slack-signature'], 'v0=abc');
    assert.equal(stored['x-slack-request-timestamp'], '1');
    assert.equal(stored['idempotency-key'], 'raw-1');
  });
});

describe('raw capture deny-list is configurable', () => {
  it('ROOST_RAW_DROP_HEADERS replaces the default list; !name keeps a header', async () => {
    const server = await startTestServer('sqlite', {
      env: { ROOST_RAW_DROP_HEADERS: 'x-custom-*, *-token, !x-gitlab-token' },
    });
    try {
      const a = await createAddress(server.url);
      const res = await request(server.url, 'POST', `${a.inbox}?raw=1`, {
        rawBody: 'hi',
        headers: {
          'content-type': 'text/plain',
          'x-custom-thing': '1',
          'x-gitlab-token': 'g',
          'x-other-token': 'o',
          'x-api-key': 'k',
        },
      });
      assert.equal(res.status, 202);
      const stored = (await listEvents(server.url, a)).body.events[0].data.headers as Record<string, string>;
      assert.deepEqual(
        [stored['x-custom-thing'], stored['x-gitlab-token'], stored['x-other-token'], stored['x-api-key']],
        [undefined, 'g', undefined, 'k'],
      );
    } finally {
      await server.close();
    }
  });
});

describe('client IP behind proxies', () => {
  const creates = async (base: string, forwardedFor: string[]) => {
    const statuses: number[] = [];
    for (const value of forwardedFor) {
      const res = await request(base, 'POST', '/api/v1/addresses', { headers: { 'x-forwarded-for': value } });
      if (res.status === 429) assert.equal(res.body.error.code, 'rate_limited');
      statuses.push(res.status);
    }
    return statuses;
  };

  it('ROOST_TRUST_PROXY=true trusts one hop: a spoofed leftmost entry does not pick the bucket', async () => {
    const server = await startTestServer('sqlite', { env: { ROOST_TRUST_PROXY: 'true', ROOST_CREATE_RATE: '2/hour' } });
    try {
      // The client writes the left entries; the proxy in front appends the address it saw.
      const spoofed = [1, 2, 3, 4, 5, 6].map((i) => `203.0.113.${i}, 198.51.100.9`);
      assert.deepEqual(await creates(server.url, spoofed), [201, 201, 429, 429, 429, 429]);
      assert.equal(await metric(server.url, 'roost_refusals_total{code="rate_limited"}'), 4);
      assert.deepEqual(await creates(server.url, ['203.0.113.1, 198.51.100.10']), [201], 'another client has its own');
      assert.match(server.logs(), /client IP: the rightmost X-Forwarded-For entry \(1 trusted hop\)/);
    } finally {
      await server.close();
    }
  });

  it('a hop count and a proxy list pick the rightmost untrusted entry', async () => {
    for (const [trust, chain] of [
      ['2', (c: string) => `6.6.6.6, ${c}, 10.0.0.1`],
      ['127.0.0.1, 10.0.0.0/8', (c: string) => `6.6.6.6, ${c}, 10.0.0.7, 10.0.0.1`],
    ] as const) {
      const server = await startTestServer('sqlite', {
        env: { ROOST_TRUST_PROXY: trust, ROOST_CREATE_RATE: '1/hour' },
      });
      try {
        assert.deepEqual(
          await creates(server.url, [chain('198.51.100.1'), chain('198.51.100.1'), chain('198.51.100.2')]),
          [201, 429, 201],
          trust,
        );
      } finally {
        await server.close();
      }
    }
  });

  it('IPv6 clients are keyed by their /64', async () => {
    const server = await startTestServer('sqlite', { env: { ROOST_TRUST_PROXY: '1', ROOST_CREATE_RATE: '1/hour' } });
    try {
      assert.deepEqual(
        await creates(server.url, ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:0db8:0001:0003::1']),
        [201, 429, 201],
      );
    } finally {
      await server.close();
    }
  });
});

/** A POST with exactly these headers, Host included (fetch sets Host itself). */
function rawPost(base: string, path: string, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('MCP refuses foreign browser origins and hosts (DNS rebinding)', () => {
  const listTools = (base: string, headers: Record<string, string>) =>
    rawPost(
      base,
      '/mcp',
      { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );

  it('Origin: http://evil.example with Host: evil.example gets 403; the own origin and no origin pass', async () => {
    const server = await startTestServer('sqlite');
    try {
      const base = server.url;
      const evil = await listTools(base, { origin: 'http://evil.example', host: 'evil.example' });
      assert.equal(evil.status, 403);
      assert.equal(evil.body.error.code, -32000);
      assert.match(evil.body.error.message, /Origin/);
      assert.equal(await metric(base, 'roost_refusals_total{code="forbidden_origin"}'), 1);
      const own = await listTools(base, { origin: new URL(server.config.baseUrl).origin });
      assert.equal(own.status, 200);
      assert.equal(own.body.result.tools.length, 18); // create and the seventeen address tools
      const noOrigin = await listTools(base, {});
      assert.deepEqual(noOrigin.body, own.body, 'the same list, built once');
    } finally {
      await server.close();
    }
  });

  it('ROOST_MCP_ALLOWED_ORIGINS adds origins; with ROOST_BASE_URL set, Host must name it', async () => {
    const server = await startTestServer('sqlite', {
      env: { ROOST_BASE_URL: 'https://roost.example', ROOST_MCP_ALLOWED_ORIGINS: 'https://app.example' },
    });
    try {
      const base = server.url;
      assert.equal((await listTools(base, { host: 'roost.example' })).status, 200);
      assert.equal((await listTools(base, { host: 'roost.example:443', origin: 'https://app.example' })).status, 200);
      assert.equal((await listTools(base, { host: 'roost.example', origin: 'https://roost.example' })).status, 200);
      assert.equal((await listTools(base, { host: 'roost.example', origin: 'https://other.example' })).status, 403);
      const rebound = await listTools(base, { host: 'evil.example' });
      assert.equal(rebound.status, 403);
      assert.match(rebound.body.error.message, /Host/);
      assert.equal(await metric(base, 'roost_refusals_total{code="forbidden_host"}'), 1);
    } finally {
      await server.close();
    }
  });
});

describe('roost listen --forward: one bad event never stops the forwarder', () => {
  const BIN = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

  /** Runs the built CLI until it exits or `lines` lines are out (then SIGINT). */
  function listen(dir: string, args: string[], lines: number) {
    const child = spawn(process.execPath, [BIN, 'listen', ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.split('\n').filter(Boolean).length >= lines) child.kill('SIGINT');
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    return once(child, 'exit').then(([code]) => {
      clearTimeout(killer);
      return { code: code as number | null, stdout, stderr };
    });
  }

  it('a "€" type is sent percent-encoded, a refused event is parked in the dead-letter file, the rest goes on', async () => {
    const server = await startTestServer('sqlite');
    const dir = mkdtempSync(join(tmpdir(), 'roost-listen-'));
    const received: Array<{ type: string; data: unknown }> = [];
    // The target refuses one payload for good (422) and takes everything else.
    const sink = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const event = JSON.parse(body) as { data: unknown };
        received.push({ type: String(req.headers['x-roost-event-type']), data: event.data });
        res.writeHead(event.data === 'poison' ? 422 : 200).end();
      });
    });
    sink.listen(0, '127.0.0.1');
    await once(sink, 'listening');
    const target = `http://127.0.0.1:${(sink.address() as { port: number }).port}/hook`;
    try {
      const created = await request(server.url, 'POST', '/api/v1/addresses');
      writeFileSync(join(dir, 'creds.json'), JSON.stringify(created.body));
      const a = created.body;
      const inbox = `${server.url}${new URL(a.endpoints.inbox_url).pathname}`;
      for (const [type, data] of [
        ['payment.€uro\u009b31m', 1],
        ['x', 'poison'],
        ['x', 3],
      ] as const) {
        assert.equal((await deliver(inbox, { type, data })).status, 202);
      }
      const env = ['--url', server.url, '--credentials', 'creds.json', '--forward', target];
      const run = await listen(dir, env, 3);
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.trim().split('\n');
      assert.ok(lines[0].includes('\\u009b'), 'a C1 control is escaped in the printed JSON');
      const printed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.deepEqual(
        printed.map((l) => [l.sequence, l.status ?? 'parked']),
        [
          [1, 200],
          [2, 'parked'],
          [3, 200],
        ],
      );
      assert.equal(received[0].type, 'payment.%E2%82%ACuro%C2%9B31m');
      assert.equal(decodeURIComponent(received[0].type), 'payment.€uro\u009b31m');
      assert.deepEqual(
        received.map((r) => r.data),
        [1, 'poison', 3],
        'the refused event was sent once, not retried',
      );
      const deadLetter = join(dir, `.roost-dead-letter-${a.address.id}.jsonl`);
      const parked = readFileSync(deadLetter, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(parked.length, 1);
      assert.equal(parked[0].event.sequence, 2);
      assert.match(parked[0].reason, /422/);
      assert.equal(statSync(deadLetter).mode & 0o777, 0o600);
      const events = (
        await request(server.url, 'GET', `/api/v1/addresses/${a.address.id}/events`, {
          token: a.credentials.read_token,
        })
      ).body.events as Array<{ acknowledged_at?: string }>;
      assert.ok(
        events.every((e) => e.acknowledged_at),
        'every event handled is acknowledged: the queue drains',
      );

      // --on-fail stop: exit 1 with one line, the cursor left before the refused event.
      writeFileSync(
        join(dir, 'creds.json'),
        JSON.stringify((await request(server.url, 'POST', '/api/v1/addresses')).body),
      );
      const b = JSON.parse(readFileSync(join(dir, 'creds.json'), 'utf8'));
      const inboxB = `${server.url}${new URL(b.endpoints.inbox_url).pathname}`;
      for (const data of [1, 'poison', 3]) assert.equal((await deliver(inboxB, { data })).status, 202);
      const stopped = await listen(dir, [...env, '--on-fail', 'stop'], 99);
      assert.equal(stopped.code, 1);
      assert.match(stopped.stderr, /^roost: event #2 cannot be forwarded \(.*422\); stopped before it/);
      assert.equal(JSON.parse(readFileSync(join(dir, `.roost-cursor-${b.address.id}`), 'utf8')).after, 1);
    } finally {
      sink.close();
      rmSync(dir, { recursive: true, force: true });
      await server.close();
    }
  });
});

{
  let offset = 0;
  await forEachEngine(
    'a large purge interleaves with appends',
    (server, engine) => {
      it('deliveries sent during a sweep of expired addresses are answered before the sweep ends', async () => {
        const { roost, url } = server();
        offset = 0;
        const perAddress = 1000;
        const expiring = await Promise.all([1, 2, 3].map(() => createAddress(url, { expires_in_seconds: 60 })));
        for (const a of expiring) {
          const appends = [];
          for (let i = 0; i < perAddress; i++) {
            appends.push(
              roost.storage.appendEvent({
                event: {
                  addressId: a.id,
                  type: 'bulk',
                  source: 'https',
                  dataJson: JSON.stringify({ i, pad: 'x'.repeat(200) }),
                  metadataJson: null,
                  dedupeKey: null,
                  keyScope: 'http',
                  createdAt: Date.now() + offset,
                },
                capacity: 1000,
              }),
            );
          }
          await Promise.all(appends);
        }
        const live = await createAddress(url);
        const purgedBefore = await metric(url, 'roost_events_purged_total');
        offset = 61_000; // the three addresses have expired
        let sweepDone = false;
        const sweep = roost.sweeper.sweep().then(() => (sweepDone = true));
        const answered: boolean[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await deliver(live.inbox, { data: i });
          assert.equal(res.status, 202);
          answered.push(sweepDone);
        }
        await assertResponsive(url);
        await sweep;
        if (engine === 'sqlite') assert.equal(answered[0], false, 'the first delivery did not wait for the sweep');
        assert.equal((await metric(url, 'roost_events_purged_total')) - purgedBefore, 3 * perAddress);
        assert.equal((await listEvents(url, expiring[0])).status, 404);
        assert.equal((await listEvents(url, live)).body.events.length, 3, 'nothing accepted is lost');
      });
    },
    { clock: () => Date.now() + offset },
  );
}

await forEachEngine(
  'bytes held per address are capped',
  (server) => {
    it('past ROOST_MAX_BYTES_PER_ADDRESS a delivery gets 429 with Retry-After, counted; acknowledged events make room', async () => {
      const base = server().url;
      const a = await createAddress(base);
      const chunk = 'x'.repeat(10_000);
      const statuses: number[] = [];
      let refused: Awaited<ReturnType<typeof deliver>> | undefined;
      for (let i = 0; i < 10; i++) {
        const res = await deliver(a.inbox, { data: { i, chunk } });
        statuses.push(res.status);
        if (res.status !== 202) refused ??= res;
      }
      // 64 KiB holds six events of ~10 KB; every later one is refused, none silently dropped.
      assert.deepEqual(statuses, [202, 202, 202, 202, 202, 202, 429, 429, 429, 429]);
      assert.equal(refused!.body.error.code, 'queue_full');
      assert.match(refused!.body.error.message, /65536 bytes/);
      assert.ok(Number(refused!.headers.get('retry-after')) > 0);
      assert.equal(await metric(base, 'roost_deliveries_total{transport="http",outcome="bytes_full"}'), 4);
      assert.equal(await metric(base, 'roost_refusals_total{code="queue_full"}'), 4);
      await assertResponsive(base);

      const held = (await listEvents(base, a)).body.events as Array<{ id: string; sequence: number }>;
      assert.equal(held.length, 6);
      for (const event of held.slice(0, 2)) {
        const ack = await request(base, 'POST', `/api/v1/addresses/${a.id}/events/${event.id}/ack`, { token: a.token });
        assert.equal(ack.status, 200);
      }
      assert.equal((await deliver(a.inbox, { data: { i: 10, chunk } })).status, 202);
      const after = (await listEvents(base, a)).body.events as Array<{ sequence: number; acknowledged_at?: string }>;
      assert.deepEqual(
        after.map((e) => e.sequence),
        [2, 3, 4, 5, 6, 7],
        'the oldest acknowledged event made room; every unacknowledged one is still held',
      );
      // A small event fits in what is left; a large raw capture does not.
      assert.equal((await deliver(a.inbox, { data: 'small' })).status, 202);
      const raw = await request(base, 'POST', `${a.inbox}?raw=1`, {
        rawBody: 'y'.repeat(30_000),
        headers: { 'content-type': 'text/plain' },
      });
      assert.equal(raw.status, 429);
    });
  },
  { env: { ROOST_MAX_BYTES_PER_ADDRESS: '64KiB' } },
);

describe('the pieces, one by one', () => {
  it('scrubSecrets cuts every secret shape: known kinds, a later kind, percent-encoded ones', () => {
    const body = 'A'.repeat(43);
    for (const secret of [
      `roost_read_${body}`,
      `roost_ingress_${body}`,
      `roost_view_${body}`,
      `%72oost%5Fread_${body}`,
      `roost_ingress%5F${body.slice(0, 10)}%2D${body.slice(10)}`,
    ]) {
      assert.equal(scrubSecrets(`{"msg":"x ${secret} y"}`), '{"msg":"x [REDACTED] y"}', secret);
    }
    assert.equal(scrubSecrets('roost_deliveries_total and 50%'), 'roost_deliveries_total and 50%');
  });

  it("redactRequestUrl: the route's pattern, parameters filled in and encoded, secret ones and credential queries cut", () => {
    const secret = `roost_ingress_${'A'.repeat(43)}`;
    const logged = (pattern: string, params: Record<string, string>, url = '/whatever') =>
      redactRequestUrl({ url, routeOptions: { url: pattern }, params });
    assert.equal(
      logged(
        '/api/v1/inbox/:addressId/:secret',
        { addressId: 'addr_1', secret },
        `/api/v1/inbox/addr_1/${secret}?raw=1`,
      ),
      '/api/v1/inbox/addr_1/[REDACTED]?raw=1',
    );
    assert.equal(
      logged('/api/v1/inbox/:addressId/callbacks/:callbackId/:callbackSecret', {
        addressId: 'addr_1',
        callbackId: 'cb_2',
        callbackSecret: secret,
      }),
      '/api/v1/inbox/addr_1/callbacks/cb_2/[REDACTED]',
    );
    // A value is written encoded, a missing one empty, and one shaped like a secret is cut anyway.
    assert.equal(logged('/a/:x/b/:y', { x: 'a b/c?' }), '/a/a%20b%2Fc%3F/b/');
    assert.equal(logged('/a/:x', { x: secret }), '/a/[REDACTED]');
    assert.equal(logged('/health', {}, '/health?token=abc&after=3'), '/health?token=[REDACTED]&after=3');
    // The same pattern again, with other values: nothing of the first request stays.
    assert.equal(logged('/a/:x/b/:y', { x: '1', y: '2' }), '/a/1/b/2');
  });

  it('clientKey: IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64 however written', () => {
    assert.equal(clientKey('203.0.113.7'), '203.0.113.7');
    assert.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:0DB8:0001:0002:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientKey('::1'), '0:0:0:0::/64');
  });

  it('configuration: the new settings, their defaults and their refusals', () => {
    const defaults = loadConfig({});
    assert.equal(defaults.maxBytesPerAddress, 64 * 1024 * 1024);
    assert.ok(defaults.rawDropHeaders.includes('*-token'));
    assert.deepEqual(defaults.mcpAllowedOrigins, []);
    assert.equal(defaults.trustProxy, false);
    assert.equal(loadConfig({ ROOST_TRUST_PROXY: 'true' }).trustProxy, 1);
    assert.equal(loadConfig({ ROOST_MAX_BYTES_PER_ADDRESS: '0' }).maxBytesPerAddress, 0);
    assert.equal(loadConfig({ ROOST_MAX_BYTES_PER_ADDRESS: '1GiB' }).maxBytesPerAddress, 1024 ** 3);
    assert.deepEqual(loadConfig({ ROOST_RAW_DROP_HEADERS: 'none' }).rawDropHeaders, []);
    assert.deepEqual(
      loadConfig({ ROOST_MCP_ALLOWED_ORIGINS: 'https://a.example/, http://b.example:8080' }).mcpAllowedOrigins,
      ['https://a.example', 'http://b.example:8080'],
    );
    for (const env of [
      { ROOST_MAX_BYTES_PER_ADDRESS: '10' },
      { ROOST_RAW_DROP_HEADERS: 'x-(a|b)' },
      { ROOST_MCP_ALLOWED_ORIGINS: 'evil' },
    ]) {
      assert.throws(() => loadConfig(env), ConfigError, JSON.stringify(env));
    }
  });
});

describe('bytes cap over SMTP', () => {
  it('mail past the byte cap gets 452 at DATA, never a silent drop, and is counted', async () => {
    const offline = async () => {
      throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
    };
    const server = await startTestServer('sqlite', {
      env: { ROOST_MAX_BYTES_PER_ADDRESS: '64KiB' }, // an event holds the text twice: text and reply_text
      smtp: { port: 0, dnsResolver: offline },
    });
    try {
      const a = await createAddress(server.url);
      const smtp = await SmtpDialogue.open(server.roost.smtpPort!);
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) {
        const mail = message(
          { From: 'a@sender.test', To: a.email, Subject: `big ${i}`, 'Message-ID': `<big-${i}@sender.test>` },
          'z'.repeat(12_000),
        );
        const replies = await smtp.send('a@sender.test', [a.email], mail);
        codes.push(replies[replies.length - 1].code);
      }
      await smtp.quit();
      assert.deepEqual(codes, [250, 250, 452, 452]);
      assert.equal(await metric(server.url, 'roost_deliveries_total{transport="email",outcome="bytes_full"}'), 2);
      assert.equal((await listEvents(server.url, a)).body.events.length, 2);
    } finally {
      await server.close();
    }
  });
});
