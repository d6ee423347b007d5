// The callback tools (docs/mcp.md) through the official MCP SDK client over real HTTP:
// create (and again by key), a wait_for_callbacks held until a provider posts to the URL,
// any and all over several, list by key prefix, cancel, and a person's question.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { eventually, forEachEngine } from './helpers/engines.js';
import { createAddress, request } from './helpers/http.js';

const text = (result: CallToolResult) => (result.content[0] as { type: 'text'; text: string }).text;

function ok(result: unknown): any {
  const r = result as CallToolResult;
  assert.notEqual(r.isError, true, `expected success, got ${text(r)}`);
  return r.structuredContent;
}

const post = (url: string, body: unknown) =>
  request('', 'POST', url, { rawBody: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

await forEachEngine('MCP callback tools', (server) => {
  async function bound() {
    const a = await createAddress(server().url);
    const client = new Client({ name: 'roost-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`/mcp/${a.id}`, server().url), {
        requestInit: { headers: { Authorization: `Bearer ${a.token}` } },
      }),
    );
    // Listed first, so that every result is checked against its outputSchema.
    const { tools } = await client.listTools();
    for (const name of ['create_callback', 'wait_for_callbacks', 'list_callbacks', 'cancel_callback'])
      assert.ok(
        tools.some((tool) => tool.name === name),
        name,
      );
    const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args });
    return { a, client, call };
  }

  it('create (and again by key), then a held wait answered by the delivery', async () => {
    const { client, call } = await bound();
    try {
      const created = ok(await call('create_callback', { key: 'job-7', label: 'Job 7' })).callback;
      assert.equal(created.status, 'waiting');
      assert.ok(created.url);
      assert.deepEqual(ok(await call('create_callback', { key: 'job-7' })).callback, created);
      const held = server().roost.waiters.held;
      const waiting = call('wait_for_callbacks', { ids: [created.id], wait: 25 });
      await eventually(() => server().roost.waiters.held > held, 'the wait is held');
      assert.equal((await post(created.url, { result: 42 })).status, 202);
      assert.deepEqual(ok(await waiting), {
        done: true,
        callbacks: [{ id: created.id, key: 'job-7', status: 'completed', body: { result: 42 } }],
      });
    } finally {
      await client.close();
    }
  });

  it('any and all over three by key prefix; list; cancel', async () => {
    const { client, call } = await bound();
    try {
      const cbs = [];
      for (const key of ['run/a', 'run/b', 'run/c']) cbs.push(ok(await call('create_callback', { key })).callback);
      const none = ok(await call('wait_for_callbacks', { key_prefix: 'run/', wait: 0 }));
      assert.equal(none.done, false);
      await post(cbs[2].url, { c: true });
      const any = ok(await call('wait_for_callbacks', { key_prefix: 'run/', mode: 'any', wait: 25 }));
      assert.equal(any.done, true);
      assert.deepEqual(
        any.callbacks.map((c: { status: string }) => c.status),
        ['waiting', 'waiting', 'completed'],
      );
      assert.equal(ok(await call('cancel_callback', { callback_id: cbs[0].id })).callback.status, 'cancelled');
      const held = server().roost.waiters.held;
      const all = call('wait_for_callbacks', { key_prefix: 'run/', mode: 'all', wait: 25 });
      await eventually(() => server().roost.waiters.held > held, 'the wait is held');
      await post(cbs[1].url, { b: true });
      const answer = ok(await all);
      assert.equal(answer.done, true);
      assert.deepEqual(
        answer.callbacks.map((c: { status: string }) => c.status),
        ['cancelled', 'completed', 'completed'],
      );
      const listed = ok(await call('list_callbacks', { status: 'completed' })).callbacks;
      assert.deepEqual(
        listed.map((c: { key: string }) => c.key),
        ['run/b', 'run/c'],
      );
      const refused = (await call('cancel_callback', { callback_id: 'cb_nothing' })) as CallToolResult;
      assert.equal(refused.isError, true);
      assert.match(text(refused), /^callback_not_found: /);
    } finally {
      await client.close();
    }
  });

  it('a question for a person: human.message carries the link; the answer is the body', async () => {
    const { client, call } = await bound();
    try {
      const cb = ok(
        await call('create_callback', {
          human: { question: 'Deploy to production?', options: ['Yes', 'No'], allow_comment: true },
        }),
      ).callback;
      assert.match(cb.human.message, /Deploy to production\?/);
      assert.ok(cb.human.message.includes(cb.url));
      const answered = await post(cb.url, { answer: 'Yes', comment: 'go' });
      assert.equal(answered.status, 202);
      const waited = ok(await call('wait_for_callbacks', { ids: [cb.id], wait: 1 }));
      assert.equal(waited.callbacks[0].body.answer, 'Yes');
      assert.equal(waited.callbacks[0].body.comment, 'go');
    } finally {
      await client.close();
    }
  });
});
