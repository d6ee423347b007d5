// Bad input never yields a 5xx, and every non-2xx answer of the REST interface has the
// Error shape with a code of docs/api.md §6. A seeded randomized sweep over every route
// (set FUZZ_SEED to explore another corner; a failure prints its seed and path), then
// hand-written socket-level cases that fetch cannot produce.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createAddress, deliver, request, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261121);

/** docs/api.md §6: the codes each status may carry. */
const CODES_BY_STATUS: Record<number, string[]> = {
  400: ['invalid_request', 'invalid_json', 'idempotency_key_mismatch'],
  401: ['unauthorized'],
  404: ['address_not_found', 'event_not_found', 'inbox_not_found', 'not_found'],
  405: ['method_not_allowed'],
  413: ['payload_too_large'],
  415: ['unsupported_media_type'],
  429: ['rate_limited', 'queue_full'],
  // Statuses the table does not list but HTTP requires of a server for a malformed
  // request; they still carry the Error shape with the code of a bad request.
  408: ['invalid_request'],
  431: ['invalid_request'],
};

/** The Error shape, exactly: {"error":{"code","message"}} and nothing else. */
function assertErrorShape(status: number, text: string, context: string): void {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${context}: ${status} with a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
  assert.ok(body && typeof body === 'object' && !Array.isArray(body), `${context}: body is not an object`);
  assert.deepEqual(Object.keys(body), ['error'], `${context}: ${text.slice(0, 200)}`);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message'], `${context}: ${text.slice(0, 200)}`);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0, `${context}: empty message`);
  const allowed = CODES_BY_STATUS[status];
  assert.ok(allowed, `${context}: status ${status} is not one the contract names`);
  assert.ok(allowed.includes(body.error.code), `${context}: code ${body.error.code} does not go with ${status}`);
}

function checkResponse(res: { status: number; text: string }, method: string, context: string): void {
  assert.ok(res.status < 500, `${context}: ${res.status} ${res.text.slice(0, 300)}`);
  if (res.status >= 200 && res.status < 300) return;
  if (method === 'HEAD') return; // no body by definition
  assertErrorShape(res.status, res.text, context);
}

let server: TestServer;
/** A live address; replaced when a fuzzed DELETE happens to succeed. */
let live: CreatedAddress;
let liveEventId: string;

async function freshAddress(): Promise<void> {
  live = await createAddress(server.url, { name: 'fuzz' });
  const res = await deliver(live.inbox, { data: 'seed' });
  liveEventId = res.body.event.id;
}

before(async () => {
  server = await startTestServer('sqlite');
  await freshAddress();
});
after(async () => {
  await server?.close();
});

const MAX_BODY = 256 * 1024; // ROOST_MAX_BODY_BYTES default (docs/api.md §10)

// Each piece is a function of the live address, so that valid ids and secrets stay valid.
type Piece = (a: { id: string; secret: string; token: string; eventId: string }) => string;
const fixed =
  (s: string): Piece =>
  () =>
    s;

/** Mostly the right value, sometimes an odd one: most requests get deep into a route. */
function mostly<T>(right: T, odd: fc.Arbitrary<T>, weight = 3): fc.Arbitrary<T> {
  return fc.oneof({ weight, arbitrary: fc.constant(right) }, { weight: 1, arbitrary: odd });
}

const oddId = fc.constantFrom<Piece>(
  fixed('addr_AAAAAAAAAAAAAAAAAAAAAA'),
  fixed(''),
  fixed('a%2Fb'),
  fixed('..'),
  fixed('%2e%2e'),
  fixed('%2e%2e%2f%2e%2e%2fetc%2fpasswd'),
  fixed('%zz'),
  fixed('%00'),
  fixed('%C3%A9t%C3%A9'),
  fixed('%F0%9F%90%A6'),
  fixed('%FF%FE'),
  fixed(`addr_${'x'.repeat(195)}`),
  fixed(`addr_${'x'.repeat(300)}`),
  fixed(`addr_${'y'.repeat(5000)}`),
  (a) => `${a.id}%2Fevents`,
  (a) => `${a.id};x=1`,
  (a) => a.id.toUpperCase(),
);
const oddSecret = fc.constantFrom<Piece>(
  (a) => `${a.secret}x`,
  (a) => a.secret.slice(0, -1),
  fixed('roost_ingress_wrong'),
  fixed('roost_read_wrong'),
  (a) => a.token,
  fixed(''),
  fixed('%2F'),
  fixed(`roost_ingress_${'z'.repeat(400)}`),
  fixed('%zz'),
);
const oddEvent = fc.constantFrom<Piece>(
  fixed('evt_unknown'),
  fixed(''),
  fixed('%2F'),
  fixed('%zz'),
  fixed(`evt_${'e'.repeat(300)}`),
  (a) => a.id,
);
const oddPath = fc.constantFrom(
  '/',
  '/api',
  '/api/v2/addresses',
  '/api/v1/../../healthz',
  '/api/v1/%2e%2e/healthz',
  '//api//v1//addresses',
  '/api/v1/addresses/',
  '/%',
  `/${'long/'.repeat(600)}`,
  '/api/v1/addresses%2Fx',
  '/healthz%00',
  '/ṹñíçødé',
  '/api/v1/inbox',
  '/api/v1/inbox/',
);

