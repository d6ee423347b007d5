// The MCP endpoints at the HTTP level (docs/api.md §6 last paragraph, §7, docs/mcp.md):
// protocol-level failures are JSON-RPC errors with the codes JSON-RPC gives them, never the
// REST error shape or a 5xx; cancellation across the requests of the stateless transport;
// the Host and Origin checks and CORS; the size of tools/list; and GET /llms.txt.
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { freePort } from './helpers/ports.js';
import { eventually } from './helpers/engines.js';
import { createAddress, request, type WireResponse } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const ACCEPT = { accept: 'application/json, text/event-stream' };

function assertJsonRpcError(res: WireResponse, status: number, code: number) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.jsonrpc, '2.0');
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(res.body.id, null);
}

describe('MCP over HTTP', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', { env: { ROOST_MAX_BODY_BYTES: '4KiB' } });
  });
  after(async () => server.close());

  it('answers a stateless JSON-RPC request without a session', async () => {
    const res = await request(server.url, 'POST', '/mcp/addr_x', {
      headers: ACCEPT,
      body: { jsonrpc: '2.0', id: 7, method: 'tools/list' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('mcp-session-id'), null);
    assert.equal(res.body.id, 7);
    assert.ok(res.body.result.tools.some((tool: any) => tool.name === 'poll_events'));
  });

  it('GET, DELETE and PUT answer 405 as JSON-RPC errors (stateless: POST only)', async () => {
    for (const [method, path] of [
      ['GET', '/mcp'],
      ['GET', '/mcp/addr_x'],
      ['DELETE', '/mcp'],
      ['DELETE', '/mcp/addr_x'],
      ['PUT', '/mcp'],
    ]) {
      const res = await request(server.url, method, path, { headers: ACCEPT });
      assertJsonRpcError(res, 405, -32000);
      assert.equal(res.headers.get('allow'), 'POST');
    }
  });

  it('malformed requests are JSON-RPC errors with a 4xx', async () => {
    const post = (options: Parameters<typeof request>[3]) => request(server.url, 'POST', '/mcp', options);
    assertJsonRpcError(
      await post({ headers: { ...ACCEPT, 'content-type': 'application/json' }, rawBody: '{"jsonrpc":' }),
      400,
      -32700,
    );
    assertJsonRpcError(
      await post({ headers: { ...ACCEPT, 'content-type': 'application/json' }, rawBody: '' }),
      400,
      -32700,
    );
    // Valid JSON that is not a JSON-RPC message: Invalid Request, not Parse error (JSON-RPC §5.1).
    assertJsonRpcError(await post({ headers: ACCEPT, body: { hello: 'world' } }), 400, -32600);
    assertJsonRpcError(
      await post({ headers: { ...ACCEPT, 'content-type': 'text/plain' }, rawBody: '{}' }),
      415,
      -32000,
    );
    assertJsonRpcError(
      await post({ headers: { accept: 'application/json' }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } }),
      406,
      -32000,
    );
    const big = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { padding: 'x'.repeat(5000) } };
    assertJsonRpcError(await post({ headers: ACCEPT, body: big }), 413, -32000);
  });

  it('an unknown method is a JSON-RPC error in a 200 answer, as JSON-RPC wants', async () => {
    const res = await request(server.url, 'POST', '/mcp', {
      headers: ACCEPT,
      body: { jsonrpc: '2.0', id: 3, method: 'no/such' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.id, 3);
    assert.equal(res.body.error.code, -32601);
  });

  it('GET /llms.txt is a plain-text guide naming both flows and the credentials rule', async () => {
    const res = await request(server.url, 'GET', '/llms.txt');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const base = server.config.baseUrl;
    for (const needle of [
      `curl -s -X POST ${base}/api/v1/addresses`,
      `${base}/mcp`,
      'Authorization: Bearer roost_read_',
      'read_token',
      'next_cursor',
      'poll_events',
      'untrusted',
      'endpoints.webhook_url',
    ]) {
      assert.ok(res.text.includes(needle), `llms.txt should mention ${needle}`);
    }
  });

  it('the OpenAPI document leaves the MCP endpoints to docs/mcp.md (JSON-RPC is not REST)', async () => {
    const res = await request(server.url, 'GET', '/api/v1/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.paths['/mcp'], undefined);
    assert.equal(res.body.paths['/mcp/{addressId}'], undefined);
    assert.match(res.body.info.description, /docs\/mcp\.md/);
  });
});

/** A POST or OPTIONS over node:http, which sends the Host and Origin headers it is given as they are. */
function raw(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string; json: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      new URL(path, url),
      {
        method,
        headers: {
          ...(payload === undefined ? {} : { 'content-type': 'application/json', ...ACCEPT }),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

describe('MCP JSON-RPC error codes', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(async () => server.close());
  const post = (body: unknown) => raw(server.url, 'POST', '/mcp', {}, body);

  it('a message without "jsonrpc" or with a null id is -32600 Invalid Request, not -32700', async () => {
    for (const [body, id] of [
      [{ id: 1, method: 'tools/list' }, 1],
      [{ jsonrpc: '1.0', id: 'a', method: 'tools/list' }, 'a'],
      [{ jsonrpc: '2.0', id: null, method: 'tools/list' }, null],
      [{ jsonrpc: '2.0', id: 2, method: 7 }, 2],
      [{ jsonrpc: '2.0', id: 3, method: 'tools/list', params: [] }, 3],
      [[], null],
      ['tools/list', null],
    ] as const) {
      const res = await post(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.json.error.code, -32600, JSON.stringify(body));
      assert.match(res.json.error.message, /^Invalid Request: /);
      assert.equal(res.json.id, id);
    }
  });

  it('malformed tools/call params are -32602 with a short message naming the field', async () => {
    for (const [params, field] of [
      [{}, 'params.name'],
      [{ name: 7 }, 'params.name'],
      [{ name: 'poll_events', arguments: 'after=0' }, 'params.arguments'],
    ] as const) {
      const res = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params });
      assert.equal(res.status, 200);
      assert.equal(res.json.id, 9);
      assert.equal(res.json.error.code, -32602, res.text);
      assert.ok(res.json.error.message.includes(`"${field}"`), res.json.error.message);
      assert.ok(res.json.error.message.length < 200, res.json.error.message);
    }
  });

  it('a tools/list cursor is -32602 (none is ever given out); an unknown tool says its code once', async () => {
    const cursor = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { cursor: 'abc' } });
    assert.equal(cursor.json.error.code, -32602);
    assert.match(cursor.json.error.message, /cursor/);
    const unknown = await post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'send_email' } });
    assert.equal(unknown.json.error.code, -32602);
    assert.match(unknown.json.error.message, /^Unknown tool "send_email"/);
  });

  it('initialize does not advertise tools.listChanged (the list never changes)', async () => {
    const res = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } },
    });
    assert.deepEqual(res.json.result.capabilities.tools, {});
    assert.match(res.json.result.instructions, /webhook_url/);
  });
});

