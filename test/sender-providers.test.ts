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
import Stripe from 'stripe';
import type { SenderProvider, SenderRequest, SenderSettings, SenderVerdict } from '../src/core/senders/provider.js';
import { stripeProvider } from '../src/core/senders/providers/stripe.js';

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