const id = mostly<Piece>((a) => a.id, oddId);
const secret = mostly<Piece>((a) => a.secret, oddSecret);
const eventId = mostly<Piece>((a) => a.eventId, oddEvent);

/** The routes of docs/api.md §2–§4 and §9, each with its proper method and path. */
const routeArb: fc.Arbitrary<{ method: string; path: Piece; kind: string }> = fc.oneof(
  fc.constant({ method: 'POST', path: fixed('/api/v1/addresses'), kind: 'create' }),
  id.map((i) => ({ method: 'GET', path: (a: any) => `/api/v1/addresses/${i(a)}`, kind: 'get' })),
  id.map((i) => ({ method: 'DELETE', path: (a: any) => `/api/v1/addresses/${i(a)}`, kind: 'delete' })),
  id.map((i) => ({ method: 'GET', path: (a: any) => `/api/v1/addresses/${i(a)}/events`, kind: 'events' })),
  fc.tuple(id, eventId).map(([i, e]) => ({
    method: 'POST',
    path: (a: any) => `/api/v1/addresses/${i(a)}/events/${e(a)}/ack`,
    kind: 'ack',
  })),
  fc
    .tuple(id, secret)
    .map(([i, s]) => ({ method: 'POST', path: (a: any) => `/api/v1/inbox/${i(a)}/${s(a)}`, kind: 'inbox' })),
  fc
    .tuple(id, secret)
    .map(([i, s]) => ({ method: 'POST', path: (a: any) => `/api/v1/inbox/${i(a)}/${s(a)}`, kind: 'inbox' })),
  fc
    .tuple(id, secret)
    .map(([i, s]) => ({ method: 'POST', path: (a: any) => `/api/v1/inbox/${i(a)}/${s(a)}/extra`, kind: 'other' })),
  fc
    .constantFrom('/healthz', '/readyz', '/metrics', '/api/v1/openapi.json')
    .map((p) => ({ method: 'GET', path: fixed(p), kind: 'ops' })),
  oddPath.map((p) => ({ method: 'GET', path: fixed(p), kind: 'other' })),
);

const oddMethod = fc.constantFrom(
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'HEAD',
  'OPTIONS',
  'PROPFIND',
  'FOO',
  'M-SEARCH',
  'purge',
  'LOCK',
);

const queryValue = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('0', '1', '5', '50', '100') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '101',
      '-1',
      '+1',
      '1.5',
      '1e3',
      '0x10',
      ' 1',
      '',
      'abc',
      '%00',
      '%20',
      '99999999999999999999',
      '9007199254740992',
      '٣',
      '%zz',
    ),
  },
);
const queryArb = fc
  .array(
    fc.tuple(
      fc.constantFrom('after', 'limit', 'wait', 'after', 'limit', 'x', 'raw', 'type', 'after[]', 'limit[a]', ''),
      queryValue,
    ),
    { maxLength: 4 },
  )
  .map((pairs) => {
    // A well-formed wait is kept to 0 or 1 s, so that a sweep never sits in long-polls.
    const safe = pairs.map(([k, v]) => (k === 'wait' && /^\d+$/.test(v) && Number(v) > 1 ? [k, '1'] : [k, v]));
    return safe.length ? `?${safe.map(([k, v]) => (k ? `${k}=${v}` : v)).join('&')}` : '';
  });

