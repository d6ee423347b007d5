// An inbox with a sender answers each request exactly once and stores it at most once
// (docs/api.md §3.2), on every engine: handshakes with event-shaped bodies or ?raw=1 store
// nothing in any enforcement mode, a signed delivery's repeats are duplicates, replays of
// signed bytes under a new (unsigned) delivery id queue nothing new, Twilio's URL-only
// signature covers no body, and Microsoft Graph's clientState is never stored. Deliveries are
// signed with the providers' own SDKs where the devDependencies have one.
import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { forEachEngine } from './helpers/engines.js';
import { assertError, createAddress, listEvents, request, type CreatedAddress } from './helpers/http.js';
import type { TestServer } from './helpers/server.js';
import { twilio } from './helpers/twilio.js';

type Headers = Record<string, string>;
interface Sent {
  method?: 'GET' | 'POST';
  /** Appended to the inbox URL, with its `?`. */
  query?: string;
  body?: string;
  headers?: Headers;
}

const hmacHex = (secret: string, ...parts: string[]) => {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest('hex');
};
const nowSeconds = () => String(Math.floor(Date.now() / 1000));

/** Slack's and Zoom's `v0` scheme, signed now. */
function v0(secret: string, body: string, names: { signature: string; timestamp: string }, contentType: string) {
  const ts = nowSeconds();
  return {
    'content-type': contentType,
    [names.timestamp]: ts,
    [names.signature]: `v0=${hmacHex(secret, `v0:${ts}:`, body)}`,
  };
}
const slackHeaders = (secret: string, body: string, contentType = 'application/json') =>
  v0(secret, body, { signature: 'x-slack-signature', timestamp: 'x-slack-request-timestamp' }, contentType);
const zoomHeaders = (secret: string, body: string) =>
  v0(secret, body, { signature: 'x-zm-signature', timestamp: 'x-zm-request-timestamp' }, 'application/json');

/** Twitch EventSub headers of one message, signed now. */
function twitchHeaders(secret: string, body: string, messageType: string): Headers {
  const id = randomUUID();
  const timestamp = new Date().toISOString();
  return {
    'content-type': 'application/json',
    'twitch-eventsub-message-id': id,
    'twitch-eventsub-message-timestamp': timestamp,
    'twitch-eventsub-message-type': messageType,
    'twitch-eventsub-subscription-type': 'channel.follow',
    'twitch-eventsub-message-signature': `sha256=${hmacHex(secret, id, timestamp, body)}`,
  };
}

/** A body that passes the inbox's CreateEvent schema: what the old second pass stored. */
const EVENT_SHAPED = JSON.stringify({ type: 'forged.event', data: { forged: true } });

/** Every row of the events table as text, read from the database itself. */
async function eventRows(server: TestServer): Promise<string> {
  if (server.dbPath) {
    const db = new Database(server.dbPath, { readonly: true });
    try {
      return JSON.stringify(db.prepare('SELECT * FROM events').all());
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: server.databaseUrl });
  await client.connect();
  try {
    return JSON.stringify((await client.query('SELECT * FROM events')).rows);
  } finally {
    await client.end();
  }
}

