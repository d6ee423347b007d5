// The provider schemes of a provider-aware inbox (docs/api.md §3.2), as pure functions: each
// provider's deliveries are signed with the provider's own SDK where the registry has one
// (stripe, standardwebhooks, svix, twilio, @linear/sdk) and otherwise as its documentation
// says (the page is cited beside each), then a wrong secret, one altered byte, a stale
// timestamp, a missing header and a rotated secret are tried, each handshake is answered as
// documented, and hostile input never throws.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import twilio from 'twilio';
import type { SenderProvider, SenderRequest, SenderSettings, SenderVerdict } from '../src/core/senders/provider.js';
import { shopifyProvider } from '../src/core/senders/providers/shopify.js';
import { slackProvider } from '../src/core/senders/providers/slack.js';
import { standardWebhooksProvider } from '../src/core/senders/providers/standard-webhooks.js';
import { stripeProvider } from '../src/core/senders/providers/stripe.js';
import { twilioProvider } from '../src/core/senders/providers/twilio.js';

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

function assertVerified(verdict: SenderVerdict, type: string | undefined, key: string | undefined): void {
  assert.deepEqual(verdict, { kind: 'event', verified: true, type, idempotencyKey: key });
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
    assertVerified(
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
    assertVerified(
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
    assertVerified(
      stripeProvider.verify(signed(payload, older), settings([secret, older]), NOW_MS),
      'stripe.payment_intent.succeeded',
      'evt_1Nabc',
    );
    const both = `t=${NOW_S},v1=${hex('sha256', 'whsec_rolled', `${NOW_S}.${payload}`)},v1=${hex('sha256', secret, `${NOW_S}.${payload}`)}`;
    assertVerified(
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
    assertVerified(
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
    assertVerified(
      slackProvider.verify(signed(payload, secret), settings([secret]), NOW_MS),
      'slack.app_mention',
      'Ev0PV52K21',
    );
    const ratelimited = JSON.stringify({ type: 'app_rate_limited', team_id: 'T1', minute_rate_limited: 1 });
    assertVerified(
      slackProvider.verify(signed(ratelimited, secret), settings([secret]), NOW_MS),
      'slack.app_rate_limited',
      undefined,
    );
    const interactive = `payload=${encodeURIComponent(JSON.stringify({ type: 'block_actions', actions: [] }))}`;
    assertVerified(
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
    assertVerified(
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
    assertVerified(
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
    assertVerified(standardWebhooksProvider.verify(svixSigned, settings([secret]), NOW_MS), 'user.created', id);
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
    assertVerified(
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
    assertVerified(verdict, 'invoice.paid', id);
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
