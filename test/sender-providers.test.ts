// The provider schemes of a provider-aware inbox (docs/api.md §3.2), as pure functions: each
// provider's deliveries are signed with the provider's own SDK where the registry has one
// (stripe, standardwebhooks, svix, twilio, @linear/sdk) and otherwise as its documentation
// says (the page is cited beside each), then a wrong secret, one altered byte, a stale
// timestamp, a missing header and a rotated secret are tried, each handshake is answered as
// documented, and hostile input never throws.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import fc from 'fast-check';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import type { SenderProvider, SenderRequest, SenderSettings, SenderVerdict } from '../src/core/senders/provider.js';
import { dropboxProvider } from '../src/core/senders/providers/dropbox.js';
import { linearProvider } from '../src/core/senders/providers/linear.js';
import { metaProvider } from '../src/core/senders/providers/meta.js';
import { microsoftGraphProvider } from '../src/core/senders/providers/microsoft-graph.js';
import { shopifyProvider } from '../src/core/senders/providers/shopify.js';
import { slackProvider } from '../src/core/senders/providers/slack.js';
import { standardWebhooksProvider } from '../src/core/senders/providers/standard-webhooks.js';
import { stripeProvider } from '../src/core/senders/providers/stripe.js';
import { twilioProvider } from '../src/core/senders/providers/twilio.js';
import { twitchProvider } from '../src/core/senders/providers/twitch.js';
import { zoomProvider } from '../src/core/senders/providers/zoom.js';
import { twilio } from './helpers/twilio.js';

const NOW_MS = Date.UTC(2026, 0, 15, 12, 0, 0);
const NOW_S = Math.floor(NOW_MS / 1000);

function request(init: {
  method?: string;
  headers?: Record<string, string | undefined>;
  body?: string | Buffer;
  url?: string;
}): SenderRequest {
  const url = init.url ?? 'https://roost.example/in/roost_ingress_abc';
  return {
    method: init.method ?? 'POST',
    headers: init.headers ?? {},
    query: new URL(url).searchParams,
    url,
    body: typeof init.body === 'string' ? Buffer.from(init.body, 'utf8') : (init.body ?? Buffer.alloc(0)),
  };
}

function settings(secrets: string[], extra: Partial<SenderSettings> = {}): SenderSettings {
  return { secrets, toleranceSeconds: 300, ...extra };
}

/** The body with one byte changed (its last character's low bit flipped). */
function altered(body: string | Buffer): Buffer {
  const bytes = Buffer.from(body);
  bytes[bytes.length - 1] ^= 1;
  return bytes;
}

function base64(algorithm: string, key: string | Buffer, data: string | Buffer): string {
  return createHmac(algorithm, key).update(data).digest('base64');
}

function hex(algorithm: string, key: string | Buffer, data: string | Buffer): string {
  return createHmac(algorithm, key).update(data).digest('hex');
}

/** A verified verdict of this type and key; its stored body (Microsoft Graph's) is checked apart. */
function assertVerified(
  verdict: SenderVerdict,
  type: string | undefined,
  key: string | undefined,
  keySigned?: true,
): void {
  assert.equal(verdict.kind, 'event');
  const { kind, verified, type: actualType, idempotencyKey, storedBody: _stored, ...rest } = verdict;
  assert.deepEqual(
    { kind, verified, type: actualType, idempotencyKey, rest },
    { kind: 'event', verified: true, type, idempotencyKey: key, rest: keySigned ? { keySigned } : {} },
  );
}

/** As assertVerified, for a provider whose signature covers its delivery id (so no digest key is needed). */
function assertVerifiedSignedKey(verdict: SenderVerdict, type: string | undefined, key: string | undefined): void {
  assertVerified(verdict, type, key, true);
}

function assertFailure(verdict: SenderVerdict, reason: string): void {
  assert.equal(verdict.kind, 'event');
  assert.equal(verdict.kind === 'event' && !verdict.verified && verdict.reason, reason);
}

// Bodies a hostile sender may bring, all within the inbox's body cap.
const HOSTILE_BODIES: Buffer[] = [
  Buffer.from('{"type": "unterminated'),
  Buffer.from('['.repeat(500_000) + ']'.repeat(500_000)),
  Buffer.from('{"a":'.repeat(200_000) + '1' + '}'.repeat(200_000)),
  Buffer.from('{"type": 5, "id": {"x": 1}, "event": [], "object": null, "value": "x", "entry": {}, "payload": 7}'),
  Buffer.from('{"__proto__": {"type": "polluted"}, "constructor": {"prototype": {"type": 1}}}'),
  Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x7b]),
  Buffer.from('null'),
  Buffer.from('"a string"'),
  Buffer.from('a=%zz&b=%&payload=%7B%22type%22%3A&command=' + '%'.repeat(1000)),
  Buffer.from(`{"type": "${'x'.repeat(10_000)}", "id": "${'y'.repeat(10_000)}"}`),
];

/** A provider's verdicts on hostile bodies and arbitrary headers: never a throw, always a verdict. */
function neverThrows(provider: SenderProvider, signatureHeaders: string[], sample: SenderSettings): void {
  for (const body of HOSTILE_BODIES) {
    for (const method of ['POST', 'GET']) {
      const verdict = provider.verify(request({ method, body }), sample, NOW_MS);
      assert.ok(['event', 'handshake', 'not_allowed'].includes(verdict.kind));
      if (verdict.kind === 'event') {
        assert.ok(verdict.type === undefined || (verdict.type.length <= 200 && !/\p{Cc}/u.test(verdict.type)));
        assert.ok(verdict.idempotencyKey === undefined || /^[\x21-\x7e]{1,255}$/.test(verdict.idempotencyKey));
      }
    }
  }
  fc.assert(
    fc.property(
      fc.dictionary(fc.constantFrom(...signatureHeaders), fc.string({ maxLength: 300 })),
      fc.uint8Array({ maxLength: 400 }),
      fc.string({ maxLength: 200 }),
      (headers, body, query) => {
        const url = `https://roost.example/in/x?${query}`;
        let parsed: URL;
        try {
          parsed = new URL(url);
        } catch {
          return;
        }
        const verdict = provider.verify(
          request({ headers, body: Buffer.from(body), url: parsed.href }),
          sample,
          NOW_MS,
        );
        assert.ok(verdict.kind === 'event' || verdict.kind === 'handshake' || verdict.kind === 'not_allowed');
        if (verdict.kind === 'event') assert.equal(verdict.verified, false);
      },
    ),
    { numRuns: 300 },
  );
}