const oddContentType = fc.constantFrom<string | undefined>(
  undefined,
  'application/json; charset=latin1',
  'application/JSON',
  'application/vnd.roost+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'json',
  '',
  ';;;',
  'application/json; charset="utf-8"; q=é',
  '\u00e9\u00ff/\u00e0',
);
const oddAuthorization = fc.constantFrom<Piece | undefined>(
  undefined,
  (a) => `bearer ${a.token}`,
  (a) => `Bearer  ${a.token}  `,
  (a) => a.token,
  (a) => `Basic ${a.token}`,
  (a) => `Bearer ${a.secret}`,
  fixed(''),
  fixed('Bearer'),
  fixed('Bearer '),
  fixed('Bearer roost_read_wrong'),
  fixed(`Bearer ${'t'.repeat(8000)}`),
  fixed('Bearer \u00e9\u00ff\u00e0'),
  fixed('Bearer a b c'),
);
const idempotencyKey = fc.constantFrom<string | undefined>(
  undefined,
  undefined,
  undefined,
  '',
  'k1',
  'k1, k2',
  'has space',
  '\u00e9t\u00e9',
  'x'.repeat(256),
  '\t',
  'ok-key',
);

const nested = (open: string, close: string, n: number, inner = '1') => open.repeat(n) + inner + close.repeat(n);
const validBody = fc.constantFrom(
  '{}',
  '{"data":1}',
  '{"type":"t","source":"s","data":{"a":[1,{"b":null}]},"metadata":{"k":"v"}}',
  '{"dedupe_key":"k1"}',
  '{"name":"fuzz","task_id":"t-1","expires_in_seconds":3600}',
);
/** Deep nesting and sizes around the body limit (docs/api.md §3: 64 levels, 256 KiB). */
const largeBody = fc.constantFrom(
  '['.repeat(100_000),
  '{"a":'.repeat(50_000),
  `{"data":${nested('[', ']', 100_000)}}`,
  `{"data":${nested('{"a":', '}', 20_000)}}`,
  `{"data":"${'x'.repeat(MAX_BODY - 20)}"}`,
  `{"data":"${'x'.repeat(MAX_BODY - 11)}"}`,
  `{"data":"${'x'.repeat(MAX_BODY)}"}`,
  `{"data":"${'x'.repeat(2 * 1024 * 1024)}"}`,
);
const oddBody = fc.oneof(
  fc.constantFrom<string | Buffer | undefined>(
    undefined,
    '',
    '{',
    '[',
    'null',
    '"str"',
    '123',
    '[1,2]',
    'true',
    '{"dedupe_key":"k2","data":1}',
    '{"name":123}',
    '{"expires_in_seconds":"60"}',
    '{"expires_in_seconds":59}',
    '{"expires_in_seconds":1e400}',
    '{"__proto__":{"polluted":true},"data":{"__proto__":1,"constructor":{"prototype":{}}}}',
    '{"metadata":{"a":1}}',
    '{"metadata":[]}',
    '{"type":null}',
    '{"unknown":true}',
    '\u0000\u0001\u0002',
    '\ufeff{}',
    '{"data":"\ud800"}',
    '["\\u0000"]',
    Buffer.from([0xff, 0xfe, 0xfd, 0x00, 0x7b]),
    Buffer.from('{"data":"caf\xe9"}', 'latin1'),
    `{"data":${nested('[', ']', 64)}}`,
    `{"data":${nested('[', ']', 65)}}`,
    `{"name":"${'n'.repeat(101)}"}`,
    `{"task_id":"${'t'.repeat(201)}"}`,
  ),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes)),
);

const requestArb = fc.record({
  route: routeArb,
  oddMethod: mostly<string | null>(null, oddMethod, 5),
  query: queryArb,
  raw: fc.boolean(),
  type: mostly<string | undefined>('application/json', oddContentType, 2),
  auth: mostly<Piece | undefined>((a) => `Bearer ${a.token}`, oddAuthorization, 2),
  key: idempotencyKey,
  body: fc.oneof(validBody as fc.Arbitrary<string | Buffer | undefined>, oddBody, largeBody),
});

