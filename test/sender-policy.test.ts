// The sender policy (src/core/senders/policy.ts, docs/api.md §3.2) as a pure function: what
// an inbox with a sender does with each verdict — a handshake stores nothing, a refusal is an
// error, a delivery is one plan with one key — and which providers sign their delivery id.
// Twilio's URL-only signature and Graph's clientState are checked at the provider, against
// Twilio's own SDK where it has a say.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { ServiceError } from '../src/core/errors.js';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../src/core/limits.js';
import { planSenderRequest, replayKey, unverifiedKey, type SenderPlan } from '../src/core/senders/policy.js';
import { PROVIDER_NAMES, type SenderRequest, type SenderVerdict } from '../src/core/senders/provider.js';
import { CLIENT_STATE_REPLACEMENT, microsoftGraphProvider } from '../src/core/senders/providers/microsoft-graph.js';
import { twilioProvider } from '../src/core/senders/providers/twilio.js';
import { senderProvider } from '../src/core/senders/registry.js';
import { twilio } from './helpers/twilio.js';

const NOW_MS = Date.UTC(2026, 0, 15, 12, 0, 0);

function request(init: { method?: string; headers?: Record<string, string>; body?: string; url?: string } = {}) {
  const url = init.url ?? 'https://roost.example/api/v1/inbox/addr_x/roost_ingress_abc';
  return {
    method: init.method ?? 'POST',
    headers: init.headers ?? {},
    query: new URL(url).searchParams,
    url,
    body: Buffer.from(init.body ?? '', 'utf8'),
  } satisfies SenderRequest;
}

