// A NUL character (U+0000) in a field stored as text is refused with 400 before storage, on
// both engines alike and on every path that writes one: create, PATCH and view tokens over
// REST and MCP, inbox deliveries, and email (docs/api.md §6). Inside `data` and `metadata`,
// stored as JSON text, it is kept; an id that holds one names nothing (404).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { forEachEngine } from './helpers/engines.js';
import { assertError, createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { SmtpDialogue } from './helpers/smtp.js';
import type { TestServer } from './helpers/server.js';

const NUL = 'a\u0000b';
const REFUSED = /^(\S+) contains a NUL character \(\\u0000\), which cannot be stored; remove it/;

function assertRefused(res: { status: number; body: any; text?: string }, field: string): string {
  assertError(res, 400, 'invalid_request');
  const message: string = res.body.error.message;
  assert.equal(REFUSED.exec(message)?.[1], field, message);
  return message;
}

async function mcpCall(server: TestServer, path: string, token: string | undefined, name: string, args: object) {
  const client = new Client({ name: 'roost-test', version: '0.0.0' });
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(path, server.url), { requestInit: { headers } }));
  try {
    await client.listTools();
    return (await client.callTool({ name, arguments: { ...args } })) as CallToolResult;
  } finally {
    await client.close();
  }
}

const toolText = (result: CallToolResult) => (result.content[0] as { type: 'text'; text: string }).text;

async function addressOf(server: TestServer, address: CreatedAddress) {
  const res = await request(server.url, 'GET', `/api/v1/addresses/${address.id}`, { token: address.token });
  assert.equal(res.status, 200, res.text);
  return res.body.address;
}