describe('MCP tools/list: small, and schemas that strict validators compile', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(async () => server.close());

  it('is at most 12 KB on /mcp and on an address-bound endpoint', async () => {
    for (const path of ['/mcp', '/mcp/addr_3q2Yc0m4HkX0b1jv2c9F1A']) {
      const res = await raw(server.url, 'POST', path, {}, LIST);
      assert.equal(res.status, 200);
      const bytes = Buffer.byteLength(res.text);
      assert.ok(bytes <= 12 * 1024, `${path}: tools/list is ${bytes} bytes`);
    }
  });

  it('an argument a tool does not list is refused by name, though the listed schema leaves the object open', async () => {
    const list = await raw(server.url, 'POST', '/mcp', {}, LIST);
    const get = list.json.result.tools.find((tool: { name: string }) => tool.name === 'get_return_address');
    assert.equal(get.inputSchema.additionalProperties, undefined);
    const res = await raw(
      server.url,
      'POST',
      '/mcp',
      {},
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get_return_address', arguments: { address_id: 'addr_x', token: 'roost_read_x' } },
      },
    );
    assert.equal(res.json.result.isError, true);
    assert.equal(
      res.json.result.content[0].text,
      'invalid_request: Unknown argument "token": this tool does not take it.',
    );
  });

  it('every input and output schema compiles in Ajv strict mode, without ajv-formats', async () => {
    const res = await raw(server.url, 'POST', '/mcp', {}, LIST);
    // MCP's default dialect (2020-12), and Ajv's default class (draft-07), which the SDK client uses.
    for (const ajv of [new Ajv2020({ strict: true }), new Ajv({ strict: true })]) {
      for (const tool of res.json.result.tools) {
        for (const schema of [tool.inputSchema, tool.outputSchema]) {
          assert.doesNotThrow(() => ajv.compile(schema), `${tool.name}: ${JSON.stringify(schema)}`);
        }
      }
    }
  });
});