const sha256 = (bytes: string | Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

function assertStore(plan: SenderPlan): Extract<SenderPlan, { kind: 'store' }> {
  assert.equal(plan.kind, 'store');
  return plan;
}

describe('the sender policy', () => {
  const github = { provider: 'github' as const, enforce: true };
  const eventShaped = JSON.stringify({ type: 'forged', data: { forged: true } });

  test('a handshake is answered as the provider gives it and stores nothing, whatever the body and query', () => {
    const verdict: SenderVerdict = {
      kind: 'handshake',
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: 'tok',
    };
    for (const enforce of [true, false]) {
      const plan = planSenderRequest(
        { provider: 'microsoft_graph', enforce },
        request({ url: 'https://r.example/i?validationToken=tok&raw=1', body: eventShaped }),
        verdict,
      );
      assert.deepEqual(plan, {
        kind: 'handshake',
        outcome: 'handshake',
        status: 200,
        contentType: 'text/plain; charset=utf-8',
        body: 'tok',
      });
    }
  });

  test('a request the provider never sends is a 405 with Allow: POST', () => {
    const plan = planSenderRequest(github, request({ method: 'GET' }), { kind: 'not_allowed' });
    assert.equal(plan.kind, 'refused');
    const { error } = plan;
    assert.ok(error instanceof ServiceError);
    assert.deepEqual([error.status, error.code, error.headers], [405, 'method_not_allowed', { Allow: 'POST' }]);
  });

  test('a verified delivery is keyed by its delivery id only when the signature covers it, else by the body', () => {
    const body = '{"ref":"x"}';
    const unsignedId = assertStore(
      planSenderRequest(github, request({ body, headers: { 'idempotency-key': 'chosen' } }), {
        kind: 'event',
        verified: true,
        type: 'github.push',
        idempotencyKey: 'guid-1',
      }),
    );
    assert.deepEqual(unsignedId, {
      kind: 'store',
      outcome: 'verified',
      type: 'github.push',
      key: sha256(body),
      body: Buffer.from(body),
      verification: { provider: 'github', verified: true },
    });
    const signedId = assertStore(
      planSenderRequest({ provider: 'stripe', enforce: true }, request({ body }), {
        kind: 'event',
        verified: true,
        idempotencyKey: 'evt_1',
        keySigned: true,
      }),
    );
    assert.equal(signedId.key, 'evt_1');
    // A signed id that cannot be a key (too long): the body's digest instead.
    const tooLong = assertStore(
      planSenderRequest({ provider: 'stripe', enforce: true }, request({ body }), {
        kind: 'event',
        verified: true,
        idempotencyKey: 'e'.repeat(IDEMPOTENCY_KEY_MAX_LENGTH + 1),
        keySigned: true,
      }),
    );
    assert.equal(tooLong.key, sha256(body));
    // The bytes to store (Graph's, without its clientState) are what is keyed and kept.
    const storedBody = Buffer.from('{"value":[{"clientState":"[REDACTED]"}]}');
    const graph = assertStore(
      planSenderRequest({ provider: 'microsoft_graph', enforce: true }, request({ body: 'secret inside' }), {
        kind: 'event',
        verified: true,
        storedBody,
      }),
    );
    assert.equal(graph.body, storedBody);
    assert.equal(graph.key, replayKey(storedBody));
  });

  test('an unverified delivery is refused when enforced, or on a read; else stored under unverified: + its key', () => {
    const failed: SenderVerdict = { kind: 'event', verified: false, reason: 'mismatch', idempotencyKey: 'guid-1' };
    const refused = planSenderRequest(github, request({ body: eventShaped }), failed);
    assert.equal(refused.kind, 'refused');
    assert.equal((refused as { error: ServiceError }).error.code, 'signature_invalid');
    assert.equal(refused.outcome, 'rejected');
    const lax = { provider: 'meta' as const, enforce: false };
    assert.equal(planSenderRequest(lax, request({ method: 'GET' }), failed).kind, 'refused');
    assert.equal(planSenderRequest(lax, request({ method: 'HEAD' }), failed).kind, 'refused');
    const stored = assertStore(planSenderRequest(lax, request({ body: eventShaped }), failed));
    assert.equal(stored.key, 'unverified:guid-1');
    assert.deepEqual(stored.verification, { provider: 'meta', verified: false, reason: 'mismatch' });
    const byHeader = assertStore(
      planSenderRequest(lax, request({ headers: { 'idempotency-key': 'k-1' } }), {
        kind: 'event',
        verified: false,
        reason: 'missing_signature',
      }),
    );
    assert.equal(byHeader.key, 'unverified:k-1');
    const none = assertStore(
      planSenderRequest(lax, request(), { kind: 'event', verified: false, reason: 'missing_signature' }),
    );
    assert.equal(none.key, undefined);
    assert.equal(
      unverifiedKey('k'.repeat(250)),
      `unverified:${createHash('sha256').update('k'.repeat(250)).digest('hex')}`,
    );
  });

  test('exactly the providers whose signature covers their delivery id say so', () => {
    const signed = new Set(['stripe', 'slack', 'standard_webhooks', 'twitch']);
    for (const name of PROVIDER_NAMES) {
      const provider = senderProvider(name)!;
      const verdict = provider.verify(
        request({ body: '{}', headers: { 'content-type': 'application/json' } }),
        { secrets: ['s'], toleranceSeconds: 300, hmac: { header: 'x-sig', encoding: 'hex', prefix: '' } },
        NOW_MS,
      );
      assert.equal(verdict.kind, 'event', name);
      assert.equal(verdict.kind === 'event' && verdict.keySigned === true, signed.has(name), name);
    }
  });
});

describe('twilio: a signature over the URL alone', () => {
  const token = 'twilio_auth_token';
  const url = 'https://roost.example/api/v1/inbox/addr_x/roost_ingress_abc';
  const urlOnly = twilio.getExpectedTwilioSignature(token, url, {});

  test('is valid for the URL by itself, but covers no JSON or text body: mismatch', () => {
    // The SDK accepts the URL signature with no parameters, and refuses it for a body.
    assert.equal(twilio.validateRequest(token, urlOnly, url, {}), true);
    const json = JSON.stringify([{ type: 'com.twilio.messaging.message.delivered', data: { forged: true } }]);
    assert.equal(twilio.validateRequestWithBody(token, urlOnly, url, json), false);
    for (const [contentType, body] of [
      ['application/json', json],
      ['text/plain', 'MessageSid=SM1&MessageStatus=delivered'],
      ['', 'MessageSid=SM1'],
    ]) {
      const verdict = twilioProvider.verify(
        request({ url, body, headers: { 'content-type': contentType, 'x-twilio-signature': urlOnly } }),
        { secrets: [token], toleranceSeconds: 300 },
        NOW_MS,
      );
      assert.equal(verdict.kind === 'event' && !verdict.verified && verdict.reason, 'mismatch', contentType);
    }
  });

  test('an empty form, signed over the URL and no parameters, is a form and verifies', () => {
    const verdict = twilioProvider.verify(
      request({
        url,
        body: '',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': urlOnly },
      }),
      { secrets: [token], toleranceSeconds: 300 },
      NOW_MS,
    );
    assert.equal(verdict.kind === 'event' && verdict.verified, true);
  });
});

describe('microsoft_graph: the clientState is not kept', () => {
  const secret = 'graph-client-state';
  const settings = { secrets: [secret], toleranceSeconds: 300 };
  const verify = (body: string) => microsoftGraphProvider.verify(request({ body }), settings, NOW_MS);

  test('every clientState, at any depth, is replaced in the bytes to store, verified or not', () => {
    for (const state of [secret, 'a-guess']) {
      const body = JSON.stringify({
        value: [
          { changeType: 'created', clientState: state, resourceData: { clientState: state } },
          { changeType: 'updated', clientState: state },
        ],
      });
      const verdict = verify(body);
      assert.equal(verdict.kind, 'event');
      const stored = verdict.kind === 'event' ? verdict.storedBody : undefined;
      assert.ok(stored, 'bytes to store instead of the body');
      assert.ok(!stored.toString().includes(state));
      assert.deepEqual(JSON.parse(stored.toString()), {
        value: [
          {
            changeType: 'created',
            clientState: CLIENT_STATE_REPLACEMENT,
            resourceData: { clientState: CLIENT_STATE_REPLACEMENT },
          },
          { changeType: 'updated', clientState: CLIENT_STATE_REPLACEMENT },
        ],
      });
    }
    // A repeated member: JSON keeps the last, and the stored bytes hold neither.
    const repeated = verify(`{"value":[{"clientState":"${secret}","clientState":"${secret}"}]}`);
    assert.equal(
      repeated.kind === 'event' && repeated.storedBody?.toString(),
      '{"value":[{"clientState":"[REDACTED]"}]}',
    );
  });

  test('a body without a clientState, or not JSON, is kept as received', () => {
    for (const body of ['{"value":[{"changeType":"created"}]}', 'not json', '']) {
      const verdict = verify(body);
      assert.equal(verdict.kind === 'event' && verdict.storedBody, undefined, body);
    }
  });
});