await forEachEngine(
  'a NUL in a stored text field',
  (server) => {
    test('REST create: name and task_id are refused, and nothing is created', async () => {
      const before = await request(server().url, 'GET', '/metrics');
      assertRefused(await request(server().url, 'POST', '/api/v1/addresses', { body: { name: NUL } }), 'name');
      assertRefused(
        await request(server().url, 'POST', '/api/v1/addresses', { body: { name: 'ok', task_id: NUL } }),
        'task_id',
      );
      const after = await request(server().url, 'GET', '/metrics');
      const created = (text: string) => /^roost_addresses_created_total (\d+)/m.exec(text)?.[1];
      assert.equal(created(after.text), created(before.text), 'no address was created');
    });

    test('REST PATCH: name and task_id are refused, and the address is unchanged', async () => {
      const a = await createAddress(server().url, { name: 'kept', task_id: 'task-1' });
      for (const field of ['name', 'task_id']) {
        const res = await request(server().url, 'PATCH', `/api/v1/addresses/${a.id}`, {
          token: a.token,
          body: { [field]: NUL },
        });
        assertRefused(res, field);
      }
      const address = await addressOf(server(), a);
      assert.equal(address.name, 'kept');
      assert.equal(address.taskId, 'task-1');
    });

    test('REST view token: a label is refused, and no token is made', async () => {
      const a = await createAddress(server().url);
      const res = await request(server().url, 'POST', `/api/v1/addresses/${a.id}/view-tokens`, {
        token: a.token,
        body: { label: NUL },
      });
      assertRefused(res, 'label');
      const list = await request(server().url, 'GET', `/api/v1/addresses/${a.id}/view-tokens`, { token: a.token });
      assert.deepEqual(list.body.view_tokens, []);
    });

    test('inbox: type and source are refused with a pointer to ?raw=1, which stores the body as sent', async () => {
      const a = await createAddress(server().url);
      for (const field of ['type', 'source']) {
        const message = assertRefused(await deliver(a.inbox, { [field]: NUL, data: 1 }), field);
        assert.match(message, /\?raw=1, which stores any body as sent/);
      }
      assert.deepEqual((await listEvents(server().url, a)).body.events, [], 'nothing was queued');
      const raw = await request(a.inbox, 'POST', `${a.inbox}?raw=1`, { body: { type: NUL } });
      assert.equal(raw.status, 202, raw.text);
      const [event] = (await listEvents(server().url, a)).body.events;
      assert.equal(event.type, 'webhook.received');
      assert.deepEqual(event.data.body, { type: NUL }, 'the raw body keeps its NUL');
    });

    test('inside data and metadata (JSON text) a NUL is stored and read back as sent', async () => {
      const a = await createAddress(server().url);
      const sent = await deliver(a.inbox, { data: { [NUL]: NUL }, metadata: { k: NUL } });
      assert.equal(sent.status, 202, sent.text);
      const [event] = (await listEvents(server().url, a)).body.events;
      assert.deepEqual(event.data, { [NUL]: NUL });
      assert.deepEqual(event.metadata, { k: NUL });
    });

    test('an id with a NUL in a URL names nothing: the same 404 as any unknown id', async () => {
      const a = await createAddress(server().url);
      const inbox = new URL(a.inbox);
      const cases: Array<[string, string, string]> = [
        ['GET', `/api/v1/addresses/addr_%00x`, 'address_not_found'],
        ['POST', `/api/v1/addresses/${a.id}/events/evt_%00x/ack`, 'event_not_found'],
        ['GET', `/api/v1/addresses/${a.id}/events/evt_%00x/raw`, 'event_not_found'],
        ['DELETE', `/api/v1/addresses/${a.id}/view-tokens/vt_%00x`, 'view_token_not_found'],
        ['POST', inbox.pathname.replace(a.id, 'addr_%00x'), 'inbox_not_found'],
      ];
      for (const [method, path, code] of cases) {
        const res = await request(server().url, method, path, {
          token: a.token,
          body: method === 'GET' ? undefined : {},
        });
        assertError(res, 404, code);
      }
    });

    test('MCP: create, update and view-token tools refuse it as the REST calls do', async () => {
      const created = await mcpCall(server(), '/mcp', undefined, 'create_return_address', { name: NUL });
      assert.equal(created.isError, true);
      assert.match(toolText(created), /^invalid_request: name contains a NUL character/);
      const a = await createAddress(server().url, { name: 'kept' });
      const updated = await mcpCall(server(), `/mcp/${a.id}`, a.token, 'update_return_address', { task_id: NUL });
      assert.equal(updated.isError, true);
      assert.match(toolText(updated), /^invalid_request: task_id contains a NUL character/);
      const viewToken = await mcpCall(server(), `/mcp/${a.id}`, a.token, 'create_view_token', { label: NUL });
      assert.equal(viewToken.isError, true);
      assert.match(toolText(viewToken), /^invalid_request: label contains a NUL character/);
      assert.equal((await addressOf(server(), a)).taskId, undefined);
    });

    test('email: a NUL in an attachment filename becomes U+FFFD; the mail is queued', async () => {
      const a = await createAddress(server().url);
      const mail = [
        'From: alice@example.org',
        `To: ${a.email}`,
        'Subject: a named attachment',
        'Message-ID: <nul-filename@example.org>',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b"',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'see attached',
        '--b',
        'Content-Type: text/plain',
        "Content-Disposition: attachment; filename*=utf-8''a%00b.txt",
        '',
        'attached',
        '--b--',
        '',
      ].join('\r\n');
      const smtp = await SmtpDialogue.open(server().roost.smtpPort!);
      try {
        const replies = await smtp.send('alice@example.org', [a.email], mail);
        const final = replies.at(-1)!;
        assert.equal(final.code, 250, final.text);
      } finally {
        await smtp.quit();
      }
      const events = (await listEvents(server().url, a)).body.events;
      assert.equal(events.length, 1);
      assert.equal(events[0].data.attachments[0].filename, 'a\uFFFDb.txt');
    });
  },
  {
    smtp: {
      port: 0,
      dnsResolver: async () => Promise.reject(Object.assign(new Error('offline'), { code: 'ENOTFOUND' })),
    },
  },
);