describe('MCP cancellation across requests (stateless transport)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(async () => server.close());

  it('a cancellation ends the held call of the same request id and credential only', async () => {
    const address = await createAddress(server.url);
    const other = await createAddress(server.url);
    const auth = { authorization: `Bearer ${address.token}` };
    const heldBefore = server.roost.waiters.held;
    const held = raw(server.url, 'POST', `/mcp/${address.id}`, auth, {
      jsonrpc: '2.0',
      id: 41,
      method: 'tools/call',
      params: { name: 'poll_events', arguments: { wait: 25 } },
    });
    await eventually(() => server.roost.waiters.held > heldBefore, 'the poll to be held');
    const cancel = (id: number, headers: Record<string, string>) =>
      raw(server.url, 'POST', '/mcp', headers, {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: id, reason: 'done' },
      });
    // Another credential, or another id: nothing happens.
    assert.equal((await cancel(41, { authorization: `Bearer ${other.token}` })).status, 202);
    assert.equal((await cancel(42, auth)).status, 202);
    assert.equal(server.roost.waiters.held, heldBefore + 1);
    // The caller's own: the call ends at once, without a JSON-RPC response (MCP "Cancellation").
    assert.equal((await cancel(41, auth)).status, 202);
    const ended = await held;
    assert.equal(ended.status, 202);
    assert.equal(ended.text, '');
    await eventually(() => server.roost.waiters.held === heldBefore, 'the slot to be freed');
  });
});

