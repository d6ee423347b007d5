// Hostile readers over real sockets: each finding of the security review is reproduced
// against a running server, which must refuse in the Error shape, count the refusal in
// /metrics, lose nothing accepted, and keep answering /healthz while the abuse runs.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { RoostClient } from '../src/client/index.js';
import { forEachEngine, eventually } from './helpers/engines.js';
import { assertError, createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** /healthz must answer well within this while an attack runs (a generous bound, not a benchmark). */
const HEALTHZ_BOUND_MS = 1500;

async function assertHealthy(base: string): Promise<void> {
  const started = performance.now();
  const res = await request(base, 'GET', '/healthz');
  const took = performance.now() - started;
  assert.equal(res.status, 200);
  assert.ok(took < HEALTHZ_BOUND_MS, `/healthz took ${Math.round(took)} ms during the attack`);
}

async function metric(base: string, pattern: RegExp): Promise<number> {
  const text = (await request(base, 'GET', '/metrics')).text;
  const match = pattern.exec(text);
  return match ? Number(match[1]) : 0;
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A GET over its own socket, optionally from another loopback address. */
function rawGet(
  base: string,
  path: string,
  options: { token?: string; localAddress?: string; signal?: AbortSignal } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${base}${path}`,
      {
        agent: false,
        localAddress: options.localAddress,
        signal: options.signal,
        headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

/** An open SSE stream read over its own socket: counts the `id:` lines it has received. */
class Stream {
  ids: number[] = [];
  private buffer = '';
  private constructor(
    readonly status: number,
    readonly headers: http.IncomingHttpHeaders,
    private readonly req: http.ClientRequest,
    readonly body: Promise<string>,
  ) {}

  static open(
    base: string,
    address: CreatedAddress,
    options: { localAddress?: string; after?: number } = {},
  ): Promise<Stream> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        `${base}/api/v1/addresses/${address.id}/events/stream?after=${options.after ?? 0}`,
        { agent: false, localAddress: options.localAddress, headers: { authorization: `Bearer ${address.token}` } },
        (res) => {
          res.setEncoding('utf8');
          let all = '';
          const body = new Promise<string>((done) => res.on('end', () => done(all)));
          res.on('error', () => undefined);
          const stream = new Stream(res.statusCode!, res.headers, req, body);
          res.on('data', (chunk: string) => {
            all += chunk;
            if (res.statusCode !== 200) return;
            stream.buffer += chunk;
            const lines = stream.buffer.split('\n');
            stream.buffer = lines.pop()!;
            for (const line of lines) if (line.startsWith('id: ')) stream.ids.push(Number(line.slice(4)));
          });
          resolve(stream);
        },
      );
      req.on('error', reject);
    });
  }

  close(): void {
    this.req.destroy();
  }
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

// --- 1. waiters without limit ----------------------------------------------------------

await forEachEngine(
  'abuse: waiter caps per address and per client',
  (server) => {
    const base = () => server().url;

    it('refuses the poll or stream past the per-address cap with 429 too_many_waiters, counted, and frees slots', async () => {
      const a = await createAddress(base());
      const streams = await Promise.all(range(3).map(() => Stream.open(base(), a)));
      assert.deepEqual(
        streams.map((s) => s.status),
        [200, 200, 200],
      );
      const held = listEvents(base(), a, 'wait=20');
      await eventually(() => server().roost.waiters.held === 1, 'the poll held');

      const poll = await listEvents(base(), a, 'wait=5');
      assertError(poll, 429, 'too_many_waiters');
      assert.equal(poll.headers.get('retry-after'), '5');
      const stream = await Stream.open(base(), a);
      assert.equal(stream.status, 429);
      assert.equal(JSON.parse(await stream.body).error.code, 'too_many_waiters');
      // A read that does not wait is never refused; nor is another address.
      assert.equal((await listEvents(base(), a)).status, 200);
      const other = await createAddress(base());
      const elsewhere = await Stream.open(base(), other);
      assert.equal(elsewhere.status, 200);
      await assertHealthy(base());
      assert.equal(await metric(base(), /roost_waiters_refused_total\{limit="address"\} (\d+)/), 2);

      // Nothing accepted is lost: the held poll and every stream get the delivery.
      assert.equal((await deliver(a.inbox, { data: 'for the held ones' })).status, 202);
      assert.equal((await held).body.events.length, 1);
      for (const s of streams) await eventually(() => s.ids.length === 1, 'the stream got the event');
      // Leaving frees the slot.
      streams[0].close();
      elsewhere.close();
      await eventually(() => server().roost.waiters.subscribed === 2, 'the stream left');
      const again = await Stream.open(base(), a);
      assert.equal(again.status, 200);
      for (const s of [...streams, again]) s.close();
      await eventually(() => server().roost.waiters.subscribed === 0, 'every stream left');
    });

    it('caps one client across addresses, and another client address is counted apart', async () => {
      const addresses = await Promise.all(range(6).map(() => createAddress(base())));
      const mine = await Promise.all(addresses.slice(0, 5).map((a) => Stream.open(base(), a)));
      assert.ok(mine.every((s) => s.status === 200));
      const refused = await Stream.open(base(), addresses[5]);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['retry-after'], '5');
      assert.equal(JSON.parse(await refused.body).error.code, 'too_many_waiters');
      const mcp = new Client({ name: 'abuse-test', version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base()}/mcp/${addresses[5].id}`)));
      const viaMcp = await mcp.callTool({
        name: 'poll_events',
        arguments: { read_token: addresses[5].token, wait: 5 },
      });
      assert.equal(viaMcp.isError, true);
      assert.match(JSON.stringify(viaMcp.content), /too_many_waiters/);
      await mcp.close();
      // 127.0.0.2 is another client: its own slots.
      const theirs = await Stream.open(base(), addresses[5], { localAddress: '127.0.0.2' });
      assert.equal(theirs.status, 200);
      assert.equal(await metric(base(), /roost_waiters_refused_total\{limit="client"\} (\d+)/), 2);
      await assertHealthy(base());
      for (const s of [...mine, theirs]) s.close();
      await eventually(() => server().roost.waiters.subscribed === 0, 'every stream left');
    });
  },
  { env: { ROOST_MAX_WAITERS_PER_ADDRESS: '4', ROOST_MAX_WAITERS_PER_IP: '5' } },
);