describe('stripe', () => {
  const secret = 'whsec_test_secret_one';
  const older = 'whsec_test_secret_two';
  const stripe = new Stripe('sk_test_unused');
  const payload = JSON.stringify({ id: 'evt_1Nabc', object: 'event', type: 'payment_intent.succeeded', data: {} });
  const signed = (body: string | Buffer, key: string, timestamp = NOW_S) =>
    request({
      body,
      headers: {
        'stripe-signature': stripe.webhooks.generateTestHeaderString({
          payload: body.toString(),
          secret: key,
          timestamp,
        }),
      },
    });

  test('a delivery signed by the Stripe SDK verifies, with the Stripe type and event id', () => {
    assertVerifiedSignedKey(
      stripeProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'stripe.payment_intent.succeeded',
      'evt_1Nabc',
    );
    // The SDK agrees that this header verifies at this time.
    const header = signed(payload, secret).headers['stripe-signature']!;
    assert.ok(stripe.webhooks.constructEvent(payload, header, secret, 300, undefined, NOW_MS));
  });

  test('a wrong secret, one altered byte: mismatch', () => {
    assertFailure(stripeProvider.verify(signed(payload, 'whsec_other'), settings([secret]), NOW_MS), 'mismatch');
    const header = signed(payload, secret).headers;
    assertFailure(
      stripeProvider.verify(request({ body: altered(payload), headers: header }), settings([secret]), NOW_MS),
      'mismatch',
    );
  });

  test('a timestamp outside the tolerance, past or future: stale_timestamp', () => {
    assertFailure(
      stripeProvider.verify(signed(payload, secret, NOW_S - 301), settings([secret]), NOW_MS),
      'stale_timestamp',
    );
    assertFailure(
      stripeProvider.verify(signed(payload, secret, NOW_S + 301), settings([secret]), NOW_MS),
      'stale_timestamp',
    );
    assertVerifiedSignedKey(
      stripeProvider.verify(
        signed(payload, secret, NOW_S - 600),
        settings([secret], { toleranceSeconds: 600 }),
        NOW_MS,
      ),
      'stripe.payment_intent.succeeded',
      'evt_1Nabc',
    );
  });

  test('no header, or one without t or v1: missing_signature', () => {
    assertFailure(stripeProvider.verify(request({ body: payload }), settings([secret]), NOW_MS), 'missing_signature');
    const v1 = hex('sha256', secret, `${NOW_S}.${payload}`);
    for (const value of [`v1=${v1}`, `t=${NOW_S}`, `t=${NOW_S},v0=${v1}`, `t=soon,v1=${v1}`, 'garbage']) {
      const verdict = stripeProvider.verify(
        request({ body: payload, headers: { 'stripe-signature': value } }),
        settings([secret]),
        NOW_MS,
      );
      assertFailure(verdict, 'missing_signature');
    }
  });

  test('the second (older) secret still verifies; any of several v1 signatures may be the one', () => {
    assertVerifiedSignedKey(
      stripeProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'stripe.payment_intent.succeeded',
      'evt_1Nabc',
    );
    const both = `t=${NOW_S},v1=${hex('sha256', 'whsec_rolled', `${NOW_S}.${payload}`)},v1=${hex('sha256', secret, `${NOW_S}.${payload}`)}`;
    assertVerifiedSignedKey(
      stripeProvider.verify(
        request({ body: payload, headers: { 'stripe-signature': both } }),
        settings([secret]),
        NOW_MS,
      ),
      'stripe.payment_intent.succeeded',
      'evt_1Nabc',
    );
  });

  test('a GET is not a Stripe request', () => {
    assert.deepEqual(stripeProvider.verify(request({ method: 'GET' }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
  });

  test('hostile input never throws', () => {
    neverThrows(stripeProvider, ['stripe-signature', 'content-type'], settings([secret]));
  });
});

// https://api.slack.com/authentication/verifying-requests-from-slack (signing steps and the
// worked example below); https://api.slack.com/events/url_verification (the handshake).
describe('slack', () => {
  const secret = 'slack_signing_secret_one';
  const older = 'slack_signing_secret_two';
  const payload = JSON.stringify({
    token: 'unused',
    team_id: 'T1',
    type: 'event_callback',
    event: { type: 'app_mention', text: 'hi' },
    event_id: 'Ev0PV52K21',
    event_time: NOW_S,
  });
  const signed = (body: string | Buffer, key: string, timestamp = NOW_S, contentType = 'application/json') =>
    request({
      body,
      headers: {
        'content-type': contentType,
        'x-slack-request-timestamp': String(timestamp),
        'x-slack-signature': `v0=${hex('sha256', key, Buffer.concat([Buffer.from(`v0:${timestamp}:`), Buffer.from(body)]))}`,
      },
    });

  test("Slack's own worked example verifies (a slash command, as a form)", () => {
    const body =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    const example = request({
      body,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': '1531420618',
        'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
      },
    });
    const at = 1531420618 * 1000 + 30_000;
    assertVerifiedSignedKey(
      slackProvider.verify(example, settings(['8f742231b10e8888abcd99yyyzzz85a5']), at),
      'slack.command',
      undefined,
    );
    assertFailure(slackProvider.verify(example, settings(['8f742231b10e8888abcd99yyyzzz85a4']), at), 'mismatch');
    assertFailure(
      slackProvider.verify(example, settings(['8f742231b10e8888abcd99yyyzzz85a5']), NOW_MS),
      'stale_timestamp',
    );
  });

  test('an Events API delivery verifies with the inner event type and event_id', () => {
    assertVerifiedSignedKey(
      slackProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'slack.app_mention',
      'Ev0PV52K21',
    );
    const ratelimited = JSON.stringify({ type: 'app_rate_limited', team_id: 'T1', minute_rate_limited: 1 });
    assertVerifiedSignedKey(
      slackProvider.verify(signed(ratelimited, secret), settings([secret]), NOW_MS),
      'slack.app_rate_limited',
      undefined,
    );
    const interactive = `payload=${encodeURIComponent(JSON.stringify({ type: 'block_actions', actions: [] }))}`;
    assertVerifiedSignedKey(
      slackProvider.verify(
        signed(interactive, secret, NOW_S, 'application/x-www-form-urlencoded'),
        settings([secret]),
        NOW_MS,
      ),
      'slack.block_actions',
      undefined,
    );
  });

  test('a wrong secret, one altered byte: mismatch; a stale timestamp: stale_timestamp', () => {
    assertFailure(slackProvider.verify(signed(payload, 'other'), settings([secret]), NOW_MS), 'mismatch');
    const headers = signed(payload, secret).headers;
    assertFailure(
      slackProvider.verify(request({ body: altered(payload), headers }), settings([secret]), NOW_MS),
      'mismatch',
    );
    assertFailure(
      slackProvider.verify(signed(payload, secret, NOW_S - 301), settings([secret]), NOW_MS),
      'stale_timestamp',
    );
  });

  test('a missing or malformed signature or timestamp: missing_signature', () => {
    const { headers } = signed(payload, secret);
    for (const drop of ['x-slack-signature', 'x-slack-request-timestamp']) {
      const partial = { ...headers, [drop]: undefined };
      assertFailure(
        slackProvider.verify(request({ body: payload, headers: partial }), settings([secret]), NOW_MS),
        'missing_signature',
      );
    }
    for (const bad of ['v1=00', 'v0=zz', headers['x-slack-signature']!.slice(3)]) {
      const verdict = slackProvider.verify(
        request({ body: payload, headers: { ...headers, 'x-slack-signature': bad } }),
        settings([secret]),
        NOW_MS,
      );
      assertFailure(verdict, 'missing_signature');
    }
  });

  test('the second secret still verifies', () => {
    assertVerifiedSignedKey(
      slackProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'slack.app_mention',
      'Ev0PV52K21',
    );
  });

  test('url_verification, once verified, is answered with its challenge as text/plain', () => {
    const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P';
    const body = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' });
    assert.deepEqual(slackProvider.verify(signed(body, secret), settings([secret]), NOW_MS), {
      kind: 'handshake',
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: challenge,
    });
    // Unsigned or wrongly signed, it is a failed verification, not a handshake.
    assertFailure(slackProvider.verify(request({ body }), settings([secret]), NOW_MS), 'missing_signature');
    assertFailure(slackProvider.verify(signed(body, 'other'), settings([secret]), NOW_MS), 'mismatch');
    // A challenge that may not be echoed (too long, control characters) is refused, not reflected.
    for (const bad of ['x'.repeat(1025), 'a\r\nSet-Cookie: x=1', '']) {
      const hostile = JSON.stringify({ type: 'url_verification', challenge: bad });
      const verdict = slackProvider.verify(signed(hostile, secret), settings([secret]), NOW_MS);
      assert.equal(verdict.kind === 'handshake' && verdict.status, 400);
      assert.equal(verdict.kind === 'handshake' && JSON.parse(verdict.body).error.code, 'invalid_request');
    }
  });

  test('a GET is not a Slack request; hostile input never throws', () => {
    assert.deepEqual(slackProvider.verify(request({ method: 'GET' }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
    neverThrows(slackProvider, ['x-slack-signature', 'x-slack-request-timestamp', 'content-type'], settings([secret]));
  });
});

describe('standard_webhooks', () => {
  const secret = `whsec_${Buffer.from('standard webhooks key one').toString('base64')}`;
  const older = `whsec_${Buffer.from('standard webhooks key two').toString('base64')}`;
  const payload = JSON.stringify({ type: 'invoice.paid', timestamp: '2026-01-15T12:00:00Z', data: { id: 'in_1' } });
  const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
  const signed = (body: string | Buffer, key: string, timestamp = NOW_S, names = 'webhook') =>
    request({
      body,
      headers: {
        [`${names}-id`]: id,
        [`${names}-timestamp`]: String(timestamp),
        [`${names}-signature`]: new StandardWebhook(key).sign(id, new Date(timestamp * 1000), body.toString()),
      },
    });

  test('a delivery signed by the standardwebhooks SDK verifies, with the body type and webhook-id', () => {
    assertVerifiedSignedKey(
      standardWebhooksProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'invoice.paid',
      id,
    );
  });

  test('a delivery signed by the svix SDK, with svix-* headers, verifies', () => {
    const body = JSON.stringify({ type: 'user.created', data: {} });
    const svixSigned = request({
      body,
      headers: {
        'svix-id': id,
        'svix-timestamp': String(NOW_S),
        'svix-signature': new SvixWebhook(secret).sign(id, new Date(NOW_MS), body),
      },
    });
    assertVerifiedSignedKey(
      standardWebhooksProvider.verify(svixSigned, settings([secret]), NOW_MS),
      'user.created',
      id,
    );
  });

  test('a wrong secret, one altered byte, another id: mismatch; a stale timestamp: stale_timestamp', () => {
    assertFailure(standardWebhooksProvider.verify(signed(payload, older), settings([secret]), NOW_MS), 'mismatch');
    const { headers } = signed(payload, secret);
    assertFailure(
      standardWebhooksProvider.verify(request({ body: altered(payload), headers }), settings([secret]), NOW_MS),
      'mismatch',
    );
    const replayed = request({ body: payload, headers: { ...headers, 'webhook-id': 'msg_other' } });
    assertFailure(standardWebhooksProvider.verify(replayed, settings([secret]), NOW_MS), 'mismatch');
    assertFailure(
      standardWebhooksProvider.verify(signed(payload, secret, NOW_S - 301), settings([secret]), NOW_MS),
      'stale_timestamp',
    );
    assertFailure(
      standardWebhooksProvider.verify(signed(payload, secret, NOW_S + 301), settings([secret]), NOW_MS),
      'stale_timestamp',
    );
  });

  test('a missing header, or a signature of another version only: missing_signature', () => {
    const { headers } = signed(payload, secret);
    for (const drop of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const partial = { ...headers, [drop]: undefined };
      assertFailure(
        standardWebhooksProvider.verify(request({ body: payload, headers: partial }), settings([secret]), NOW_MS),
        'missing_signature',
      );
    }
    const asymmetric = { ...headers, 'webhook-signature': headers['webhook-signature']!.replace('v1,', 'v1a,') };
    assertFailure(
      standardWebhooksProvider.verify(request({ body: payload, headers: asymmetric }), settings([secret]), NOW_MS),
      'missing_signature',
    );
  });

  test('the second secret verifies; any of several space-separated signatures may be the one', () => {
    assertVerifiedSignedKey(
      standardWebhooksProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'invoice.paid',
      id,
    );
    const { headers } = signed(payload, secret);
    const several = `v1,${Buffer.alloc(32).toString('base64')} ${headers['webhook-signature']}`;
    const verdict = standardWebhooksProvider.verify(
      request({ body: payload, headers: { ...headers, 'webhook-signature': several } }),
      settings([secret]),
      NOW_MS,
    );
    assertVerifiedSignedKey(verdict, 'invoice.paid', id);
  });

  test('a GET is not allowed; hostile input never throws', () => {
    assert.deepEqual(standardWebhooksProvider.verify(request({ method: 'GET' }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
    neverThrows(
      standardWebhooksProvider,
      ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'svix-signature'],
      settings([secret, 'whsec_', 'not base64!']),
    );
  });
});

// https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook:
// base64 HMAC-SHA256 of the raw body with the app's client secret.
describe('shopify', () => {
  const secret = 'shpss_client_secret_one';
  const older = 'shpss_client_secret_two';
  const payload = JSON.stringify({ id: 820982911946154500, email: 'jon@example.com' });
  const signed = (body: string | Buffer, key: string) =>
    request({
      body,
      headers: {
        'x-shopify-hmac-sha256': base64('sha256', key, body),
        'x-shopify-topic': 'orders/create',
        'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      },
    });

  test('a signed delivery verifies with the topic and webhook id', () => {
    assertVerified(
      shopifyProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'shopify.orders/create',
      'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
    );
  });

  test('a wrong secret, one altered byte: mismatch; no header or not base64: missing_signature', () => {
    assertFailure(shopifyProvider.verify(signed(payload, older), settings([secret]), NOW_MS), 'mismatch');
    const { headers } = signed(payload, secret);
    assertFailure(
      shopifyProvider.verify(request({ body: altered(payload), headers }), settings([secret]), NOW_MS),
      'mismatch',
    );
    assertFailure(
      shopifyProvider.verify(
        request({ body: payload, headers: { ...headers, 'x-shopify-hmac-sha256': undefined } }),
        settings([secret]),
        NOW_MS,
      ),
      'missing_signature',
    );
    assertFailure(
      shopifyProvider.verify(
        request({ body: payload, headers: { ...headers, 'x-shopify-hmac-sha256': 'not*base64' } }),
        settings([secret]),
        NOW_MS,
      ),
      'missing_signature',
    );
  });

  test('the second secret verifies; a GET is not allowed; hostile input never throws', () => {
    assertVerified(
      shopifyProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'shopify.orders/create',
      'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
    );
    assert.deepEqual(shopifyProvider.verify(request({ method: 'GET' }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
    neverThrows(
      shopifyProvider,
      ['x-shopify-hmac-sha256', 'x-shopify-topic', 'x-shopify-webhook-id'],
      settings([secret]),
    );
  });
});

// https://www.twilio.com/docs/usage/webhooks/webhooks-security (the worked example below).
describe('twilio', () => {
  const token = 'twilio_auth_token_one';
  const older = 'twilio_auth_token_two';
  const url = 'https://roost.example/in/roost_ingress_abc';
  const params = {
    MessageSid: 'SM1',
    SmsSid: 'SM1',
    MessageStatus: 'delivered',
    From: '+15005550006',
    Body: 'héllo + more',
  };
  const form = new URLSearchParams(params).toString();
  const signed = (body: string | Buffer, key: string, signedUrl = url, sdkParams: Record<string, string> = params) =>
    request({
      url,
      body,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilio.getExpectedTwilioSignature(key, signedUrl, sdkParams),
        'i-twilio-idempotency-token': 'a7b4c7e0-idem',
      },
    });

  test("Twilio's own worked example verifies", () => {
    const exampleUrl = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    const example = {
      CallSid: 'CA1234567890ABCDE',
      Caller: '+12349013030',
      Digits: '1234',
      From: '+12349013030',
      To: '+18005551212',
    };
    const verdict = twilioProvider.verify(
      request({
        url: exampleUrl,
        body: new URLSearchParams(example).toString(),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-twilio-signature': '0/KCTR6DLpKmkAf8muzZqo1nDgQ=',
        },
      }),
      settings(['12345']),
      NOW_MS,
    );
    assertVerified(verdict, undefined, undefined);
  });

  test('a form signed by the twilio SDK verifies with the message status and idempotency token', () => {
    const delivery = signed(form, token);
    assertVerified(
      twilioProvider.verify(delivery, settings([token]), NOW_MS),
      'twilio.message.delivered',
      'a7b4c7e0-idem',
    );
    assert.ok(twilio.validateRequest(token, delivery.headers['x-twilio-signature']!, url, params));
    const call = { CallSid: 'CA1', CallStatus: 'ringing' };
    const callDelivery = signed(new URLSearchParams(call).toString(), token, url, call);
    assertVerified(
      twilioProvider.verify(callDelivery, settings([token]), NOW_MS),
      'twilio.call.ringing',
      'a7b4c7e0-idem',
    );
  });

  test('a signature over the URL with its default port verifies too (as the SDK allows)', () => {
    assertVerified(
      twilioProvider.verify(
        signed(form, token, 'https://roost.example:443/in/roost_ingress_abc'),
        settings([token]),
        NOW_MS,
      ),
      'twilio.message.delivered',
      'a7b4c7e0-idem',
    );
  });

  test('a JSON body is signed through bodySHA256 in the URL', () => {
    const body = JSON.stringify([{ type: 'com.twilio.messaging.message.delivered', id: 'EZ1' }]);
    const hashed = `${url}?bodySHA256=${twilio.getExpectedBodyHash(body)}`;
    const headers = {
      'content-type': 'application/json',
      'x-twilio-signature': twilio.getExpectedTwilioSignature(token, hashed, {}),
    };
    assertVerified(
      twilioProvider.verify(request({ url: hashed, body, headers }), settings([token]), NOW_MS),
      'twilio.com.twilio.messaging.message.delivered',
      undefined,
    );
    assert.ok(twilio.validateRequestWithBody(token, headers['x-twilio-signature'], hashed, body));
    assertFailure(
      twilioProvider.verify(request({ url: hashed, body: altered(body), headers }), settings([token]), NOW_MS),
      'mismatch',
    );
  });

  test('a wrong token, one altered byte, another URL: mismatch; no signature: missing_signature', () => {
    assertFailure(twilioProvider.verify(signed(form, older), settings([token]), NOW_MS), 'mismatch');
    const { headers } = signed(form, token);
    assertFailure(
      twilioProvider.verify(request({ url, body: altered(form), headers }), settings([token]), NOW_MS),
      'mismatch',
    );
    assertFailure(
      twilioProvider.verify(request({ url: `${url}?x=1`, body: form, headers }), settings([token]), NOW_MS),
      'mismatch',
    );
    assertFailure(
      twilioProvider.verify(
        request({ url, body: form, headers: { ...headers, 'x-twilio-signature': undefined } }),
        settings([token]),
        NOW_MS,
      ),
      'missing_signature',
    );
  });

  test('the second token verifies; a GET is not allowed; hostile input never throws', () => {
    assertVerified(
      twilioProvider.verify(signed(form, older), settings([token, older]), NOW_MS),
      'twilio.message.delivered',
      'a7b4c7e0-idem',
    );
    assert.deepEqual(twilioProvider.verify(request({ method: 'GET' }), settings([token]), NOW_MS), {
      kind: 'not_allowed',
    });
    neverThrows(
      twilioProvider,
      ['x-twilio-signature', 'content-type', 'i-twilio-idempotency-token'],
      settings([token]),
    );
  });
});

// https://developers.facebook.com/docs/graph-api/webhooks/getting-started (the verification
// request and the X-Hub-Signature-256 payload signature).
describe('meta', () => {
  const secret = 'meta_app_secret_one';
  const older = 'meta_app_secret_two';
  const verifyToken = 'meta-verify-token';
  const payload = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [{ id: '1', changes: [{ field: 'messages', value: { messages: [{ id: 'wamid.1' }] } }] }],
  });
  const signed = (body: string | Buffer, key: string) =>
    request({ body, headers: { 'x-hub-signature-256': `sha256=${hex('sha256', key, body)}` } });
  const handshake = (query: string) => request({ method: 'GET', url: `https://roost.example/in/x?${query}` });

  test('the subscription GET is answered with hub.challenge when the verify token matches', () => {
    const verdict = metaProvider.verify(
      handshake('hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meta-verify-token'),
      settings([secret], { verifyToken }),
      NOW_MS,
    );
    assert.deepEqual(verdict, {
      kind: 'handshake',
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: '1158201444',
    });
  });

  test('a wrong or absent verify token is a verification failure; another GET is not allowed', () => {
    const query = 'hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=';
    assertFailure(
      metaProvider.verify(handshake(`${query}guess`), settings([secret], { verifyToken }), NOW_MS),
      'mismatch',
    );
    assertFailure(
      metaProvider.verify(handshake(`${query}meta-verify-token-longer`), settings([secret], { verifyToken }), NOW_MS),
      'mismatch',
    );
    assertFailure(
      metaProvider.verify(handshake(query), settings([secret], { verifyToken }), NOW_MS),
      'missing_signature',
    );
    assertFailure(
      metaProvider.verify(handshake(`${query}meta-verify-token`), settings([secret]), NOW_MS),
      'missing_signature',
    );
    assert.deepEqual(
      metaProvider.verify(
        handshake('hub.challenge=1&hub.verify_token=meta-verify-token'),
        settings([secret], { verifyToken }),
        NOW_MS,
      ),
      { kind: 'not_allowed' },
    );
    assert.deepEqual(metaProvider.verify(request({ method: 'GET' }), settings([secret], { verifyToken }), NOW_MS), {
      kind: 'not_allowed',
    });
    const long = `hub.mode=subscribe&hub.verify_token=meta-verify-token&hub.challenge=${'9'.repeat(1025)}`;
    assert.equal(metaProvider.verify(handshake(long), settings([secret], { verifyToken }), NOW_MS).kind, 'handshake');
    assert.equal(
      (metaProvider.verify(handshake(long), settings([secret], { verifyToken }), NOW_MS) as { status: number }).status,
      400,
    );
  });

  test('a POST signed with the app secret verifies, typed by object and field', () => {
    assertVerified(
      metaProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'meta.whatsapp_business_account.messages',
      undefined,
    );
    const messenger = JSON.stringify({ object: 'page', entry: [{ id: '1', messaging: [{ message: { mid: 'm1' } }] }] });
    assertVerified(
      metaProvider.verify(signed(messenger, secret), settings([secret]), NOW_MS),
      'meta.page.messaging',
      undefined,
    );
  });

  test('a wrong secret, one altered byte: mismatch; no header or a sha1 one: missing_signature; the second secret verifies', () => {
    assertFailure(metaProvider.verify(signed(payload, older), settings([secret]), NOW_MS), 'mismatch');
    const { headers } = signed(payload, secret);
    assertFailure(
      metaProvider.verify(request({ body: altered(payload), headers }), settings([secret]), NOW_MS),
      'mismatch',
    );
    assertFailure(metaProvider.verify(request({ body: payload }), settings([secret]), NOW_MS), 'missing_signature');
    const sha1 = { 'x-hub-signature': `sha1=${hex('sha1', secret, payload)}` };
    assertFailure(
      metaProvider.verify(request({ body: payload, headers: sha1 }), settings([secret]), NOW_MS),
      'missing_signature',
    );
    assertVerified(
      metaProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'meta.whatsapp_business_account.messages',
      undefined,
    );
  });

  test('hostile input never throws', () => {
    neverThrows(metaProvider, ['x-hub-signature-256'], settings([secret], { verifyToken }));
  });
});

// https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks (endpoint
// validation: 200 text/plain with the decoded validationToken; clientState on each notification).
describe('microsoft_graph', () => {
  const secret = 'graph-client-state-one';
  const older = 'graph-client-state-two';
  const notification = (clientState: unknown, changeType = 'created') => ({
    subscriptionId: '7f105c7d-2dc5-4530-97cd-4e7ae6534c07',
    subscriptionExpirationDateTime: '2026-01-16T12:00:00Z',
    changeType,
    resource: 'Users/1/Messages/2',
    clientState,
    tenantId: '84bd8158-6d4d-4958-8b9f-9d6445542f95',
  });
  const batch = (...items: unknown[]) =>
    request({ body: JSON.stringify({ value: items }), headers: { 'content-type': 'application/json' } });

  test('the validation POST is answered 200 text/plain with the URL-decoded token', () => {
    const token =
      'Validation: Testing client application reachability for subscription Request-Id: 8a4cf5a4-2f2c-4b3c-a8c1-52a35e3b3c65';
    const url = `https://roost.example/in/x?validationToken=${encodeURIComponent(token)}`;
    assert.deepEqual(microsoftGraphProvider.verify(request({ url }), settings([secret]), NOW_MS), {
      kind: 'handshake',
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: token,
    });
    const hostile = `https://roost.example/in/x?validationToken=${encodeURIComponent('<script>\n')}`;
    assert.equal(
      (microsoftGraphProvider.verify(request({ url: hostile }), settings([secret]), NOW_MS) as { status: number })
        .status,
      400,
    );
    assert.deepEqual(microsoftGraphProvider.verify(request({ method: 'GET', url }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
  });

  test('notifications whose clientState is a secret verify, typed by changeType or lifecycleEvent', () => {
    assertVerified(
      microsoftGraphProvider.verify(
        batch(notification(secret), notification(secret, 'updated')),
        settings([secret]),
        NOW_MS,
      ),
      'microsoft_graph.created',
      undefined,
    );
    assertVerified(
      microsoftGraphProvider.verify(batch(notification(older, 'deleted')), settings([secret, older]), NOW_MS),
      'microsoft_graph.deleted',
      undefined,
    );
    const lifecycle = { subscriptionId: 'x', lifecycleEvent: 'reauthorizationRequired', clientState: secret };
    assertVerified(
      microsoftGraphProvider.verify(batch(lifecycle), settings([secret]), NOW_MS),
      'microsoft_graph.reauthorizationRequired',
      undefined,
    );
  });

  test('another clientState in any notification: mismatch; none, or no notifications: missing_signature', () => {
    assertFailure(microsoftGraphProvider.verify(batch(notification('guess')), settings([secret]), NOW_MS), 'mismatch');
    assertFailure(
      microsoftGraphProvider.verify(
        batch(notification(secret), notification(`${secret}x`)),
        settings([secret]),
        NOW_MS,
      ),
      'mismatch',
    );
    assertFailure(
      microsoftGraphProvider.verify(batch(notification(undefined)), settings([secret]), NOW_MS),
      'missing_signature',
    );
    assertFailure(
      microsoftGraphProvider.verify(batch(notification(7)), settings([secret]), NOW_MS),
      'missing_signature',
    );
    assertFailure(microsoftGraphProvider.verify(batch(), settings([secret]), NOW_MS), 'missing_signature');
    assertFailure(
      microsoftGraphProvider.verify(request({ body: 'not json' }), settings([secret]), NOW_MS),
      'missing_signature',
    );
  });

  test('hostile input never throws', () => {
    neverThrows(microsoftGraphProvider, ['content-type'], settings([secret]));
  });
});

// https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events and
// https://developers.zoom.us/docs/api/webhooks/#validate-your-webhook-endpoint
describe('zoom', () => {
  const secret = 'zoom_secret_token_one';
  const older = 'zoom_secret_token_two';
  const payload = JSON.stringify({
    event: 'meeting.started',
    event_ts: NOW_MS,
    payload: { account_id: 'a', object: { id: 1 } },
  });
  const signed = (body: string | Buffer, key: string, timestamp = NOW_S) =>
    request({
      body,
      headers: {
        'x-zm-request-timestamp': String(timestamp),
        'x-zm-signature': `v0=${hex('sha256', key, Buffer.concat([Buffer.from(`v0:${timestamp}:`), Buffer.from(body)]))}`,
      },
    });

  test('a signed event verifies with its type', () => {
    assertVerified(
      zoomProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'zoom.meeting.started',
      undefined,
    );
  });

  test('a wrong secret, one altered byte: mismatch; stale: stale_timestamp; no header: missing_signature', () => {
    assertFailure(zoomProvider.verify(signed(payload, older), settings([secret]), NOW_MS), 'mismatch');
    const { headers } = signed(payload, secret);
    assertFailure(
      zoomProvider.verify(request({ body: altered(payload), headers }), settings([secret]), NOW_MS),
      'mismatch',
    );
    assertFailure(
      zoomProvider.verify(signed(payload, secret, NOW_S - 301), settings([secret]), NOW_MS),
      'stale_timestamp',
    );
    for (const drop of ['x-zm-signature', 'x-zm-request-timestamp']) {
      assertFailure(
        zoomProvider.verify(
          request({ body: payload, headers: { ...headers, [drop]: undefined } }),
          settings([secret]),
          NOW_MS,
        ),
        'missing_signature',
      );
    }
  });

  test('endpoint.url_validation, once verified, is answered with plainToken and its HMAC under the verifying secret', () => {
    const body = JSON.stringify({
      payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' },
      event_ts: NOW_MS,
      event: 'endpoint.url_validation',
    });
    for (const [secrets, key] of [
      [[secret], secret],
      [[secret, older], older],
    ] as const) {
      const verdict = zoomProvider.verify(signed(body, key), settings([...secrets]), NOW_MS);
      assert.equal(verdict.kind, 'handshake');
      assert.equal(verdict.kind === 'handshake' && verdict.status, 200);
      assert.equal(verdict.kind === 'handshake' && verdict.contentType, 'application/json; charset=utf-8');
      assert.deepEqual(verdict.kind === 'handshake' && JSON.parse(verdict.body), {
        plainToken: 'qgg8vlvZRS6UYooatFL8Aw',
        encryptedToken: hex('sha256', key, 'qgg8vlvZRS6UYooatFL8Aw'),
      });
    }
    assertFailure(zoomProvider.verify(request({ body }), settings([secret]), NOW_MS), 'missing_signature');
    assertFailure(zoomProvider.verify(signed(body, 'other'), settings([secret]), NOW_MS), 'mismatch');
  });

  test('the second secret verifies; a GET is not allowed; hostile input never throws', () => {
    assertVerified(
      zoomProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'zoom.meeting.started',
      undefined,
    );
    assert.deepEqual(zoomProvider.verify(request({ method: 'GET' }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
    neverThrows(zoomProvider, ['x-zm-signature', 'x-zm-request-timestamp'], settings([secret]));
  });
});

// https://www.dropbox.com/developers/reference/webhooks (the verification request and
// X-Dropbox-Signature).
describe('dropbox', () => {
  const secret = 'dropbox_app_secret_one';
  const older = 'dropbox_app_secret_two';
  const payload = JSON.stringify({
    list_folder: { accounts: ['dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc'] },
    delta: { users: [12345678] },
  });
  const signed = (body: string | Buffer, key: string) =>
    request({ body, headers: { 'x-dropbox-signature': hex('sha256', key, body) } });

  test('the verification GET echoes the challenge as text/plain', () => {
    const verdict = dropboxProvider.verify(
      request({ method: 'GET', url: 'https://roost.example/in/x?challenge=abc123' }),
      settings([secret]),
      NOW_MS,
    );
    assert.deepEqual(verdict, {
      kind: 'handshake',
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: 'abc123',
    });
    assert.deepEqual(dropboxProvider.verify(request({ method: 'GET' }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
    const long = dropboxProvider.verify(
      request({ method: 'GET', url: `https://roost.example/in/x?challenge=${'a'.repeat(1025)}` }),
      settings([secret]),
      NOW_MS,
    );
    assert.equal((long as { status: number }).status, 400);
  });

  test('a signed notification verifies as dropbox.list_folder', () => {
    assertVerified(
      dropboxProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'dropbox.list_folder',
      undefined,
    );
  });

  test('a wrong secret, one altered byte: mismatch; no header: missing_signature; the second secret verifies', () => {
    assertFailure(dropboxProvider.verify(signed(payload, older), settings([secret]), NOW_MS), 'mismatch');
    const { headers } = signed(payload, secret);
    assertFailure(
      dropboxProvider.verify(request({ body: altered(payload), headers }), settings([secret]), NOW_MS),
      'mismatch',
    );
    assertFailure(dropboxProvider.verify(request({ body: payload }), settings([secret]), NOW_MS), 'missing_signature');
    assertVerified(
      dropboxProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'dropbox.list_folder',
      undefined,
    );
  });

  test('hostile input never throws', () => {
    neverThrows(dropboxProvider, ['x-dropbox-signature'], settings([secret]));
  });
});

// https://dev.twitch.tv/docs/eventsub/handling-webhook-events (verifying the event message,
// responding to a challenge request).
describe('twitch', () => {
  const secret = 'twitch_subscription_secret_one';
  const older = 'twitch_subscription_secret_two';
  const id = 'befa7b53-d79d-478f-86b9-120f112b044e';
  const payload = JSON.stringify({
    subscription: { id: 'f1c2a387-161a-49f9-a165-0f21d7a4e1c4', type: 'channel.follow', version: '2' },
    event: { user_id: '1234', broadcaster_user_id: '1337' },
  });
  // Twitch's timestamps carry nanoseconds.
  const stamp = (seconds: number) => new Date(seconds * 1000).toISOString().replace('Z', '234626Z');
  const signed = (body: string | Buffer, key: string, messageType = 'notification', seconds = NOW_S) => {
    const timestamp = stamp(seconds);
    return request({
      body,
      headers: {
        'twitch-eventsub-message-id': id,
        'twitch-eventsub-message-timestamp': timestamp,
        'twitch-eventsub-message-signature': `sha256=${hex('sha256', key, Buffer.concat([Buffer.from(id + timestamp), Buffer.from(body)]))}`,
        'twitch-eventsub-message-type': messageType,
        'twitch-eventsub-subscription-type': 'channel.follow',
      },
    });
  };

  test('a signed notification verifies with the subscription type and message id', () => {
    assertVerifiedSignedKey(
      twitchProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'twitch.channel.follow',
      id,
    );
    assertVerifiedSignedKey(
      twitchProvider.verify(signed(payload, secret, 'revocation'), settings([secret]), NOW_MS),
      'twitch.revocation',
      id,
    );
  });

  test('webhook_callback_verification, once verified, is answered with the challenge as text/plain', () => {
    const body = JSON.stringify({
      challenge: 'pogchamp-kappa-360noscope-vohiyo',
      subscription: { type: 'channel.follow' },
    });
    assert.deepEqual(
      twitchProvider.verify(signed(body, secret, 'webhook_callback_verification'), settings([secret]), NOW_MS),
      {
        kind: 'handshake',
        status: 200,
        contentType: 'text/plain; charset=utf-8',
        body: 'pogchamp-kappa-360noscope-vohiyo',
      },
    );
    assertFailure(
      twitchProvider.verify(signed(body, older, 'webhook_callback_verification'), settings([secret]), NOW_MS),
      'mismatch',
    );
  });

  test('a wrong secret, one altered byte: mismatch; stale: stale_timestamp; a missing header: missing_signature', () => {
    assertFailure(twitchProvider.verify(signed(payload, older), settings([secret]), NOW_MS), 'mismatch');
    const { headers } = signed(payload, secret);
    assertFailure(
      twitchProvider.verify(request({ body: altered(payload), headers }), settings([secret]), NOW_MS),
      'mismatch',
    );
    assertFailure(
      twitchProvider.verify(signed(payload, secret, 'notification', NOW_S - 301), settings([secret]), NOW_MS),
      'stale_timestamp',
    );
    for (const drop of [
      'twitch-eventsub-message-id',
      'twitch-eventsub-message-timestamp',
      'twitch-eventsub-message-signature',
    ]) {
      assertFailure(
        twitchProvider.verify(
          request({ body: payload, headers: { ...headers, [drop]: undefined } }),
          settings([secret]),
          NOW_MS,
        ),
        'missing_signature',
      );
    }
    const unparsable = { ...headers, 'twitch-eventsub-message-timestamp': 'yesterday' };
    assertFailure(
      twitchProvider.verify(request({ body: payload, headers: unparsable }), settings([secret]), NOW_MS),
      'missing_signature',
    );
  });

  test('the second secret verifies; a GET is not allowed; hostile input never throws', () => {
    assertVerifiedSignedKey(
      twitchProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'twitch.channel.follow',
      id,
    );
    assert.deepEqual(twitchProvider.verify(request({ method: 'GET' }), settings([secret]), NOW_MS), {
      kind: 'not_allowed',
    });
    neverThrows(
      twitchProvider,
      [
        'twitch-eventsub-message-id',
        'twitch-eventsub-message-timestamp',
        'twitch-eventsub-message-signature',
        'twitch-eventsub-message-type',
      ],
      settings([secret]),
    );
  });
});

describe('linear', () => {
  const secret = 'lin_wh_signing_secret_one';
  const older = 'lin_wh_signing_secret_two';
  const delivery = '234d1a4e-b617-4388-90fe-adc3633d6b72';
  // Linear's SDK checks webhookTimestamp against the real clock, so these bodies are of now.
  const now = Date.now();
  const body = (timestamp = now) =>
    JSON.stringify({
      action: 'create',
      type: 'Issue',
      data: { id: 'i1' },
      webhookTimestamp: timestamp,
      webhookId: 'w1',
    });
  const signed = (text: string | Buffer, key: string) =>
    request({
      body: text,
      headers: { 'linear-signature': hex('sha256', key, text), 'linear-delivery': delivery, 'linear-event': 'Issue' },
    });

  test('a delivery that the Linear SDK accepts verifies, typed linear.<type>.<action>, keyed by Linear-Delivery', () => {
    const payload = body();
    const { headers } = signed(payload, secret);
    assert.equal(new LinearWebhookClient(secret).verify(Buffer.from(payload), headers['linear-signature']!), true);
    assertVerified(
      linearProvider.verify(signed(payload, secret), settings([secret]), now),
      'linear.Issue.create',
      delivery,
    );
  });

  test('a wrong secret, one altered byte: mismatch; an old or absent webhookTimestamp: stale_timestamp', () => {
    const payload = body();
    assertFailure(linearProvider.verify(signed(payload, older), settings([secret]), now), 'mismatch');
    assert.throws(() => new LinearWebhookClient(secret).verify(Buffer.from(payload), hex('sha256', older, payload)));
    const { headers } = signed(payload, secret);
    assertFailure(
      linearProvider.verify(request({ body: altered(payload), headers }), settings([secret]), now),
      'mismatch',
    );
    assertFailure(
      linearProvider.verify(signed(body(now - 301_000), secret), settings([secret]), now),
      'stale_timestamp',
    );
    const untimed = JSON.stringify({ action: 'create', type: 'Issue' });
    assertFailure(linearProvider.verify(signed(untimed, secret), settings([secret]), now), 'stale_timestamp');
  });

  test('no signature: missing_signature; the second secret verifies; a GET is not allowed; hostile input never throws', () => {
    assertFailure(linearProvider.verify(request({ body: body() }), settings([secret]), now), 'missing_signature');
    assertVerified(
      linearProvider.verify(signed(body(), older), settings([secret, older]), now),
      'linear.Issue.create',
      delivery,
    );
    assert.deepEqual(linearProvider.verify(request({ method: 'GET' }), settings([secret]), now), {
      kind: 'not_allowed',
    });
    neverThrows(linearProvider, ['linear-signature', 'linear-delivery'], settings([secret]));
  });
});