describe('MCP Host and Origin checks (DNS rebinding) and CORS', () => {
  it('with a loopback base URL, localhost, 127.0.0.1 and [::1] of its port are one origin', async () => {
    const port = await freePort();
    const server = await startTestServer('sqlite', {
      env: { PORT: String(port), ROOST_BASE_URL: `http://localhost:${port}` },
    });
    try {
      for (const name of ['localhost', '127.0.0.1', '[::1]']) {
        const res = await raw(
          server.url,
          'POST',
          '/mcp',
          { host: `${name}:${port}`, origin: `http://${name}:${port}` },
          LIST,
        );
        assert.equal(res.status, 200, `${name}: ${res.text}`);
      }
      for (const headers of [
        { host: `localhost:${port + 1}` } as Record<string, string>,
        { host: 'evil.example.com' },
        { host: `localhost:${port}`, origin: 'http://evil.example.com' },
        { host: `localhost:${port}`, origin: `http://127.0.0.1:${port + 1}` },
      ]) {
        const res = await raw(server.url, 'POST', '/mcp', headers, LIST);
        assert.equal(res.status, 403, JSON.stringify(headers));
        assert.equal(res.json.error.code, -32000);
      }
    } finally {
      await server.close();
    }
  });

  it('without a base URL only loopback Host names are accepted, and the start-up line says so', async () => {
    const server = await startTestServer('sqlite');
    try {
      const port = new URL(server.url).port;
      assert.equal((await raw(server.url, 'POST', '/mcp', { host: `127.0.0.1:${port}` }, LIST)).status, 200);
      assert.equal((await raw(server.url, 'POST', '/mcp', { host: `localhost:${port}` }, LIST)).status, 200);
      const rebound = await raw(server.url, 'POST', '/mcp', { host: 'evil.example.com' }, LIST);
      assert.equal(rebound.status, 403);
      assert.match(rebound.json.error.message, /loopback/);
      assert.match(server.logs(), /Roost listening on .*MCP takes loopback Host names only/);
    } finally {
      await server.close();
    }
  });

  it('a public base URL: its own Host only, loopback names refused', async () => {
    const server = await startTestServer('sqlite', { env: { ROOST_BASE_URL: 'https://roost.example' } });
    try {
      assert.equal((await raw(server.url, 'POST', '/mcp', { host: 'roost.example' }, LIST)).status, 200);
      assert.equal((await raw(server.url, 'POST', '/mcp', { host: 'localhost' }, LIST)).status, 403);
      assert.equal((await raw(server.url, 'POST', '/mcp', { host: 'roost.example@evil.example' }, LIST)).status, 403);
    } finally {
      await server.close();
    }
  });

  it('ROOST_MCP_ALLOWED_ORIGINS: preflight answered, the origin echoed, headers exposed; others 403', async () => {
    const app = 'http://app.example:8080';
    const server = await startTestServer('sqlite', { env: { ROOST_MCP_ALLOWED_ORIGINS: app } });
    try {
      const preflight = await raw(server.url, 'OPTIONS', '/mcp/addr_x', {
        origin: app,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers['access-control-allow-origin'], app);
      assert.match(String(preflight.headers['access-control-allow-methods']), /POST/);
      const allowed = String(preflight.headers['access-control-allow-headers']).toLowerCase();
      for (const header of ['authorization', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'])
        assert.ok(allowed.includes(header), header);

      const post = await raw(server.url, 'POST', '/mcp', { origin: app }, LIST);
      assert.equal(post.status, 200);
      assert.equal(post.headers['access-control-allow-origin'], app);
      assert.match(String(post.headers['access-control-expose-headers']), /Mcp-Session-Id/);
      assert.match(String(post.headers.vary), /Origin/);

      const foreign = 'http://evil.example';
      const refused = await raw(server.url, 'OPTIONS', '/mcp', {
        origin: foreign,
        'access-control-request-method': 'POST',
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.headers['access-control-allow-origin'], undefined);
      assert.equal((await raw(server.url, 'POST', '/mcp', { origin: foreign }, LIST)).status, 403);
    } finally {
      await server.close();
    }
  });
});

describe('endpoints.webhook_url: the URL to hand a third-party sender', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(async () => server.close());

  it('REST creation names it beside inbox_url; a sender posting its own JSON is stored there, refused at inbox_url', async () => {
    const created = await request(server.url, 'POST', '/api/v1/addresses', { body: {} });
    assert.equal(created.status, 201);
    const { inbox_url: inboxUrl, webhook_url: webhookUrl } = created.body.endpoints;
    assert.equal(webhookUrl, `${inboxUrl}?raw=1`);
    // A provider's own payload, as GitHub would post it.
    const own = { action: 'opened', id: 7, repository: { full_name: 'o/r' } };
    const local = (url: string) => `${new URL(url).pathname}${new URL(url).search}`;
    assert.equal((await request(server.url, 'POST', local(inboxUrl), { body: own })).status, 400);
    const stored = await request(server.url, 'POST', local(webhookUrl), { body: own });
    assert.equal(stored.status, 202, stored.text);
  });

  it('the create tool and the server instructions say which URL to hand out', async () => {
    const list = await raw(server.url, 'POST', '/mcp', {}, LIST);
    const create = list.json.result.tools.find((tool: { name: string }) => tool.name === 'create_return_address');
    assert.match(create.description, /webhook_url: give it to a third-party sender/);
    assert.match(create.description, /inbox_url takes only Roost event JSON/);
  });
});
