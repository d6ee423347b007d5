// Callbacks through the client SDK and the `roost callback` commands, against a running
// server: create (and again by key), a wait answered by a delivery, any and all, list,
// cancel, and a person's question answered by JSON.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { RoostClient } from '../src/client/index.js';
import { request } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const run = promisify(execFile);

const post = (url: string, body: unknown) =>
  request('', 'POST', url, { rawBody: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

describe('callbacks through the client and the CLI', () => {
  let server: TestServer;
  let dir: string;
  before(async () => {
    server = await startTestServer('sqlite');
    dir = mkdtempSync(join(tmpdir(), 'roost-cb-cli-'));
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('client: create (again by key), wait any then all, list by prefix, cancel', async () => {
    const created = await new RoostClient({ baseUrl: server.url }).createAddress();
    const client = RoostClient.fromCredentials(created, { baseUrl: server.url });
    const first = await client.createCallback({ key: 'deploy/1', complete_when: { body_contains: { ok: true } } });
    assert.equal(first.created, true);
    const again = await client.createCallback({ key: 'deploy/1' });
    assert.deepEqual(again, { created: false, callback: first.callback });
    const second = (await client.createCallback({ key: 'deploy/2' })).callback;
    await post(first.callback.url!, { ok: false });
    await post(first.callback.url!, { ok: true });
    const any = await client.waitForCallbacks({ keyPrefix: 'deploy/' }, { mode: 'any' });
    assert.deepEqual(
      any.map((c) => c.status),
      ['completed', 'waiting'],
    );
    assert.deepEqual((await client.getCallback(first.callback.id)).body, { ok: true });
    // Nothing more comes for the second within the timeout: it comes back still waiting.
    const notYet = await client.waitForCallbacks({ ids: [second.id] }, { timeoutMs: 0 });
    assert.equal(notYet[0].status, 'waiting');
    assert.equal((await client.cancelCallback(second.id)).status, 'cancelled');
    const all = await client.waitForCallbacks({ keyPrefix: 'deploy/' }, { mode: 'all' });
    assert.deepEqual(
      all.map((c) => c.status),
      ['completed', 'cancelled'],
    );
    assert.deepEqual(
      (await client.listCallbacks({ status: 'cancelled' })).map((c) => c.id),
      [second.id],
    );
  });

  test('CLI: roost callback create, wait, list, cancel', async () => {
    const created = await new RoostClient({ baseUrl: server.url }).createAddress();
    const file = join(dir, 'address.json');
    writeFileSync(file, JSON.stringify(created));
    const roost = async (...args: string[]) => {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', CLI, ...args, '--credentials', file], {
        env: { PATH: process.env.PATH ?? '', ROOST_URL: server.url },
      });
      return JSON.parse(stdout);
    };
    const { callback } = await roost(
      'callback',
      'create',
      '--key',
      'ask-1',
      '--question',
      'Ship it?',
      '--option',
      'Yes',
      '--option',
      'No',
    );
    assert.deepEqual(callback.human.options, ['Yes', 'No']);
    assert.equal((await roost('callback', 'create', '--key', 'ask-1')).callback.id, callback.id);
    assert.equal((await post(callback.url, { answer: 'No' })).status, 202);
    const waited = await roost('callback', 'wait', '--key', 'ask-1', '--timeout', '5');
    assert.equal(waited.callbacks[0].status, 'completed');
    assert.equal(waited.callbacks[0].body.answer, 'No');
    const other = (await roost('callback', 'create', '--body-contains', '{"done":true}')).callback;
    assert.deepEqual(other.complete_when, { body_contains: { done: true } });
    assert.equal((await roost('callback', 'cancel', other.id)).callback.status, 'cancelled');
    const listed = await roost('callback', 'list', '--status', 'cancelled');
    assert.deepEqual(
      listed.callbacks.map((c: { id: string }) => c.id),
      [other.id],
    );
  });
});
