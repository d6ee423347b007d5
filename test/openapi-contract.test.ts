// The OpenAPI document as its users consume it: Spectral's `spectral:oas` and Redocly's
// recommended rules find nothing; the specification's shapes are named components that every
// operation refers to; and TypeScript types generated from it (openapi-typescript) accept the
// service's real responses and reject a response that breaks the document.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { createAddress, deliver, listEvents, request } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const run = promisify(execFile);
const bin = (name: string) => resolve('node_modules/.bin', name);

describe('OpenAPI document as a contract', () => {
  let server: TestServer;
  let dir: string;
  let doc: Record<string, unknown>;

  before(async () => {
    // A real public base URL: Redocly rightly flags localhost and example.com servers.
    server = await startTestServer('sqlite', { env: { ROOST_BASE_URL: 'https://roost.test' } });
    dir = mkdtempSync(join(tmpdir(), 'roost-openapi-'));
    doc = (await request(server.url, 'GET', '/api/v1/openapi.json')).body as Record<string, unknown>;
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes `redocly lint` with the recommended rules: no error, no warning', async () => {
    const { stdout } = await run(
      bin('redocly'),
      ['lint', '--extends=recommended', '--format=json', join(dir, 'openapi.json')],
      { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: unknown[] };
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 }, JSON.stringify(report.problems));
  });

  it('passes `spectral lint` with the spectral:oas rules: no error, no warning', async () => {
    writeFileSync(join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
    const { stdout } = await run(
      bin('spectral'),
      ['lint', '--ruleset', join(dir, '.spectral.yaml'), '--format', 'json', '--quiet', join(dir, 'openapi.json')],
      { env: { ...process.env, SCARF_ANALYTICS: 'false' } },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const problems = JSON.parse(stdout || '[]') as Array<{ code: string; message: string; path: string[] }>;
    assert.deepEqual(
      problems.map((p) => `${p.code} at ${p.path.join('.')}: ${p.message}`),
      [],
    );
  });

  it('names the specification’s ten shapes and Roost’s own as components, and every operation refers to them', () => {
    const components = doc.components as { schemas: Record<string, { properties?: Record<string, unknown> }> };
    const spec = ['Address', 'CreateAddress', 'CreateAddressResponse', 'AddressResponse', 'Event', 'CreateEvent'];
    spec.push('EventPage', 'EventResponse', 'EventDeliveryResponse', 'Error');
    const roost = [
      'UpdateAddress',
      'ViewToken',
      'ViewTokenCreated',
      'Sender',
      'PutSender',
      'EmailData',
      'RawCaptureData',
    ];
    for (const name of [...spec, ...roost]) assert.ok(components.schemas[name], `components.schemas.${name}`);
    // Field names exactly as the specification has them: Address camelCase, the rest snake_case.
    assert.deepEqual(Object.keys(components.schemas.Address.properties!).sort(), [
      'createdAt',
      'email',
      'expiresAt',
      'id',
      'name',
      'slug',
      'taskId',
    ]);
    assert.ok(
      components.schemas.Event.properties!.acknowledged_at && components.schemas.EventPage.properties!.next_cursor,
    );
    // No shape is inlined in an operation: every titled schema there became a $ref.
    const paths = JSON.stringify(doc.paths);
    assert.doesNotMatch(paths, /"title":/);
    assert.equal(
      paths.match(/"#\/components\/schemas\/Error"/g)?.length,
      countResponses(doc, (s) => s >= 400),
    );
    assert.equal((doc.paths as Record<string, unknown>)['/mcp'], undefined, 'MCP is described in docs/mcp.md');
  });

  it('declares what clients send and get: optional bodies, patterns, headers, content types, key bounds', () => {
    const op = (path: string, method: string) =>
      (doc.paths as Record<string, Record<string, any>>)[path][method] as Record<string, any>;
    for (const [path, method] of [
      ['/api/v1/addresses', 'post'],
      ['/api/v1/addresses/{addressId}/inbox-secret', 'post'],
      ['/api/v1/addresses/{addressId}/view-tokens', 'post'],
    ])
      assert.equal(op(path, method).requestBody.required, false, `${method} ${path}`);
    const deliver = op('/api/v1/inbox/{addressId}/{secret}', 'post');
    assert.deepEqual(Object.keys(deliver.requestBody.content).sort(), ['*/*', 'application/json']);
    const parameter = (name: string) => deliver.parameters.find((p: { name: string }) => p.name === name);
    assert.equal(parameter('secret').schema.pattern, '^roost_ingress_[A-Za-z0-9_-]+$');
    assert.equal(parameter('idempotency-key').schema.maxLength, 1024);
    const createEvent = (doc.components as any).schemas.CreateEvent.properties;
    assert.equal(createEvent.dedupe_key.maxLength, 1024);
    assert.equal(createEvent.source.default, undefined, 'a request shape says its defaults in words');
    const list = op('/api/v1/addresses/{addressId}/events', 'get');
    assert.deepEqual(list.parameters.find((p: { name: string }) => p.name === 'unacked').schema.enum, [
      '1',
      'true',
      '0',
      'false',
    ]);
    const create = op('/api/v1/addresses', 'post');
    assert.ok(create.responses['201'].headers.Location && create.responses['429'].headers['Retry-After']);
    assert.ok(create.responses['201'].headers['RateLimit-Remaining']);
    assert.ok(op('/api/v1/addresses/{addressId}', 'get').responses['401'].headers['WWW-Authenticate']);
    assert.ok(
      op('/api/v1/addresses/{addressId}/events/{eventId}/raw', 'get').responses['200'].content['message/rfc822'],
    );
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, any>>))
      for (const [method, operation] of Object.entries(methods))
        for (const status of ['400', '408', '429', '431', '500', '503'])
          assert.ok(operation.responses[status], `${method} ${path} ${status}`);
  });

  it('gives every operation a unique camelCase operationId and declares its security', () => {
    const ids: string[] = [];
    for (const methods of Object.values(doc.paths as Record<string, Record<string, Record<string, unknown>>>)) {
      for (const operation of Object.values(methods)) {
        assert.match(String(operation.operationId), /^[a-z][a-zA-Z]+$/);
        assert.ok(Array.isArray(operation.security), `${String(operation.operationId)} declares security`);
        ids.push(String(operation.operationId));
      }
    }
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.includes('createAddress') && ids.includes('deliverEvent'));
  });

  it('generates TypeScript types that the real responses type-check against', async () => {
    writeFileSync(join(dir, 'openapi.d.ts'), astToString(await openapiTS(JSON.stringify(doc))));
    const address = await createAddress(server.url, { name: 'contract', task_id: 't-1', expires_in_seconds: 3600 });
    const delivered = await deliver(address.inbox, { type: 'build.done', data: { ok: true }, metadata: { run: '7' } });
    assert.equal(delivered.status, 202, delivered.text);
    const page = await listEvents(server.url, address);
    const eventId = (page.body as { events: { id: string }[] }).events[0].id;
    const acked = await request(server.url, 'POST', `/api/v1/addresses/${address.id}/events/${eventId}/ack`, {
      token: address.token,
    });
    const fetched = await request(server.url, 'GET', `/api/v1/addresses/${address.id}`, { token: address.token });
    const refused = await request(server.url, 'GET', `/api/v1/addresses/${address.id}`, { token: 'roost_read_wrong' });
    assert.deepEqual(
      [delivered.status, page.status, acked.status, fetched.status, refused.status],
      [202, 200, 200, 200, 401],
    );

    // Each real body as an object literal of its documented type: TypeScript rejects missing
    // required fields, wrong types and (literals being fresh) any field the document lacks.
    const checks = (created: unknown) => `import type { paths } from './openapi.js';
type Ok<P extends keyof paths, M extends keyof paths[P], S extends number> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer T } } };
} ? T : never;
export const created: Ok<'/api/v1/addresses', 'post', 201> = ${JSON.stringify(created)};
export const fetched: Ok<'/api/v1/addresses/{addressId}', 'get', 200> = ${JSON.stringify(fetched.body)};
export const page: Ok<'/api/v1/addresses/{addressId}/events', 'get', 200> = ${JSON.stringify(page.body)};
export const acked: Ok<'/api/v1/addresses/{addressId}/events/{eventId}/ack', 'post', 200> = ${JSON.stringify(acked.body)};
export const delivered: Ok<'/api/v1/inbox/{addressId}/{secret}', 'post', 202> = ${JSON.stringify(delivered.body)};
export const refused: Ok<'/api/v1/addresses/{addressId}', 'get', 401> = ${JSON.stringify(refused.body)};
`;
    const typecheck = async (source: string) => {
      writeFileSync(join(dir, 'responses.ts'), source);
      const args = ['--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', join(dir, 'responses.ts')];
      return run(bin('tsc'), args, { cwd: dir }).then(
        () => '',
        (error: { stdout?: string }) => error.stdout ?? 'tsc failed',
      );
    };
    assert.equal(await typecheck(checks(address.response)), '');

    // The same check fails when a response leaves the document: it can tell.
    const { credentials: _dropped, ...withoutCredentials } = address.response as Record<string, unknown>;
    assert.match(await typecheck(checks(withoutCredentials)), /credentials/);
    assert.match(await typecheck(checks({ ...(address.response as object), surprise: 1 })), /surprise/);
  });
});

/** How many responses of the document have a status that `which` picks. */
function countResponses(document: Record<string, unknown>, which: (status: number) => boolean): number {
  let count = 0;
  for (const methods of Object.values(document.paths as Record<string, Record<string, { responses: object }>>))
    for (const operation of Object.values(methods))
      count += Object.keys(operation.responses).filter((status) => which(Number(status))).length;
  return count;
}
