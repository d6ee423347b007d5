// The OpenAPI document as its users consume it: Redocly's recommended rules find nothing, and
// TypeScript types generated from it (openapi-typescript) accept the service's real responses
// and reject a response that breaks the document.
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
