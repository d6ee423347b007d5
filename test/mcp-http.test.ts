// The MCP endpoints at the HTTP level (docs/api.md §6 last paragraph, §7): protocol-level
// failures are JSON-RPC errors with a 4xx, never the REST error shape or a 5xx; and
// GET /llms.txt, the plain-text guide for agents.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, type WireResponse } from './helpers/http.js';
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
    assertJsonRpcError(await post({ headers: ACCEPT, body: { hello: 'world' } }), 400, -32700);
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
