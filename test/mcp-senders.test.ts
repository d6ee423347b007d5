// configure_sender over MCP takes what PUT …/sender takes, for every provider (docs/api.md
// §3.2, §7): each of the 13 is set through the official SDK client with only the fields REST
// needs, then one delivery signed as that provider signs it is posted to the creation
// response's webhook_url and read back verified with poll_events. A schema default that the
// MCP conversion turned into a given value ("encoding: only for hmac_sha256") fails here.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { request } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { twilio } from './helpers/twilio.js';

const hmac = (key: string, data: string, encoding: 'hex' | 'base64' = 'hex') =>
  createHmac('sha256', key).update(data).digest(encoding);

interface Signed {
  body: string;
  headers: Record<string, string>;
}

/** Per provider: the configure_sender arguments REST would take, and a delivery it signs. */
const PROVIDERS: Record<string, { extra?: Record<string, unknown>; sign: (secret: string, url: string) => Signed }> = {
  github: {
    sign: (secret) => {
      const body = JSON.stringify({ ref: 'refs/heads/main' });
      return {
        body,
        headers: {
          'x-github-event': 'push',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': `sha256=${hmac(secret, body)}`,
        },
      };
    },
  },
  stripe: {
    sign: (secret) => {
      const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'payment_intent.succeeded', data: {} });
      const header = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload: body, secret });
      return { body, headers: { 'stripe-signature': header } };
    },
  },
  slack: {
    sign: (secret) => {
      const body = JSON.stringify({ type: 'event_callback', event_id: 'Ev1', event: { type: 'app_mention' } });
      const ts = String(Math.floor(Date.now() / 1000));
      return {
        body,
        headers: { 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${hmac(secret, `v0:${ts}:${body}`)}` },
      };
    },
  },
  standard_webhooks: {
    sign: (secret) => {
      const body = JSON.stringify({ type: 'invoice.paid', data: { id: 'in_1' } });
      const id = `msg_${randomUUID()}`;
      const now = new Date();
      return {
        body,
        headers: {
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': new StandardWebhook(secret).sign(id, now, body),
        },
      };
    },
  },
  shopify: {
    sign: (secret) => {
      const body = JSON.stringify({ id: 1, email: 'jon@example.com' });
      return {
        body,
        headers: {
          'x-shopify-hmac-sha256': hmac(secret, body, 'base64'),
          'x-shopify-topic': 'orders/create',
          'x-shopify-webhook-id': randomUUID(),
        },
      };
    },
  },
  twilio: {
    sign: (secret, url) => {
      const params = { MessageSid: 'SM1', MessageStatus: 'delivered' };
      return {
        body: new URLSearchParams(params).toString(),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-twilio-signature': twilio.getExpectedTwilioSignature(secret, url, params),
        },
      };
    },
  },
  meta: {
    extra: { verify_token: 'meta-verify-token' },
    sign: (secret) => {
      const body = JSON.stringify({ object: 'page', entry: [{ id: '1' }] });
      return { body, headers: { 'x-hub-signature-256': `sha256=${hmac(secret, body)}` } };
    },
  },
  microsoft_graph: {
    // Graph signs nothing: each notification carries the clientState set at subscription.
    sign: (secret) => ({
      body: JSON.stringify({
        value: [{ subscriptionId: 's1', changeType: 'created', resource: 'Users/1/Messages/2', clientState: secret }],
      }),
      headers: {},
    }),
  },
  zoom: {
    sign: (secret) => {
      const body = JSON.stringify({ event: 'meeting.started', payload: { object: { id: 1 } } });
      const ts = String(Math.floor(Date.now() / 1000));
      return {
        body,
        headers: { 'x-zm-request-timestamp': ts, 'x-zm-signature': `v0=${hmac(secret, `v0:${ts}:${body}`)}` },
      };
    },
  },
  dropbox: {
    sign: (secret) => {
      const body = JSON.stringify({ list_folder: { accounts: ['dbid:A'] } });
      return { body, headers: { 'x-dropbox-signature': hmac(secret, body) } };
    },
  },
  twitch: {
    sign: (secret) => {
      const body = JSON.stringify({ subscription: { type: 'channel.follow' }, event: { user_id: '1' } });
      const id = randomUUID();
      const timestamp = new Date().toISOString();
      return {
        body,
        headers: {
          'twitch-eventsub-message-id': id,
          'twitch-eventsub-message-timestamp': timestamp,
          'twitch-eventsub-message-signature': `sha256=${hmac(secret, id + timestamp + body)}`,
          'twitch-eventsub-message-type': 'notification',
          'twitch-eventsub-subscription-type': 'channel.follow',
        },
      };
    },
  },
  linear: {
    sign: (secret) => {
      const body = JSON.stringify({
        action: 'create',
        type: 'Issue',
        data: { id: 'i1' },
        webhookTimestamp: Date.now(),
      });
      return {
        body,
        headers: { 'linear-signature': hmac(secret, body), 'linear-delivery': randomUUID(), 'linear-event': 'Issue' },
      };
    },
  },
  hmac_sha256: {
    extra: { header: 'X-Signature' },
    sign: (secret) => {
      const body = JSON.stringify({ ok: true });
      return { body, headers: { 'x-signature': hmac(secret, body) } };
    },
  },
};

describe('configure_sender over MCP, for every provider', () => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer('sqlite');
    client = new Client({ name: 'roost-test', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', server.url)));
    await client.listTools(); // results are then checked against their output schemas
  });
  after(async () => {
    await client.close();
    await server.close();
  });

  const call = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = (result.content[0] as { text: string }).text;
    assert.notEqual(result.isError, true, `${name}: ${text}`);
    return result.structuredContent as any;
  };

  it('the tool lists the same 13 providers as REST', async () => {
    const tools = await client.listTools();
    const configure = tools.tools.find((tool) => tool.name === 'configure_sender')!;
    assert.deepEqual(
      [...((configure.inputSchema.properties as any).provider.enum as string[])].sort(),
      Object.keys(PROVIDERS).sort(),
    );
  });

  for (const [provider, { extra, sign }] of Object.entries(PROVIDERS)) {
    it(`${provider}: configured with what REST takes, a signed delivery to webhook_url is stored verified`, async () => {
      const created = await call('create_return_address', { name: provider });
      const target = { address_id: created.address.id, read_token: created.credentials.read_token };
      const secret =
        provider === 'standard_webhooks'
          ? `whsec_${Buffer.from(`${provider}-key`).toString('base64')}`
          : `${provider}-secret`;
      const { sender } = await call('configure_sender', { ...target, provider, secrets: [secret], ...extra });
      assert.equal(sender.provider, provider);
      assert.equal(sender.enforce, true);

      // The URL a third party is given; it reaches this server through its listening address.
      const webhookUrl = new URL(created.endpoints.webhook_url);
      const { body, headers } = sign(secret, created.endpoints.webhook_url);
      const delivered = await request(server.url, 'POST', `${webhookUrl.pathname}${webhookUrl.search}`, {
        rawBody: body,
        headers: { 'content-type': 'application/json', ...headers },
      });
      assert.equal(delivered.status, 202, delivered.text);

      const page = await call('poll_events', { ...target, after: 0 });
      assert.equal(page.events.length, 1, JSON.stringify(page.events));
      assert.deepEqual(page.events[0].data.verification, { provider, verified: true });
    });
  }
});
