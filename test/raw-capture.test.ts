// Raw capture (docs/api.md §3.1): real webhook senders' payloads, sent byte for byte as the
// senders send them, are read back through the events URL and their signatures verified
// from body_base64 — the check a reader of the queue has to be able to make.
import assert from 'node:assert/strict';
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { it } from 'node:test';
import { eventually, forEachEngine } from './helpers/engines.js';
import { createAddress, listEvents, request, type CreatedAddress } from './helpers/http.js';

interface Sent {
  status: number;
  body: any;
}

/** POSTs exact bytes with exactly these headers (fetch would refuse hop-by-hop ones). */
function post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const bytes = Buffer.from(body);
    const req = httpRequest(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(bytes.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
        );
      },
    );
    req.on('error', reject);
    req.end(bytes);
  });
}

/** The stored event, read back as the agent would. */
async function readBack(base: string, address: CreatedAddress, sequence = 1) {
  const page = await listEvents(base, address, `after=${sequence - 1}&limit=1`);
  assert.equal(page.status, 200, page.text);
  assert.equal(page.body.events.length, 1);
  return page.body.events[0];
}

const hmac = (algorithm: string, key: string, data: Buffer | string) => createHmac(algorithm, key).update(data);

function sameText(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

await forEachEngine('raw capture of webhook senders', (server) => {
  const base = () => server().url;

  it('GitHub push: pretty JSON with unicode, X-Hub-Signature-256 verifies; no credentials or hop-by-hop headers kept', async () => {
    const address = await createAddress(base());
    const secret = 'It’s a Secret to Everybody';
    const payload = JSON.stringify(
      {
        ref: 'refs/heads/main',
        before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
        after: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
        repository: { id: 35129377, full_name: 'octo-org/café-☕', private: false },
        pusher: { name: 'Zoë Ångström', email: 'zoe@example.com' },
        head_commit: {
          id: '0d1a26e6',
          message: 'Fix naïve façade — ünïcode 🚀\n\nCo-authored-by: 李雷',
          timestamp: '2026-11-21T09:30:00+01:00',
        },
      },
      null,
      2,
    );
    const bytes = Buffer.from(payload, 'utf8');
    const signature = `sha256=${hmac('sha256', secret, bytes).digest('hex')}`;
    const sent = await post(`${address.inbox}?raw=1`, bytes, {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/044aadd',
      'x-github-event': 'push',
      'x-github-delivery': randomUUID(),
      'x-github-hook-id': '292430182',
      'x-hub-signature-256': signature,
      // A sender (or a proxy on its way) must not get these stored:
      authorization: 'Bearer leaked-credential',
      cookie: 'session=leaked-cookie',
      'proxy-authorization': 'Basic bGVha2Vk',
      connection: 'keep-alive, x-hop-only',
      'keep-alive': 'timeout=5',
      'x-hop-only': 'named by Connection',
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    assert.equal(sent.body.duplicate, false);

    const event = await readBack(base(), address);
    assert.equal(event.type, 'webhook.received');
    assert.equal(event.source, 'https');
    assert.deepEqual(Object.keys(event.data), ['content_type', 'headers', 'body', 'body_base64', 'method', 'query']);
    assert.equal(event.data.method, 'POST');
    assert.equal(event.data.query, 'raw=1');
    assert.equal(event.data.content_type, 'application/json');
    assert.deepEqual(event.data.body, JSON.parse(payload));
    assert.deepEqual(Object.keys(event.data.body), ['ref', 'before', 'after', 'repository', 'pusher', 'head_commit']);

    // The reader's check: HMAC of the exact bytes against the stored signature header.
    const received = Buffer.from(event.data.body_base64, 'base64');
    assert.ok(received.equals(bytes), 'body_base64 holds the exact bytes');
    const expected = `sha256=${hmac('sha256', secret, received).digest('hex')}`;
    assert.ok(sameText(event.data.headers['x-hub-signature-256'], expected), 'signature verifies');
    assert.ok(!sameText(`sha256=${hmac('sha256', 'wrong secret', received).digest('hex')}`, expected));

    const headers = event.data.headers;
    assert.equal(headers['x-github-event'], 'push');
    assert.equal(headers['user-agent'], 'GitHub-Hookshot/044aadd');
    for (const name of ['authorization', 'cookie', 'proxy-authorization', 'connection', 'keep-alive', 'x-hop-only']) {
      assert.equal(name in headers, false, `${name} is not stored`);
    }
    const everything = JSON.stringify(event) + server().logs();
    assert.ok(
      !everything.includes('leaked-credential') && !everything.includes('leaked-cookie'),
      'secrets appear nowhere',
    );
  });

  it('Stripe event: Stripe-Signature (t=…,v1=…) verifies; ?type= names the event', async () => {
    const address = await createAddress(base());
    const endpointSecret = 'whsec_test_5bXwQ1pS9eM3';
    const payload = JSON.stringify(
      {
        id: 'evt_1QxYz2LkdIwHu7ix',
        object: 'event',
        api_version: '2024-06-20',
        created: 1732181400,
        data: {
          object: {
            id: 'pi_3QxYz',
            object: 'payment_intent',
            amount: 4200,
            currency: 'eur',
            description: 'Crème brûlée × 2',
          },
        },
        livemode: false,
        type: 'payment_intent.succeeded',
      },
      null,
      2,
    );
    const t = Math.floor(Date.now() / 1000);
    const v1 = hmac('sha256', endpointSecret, `${t}.${payload}`).digest('hex');
    const sent = await post(`${address.inbox}?raw=1&type=stripe.payment_intent.succeeded`, payload, {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      'stripe-signature': `t=${t},v1=${v1},v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39`,
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));

    const event = await readBack(base(), address);
    assert.equal(event.type, 'stripe.payment_intent.succeeded');
    assert.equal(event.data.content_type, 'application/json; charset=utf-8');
    assert.equal(event.data.body.data.object.description, 'Crème brûlée × 2');
    const parts = Object.fromEntries(
      event.data.headers['stripe-signature'].split(',').map((kv: string) => kv.split('=')),
    );
    const signedPayload = `${parts.t}.${Buffer.from(event.data.body_base64, 'base64').toString('utf8')}`;
    assert.ok(
      sameText(parts.v1, hmac('sha256', endpointSecret, signedPayload).digest('hex')),
      'Stripe signature verifies',
    );
  });

  it('Twilio SMS form post: fields parsed, X-Twilio-Signature verifies; repeated keys become arrays', async () => {
    const address = await createAddress(base());
    const authToken = '12345a6b7c8d9e0f1a2b3c4d5e6f7a8b';
    const url = `${address.inbox}?raw=1`;
    const fields = {
      ToCountry: 'US',
      SmsMessageSid: 'SM1c2d3e',
      NumMedia: '0',
      Body: 'Héllo + wörld & 100% 👍',
      From: '+15557654321',
      To: '+15551234567',
      MessageSid: 'SM1c2d3e',
      AccountSid: 'AC0123456789abcdef',
      ApiVersion: '2010-04-01',
    };
    const payload = new URLSearchParams(fields).toString();
    // Twilio signs the full URL it called followed by each field name and value, sorted by name.
    const twilioSignature = (params: URLSearchParams) =>
      hmac(
        'sha1',
        authToken,
        url +
          [...params.keys()]
            .sort()
            .map((key) => key + params.get(key))
            .join(''),
      ).digest('base64');
    const sent = await post(url, payload, {
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': 'TwilioProxy/1.1',
      'x-twilio-signature': twilioSignature(new URLSearchParams(payload)),
      'i-twilio-idempotency-token': randomUUID(),
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));

    const event = await readBack(base(), address);
    assert.deepEqual(event.data.body, fields);
    const received = new URLSearchParams(Buffer.from(event.data.body_base64, 'base64').toString('utf8'));
    assert.ok(
      sameText(event.data.headers['x-twilio-signature'], twilioSignature(received)),
      'Twilio signature verifies',
    );

    const repeated = await post(url, 'channel=C1&user=U2&tag=a&tag=b&tag=c&__proto__=kept', {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
    });
    assert.equal(repeated.status, 202);
    const form = (await readBack(base(), address, 2)).data.body;
    assert.deepEqual(form, { channel: 'C1', user: 'U2', tag: ['a', 'b', 'c'], ['__proto__']: 'kept' });
    assert.ok(Object.hasOwn(form, '__proto__'), 'a "__proto__" field stays a field');
  });

  it('binary body: body is null and body_base64 holds every byte', async () => {
    const address = await createAddress(base());
    const bytes = randomBytes(2048);
    bytes[0] = 0xff; // never valid UTF-8, whatever the random draw
    const signature = hmac('sha256', 'device-key', bytes).digest('hex');
    const sent = await post(`${address.inbox}?raw=true`, bytes, {
      'content-type': 'application/octet-stream',
      'x-signature': signature,
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const event = await readBack(base(), address);
    assert.equal(event.data.content_type, 'application/octet-stream');
    assert.equal(event.data.body, null);
    const received = Buffer.from(event.data.body_base64, 'base64');
    assert.ok(received.equals(bytes));
    assert.equal(hmac('sha256', 'device-key', received).digest('hex'), event.data.headers['x-signature']);
  });

  it('text as is: invalid JSON under a JSON type, a declared charset, no Content-Type at all', async () => {
    const address = await createAddress(base());
    const broken = '{"truncated": ';
    assert.equal((await post(`${address.inbox}?raw=1`, broken, { 'content-type': 'application/json' })).status, 202);
    assert.equal((await readBack(base(), address, 1)).data.body, broken);

    const latin1 = Buffer.from('Grüße aus Köln', 'latin1');
    assert.equal(
      (await post(`${address.inbox}?raw=1`, latin1, { 'content-type': 'text/plain; charset=iso-8859-1' })).status,
      202,
    );
    const text = await readBack(base(), address, 2);
    assert.equal(text.data.body, 'Grüße aus Köln');
    assert.ok(Buffer.from(text.data.body_base64, 'base64').equals(latin1));

    assert.equal((await post(`${address.inbox}?raw=1`, 'ping', {})).status, 202);
    const bare = await readBack(base(), address, 3);
    assert.equal(bare.data.content_type, null);
    assert.equal(bare.data.body, 'ping');
  });

  it('Idempotency-Key dedupes raw deliveries, whatever the later body', async () => {
    const address = await createAddress(base());
    const key = `gh-${randomUUID()}`;
    const first = await post(`${address.inbox}?raw=1`, '{"attempt":1}', {
      'content-type': 'application/json',
      'idempotency-key': key,
    });
    const retry = await post(`${address.inbox}?raw=1`, '{"attempt":2}', {
      'content-type': 'application/json',
      'idempotency-key': key,
    });
    assert.equal(first.status, 202);
    assert.equal(retry.status, 200);
    assert.equal(retry.body.duplicate, true);
    assert.equal(retry.body.event.id, first.body.event.id);
    assert.deepEqual(retry.body.event.data.body, { attempt: 1 });
    assert.equal(retry.body.event.dedupe_key, key);
    const page = await listEvents(base(), address);
    assert.equal(page.body.events.length, 1);
  });

  it('a raw delivery wakes a held long-poll', async () => {
    const address = await createAddress(base());
    const held = listEvents(base(), address, 'after=0&wait=20');
    await eventually(() => server().roost.waiters.held === 1, 'the poll is held');
    assert.equal(
      (
        await post(`${address.inbox}?raw=1`, 'event=call.ended', {
          'content-type': 'application/x-www-form-urlencoded',
        })
      ).status,
      202,
    );
    const page = await held;
    assert.equal(page.status, 200);
    assert.equal(page.body.events.length, 1);
    assert.deepEqual(page.body.events[0].data.body, { event: 'call.ended' });
  });

  it('errors: bad raw or stray type → 400, wrong secret → 404, too large → 413', async () => {
    const address = await createAddress(base());
    const json = { 'content-type': 'application/json' };
    for (const query of ['raw=yes', 'raw=', 'raw=1&raw=1', 'raw=1&type=', 'type=x']) {
      const res = await post(`${address.inbox}?${query}`, '{}', json);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.code, 'invalid_request', query);
    }
    const wrong = address.inbox.replace(/\/[^/]+$/, '/roost_ingress_wrong');
    const notFound = await post(`${wrong}?raw=1`, 'x', { 'content-type': 'text/plain' });
    assert.equal(notFound.status, 404);
    assert.equal(notFound.body.error.code, 'inbox_not_found');
    const tooLarge = await post(`${address.inbox}?raw=1`, Buffer.alloc(server().config.maxBodyBytes + 1, 0x61), {
      'content-type': 'text/plain',
    });
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.body.error.code, 'payload_too_large');
    assert.equal((await listEvents(base(), address)).body.events.length, 0);
  });

  it('OpenAPI documents raw and type on the inbox route', async () => {
    const doc = (await request(base(), 'GET', '/api/v1/openapi.json')).body;
    const names = doc.paths['/api/v1/inbox/{addressId}/{secret}'].post.parameters
      .filter((p: any) => p.in === 'query')
      .map((p: any) => p.name);
    assert.deepEqual(names.sort(), ['raw', 'type']);
  });
});