await forEachEngine(
  'abuse: one read per wake-up, shared by every waiter of the address',
  (server) => {
    const base = () => server().url;

    it('300 streams and 20 held polls on one address: 10 deliveries reach all, with one read per wake-up', async () => {
      const a = await createAddress(base());
      const streams: Stream[] = [];
      for (let i = 0; i < 300; i += 50)
        streams.push(...(await Promise.all(range(50).map(() => Stream.open(base(), a)))));
      assert.ok(streams.every((s) => s.status === 200));
      await eventually(() => server().roost.waiters.subscribed === 300, 'every stream subscribed');
      const polls = range(20).map(() => listEvents(base(), a, 'wait=20&limit=100'));
      await eventually(() => server().roost.waiters.held === 20, 'every poll held');

      const storage = server().roost.storage;
      const original = storage.listEvents.bind(storage);
      let reads = 0;
      storage.listEvents = (...args) => {
        reads++;
        return original(...args);
      };
      try {
        const readsBefore = await metric(base(), /roost_wake_reads_total (\d+)/);
        for (const n of range(10)) {
          assert.equal((await deliver(a.inbox, { data: { n } })).status, 202);
          await assertHealthy(base());
        }
        for (const s of streams) await eventually(() => s.ids.length === 10, 'the stream got all ten', 15_000);
        for (const s of streams) assert.deepEqual(s.ids, range(10));
        for (const poll of polls) {
          const page = (await poll).body;
          assert.ok(page.events.length >= 1);
          assert.equal(page.events[0].sequence, 1);
        }
        const wakeReads = (await metric(base(), /roost_wake_reads_total (\d+)/)) - readsBefore;
        // A few per delivery at most (PostgreSQL also hears its own commit announced), never one per waiter.
        assert.ok(wakeReads >= 1 && wakeReads <= 20, `${wakeReads} wake-up reads`);
        assert.ok(reads <= 30, `${reads} page reads for 10 deliveries to 320 waiters`);
      } finally {
        storage.listEvents = original;
        for (const s of streams) s.close();
      }
      await eventually(() => server().roost.waiters.subscribed === 0, 'every stream left');
    });
  },
  { env: { ROOST_MAX_WAITERS_PER_ADDRESS: '0', ROOST_MAX_WAITERS_PER_IP: '0' } },
);

// --- 2. slow requests -------------------------------------------------------------------