describe('randomized requests never answer 5xx and always use the Error shape', () => {
  test(`seed ${SEED}`, { timeout: 240_000 }, async () => {
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestArb, async ({ route, oddMethod, query, raw, type, auth, key, body }) => {
        const a = {
          id: live.id,
          secret: new URL(live.inbox).pathname.split('/').pop()!,
          token: live.token,
          eventId: liveEventId,
        };
        const method = oddMethod ?? route.method;
        const headers: Record<string, string> = {};
        if (type !== undefined) headers['content-type'] = type;
        if (auth !== undefined) headers.authorization = auth(a);
        if (key !== undefined) headers['idempotency-key'] = key;
        // Raw capture takes any body (docs/api.md §3.1); give it some requests too.
        const url = `${server.url}${route.path(a)}${route.kind === 'inbox' && raw ? '?raw=1' : query}`;
        const sendBody = method === 'GET' || method === 'HEAD' ? undefined : body;
        const res = await request(server.url, method, url, { rawBody: sendBody, headers });
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        checkResponse(
          res,
          method,
          `${method} ${url.slice(0, 200)} [ct=${type}] [auth=${headers.authorization?.slice(0, 40)}] [key=${key}] [body=${String(sendBody ?? '').slice(0, 80)}]`,
        );
        if (method === 'DELETE' && res.status === 204) await freshAddress();
      }),
      { numRuns: 500, seed: SEED, includeErrorInReport: true },
    );
    if (process.env.FUZZ_VERBOSE) console.error(JSON.stringify([...seen].sort()));
    // The sweep reached deep into the routes, not only their front doors.
    for (const status of [200, 201, 202, 400, 401, 404])
      assert.ok(seen.get(status), `no ${status} in the sweep: ${JSON.stringify([...seen])}`);
    // Whatever was thrown at it, the service still works.
    assert.equal((await request(server.url, 'GET', '/healthz')).status, 200);
    const ok = await deliver(live.inbox, { data: 'after the storm' });
    assert.ok(ok.status === 202 || ok.status === 429, ok.text);
  });
});

// --- below fetch: raw sockets --------------------------------------------------------------

interface RawResponse {
  status: number;
  body: string;
}

