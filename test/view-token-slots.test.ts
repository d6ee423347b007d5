// View tokens share the read token's address but not its slots: however many idle polls
// and streams view tokens hold open, the owner's long-poll, stream and MCP poll_events
// still get in (docs/webhooks-and-streaming.md, "Limits"). Default caps, real sockets, the
// official MCP client, both engines.
import assert from 'node:assert/strict';
import http from 'node:http';
import { it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { eventually, forEachEngine } from './helpers/engines.js';
import { assertErrorBody, createAddress, deliver, listEvents, request } from './helpers/http.js';

/** Opens a stream and resolves with its status and first bytes once the head arrives; close() leaves. */
function openStream(
  base: string,
  addressId: string,
  token: string,
): Promise<{ status: number; body: Promise<string>; text: () => string; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${base}/api/v1/addresses/${addressId}/events/stream`,
      { agent: false, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', () => undefined);
        const body = new Promise<string>((done) => res.on('close', () => done(text)));
        resolve({ status: res.statusCode!, body, text: () => text, close: () => req.destroy() });
      },
    );
    req.on('error', reject);
  });
}

await forEachEngine('view tokens cannot take the read token’s slots', (server) => {
  it('32 idle view-token streams: view tokens get half the address’s slots, the read token’s ?wait=, stream and MCP poll_events still work', async () => {
    const base = server().url;
    const a = await createAddress(base);
    const created = await request(base, 'POST', `/api/v1/addresses/${a.id}/view-tokens`, { token: a.token, body: {} });
    assert.equal(created.status, 201);
    const view: string = created.body.view_token.token;

    const streams = await Promise.all(Array.from({ length: 32 }, () => openStream(base, a.id, view)));
    const open = streams.filter((s) => s.status === 200);
    const refused = streams.filter((s) => s.status === 429);
    assert.equal(open.length, 16, 'half of the 32 slots');
    assert.equal(refused.length, 16);
    const error = JSON.parse(await refused[0].body);
    assertErrorBody(error, 'too_many_waiters');
    assert.match(error.error.message, /view tokens/);
    // A held poll with the view token is refused the same way.
    const viewPoll = await listEvents(base, { ...a, token: view }, 'wait=5');
    assert.equal(viewPoll.status, 429);

    // The owner: a held poll, a stream and MCP poll_events, all at once.
    const held = listEvents(base, a, 'wait=20');
    await eventually(() => server().roost.waiters.held === 1, 'the read token’s poll is held');
    const own = await openStream(base, a.id, a.token);
    assert.equal(own.status, 200);
    const mcp = new Client({ name: 'view-slots-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${a.id}`)));
    const polled = mcp.callTool({ name: 'poll_events', arguments: { read_token: a.token, wait: 20 } });
    await eventually(() => server().roost.waiters.held === 2, 'the MCP poll is held');

    assert.equal((await deliver(a.inbox, { data: 'for the owner' })).status, 202);
    const page = await held;
    assert.equal(page.status, 200, page.text);
    assert.equal(page.body.events[0].sequence, 1);
    const result = await polled;
    assert.notEqual(result.isError, true, JSON.stringify(result.content));
    assert.equal((result.structuredContent as { events: Array<{ sequence: number }> }).events[0].sequence, 1);
    await mcp.close();
    await eventually(() => /^id: 1$/m.test(own.text()), 'the read token’s stream got the event');
    own.close();

    for (const s of open) s.close();
    await eventually(() => server().roost.waiters.subscribed === 0, 'every stream left');
  });
});