/** Opens a raw socket, writes `first`, and resolves with all it reads until the server closes it. */
function rawExchange(
  port: number,
  first: string,
  dribble?: { every: number; byte: string },
  localAddress?: string,
): { closed: Promise<{ text: string; afterMs: number }>; socket: net.Socket } {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  const started = performance.now();
  let text = '';
  let timer: NodeJS.Timeout | undefined;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => undefined);
  socket.on('connect', () => {
    socket.write(first);
    if (dribble) timer = setInterval(() => socket.writable && socket.write(dribble.byte), dribble.every);
  });
  const closed = new Promise<{ text: string; afterMs: number }>((resolve) =>
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ text, afterMs: performance.now() - started });
    }),
  );
  return { closed, socket };
}

describe('abuse: slow requests and idle sockets', () => {
  let server: TestServer;
  let port: number;
  before(async () => {
    server = await startTestServer('sqlite', {
      env: { ROOST_REQUEST_TIMEOUT_MS: '2000', ROOST_HEADERS_TIMEOUT_MS: '1000', ROOST_KEEP_ALIVE_TIMEOUT_MS: '1000' },
    });
    port = Number(new URL(server.url).port);
  });
  after(() => server.close());

  it('a body that never comes and a dribbled body are cut off with 408, while long answers stay long', async () => {
    const a = await createAddress(server.url);
    const path = new URL(a.inbox).pathname;
    const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const never = rawExchange(port, head);
    const dribbled = rawExchange(port, head + '{"data":"', { every: 200, byte: 'a' });
    const noHeaders = rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', { every: 200, byte: 'X' });
    // A long-poll and a stream: short requests, answers longer than the request timeout.
    const poll = listEvents(server.url, a, 'wait=4');
    const stream = await Stream.open(server.url, a);
    await assertHealthy(server.url);

    for (const attack of [never, dribbled, noHeaders]) {
      const { text, afterMs } = await attack.closed;
      assert.match(text, /^HTTP\/1\.1 408 /);
      assert.equal(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error.code, 'invalid_request');
      assert.ok(afterMs < 10_000, `closed after ${Math.round(afterMs)} ms`);
    }
    const page = await poll;
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.events, []);
    assert.equal((await deliver(a.inbox, { data: 'late' })).status, 202);
    await eventually(() => stream.ids.length === 1, 'the stream, older than the request timeout, got it');
    stream.close();
    // Nothing half-sent was stored.
    assert.equal((await listEvents(server.url, a)).body.events.length, 1);
    assert.ok((await metric(server.url, /roost_requests_timed_out_total (\d+)/)) >= 3);
  });

  it('closes an idle keep-alive connection after its timeout', async () => {
    const { closed, socket } = rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const { text, afterMs } = await closed;
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.ok(afterMs < 8_000, `idle connection closed after ${Math.round(afterMs)} ms`);
    socket.destroy();
  });
});

