// Operations and the edges of the interface (docs/api.md §6, §9, §10): health, readiness,
// metrics, the OpenAPI document, unknown routes and methods, configuration, and requests
// that meet a shutdown.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { createAddress, deliver, listEvents, request } from './helpers/http.js';
import { eventually, forEachEngine } from './helpers/engines.js';
import { startTestServer } from './helpers/server.js';

await forEachEngine('operations', (server) => {
  it('GET /healthz and /readyz answer 200', async () => {
    assert.equal((await request(server().url, 'GET', '/healthz')).status, 200);
    const ready = await request(server().url, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.storage, server().roost.storage.engine);
  });

  it('GET /metrics is Prometheus text with deliveries, duplicates, held polls and wake latency', async () => {
    const a = await createAddress(server().url);
    await deliver(a.inbox, { data: 1 }, { 'idempotency-key': 'm' });
    await deliver(a.inbox, { data: 1 }, { 'idempotency-key': 'm' });
    const poll = listEvents(server().url, a, 'after=1&wait=10');
    while (server().roost.waiters.held === 0) await new Promise((r) => setTimeout(r, 5));
    await deliver(a.inbox, { data: 2 });
    await poll;
    const res = await request(server().url, 'GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(res.text, /roost_deliveries_total\{transport="http",outcome="created"\} 2/);
    assert.match(res.text, /roost_deliveries_total\{transport="http",outcome="duplicate"\} 1/);
    assert.match(res.text, /roost_duplicates_total 1/);
    assert.match(res.text, /roost_polls_held 0/);
    assert.match(res.text, /roost_streams_open 0/);
    assert.match(res.text, /roost_wake_latency_seconds_count 1/);
    assert.ok(!res.text.includes(a.id), 'no address ids in metrics');
  });

  it('counts open event streams in roost_streams_open', async () => {
    const a = await createAddress(server().url);
    const controller = new AbortController();
    const stream = await fetch(`${server().url}/api/v1/addresses/${a.id}/events/stream`, {
      headers: { authorization: `Bearer ${a.token}` },
      signal: controller.signal,
    });
    assert.equal(stream.status, 200);
    assert.match((await request(server().url, 'GET', '/metrics')).text, /^roost_streams_open 1$/m);
    controller.abort();
    await eventually(
      async () => /^roost_streams_open 0$/m.test((await request(server().url, 'GET', '/metrics')).text),
      'the stream is closed',
    );
  });

  it('GET /api/v1/openapi.json is OpenAPI 3.1, version 0.1.0, with every operation and its schemas', async () => {
    const res = await request(server().url, 'GET', '/api/v1/openapi.json');
    assert.equal(res.status, 200);
    const doc = res.body;
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '0.1.0');
    assert.equal(doc.servers[0].url, server().config.baseUrl);
    const ops = {
      '/api/v1/addresses': ['post'],
      '/api/v1/addresses/{addressId}': ['get', 'delete'],
      '/api/v1/addresses/{addressId}/events': ['get'],
      '/api/v1/addresses/{addressId}/events/{eventId}/ack': ['post'],
      '/api/v1/inbox/{addressId}/{secret}': ['post'],
    };
    for (const [path, methods] of Object.entries(ops)) {
      for (const method of methods) assert.ok(doc.paths[path]?.[method], `${method} ${path}`);
    }
    // Shapes are named components ($ref), as a generated client wants them.
    const named = (schema: { $ref?: string }) =>
      schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()!] : schema;
    const create = doc.paths['/api/v1/addresses'].post;
    const createBody = named(create.requestBody.content['application/json'].schema);
    assert.equal(createBody.additionalProperties, false);
    assert.equal(createBody.properties.name.maxLength, 100);
    assert.equal(createBody.properties.expires_in_seconds.minimum, 60);
    assert.equal(createBody.properties.expires_in_seconds.maximum, 31536000);
    assert.ok(create.responses['201'] && create.responses['429']);
    const list = doc.paths['/api/v1/addresses/{addressId}/events'].get;
    const limit = list.parameters.find((p: any) => p.name === 'limit' && p.in === 'query');
    assert.deepEqual([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 100, 50]);
    const wait = list.parameters.find((p: any) => p.name === 'wait' && p.in === 'query');
    assert.deepEqual([wait.schema.minimum, wait.schema.maximum, wait.schema.default], [0, 25, 0]);
    const inbox = doc.paths['/api/v1/inbox/{addressId}/{secret}'].post;
    assert.ok(inbox.responses['202'] && inbox.responses['200'] && inbox.responses['404']);
    const errorSchema = named(inbox.responses['404'].content['application/json'].schema);
    assert.deepEqual(errorSchema.required, ['error']);
    assert.deepEqual(errorSchema.properties.error.required.sort(), ['code', 'message']);
    assert.deepEqual(list.security, [{ bearer: [] }]);
  });

  it('unknown routes answer 404 not_found and wrong methods 405 method_not_allowed with Allow, in the Error shape', async () => {
    const missing = await request(server().url, 'GET', '/api/v2/nothing');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
    // An inbox secret in an unknown path is not echoed back.
    const secret = `roost_ingress_${'S'.repeat(43)}`;
    const echoed = await request(server().url, 'POST', `/api/v1/inbox/addr_x/${secret}/extra`, { body: {} });
    assert.equal(echoed.status, 404);
    assert.ok(!echoed.text.includes(secret), echoed.text);
    const wrong = await request(server().url, 'PATCH', '/api/v1/addresses');
    assert.equal(wrong.status, 405);
    assert.equal(wrong.body.error.code, 'method_not_allowed');
    assert.match(wrong.headers.get('allow') ?? '', /POST/);
    const put = await request(server().url, 'PUT', '/api/v1/addresses/addr_x/events/evt_y/ack');
    assert.equal(put.status, 405);
  });
});