/** Writes bytes on a fresh connection, then reads responses until the server closes or goes quiet. */
async function rawExchange(
  chunks: Array<string | Buffer>,
  options: { endAfterWrite?: boolean; destroyAfterMs?: number; quietMs?: number } = {},
): Promise<string> {
  const { port } = new URL(server.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  socket.on('data', (d) => (received += d.toString('latin1')));
  for (const chunk of chunks) socket.write(chunk);
  if (options.endAfterWrite) socket.end();
  if (options.destroyAfterMs !== undefined) {
    await new Promise((r) => setTimeout(r, options.destroyAfterMs));
    socket.destroy();
    return received;
  }
  // Read until the server closes the connection, or nothing arrives for a while.
  await new Promise<void>((resolve) => {
    let timer = setTimeout(done, options.quietMs ?? 1500);
    function done() {
      socket.destroy();
      resolve();
    }
    socket.on('data', () => {
      clearTimeout(timer);
      timer = setTimeout(done, options.quietMs ?? 1500);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return received;
}

/** Splits a byte stream into HTTP/1.1 responses (Content-Length or chunked bodies). */
function parseResponses(stream: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = stream;
  while (rest.length > 0) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const head = rest.slice(0, headEnd);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1]);
    rest = rest.slice(headEnd + 4);
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    let body = '';
    if (length) {
      body = rest.slice(0, Number(length[1]));
      rest = rest.slice(Number(length[1]));
    } else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
      for (;;) {
        const lineEnd = rest.indexOf('\r\n');
        const size = parseInt(rest.slice(0, lineEnd), 16);
        rest = rest.slice(lineEnd + 2);
        if (!size) {
          rest = rest.slice(2);
          break;
        }
        body += rest.slice(0, size);
        rest = rest.slice(size + 2);
      }
    }
    out.push({ status, body: Buffer.from(body, 'latin1').toString('utf8') });
  }
  return out;
}

const inboxPath = () => new URL(live.inbox).pathname;

async function assertHealthy(): Promise<void> {
  assert.equal((await request(server.url, 'GET', '/healthz')).status, 200);
  const res = await deliver(live.inbox, { data: 'still here' });
  assert.ok(res.status === 202 || res.status === 429, res.text);
}

describe('malformed HTTP at the socket level', () => {
  test('a body shorter than Content-Length, then the client gives up: no answer owed, server healthy', async () => {
    const body = '{"data":"short"}';
    await rawExchange(
      [
        `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 50}\r\n\r\n${body}`,
      ],
      { destroyAfterMs: 300 },
    );
    await assertHealthy();
  });

  test('a body shorter than Content-Length with the write side closed: any answer is < 500 with the Error shape', async () => {
    const body = '{"data":"short"}';
    const stream = await rawExchange(
      [
        `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 50}\r\n\r\n${body}`,
      ],
      { endAfterWrite: true },
    );
    for (const r of parseResponses(stream)) {
      assert.ok(r.status < 500, stream);
      assertErrorShape(r.status, r.body, 'short body');
    }
    await assertHealthy();
  });

  test('a body longer than Content-Length: the surplus is a malformed request, answered 400 with the Error shape', async () => {
    const body = '{"data":"long"}';
    const stream = await rawExchange([
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}garbage that is not a request\r\n\r\n`,
    ]);
    const responses = parseResponses(stream);
    // Node parses the surplus at once and may close before the first answer is written;
    // whichever answers get out, the bad one says 400 in the Error shape.
    assert.ok(responses.length >= 1, stream);
    assert.ok(
      responses.every((r) => r.status === 202 || r.status === 400),
      stream,
    );
    assert.equal(responses[responses.length - 1].status, 400, stream);
    for (const r of responses.filter((r) => r.status === 400)) assertErrorShape(r.status, r.body, 'surplus bytes');
    await assertHealthy();
  });

  test('a chunked body is read like any other', async () => {
    const body = JSON.stringify({ type: 'chunked', data: { parts: 3 } });
    const parts = [body.slice(0, 5), body.slice(5, 17), body.slice(17)];
    const stream = await rawExchange([
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
      ...parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`),
      '0\r\n\r\n',
    ]);
    const [response] = parseResponses(stream);
    assert.equal(response.status, 202, stream);
    assert.equal(JSON.parse(response.body).event.type, 'chunked');
  });

  test('a chunked body over the size limit: 413 payload_too_large', async () => {
    const chunk = 'x'.repeat(64 * 1024);
    const stream = await rawExchange([
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
      `1\r\n{\r\n`,
      ...Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
      '0\r\n\r\n',
    ]);
    const [response] = parseResponses(stream);
    assert.equal(response.status, 413, stream.slice(0, 300));
    assertErrorShape(response.status, response.body, 'chunked over limit');
    await assertHealthy();
  });

  test('a request aborted mid-body, many times over: the server stays healthy', async () => {
    for (let i = 0; i < 20; i++) {
      await rawExchange(
        [
          `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"data":"${'a'.repeat(i * 100)}`,
        ],
        { destroyAfterMs: 10 },
      );
    }
    await assertHealthy();
  });

  test('a duplicated Idempotency-Key header is one invalid key (joined with ", "): 400 invalid_request', async () => {
    const body = '{"data":"dup"}';
    const stream = await rawExchange([
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: dup-a\r\nIdempotency-Key: dup-b\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    ]);
    const [response] = parseResponses(stream);
    assert.equal(response.status, 400, stream);
    assertErrorShape(response.status, response.body, 'duplicated key');
    assert.equal(JSON.parse(response.body).error.code, 'invalid_request');
  });

  test('garbage, bad request lines, bad framing headers and oversized headers: Error shape, never 5xx', async () => {
    const cases = [
      'hello\r\n\r\n',
      'GET / HTTP/9.9\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Name: 1\r\n\r\n',
      'FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n`,
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      `POST ${inboxPath()} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      `GET /${'p'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bin: \u0001\u0002\r\n\r\n',
    ];
    for (const raw of cases) {
      const stream = await rawExchange([Buffer.from(raw, 'latin1')], { quietMs: 500 });
      const responses = parseResponses(stream);
      assert.ok(responses.length >= 1, `no answer to ${JSON.stringify(raw.slice(0, 60))}`);
      for (const r of responses) {
        assert.ok(r.status < 500, `${JSON.stringify(raw.slice(0, 60))} → ${r.status}`);
        if (r.status >= 300) assertErrorShape(r.status, r.body, JSON.stringify(raw.slice(0, 60)));
      }
    }
    await assertHealthy();
  });
});