describe('abuse: connections per client address', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', { env: { ROOST_MAX_CONNECTIONS_PER_IP: '5' } });
  });
  after(() => server.close());

  it('refuses the connection past the cap with 429 too_many_connections, counted; other addresses unaffected', async () => {
    const port = Number(new URL(server.url).port);
    const held = range(5).map(() => net.connect({ port, host: '127.0.0.1' }));
    try {
      await Promise.all(held.map((s) => new Promise((resolve) => s.once('connect', resolve))));
      const refused = rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      const { text } = await refused.closed;
      assert.match(text, /^HTTP\/1\.1 429 /);
      assert.match(text, /\r\nRetry-After: 1\r\n/i);
      assert.equal(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error.code, 'too_many_connections');
      // Another client address still gets in, and /healthz answers it at once.
      const started = performance.now();
      const other = await rawGet(server.url, '/healthz', { localAddress: '127.0.0.2' });
      assert.equal(other.status, 200);
      assert.ok(performance.now() - started < HEALTHZ_BOUND_MS);
      const metrics = await rawGet(server.url, '/metrics', { localAddress: '127.0.0.2' });
      assert.match(metrics.body, /roost_connections_refused_total 1\n/);
      held[0].destroy();
      await eventually(async () => {
        try {
          return (await rawGet(server.url, '/healthz')).status === 200;
        } catch {
          return false;
        }
      }, 'a slot freed');
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

// --- 9. pages bounded by bytes --------------------------------------------------------------

const MiB = 1024 * 1024;
const big = (n: number, size: number) => ({ n, html: `<p>${String(n % 10).repeat(size)}</p>` });

await forEachEngine(
  'abuse: a page is bounded by bytes as well as by count',
  (server) => {
    const base = () => server().url;
    let a: CreatedAddress;

    before(async () => {
      a = await createAddress(base());
      // Five events of 1.5 MiB each against a 4 MiB page bound.
      for (const n of range(5)) assert.equal((await deliver(a.inbox, { data: big(n, 1.5 * MiB) })).status, 202);
    });

    it('REST: pages stop at the byte bound, keep one event at least, and has_more leads through all of them', async () => {
      const seen: number[] = [];
      let cursor = 0;
      for (;;) {
        const page = await listEvents(base(), a, `after=${cursor}&limit=100`);
        assert.equal(page.status, 200);
        assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(page.headers.get('cache-control'), 'no-store');
        assert.ok(page.body.events.length >= 1 && page.body.events.length <= 2, `${page.body.events.length} events`);
        assert.ok(page.text.length < 4 * MiB + 64 * 1024);
        seen.push(...page.body.events.map((e: any) => e.sequence));
        cursor = page.body.next_cursor;
        if (!page.body.has_more) break;
      }
      assert.deepEqual(seen, range(5));
      // One event larger than the bound still comes, alone.
      const huge = await createAddress(base());
      await deliver(huge.inbox, { data: big(0, 5 * MiB) });
      await deliver(huge.inbox, { data: 'small' });
      const page = await listEvents(base(), huge, 'limit=100');
      assert.equal(page.body.events.length, 1);
      assert.equal(page.body.has_more, true);
      assert.equal(page.body.next_cursor, 1);
    });

    it('MCP poll_events, the SSE replay and the client are bounded the same way, and lose nothing', async () => {
      const mcp = new Client({ name: 'abuse-test', version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base()}/mcp/${a.id}`)));
      const result = await mcp.callTool({ name: 'poll_events', arguments: { read_token: a.token, limit: 100 } });
      const page = result.structuredContent as { events: Array<{ sequence: number }>; has_more: boolean };
      assert.deepEqual(
        page.events.map((e) => e.sequence),
        [1, 2],
      );
      assert.equal(page.has_more, true);
      await mcp.close();

      const stream = await Stream.open(base(), a);
      await eventually(() => stream.ids.length === 5, 'the replay sent all five', 15_000);
      assert.deepEqual(stream.ids, range(5));
      stream.close();

      const client = new RoostClient({ baseUrl: base(), addressId: a.id, readToken: a.token });
      const controller = new AbortController();
      const got: number[] = [];
      for await (const event of client.events({ signal: controller.signal, wait: 1 })) {
        got.push(event.sequence);
        if (got.length === 5) controller.abort();
      }
      assert.deepEqual(got, range(5));
      await assertHealthy(base());
    });
  },
  { env: { ROOST_MAX_BODY_BYTES: '6MiB' } },
);

// --- 11. file modes and headers ---------------------------------------------------------------

describe('abuse: what the files and answers let others see', () => {
  it('creates the SQLite file, its WAL, SHM and lock 0600, and tightens an older 0644 file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-modes-'));
    const dbPath = join(dir, 'data', 'roost.db');
    const umask = process.umask(0o022);
    try {
      const server = await startTestServer('sqlite', { reuse: { dbPath } });
      const a = await createAddress(server.url);
      await deliver(a.inbox, { data: 'x' });
      for (const file of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, `${dbPath}.lock`]) {
        assert.equal(statSync(file).mode & 0o777, 0o600, file);
      }
      assert.equal(statSync(join(dir, 'data')).mode & 0o777, 0o700);
      await server.close();

      const older = join(dir, 'older.db');
      writeFileSync(older, '');
      chmodSync(older, 0o644);
      const again = await startTestServer('sqlite', { reuse: { dbPath: older } });
      assert.equal(statSync(older).mode & 0o777, 0o600);
      await again.close();
    } finally {
      process.umask(umask);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('event reads say nosniff and no-store: the page, an ack, an error and the stream', async () => {
    const server = await startTestServer('sqlite');
    try {
      const a = await createAddress(server.url);
      const delivered = await deliver(a.inbox, { data: '<script>alert(1)</script>' });
      const answers = [
        await listEvents(server.url, a),
        await request(server.url, 'POST', `/api/v1/addresses/${a.id}/events/${delivered.body.event.id}/ack`, {
          token: a.token,
        }),
        await listEvents(server.url, { ...a, token: 'roost_read_wrong' }),
      ];
      for (const res of answers) {
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(res.headers.get('cache-control'), 'no-store');
      }
      const stream = await Stream.open(server.url, a);
      assert.equal(stream.headers['x-content-type-options'], 'nosniff');
      assert.equal(stream.headers['cache-control'], 'no-store');
      stream.close();
    } finally {
      await server.close();
    }
  });
});