await forEachEngine('an inbox with a sender answers once and stores at most once', (server) => {
  const base = () => server().url;
  const put = (address: CreatedAddress, body: unknown) =>
    request(base(), 'PUT', `/api/v1/addresses/${address.id}/sender`, { body, token: address.token });
  const send = (address: CreatedAddress, sent: Sent) =>
    request(base(), sent.method ?? 'POST', `${address.inbox}${sent.query ?? ''}`, {
      rawBody: sent.method === 'GET' ? undefined : (sent.body ?? ''),
      headers: sent.headers,
    });
  const events = async (address: CreatedAddress) => {
    const page = await listEvents(base(), address);
    assert.equal(page.status, 200, page.text);
    return page.body.events as Array<{ id: string; type: string; dedupe_key?: string; data: any }>;
  };
  /** Where the logs stood: a test judges only what its own requests logged. */
  const logMark = () => {
    server().roost.logger.flush();
    return server().logs().length;
  };
  /**
   * No request since `mark` was answered twice: Fastify logs FST_ERR_REP_ALREADY_SENT, or "Promise
   * errored, but reply.sent = true was set", when a handler goes on after the answer went out.
   * Called after reading the events, which each test does after its last request.
   */
  const assertAnsweredOnce = (mark: number) => {
    server().roost.logger.flush();
    assert.doesNotMatch(server().logs().slice(mark), /FST_ERR_REP_ALREADY_SENT|already sent|reply\.sent = true/i);
  };

  // Each provider with a handshake, the handshake as it documents it, and the same request
  // with an event-shaped body and with ?raw=1 riding along. `answer`: the expected reply
  // (status, and the body when it is the echo).
  interface HandshakeCase {
    provider: string;
    settings?: Record<string, unknown>;
    requests: (secret: string) => Array<{ what: string; sent: Sent; status: number; text?: string }>;
  }
  const handshakes: HandshakeCase[] = [
    {
      provider: 'microsoft_graph',
      requests: () => [
        {
          what: 'validation with an event-shaped body',
          sent: { query: '?validationToken=tok1', body: EVENT_SHAPED, headers: { 'content-type': 'application/json' } },
          status: 200,
          text: 'tok1',
        },
        {
          what: 'validation with ?raw=1',
          sent: { query: '?validationToken=tok2&raw=1', body: EVENT_SHAPED, headers: { 'content-type': 'text/plain' } },
          status: 200,
          text: 'tok2',
        },
        {
          what: 'validation with ?raw=1&type= and a JSON body',
          sent: {
            query: '?raw=1&type=forged.type&validationToken=tok3',
            body: EVENT_SHAPED,
            headers: { 'content-type': 'application/json' },
          },
          status: 200,
          text: 'tok3',
        },
        {
          what: 'validation with an unechoable token and an event-shaped body',
          sent: {
            query: `?validationToken=${encodeURIComponent('a\nb')}`,
            body: EVENT_SHAPED,
            headers: { 'content-type': 'application/json' },
          },
          status: 400,
        },
      ],
    },
    {
      provider: 'slack',
      requests: (secret) => {
        const challenge = JSON.stringify({ type: 'url_verification', challenge: 'slack-challenge' });
        // Event-shaped (type + data) and a url_verification without a challenge: refused, 400.
        const shaped = JSON.stringify({ type: 'url_verification', data: { forged: true } });
        return [
          {
            what: 'url_verification with ?raw=1',
            sent: { query: '?raw=1', body: challenge, headers: slackHeaders(secret, challenge) },
            status: 200,
            text: 'slack-challenge',
          },
          {
            what: 'an event-shaped url_verification',
            sent: { body: shaped, headers: slackHeaders(secret, shaped) },
            status: 400,
          },
          {
            what: 'an event-shaped url_verification with ?raw=1',
            sent: { query: '?raw=1', body: shaped, headers: slackHeaders(secret, shaped) },
            status: 400,
          },
        ];
      },
    },
    {
      provider: 'zoom',
      requests: (secret) => {
        const validation = JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken: 'plain-1' } });
        const tokenless = JSON.stringify({ event: 'endpoint.url_validation', payload: {} });
        return [
          {
            what: 'url_validation with ?raw=1',
            sent: { query: '?raw=1', body: validation, headers: zoomHeaders(secret, validation) },
            status: 200,
            text: JSON.stringify({ plainToken: 'plain-1', encryptedToken: hmacHex(secret, 'plain-1') }),
          },
          {
            what: 'url_validation without a plainToken, with ?raw=1&type=',
            sent: { query: '?raw=1&type=forged', body: tokenless, headers: zoomHeaders(secret, tokenless) },
            status: 400,
          },
        ];
      },
    },
    {
      provider: 'twitch',
      requests: (secret) => {
        const challenge = JSON.stringify({ challenge: 'twitch-challenge', subscription: { type: 'channel.follow' } });
        const verification = 'webhook_callback_verification';
        return [
          {
            what: 'callback verification with ?raw=1',
            sent: { query: '?raw=1', body: challenge, headers: twitchHeaders(secret, challenge, verification) },
            status: 200,
            text: 'twitch-challenge',
          },
          {
            what: 'callback verification with an event-shaped body',
            sent: { body: EVENT_SHAPED, headers: twitchHeaders(secret, EVENT_SHAPED, verification) },
            status: 400,
          },
          {
            what: 'callback verification with an event-shaped body and ?raw=1',
            sent: { query: '?raw=1', body: EVENT_SHAPED, headers: twitchHeaders(secret, EVENT_SHAPED, verification) },
            status: 400,
          },
        ];
      },
    },
    {
      provider: 'meta',
      settings: { verify_token: 'meta-vt' },
      requests: () => [
        {
          what: 'subscription handshake with ?raw=1',
          sent: { method: 'GET', query: '?hub.mode=subscribe&hub.verify_token=meta-vt&hub.challenge=77&raw=1' },
          status: 200,
          text: '77',
        },
        {
          what: 'subscription handshake with ?raw=1&type=',
          sent: {
            method: 'GET',
            query: '?raw=1&type=forged&hub.mode=subscribe&hub.verify_token=meta-vt&hub.challenge=78',
          },
          status: 200,
          text: '78',
        },
      ],
    },
    {
      provider: 'dropbox',
      requests: () => [
        {
          what: 'verification with ?raw=1',
          sent: { method: 'GET', query: '?challenge=dbx-1&raw=1' },
          status: 200,
          text: 'dbx-1',
        },
        {
          what: 'verification with ?raw=1&type=',
          sent: { method: 'GET', query: '?raw=1&type=forged&challenge=dbx-2' },
          status: 200,
          text: 'dbx-2',
        },
      ],
    },
  ];

  for (const { provider, settings, requests } of handshakes) {
    it(`${provider}: handshakes with event-shaped bodies or ?raw=1 are answered once and store nothing, enforced or not`, async () => {
      const mark = logMark();
      for (const enforce of [true, false]) {
        const address = await createAddress(base());
        const secret = `${provider}-secret-${enforce}`;
        const set = await put(address, { provider, secrets: [secret], enforce, ...settings });
        assert.equal(set.status, 200, set.text);
        for (const { what, sent, status, text } of requests(secret)) {
          const res = await send(address, sent);
          assert.equal(res.status, status, `${what} (enforce ${enforce}): ${res.text}`);
          if (text !== undefined) assert.equal(res.text, text, what);
          if (status === 200) assert.equal(res.headers.get('cache-control'), 'no-store', what);
        }
        assert.deepEqual(await events(address), [], `${provider}, enforce ${enforce}: nothing stored`);
      }
      assertAnsweredOnce(mark);
    });
  }

  it('stripe: one signed event posted three times with ?raw=1 answers 202, 200, 200 and stores one event', async () => {
    const mark = logMark();
    const address = await createAddress(base());
    await put(address, { provider: 'stripe', secrets: ['whsec_triple'] });
    const payload = JSON.stringify({ id: 'evt_triple_1', object: 'event', type: 'invoice.paid' });
    const header = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload, secret: 'whsec_triple' });
    const statuses: number[] = [];
    let firstId: string | undefined;
    for (let i = 0; i < 3; i++) {
      const res = await send(address, {
        query: '?raw=1',
        body: payload,
        headers: { 'content-type': 'application/json', 'stripe-signature': header },
      });
      statuses.push(res.status);
      firstId ??= res.body.event.id;
      assert.equal(res.body.event.id, firstId, 'every answer names the one event');
      assert.equal(res.body.event.dedupe_key, 'evt_triple_1', "Stripe's event id is signed: it is the key");
    }
    assert.deepEqual(statuses, [202, 200, 200]);
    const stored = await events(address);
    assert.equal(stored.length, 1);
    assert.equal(stored[0].type, 'stripe.invoice.paid');
    assert.deepEqual(stored[0].data.verification, { provider: 'stripe', verified: true });
    assertAnsweredOnce(mark);
  });

  it('github, enforce false: an unsigned event-shaped body is stored once, marked unverified', async () => {
    const mark = logMark();
    const address = await createAddress(base());
    await put(address, { provider: 'github', secrets: ['gh-secret'], enforce: false });
    const forged = JSON.stringify({ type: 'push', data: { ref: 'refs/heads/main' } });
    const res = await send(address, {
      body: forged,
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID() },
    });
    assert.equal(res.status, 202, res.text);
    const stored = await events(address);
    assert.equal(stored.length, 1, 'one event, not a second copy from the JSON path');
    assert.equal(stored[0].type, 'github.push');
    assert.deepEqual(stored[0].data.verification, { provider: 'github', verified: false, reason: 'missing_signature' });
    assert.equal(Buffer.from(stored[0].data.body_base64, 'base64').toString(), forged);
    // With ?raw=1 too: still one event per request, each marked.
    const raw = await send(address, { query: '?raw=1', body: forged, headers: { 'content-type': 'application/json' } });
    assert.equal(raw.status, 202, raw.text);
    const after = await events(address);
    assert.equal(after.length, 2);
    for (const event of after) assert.equal(event.data.verification.verified, false);
    assertAnsweredOnce(mark);
  });

  it('github: a replay of signed bytes under a new delivery id is a duplicate; a redelivery too; another body is new', async () => {
    const address = await createAddress(base());
    await put(address, { provider: 'github', secrets: ['gh-secret'] });
    const payload = JSON.stringify({ ref: 'refs/heads/main', after: 'a1b2', repository: { full_name: 'o/r' } });
    const signature = await githubSign('gh-secret', payload);
    const post = (body: string, delivery: string, sig = signature) =>
      send(address, {
        body,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'push',
          'x-github-delivery': delivery,
          'x-hub-signature-256': sig,
        },
      });
    const delivery = randomUUID();
    const first = await post(payload, delivery);
    assert.equal(first.status, 202, first.text);
    const redelivery = await post(payload, delivery);
    assert.equal(redelivery.status, 200, redelivery.text);
    assert.equal(redelivery.body.duplicate, true);
    const replay = await post(payload, randomUUID());
    assert.equal(replay.status, 200, replay.text);
    assert.equal(replay.body.duplicate, true);
    assert.equal(replay.body.event.id, first.body.event.id);
    const other = JSON.stringify({ ref: 'refs/heads/main', after: 'c3d4' });
    const next = await post(other, randomUUID(), await githubSign('gh-secret', other));
    assert.equal(next.status, 202, next.text);
    assert.equal((await events(address)).length, 2);
  });

  // The providers whose delivery id is not signed, or that have none: the same signed bytes
  // sent again — under a new id where the provider has one — queue nothing new.
  interface ReplayCase {
    provider: string;
    settings?: Record<string, unknown>;
    /** One signed delivery of `body`, under the delivery id `id` where the provider has one. */
    delivery: (secret: string, address: CreatedAddress, id: string) => Promise<Sent> | Sent;
  }
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const replays: ReplayCase[] = [
    {
      provider: 'shopify',
      delivery: (secret, _address, id) => {
        const body = JSON.stringify({ id: 820982911946154500, email: 'jon@example.com' });
        return {
          body,
          headers: {
            'content-type': 'application/json',
            'x-shopify-topic': 'orders/create',
            'x-shopify-webhook-id': id,
            'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body).digest('base64'),
          },
        };
      },
    },
    {
      provider: 'twilio',
      delivery: (secret, address, id) => {
        const params = { MessageSid: 'SM1', MessageStatus: 'delivered', To: '+15005550006' };
        const url = address.response.endpoints.inbox_url as string;
        return {
          body: form(params),
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'i-twilio-idempotency-token': id,
            'x-twilio-signature': twilio.getExpectedTwilioSignature(secret, url, params),
          },
        };
      },
    },
    {
      provider: 'linear',
      delivery: (secret, _address, id) => {
        const body = JSON.stringify({
          action: 'create',
          type: 'Issue',
          data: { id: 'i1' },
          webhookTimestamp: Date.now(),
        });
        return {
          body,
          headers: {
            'content-type': 'application/json',
            'linear-delivery': id,
            'linear-signature': linearSignature(secret, body),
          },
        };
      },
    },
    {
      provider: 'hmac_sha256',
      settings: { header: 'x-sig' },
      delivery: (secret, _address, id) => {
        const body = 'amount=10&currency=eur';
        return {
          body,
          headers: { 'content-type': 'text/plain', 'idempotency-key': id, 'x-sig': hmacHex(secret, body) },
        };
      },
    },
    {
      provider: 'slack',
      delivery: (secret) => {
        // A slash command: Slack gives it no event_id.
        const body = form({ command: '/deploy', text: 'prod', trigger_id: '13345224609.738474920.8088930838d88f' });
        return { body, headers: slackHeaders(secret, body, 'application/x-www-form-urlencoded') };
      },
    },
    {
      provider: 'meta',
      settings: { verify_token: 'vt' },
      delivery: (secret) => {
        const body = JSON.stringify({ object: 'page', entry: [{ id: '1', messaging: [{ mid: 'm1' }] }] });
        return {
          body,
          headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${hmacHex(secret, body)}` },
        };
      },
    },
    {
      provider: 'dropbox',
      delivery: (secret) => {
        const body = JSON.stringify({ list_folder: { accounts: ['dbid:1'] } });
        return { body, headers: { 'content-type': 'application/json', 'x-dropbox-signature': hmacHex(secret, body) } };
      },
    },
    {
      provider: 'zoom',
      delivery: (secret) => {
        const body = JSON.stringify({ event: 'meeting.started', event_ts: 1_700_000_000_000, payload: {} });
        return { body, headers: zoomHeaders(secret, body) };
      },
    },
    {
      provider: 'microsoft_graph',
      delivery: (secret) => {
        const body = JSON.stringify({
          value: [{ changeType: 'created', resource: 'Users/1/Messages/2', clientState: secret }],
        });
        return { body, headers: { 'content-type': 'application/json' } };
      },
    },
  ];

  for (const { provider, settings, delivery } of replays) {
    it(`${provider}: the same signed bytes sent again, under a new delivery id where there is one, are a duplicate; ?raw=1 changes nothing`, async () => {
      const address = await createAddress(base());
      const secret = `${provider}-replay-secret`;
      const set = await put(address, { provider, secrets: [secret], ...settings });
      assert.equal(set.status, 200, set.text);
      // ?raw=1 rides along, except where the URL is signed (Twilio).
      const sent = { query: provider === 'twilio' ? '' : '?raw=1', ...(await delivery(secret, address, randomUUID())) };
      const first = await send(address, sent);
      assert.equal(first.status, 202, first.text);
      assert.equal(first.body.event.data.verification.verified, true);
      assert.match(first.body.event.dedupe_key, /^sha256:[0-9a-f]{64}$/);
      // The replay: the same body and signature; any unsigned id is new.
      const again = await delivery(secret, address, randomUUID());
      const replay = await send(address, {
        ...again,
        body: sent.body,
        headers: { ...again.headers, ...signatureOf(sent) },
      });
      assert.equal(replay.status, 200, replay.text);
      assert.equal(replay.body.duplicate, true);
      assert.equal(replay.body.event.id, first.body.event.id);
      assert.equal((await events(address)).length, 1);
    });
  }

  /** Linear's signature, as its SDK checks it. */
  function linearSignature(secret: string, body: string): string {
    const signature = hmacHex(secret, body);
    assert.equal(new LinearWebhookClient(secret).verify(Buffer.from(body), signature), true);
    return signature;
  }

  it('standard_webhooks: the signed webhook-id is the key — a replay under a new id does not verify, a retry is a duplicate', async () => {
    const address = await createAddress(base());
    const secret = `whsec_${Buffer.from('a standard webhooks key').toString('base64')}`;
    await put(address, { provider: 'standard_webhooks', secrets: [secret] });
    const body = JSON.stringify({ type: 'invoice.paid', data: { id: 'in_1' } });
    const at = new Date();
    const headers = (id: string, signature: string) => ({
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    });
    const signature = new StandardWebhook(secret).sign('msg_1', at, body);
    const first = await send(address, { query: '?raw=1', body, headers: headers('msg_1', signature) });
    assert.equal(first.status, 202, first.text);
    assert.equal(first.body.event.dedupe_key, 'msg_1');
    const retry = await send(address, { body, headers: headers('msg_1', signature) });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.duplicate, true);
    assertError(await send(address, { body, headers: headers('msg_2', signature) }), 401, 'signature_invalid');
    assert.equal((await events(address)).length, 1);
  });

  /** The headers of a delivery that carry its signature (and signed timestamp), to replay as they were. */
  function signatureOf(sent: Sent): Headers {
    const kept: Headers = {};
    for (const [name, value] of Object.entries(sent.headers ?? {}))
      if (/signature|hmac|x-sig|timestamp/.test(name)) kept[name] = value;
    return kept;
  }

  it('twilio: a signature over the URL alone covers no body — mismatch, refused or stored unverified', async () => {
    for (const enforce of [true, false]) {
      const address = await createAddress(base());
      await put(address, { provider: 'twilio', secrets: ['tw-token'], enforce });
      const url = address.response.endpoints.inbox_url as string;
      // What an attacker holding one captured delivery can do: sign nothing but the URL.
      const signature = twilio.getExpectedTwilioSignature('tw-token', url, {});
      const body = JSON.stringify([{ type: 'com.twilio.messaging.message.delivered', data: { forged: true } }]);
      // Twilio's own SDK does not accept it either: the body is covered by no signature.
      assert.equal(twilio.validateRequestWithBody('tw-token', signature, url, body), false);
      const res = await send(address, {
        body,
        headers: { 'content-type': 'application/json', 'x-twilio-signature': signature },
      });
      if (enforce) {
        assertError(res, 401, 'signature_invalid');
        assert.match(res.body.error.message, /mismatch/);
        assert.deepEqual(await events(address), []);
      } else {
        assert.equal(res.status, 202, res.text);
        assert.deepEqual(res.body.event.data.verification, { provider: 'twilio', verified: false, reason: 'mismatch' });
      }
      // A text body is no form either.
      const text = await send(address, {
        body: 'MessageSid=SM1',
        headers: { 'content-type': 'text/plain', 'x-twilio-signature': signature },
      });
      assert.equal(text.status, enforce ? 401 : 202, text.text);
      // The same URL signature with a body hash in the URL that matches the body verifies.
      const hashed = `${url}?bodySHA256=${twilio.getExpectedBodyHash(body)}`;
      const good = await request(base(), 'POST', `${address.inbox}?bodySHA256=${twilio.getExpectedBodyHash(body)}`, {
        rawBody: body,
        headers: {
          'content-type': 'application/json',
          'x-twilio-signature': twilio.getExpectedTwilioSignature('tw-token', hashed, {}),
        },
      });
      assert.equal(good.status, 202, good.text);
      assert.deepEqual(good.body.event.data.verification, { provider: 'twilio', verified: true });
    }
  });

  it('microsoft_graph: the clientState is in no stored event, raw capture or row, verified or not', async () => {
    const secret = 'graph-client-state-Secret-42';
    for (const enforce of [true, false]) {
      const address = await createAddress(base());
      await put(address, { provider: 'microsoft_graph', secrets: [secret], enforce });
      const notification = {
        subscriptionId: '7f105c7d-2dc5-4530-97cd-4e7ae6534c07',
        changeType: 'created',
        resource: 'Users/1/Messages/2',
        clientState: secret,
        tenantId: '84bd8158-6d4d-4958-8b9f-9d6445542f95',
      };
      const body = JSON.stringify({ value: [notification, { ...notification, changeType: 'updated' }] });
      const res = await send(address, { body, headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 202, res.text);
      assert.deepEqual(res.body.event.data.verification, { provider: 'microsoft_graph', verified: true });
      if (!enforce) {
        // A near miss is not kept either: it may be an old secret or a typo of the real one.
        const miss = JSON.stringify({ value: [{ ...notification, clientState: `${secret}-old` }] });
        const unverified = await send(address, { body: miss, headers: { 'content-type': 'application/json' } });
        assert.equal(unverified.status, 202, unverified.text);
        assert.equal(unverified.body.event.data.verification.reason, 'mismatch');
      }
      const page = await listEvents(base(), address);
      assert.ok(!page.text.includes(secret), 'the secret is not readable with a token');
      const stored = page.body.events[0];
      assert.deepEqual(
        stored.data.body.value.map((n: { clientState: string }) => n.clientState),
        ['[REDACTED]', '[REDACTED]'],
      );
      const kept = JSON.parse(Buffer.from(stored.data.body_base64, 'base64').toString());
      assert.deepEqual(kept, {
        value: [notification, { ...notification, changeType: 'updated' }].map((n) => ({
          ...n,
          clientState: '[REDACTED]',
        })),
      });
      assert.equal(stored.dedupe_key, `sha256:${createHash('sha256').update(JSON.stringify(kept)).digest('hex')}`);
    }
    const rows = await eventRows(server());
    assert.ok(!rows.includes(secret), 'no row holds the secret');
  });
});