describe('configuration', () => {
  it('has the contract defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.baseUrl, 'http://localhost:3000');
    assert.equal(config.dbPath, './data/roost.db');
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.smtpPort, 2525);
    assert.equal(config.mailDomain, 'localhost');
    assert.deepEqual([config.createRate.limit, config.createRate.periodMs], [20, 60_000]);
    assert.equal(config.trustProxy, false);
    assert.equal(config.maxBodyBytes, 256 * 1024);
    assert.equal(config.maxEmailBytes, 10 * 1024 * 1024);
    assert.equal(config.defaultTtlSeconds, undefined);
    assert.equal(config.maxTtlSeconds, undefined);
    assert.equal(config.logLevel, 'info');
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      ROOST_BASE_URL: 'https://roost.example/',
      ROOST_DB: '/tmp/x.db',
      DATABASE_URL: 'postgres://u@h/db',
      ROOST_SMTP_PORT: '0',
      ROOST_MAIL_DOMAIN: 'Mail.Example',
      ROOST_CREATE_RATE: '5/sec',
      ROOST_TRUST_PROXY: 'true',
      ROOST_MAX_BODY_BYTES: '1MiB',
      ROOST_MAX_EMAIL_BYTES: '2097152',
      ROOST_DEFAULT_TTL_SECONDS: '60',
      ROOST_MAX_TTL_SECONDS: '120',
      LOG_LEVEL: 'warn',
    });
    assert.equal(config.baseUrl, 'https://roost.example');
    assert.equal(config.mailDomain, 'mail.example');
    assert.deepEqual([config.createRate.limit, config.createRate.periodMs], [5, 1000]);
    assert.equal(config.trustProxy, 1);
    assert.equal(config.maxBodyBytes, 1024 * 1024);
    assert.equal(config.maxEmailBytes, 2097152);
    assert.deepEqual([config.defaultTtlSeconds, config.maxTtlSeconds], [60, 120]);
    assert.equal(config.smtpPort, 0);
  });

  for (const [name, value] of [
    ['PORT', '70000'],
    ['PORT', 'abc'],
    ['ROOST_CREATE_RATE', '20/fortnight'],
    ['ROOST_CREATE_RATE', '0/min'],
    ['ROOST_BASE_URL', 'ftp://x'],
    ['DATABASE_URL', 'mysql://x'],
    ['LOG_LEVEL', 'loud'],
    ['ROOST_MAX_BODY_BYTES', '12 apples'],
    ['ROOST_DEFAULT_TTL_SECONDS', '30'],
  ]) {
    it(`refuses ${name}=${value} with a clear message`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name),
      );
    });
  }

  it('refuses a URL as ROOST_DB, the SQLite file, without repeating it', () => {
    for (const [value, hint] of [
      ['postgres://roost:hunter2@db.internal/roost', 'DATABASE_URL'],
      ['postgresql://roost:hunter2@db.internal/roost', 'DATABASE_URL'],
      ['file:///var/lib/roost/hunter2.db', 'file path'],
    ]) {
      assert.throws(
        () => loadConfig({ ROOST_DB: value }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.includes('ROOST_DB') &&
          error.message.includes(hint) &&
          !error.message.includes('hunter2'),
      );
    }
    // Paths, relative or not, even with a colon in them.
    for (const path of ['data/roost.db', '/var/lib/roost/roost.db', './a:b/roost.db'])
      assert.equal(loadConfig({ ROOST_DB: path }).dbPath, path);
  });

  it('refuses a default lifetime above the cap', () => {
    assert.throws(() => loadConfig({ ROOST_DEFAULT_TTL_SECONDS: '600', ROOST_MAX_TTL_SECONDS: '60' }), ConfigError);
  });
});

describe('shutdown (docs/api.md §9: stop accepting, finish in-flight writes)', () => {
  it('a delivery in flight when shutdown begins is answered 202; a request arriving behind it gets 503 unavailable and Connection: close', async () => {
    const server = await startTestServer('sqlite');
    try {
      const a = await createAddress(server.url);
      const body = JSON.stringify({ type: 'late', data: { in: 'flight' } });
      const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
      await once(socket, 'connect');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      const socketClosed = once(socket, 'close');
      const begun = once(server.roost.app.server, 'request');
      // The delivery's headers and part of its body: once Node has handed the request over
      // (and Fastify has run its onRequest hooks), it is in flight.
      socket.write(
        `POST ${new URL(a.inbox).pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
      );
      await begun;
      const closing = server.roost.close();
      // Shutdown has begun once the preClose hook has shortened keep-alive (http/app.ts).
      await eventually(() => server.roost.app.server.keepAliveTimeout === 1, 'shutdown begun');
      // The rest of the body, then a second request pipelined behind it on the same socket.
      socket.write(
        `${body.slice(10)}GET /api/v1/addresses/${a.id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\n\r\n`,
      );
      await socketClosed;
      await closing;

      const [first, second, ...rest] = received.split(/(?=HTTP\/1\.1 \d{3} )/);
      assert.deepEqual(rest, [], received);
      const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));
      assert.match(first, /^HTTP\/1\.1 202 /);
      assert.equal(bodyOf(first).event.type, 'late', 'the delivery begun before shutdown was committed and answered');
      assert.match(second, /^HTTP\/1\.1 503 /);
      assert.match(second, /^connection: close\r$/im);
      assert.equal(bodyOf(second).error.code, 'unavailable');
    } finally {
      await server.close();
    }
  });
});
