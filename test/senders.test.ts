// Provider-aware inboxes (docs/api.md §3.2): an address's sender over real HTTP on every
// engine — its REST shape and bounds, secrets sealed at rest and never shown, and deliveries
// signed by the providers' own code (GitHub's with @octokit/webhooks-methods) verified,
// refused or marked over their exact bytes.
import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { sign } from '@octokit/webhooks-methods';
import Database from 'better-sqlite3';
import pg from 'pg';
import Stripe from 'stripe';
import { ConfigError, loadConfig } from '../src/config.js';
import { SecretBox, SecretKeyMismatch } from '../src/core/secret-box.js';
import { PROVIDER_NAMES } from '../src/core/senders/provider.js';
import { assertError, createAddress, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { ENGINES, engineSkipReason, startTestServer, type TestServer } from './helpers/server.js';

const execFileAsync = promisify(execFile);

/** The key of a verified delivery whose delivery id is not signed: a digest of the signed body. */
const bodyKey = (body: string) => `sha256:${createHash('sha256').update(body).digest('hex')}`;

/** Every row of the senders table as text, read from the database itself. */
async function senderRows(server: TestServer): Promise<string> {
  if (server.dbPath) {
    const db = new Database(server.dbPath, { readonly: true });
    try {
      return JSON.stringify(db.prepare('SELECT * FROM senders').all());
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: server.databaseUrl });
  await client.connect();
  try {
    return JSON.stringify((await client.query('SELECT * FROM senders')).rows);
  } finally {
    await client.end();
  }
}

for (const engine of ENGINES) {
  const skip = await engineSkipReason(engine);
  describe(`senders [${engine}]`, { skip: skip ? `skipped: ${skip}` : false }, () => {
    let server: TestServer;
    let base: string;
    before(async () => {
      server = await startTestServer(engine);
      base = server.url;
    });
    after(async () => server?.close());

    const sender = (address: CreatedAddress, method: string, body?: unknown, token = address.token) =>
      request(base, method, `/api/v1/addresses/${address.id}/sender`, { body, token });

    /** A GitHub delivery as GitHub sends it, signed by Octokit with `secret`. */
    async function github(
      address: CreatedAddress,
      secret: string,
      payload: string,
      { event = 'push', delivery = randomUUID(), alter = false } = {},
    ) {
      const signature = await sign(secret, payload);
      // One byte changed after signing: the signature no longer covers what arrives.
      const sent = alter ? payload.replace('"ref"', '"reF"') : payload;
      return request(base, 'POST', address.inbox, {
        rawBody: sent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'GitHub-Hookshot/abc123',
          'x-github-event': event,
          'x-github-delivery': delivery,
          'x-hub-signature-256': signature,
        },
      });
    }

    it('PUT sets a sender with the defaults, GET shows it without a secret, DELETE removes it', async () => {
      const address = await createAddress(base);
      assertError(await sender(address, 'GET'), 404, 'sender_not_found');
      const put = await sender(address, 'PUT', { provider: 'github', secrets: ['s3cret-github-one'] });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.headers.get('cache-control'), 'no-store');
      assert.deepEqual(Object.keys(put.body), ['sender']);
      const { updated_at, ...rest } = put.body.sender;
      assert.deepEqual(rest, { provider: 'github', enforce: true, tolerance_seconds: 300, secrets: 1 });
      assert.ok(Math.abs(Date.parse(updated_at) - Date.now()) < 60_000);
      assert.ok(!put.text.includes('s3cret'), 'the secret is not returned');

      const got = await sender(address, 'GET');
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, put.body);

      const replaced = await sender(address, 'PUT', {
        provider: 'github',
        secrets: ['new-one', 'old-one'],
        enforce: false,
        tolerance_seconds: 60,
      });
      assert.equal(replaced.status, 200, replaced.text);
      assert.deepEqual(
        { ...replaced.body.sender, updated_at: 'x' },
        { provider: 'github', enforce: false, tolerance_seconds: 60, secrets: 2, updated_at: 'x' },
      );

      const deleted = await sender(address, 'DELETE');
      assert.equal(deleted.status, 204);
      assert.equal(deleted.text, '');
      assertError(await sender(address, 'GET'), 404, 'sender_not_found');
      assertError(await sender(address, 'DELETE'), 404, 'sender_not_found');
    });

    it('refuses what the issue bounds, and credentials that may not manage the sender', async () => {
      const address = await createAddress(base);
      const bad: unknown[] = [
        { secrets: ['x'] },
        { provider: 'github' },
        { provider: 'github', secrets: [] },
        { provider: 'github', secrets: ['a', 'b', 'c', 'd'] },
        { provider: 'github', secrets: [''] },
        { provider: 'github', secrets: ['x'.repeat(513)] },
        { provider: 'github', secrets: [42] },
        { provider: 'github', secrets: ['x'], tolerance_seconds: 0 },
        { provider: 'github', secrets: ['x'], tolerance_seconds: 86_401 },
        { provider: 'github', secrets: ['x'], tolerance_seconds: 1.5 },
        { provider: 'github', secrets: ['x'], enforce: 'yes' },
        { provider: 'github', secrets: ['x'], verify_token: 'vt' },
        { provider: 'github', secrets: ['x'], header: 'x-sig' },
        { provider: 'github', secrets: ['x'], surprise: 1 },
        { provider: 'gitlab', secrets: ['x'] },
        { provider: 'hmac_sha256', secrets: ['x'] },
        { provider: 'hmac_sha256', secrets: ['x'], header: 'bad header' },
        { provider: 'hmac_sha256', secrets: ['x'], header: 'x-sig', encoding: 'base32' },
        { provider: 'meta', secrets: ['x'] },
      ];
      for (const body of bad) assertError(await sender(address, 'PUT', body), 400, 'invalid_request');
      assertError(
        await request(base, 'PUT', `/api/v1/addresses/${address.id}/sender`, {
          rawBody: 'provider=github',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          token: address.token,
        }),
        415,
        'unsupported_media_type',
      );
      const good = { provider: 'github', secrets: ['x'] };
      assertError(await sender(address, 'PUT', good, 'roost_read_wrong'), 401, 'unauthorized');
      assertError(await request(base, 'GET', `/api/v1/addresses/${address.id}/sender`), 401, 'unauthorized');
      const view = await request(base, 'POST', `/api/v1/addresses/${address.id}/view-tokens`, {
        body: {},
        token: address.token,
      });
      for (const method of ['PUT', 'GET', 'DELETE'])
        assertError(
          await sender(address, method, method === 'PUT' ? good : undefined, view.body.view_token.token),
          403,
          'forbidden',
        );
      const other = { ...address, id: 'addr_doesnotexist000000000' };
      assertError(await sender(other, 'PUT', good), 404, 'address_not_found');
    });

    it('accepts every provider, and each answers for itself afterwards', async () => {
      for (const provider of PROVIDER_NAMES) {
        const address = await createAddress(base);
        const body: Record<string, unknown> = { provider, secrets: ['a-secret'] };
        if (provider === 'meta') body.verify_token = 'a-verify-token';
        if (provider === 'hmac_sha256') body.header = 'X-Signature';
        const res = await sender(address, 'PUT', body);
        assert.equal(res.status, 200, `${provider}: ${res.text}`);
        assert.equal(res.body.sender.provider, provider);
        // Unsigned, every scheme refuses the delivery (enforce defaults to true).
        const unsigned = await request(base, 'POST', address.inbox, { body: { data: {} } });
        assertError(unsigned, 401, 'signature_invalid');
      }
      assertError(
        await sender(await createAddress(base), 'PUT', { provider: 'mailgun', secrets: ['a'] }),
        400,
        'invalid_request',
      );
    });

    it('stores secrets sealed: not in the database, the logs or /metrics in clear', async () => {
      const address = await createAddress(base);
      const secret = `clear-text-secret-${randomUUID()}`;
      const put = await sender(address, 'PUT', { provider: 'github', secrets: [secret, `${secret}-older`] });
      assert.equal(put.status, 200, put.text);
      await github(address, secret, '{"ref":"refs/heads/main"}');
      await github(address, 'wrong', '{"ref":"refs/heads/main"}');
      const rows = await senderRows(server);
      assert.ok(rows.includes(address.id), 'the row is there');
      assert.ok(!rows.includes(secret), 'no secret in clear in the database');
      assert.ok(!rows.includes(Buffer.from(secret).toString('base64').slice(0, 16)), 'nor merely encoded');
      assert.ok(!server.logs().includes(secret), 'no secret in the logs');
      assert.ok(!(await request(base, 'GET', '/metrics')).text.includes(secret), 'no secret in /metrics');
    });

    it('github: a signed delivery is stored verified, typed by GitHub, keyed by its signed body; a retry queues nothing new', async () => {
      const address = await createAddress(base);
      await sender(address, 'PUT', { provider: 'github', secrets: ['gh-secret'] });
      const payload = '{"ref":"refs/heads/main","after":"abc","repository":{"full_name":"o/r"}}';
      const delivery = randomUUID();
      const first = await github(address, 'gh-secret', payload, { delivery });
      assert.equal(first.status, 202, first.text);
      const event = first.body.event;
      assert.equal(event.type, 'github.push');
      // X-GitHub-Delivery is not signed: the key is what the signature covers (docs/api.md §3.2).
      assert.equal(event.dedupe_key, bodyKey(payload));
      assert.deepEqual(event.data.verification, { provider: 'github', verified: true });
      assert.equal(Buffer.from(event.data.body_base64, 'base64').toString(), payload, 'the exact bytes are kept');
      assert.deepEqual(event.data.body.repository, { full_name: 'o/r' });
      assert.equal(event.data.headers['x-github-event'], 'push');

      const retry = await github(address, 'gh-secret', payload, { delivery });
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.body.duplicate, true);
      assert.equal(retry.body.event.id, event.id);

      const ping = await github(address, 'gh-secret', '{"zen":"Keep it logically awesome.","hook_id":1}', {
        event: 'ping',
      });
      assert.equal(ping.status, 202, ping.text);
      assert.equal(ping.body.event.type, 'github.ping', "GitHub's ping is an ordinary event");
      const page = await listEvents(base, address);
      assert.deepEqual(
        page.body.events.map((e: { type: string }) => e.type),
        ['github.push', 'github.ping'],
      );
    });

    it('github: a wrong secret, one altered byte or no signature is 401 and stores nothing', async () => {
      const address = await createAddress(base);
      await sender(address, 'PUT', { provider: 'github', secrets: ['gh-secret'] });
      const payload = '{"ref":"refs/heads/main"}';
      assertError(await github(address, 'not-the-secret', payload), 401, 'signature_invalid');
      assertError(await github(address, 'gh-secret', payload, { alter: true }), 401, 'signature_invalid');
      const unsigned = await request(base, 'POST', address.inbox, {
        rawBody: payload,
        headers: { 'content-type': 'application/json', 'x-github-event': 'push' },
      });
      assertError(unsigned, 401, 'signature_invalid');
      assert.match(unsigned.body.error.message, /missing_signature/);
      const forged = await request(base, 'POST', address.inbox, {
        rawBody: payload,
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
      });
      assertError(forged, 401, 'signature_invalid');
      assert.equal((await listEvents(base, address)).body.events.length, 0, 'nothing stored');
      const metrics = (await request(base, 'GET', '/metrics')).text;
      const rejected = /^roost_sender_deliveries_total\{provider="github",outcome="rejected"\} (\d+)$/m.exec(metrics);
      assert.ok(rejected && Number(rejected[1]) >= 4, 'counted in /metrics');
    });

    it('github: a rotated (older) secret still verifies', async () => {
      const address = await createAddress(base);
      await sender(address, 'PUT', { provider: 'github', secrets: ['gh-new', 'gh-old'] });
      for (const secret of ['gh-new', 'gh-old']) {
        const res = await github(address, secret, `{"ref":"${secret}"}`);
        assert.equal(res.status, 202, res.text);
        assert.deepEqual(res.body.event.data.verification, { provider: 'github', verified: true });
      }
      assertError(await github(address, 'gh-older-still', '{"ref":"x"}'), 401, 'signature_invalid');
    });

    it('github, enforce false: an unverified delivery is stored with verified false and its reason, apart from verified ones', async () => {
      const address = await createAddress(base);
      await sender(address, 'PUT', { provider: 'github', secrets: ['gh-secret'], enforce: false });
      const delivery = randomUUID();
      const forged = await github(address, 'wrong', '{"ref":"x"}', { delivery });
      assert.equal(forged.status, 202, forged.text);
      assert.deepEqual(forged.body.event.data.verification, {
        provider: 'github',
        verified: false,
        reason: 'mismatch',
      });
      assert.equal(forged.body.event.type, 'github.push');
      assert.equal(forged.body.event.dedupe_key, `unverified:${delivery}`);
      // The real delivery with that id is not shadowed by the forged one.
      const real = await github(address, 'gh-secret', '{"ref":"x"}', { delivery });
      assert.equal(real.status, 202, real.text);
      assert.equal(real.body.event.dedupe_key, bodyKey('{"ref":"x"}'));
      const unsigned = await request(base, 'POST', address.inbox, {
        rawBody: 'plain text',
        headers: { 'content-type': 'text/plain' },
      });
      assert.equal(unsigned.status, 202, unsigned.text);
      assert.equal(unsigned.body.event.type, 'webhook.received');
      assert.deepEqual(unsigned.body.event.data.verification, {
        provider: 'github',
        verified: false,
        reason: 'missing_signature',
      });
    });

    it('the inbox answers GET only for handshakes: 405 with Allow, and a wrong URL is the same 404 for every method', async () => {
      const address = await createAddress(base);
      const wrong = address.inbox.replace(/roost_ingress_.*/, 'roost_ingress_wrongwrongwrongwrongwrongwrongwrongwrong');
      for (const method of ['GET', 'POST']) {
        assertError(await request(base, method, wrong, method === 'GET' ? {} : { body: {} }), 404, 'inbox_not_found');
      }
      const plain = await request(base, 'GET', address.inbox);
      assertError(plain, 405, 'method_not_allowed');
      assert.equal(plain.headers.get('allow'), 'POST');
      await sender(address, 'PUT', { provider: 'github', secrets: ['gh'] });
      assertError(await request(base, 'GET', wrong), 404, 'inbox_not_found');
      const withSender = await request(base, 'GET', `${address.inbox}?challenge=abc`);
      assertError(withSender, 405, 'method_not_allowed');
      assert.equal(withSender.headers.get('allow'), 'POST');
      assert.equal((await listEvents(base, address)).body.events.length, 0);
    });

    it('handshakes are answered as the providers document them, nosniff and uncached, and store nothing', async () => {
      // Meta: GET hub.challenge against the verify token; a wrong token is refused even unenforced.
      const meta = await createAddress(base);
      await sender(meta, 'PUT', { provider: 'meta', secrets: ['app-secret'], verify_token: 'vt-1', enforce: false });
      const hub = (token: string) =>
        `${meta.inbox}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`;
      const answered = await request(base, 'GET', hub('vt-1'));
      assert.equal(answered.status, 200, answered.text);
      assert.equal(answered.text, '1158201444');
      assert.match(answered.headers.get('content-type') ?? '', /^text\/plain/);
      assert.equal(answered.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(answered.headers.get('cache-control'), 'no-store');
      assertError(await request(base, 'GET', hub('wrong')), 401, 'signature_invalid');
      assert.equal((await listEvents(base, meta)).body.events.length, 0);

      // Slack: a signed url_verification gets its challenge back; an unsigned one does not.
      const slack = await createAddress(base);
      await sender(slack, 'PUT', { provider: 'slack', secrets: ['slack-signing-secret'] });
      const body = JSON.stringify({
        token: 'x',
        challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
        type: 'url_verification',
      });
      const ts = String(Math.floor(Date.now() / 1000));
      const signature = `v0=${createHmac('sha256', 'slack-signing-secret').update(`v0:${ts}:${body}`).digest('hex')}`;
      const headers = { 'content-type': 'application/json', 'x-slack-request-timestamp': ts };
      const slackAnswer = await request(base, 'POST', slack.inbox, {
        rawBody: body,
        headers: { ...headers, 'x-slack-signature': signature },
      });
      assert.equal(slackAnswer.status, 200, slackAnswer.text);
      assert.equal(slackAnswer.text, '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P');
      assertError(
        await request(base, 'POST', slack.inbox, {
          rawBody: body,
          headers: { ...headers, 'x-slack-signature': 'v0=00' },
        }),
        401,
        'signature_invalid',
      );
      assert.equal((await listEvents(base, slack)).body.events.length, 0);

      // Microsoft Graph: the validation request (a POST with ?validationToken=) is echoed as text.
      const graph = await createAddress(base);
      await sender(graph, 'PUT', { provider: 'microsoft_graph', secrets: ['client-state-1'] });
      const validation = await request(base, 'POST', `${graph.inbox}?validationToken=Validation%3A%20Testing`, {
        rawBody: '',
        headers: { 'content-type': 'text/plain' },
      });
      assert.equal(validation.status, 200, validation.text);
      assert.equal(validation.text, 'Validation: Testing');
      assert.equal((await listEvents(base, graph)).body.events.length, 0);
    });

    it('stripe: an event signed by the Stripe SDK is stored verified, typed and keyed by its id', async () => {
      const address = await createAddress(base);
      await sender(address, 'PUT', { provider: 'stripe', secrets: ['whsec_new', 'whsec_old'] });
      const payload = JSON.stringify({
        id: 'evt_1NG8Du2eZvKYlo2CUI79vXWy',
        object: 'event',
        type: 'payment_intent.succeeded',
      });
      const stripe = new Stripe('sk_test_unused');
      const post = (secret: string) =>
        request(base, 'POST', address.inbox, {
          rawBody: payload,
          headers: {
            'content-type': 'application/json',
            'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }),
          },
        });
      const first = await post('whsec_old');
      assert.equal(first.status, 202, first.text);
      assert.equal(first.body.event.type, 'stripe.payment_intent.succeeded');
      assert.deepEqual(first.body.event.data.verification, { provider: 'stripe', verified: true });
      // Stripe's retry of the same event queues nothing new.
      const retry = await post('whsec_new');
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.body.duplicate, true);
      assert.equal(retry.body.event.id, first.body.event.id);
      assertError(await post('whsec_other'), 401, 'signature_invalid');
      assert.equal((await listEvents(base, address)).body.events.length, 1);
    });

    it('after DELETE the inbox takes CreateEvent JSON unverified again', async () => {
      const address = await createAddress(base);
      await sender(address, 'PUT', { provider: 'github', secrets: ['gh'] });
      assertError(
        await request(base, 'POST', address.inbox, { body: { type: 'task.done', data: {} } }),
        401,
        'signature_invalid',
      );
      assert.equal((await sender(address, 'DELETE')).status, 204);
      const res = await request(base, 'POST', address.inbox, { body: { type: 'task.done', data: { ok: true } } });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.event.type, 'task.done');
      assert.deepEqual(res.body.event.data, { ok: true });
    });

    it('hmac_sha256: hex or base64, with or without a prefix, any header name; ?type= applies, the key is the signed body', async () => {
      const body = 'amount=10&currency=eur';
      const hmac = (secret: string) => createHmac('sha256', secret).update(body);
      const variants = [
        { settings: { header: 'X-Signature' }, value: (s: string) => hmac(s).digest('hex') },
        {
          settings: { header: 'x-sig', encoding: 'hex', prefix: 'sha256=' },
          value: (s: string) => `sha256=${hmac(s).digest('hex')}`,
        },
        {
          settings: { header: 'Webhook-Signature', encoding: 'base64' },
          value: (s: string) => hmac(s).digest('base64'),
        },
        {
          settings: { header: 'x-b64', encoding: 'base64', prefix: 'v1,' },
          value: (s: string) => `v1,${hmac(s).digest('base64')}`,
        },
      ];
      for (const { settings, value } of variants) {
        const address = await createAddress(base);
        const put = await sender(address, 'PUT', { provider: 'hmac_sha256', secrets: ['k-new', 'k-old'], ...settings });
        assert.equal(put.status, 200, put.text);
        assert.equal(put.body.sender.header, settings.header.toLowerCase());
        assert.equal(put.body.sender.encoding, settings.encoding ?? 'hex');
        assert.equal(put.body.sender.prefix, settings.prefix ?? '');
        const send = (signature: string, extra: Record<string, string> = {}, query = '') =>
          request(base, 'POST', `${address.inbox}${query}`, {
            rawBody: body,
            headers: { 'content-type': 'application/x-www-form-urlencoded', [settings.header]: signature, ...extra },
          });
        const ok = await send(value('k-old'), { 'idempotency-key': 'order-1' }, '?type=payment.received');
        assert.equal(ok.status, 202, `${JSON.stringify(settings)}: ${ok.text}`);
        assert.equal(ok.body.event.type, 'payment.received');
        // Idempotency-Key is not signed: a replay under another key is still the same delivery.
        assert.equal(ok.body.event.dedupe_key, bodyKey(body));
        assert.deepEqual(ok.body.event.data.body, { amount: '10', currency: 'eur' });
        assert.deepEqual(ok.body.event.data.verification, { provider: 'hmac_sha256', verified: true });
        assert.equal((await send(value('k-new'), { 'idempotency-key': 'order-2' })).body.duplicate, true);
        assertError(await send(value('nope')), 401, 'signature_invalid');
        assertError(await send(''), 401, 'signature_invalid');
        if (settings.prefix)
          assertError(await send(value('k-new').slice(settings.prefix.length)), 401, 'signature_invalid');
        assert.equal((await listEvents(base, address)).body.events.length, 1);
      }
    });
  });
}

describe('the server key', () => {
  it('is generated 0600 into the data directory on first start and reused after a restart (sqlite)', async () => {
    const first = await startTestServer('sqlite');
    const dbPath = first.dbPath!;
    const keyPath = join(dirname(dbPath), 'secret.key');
    try {
      assert.equal(statSync(keyPath).mode & 0o777, 0o600);
      const key = readFileSync(keyPath, 'utf8');
      assert.equal(Buffer.from(key.trim(), 'base64').length, 32);
      const address = await createAddress(first.url);
      const put = await request(first.url, 'PUT', `/api/v1/addresses/${address.id}/sender`, {
        body: { provider: 'hmac_sha256', secrets: ['restart-secret'], header: 'x-sig' },
        token: address.token,
      });
      assert.equal(put.status, 200, put.text);
      await first.roost.close(); // stopped, its folder kept

      const again = await startTestServer('sqlite', { reuse: { dbPath } });
      try {
        assert.equal(readFileSync(keyPath, 'utf8'), key, 'the same key, not a new one');
        const inbox = `${again.url}${new URL(address.inbox).pathname}`;
        const res = await request(again.url, 'POST', inbox, {
          rawBody: 'hello',
          headers: { 'x-sig': createHmac('sha256', 'restart-secret').update('hello').digest('hex') },
        });
        assert.equal(res.status, 202, res.text);
        assert.deepEqual(res.body.event.data.verification, { provider: 'hmac_sha256', verified: true });
      } finally {
        await again.close();
      }
    } finally {
      await first.close(); // removes the folder
    }
  });

  it('is generated once when several processes start at the same moment: each reads the whole key that won', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-key-'));
    try {
      for (let round = 0; round < 3; round++) {
        const keyPath = join(dir, `secret-${round}.key`);
        const startAt = Date.now() + 1500;
        // Each process waits for the same instant, then asks for the key.
        const script = `
          import { keyFromFile } from ${JSON.stringify(new URL('../src/core/secret-box.ts', import.meta.url).href)};
          while (Date.now() < ${startAt});
          const { key, generated } = keyFromFile(${JSON.stringify(keyPath)});
          process.stdout.write(JSON.stringify({ key: key.toString('base64'), generated }));`;
        const runs = await Promise.all(
          Array.from({ length: 6 }, () =>
            execFileAsync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script]),
          ),
        );
        const answers = runs.map((run) => JSON.parse(run.stdout) as { key: string; generated: boolean });
        assert.equal(answers.filter((a) => a.generated).length, 1, 'exactly one process generated it');
        assert.equal(new Set(answers.map((a) => a.key)).size, 1, 'all hold the same key');
        assert.equal(readFileSync(keyPath, 'utf8').trim(), answers[0].key);
      }
      assert.deepEqual(
        readdirSync(dir).filter((name) => !/^secret-\d\.key$/.test(name)),
        [],
        'no draft left behind',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a malformed ROOST_SECRET_KEY at start', () => {
    for (const bad of ['short', Buffer.alloc(16).toString('base64'), 'not base64 at all!!'])
      assert.throws(() => loadConfig({ ROOST_SECRET_KEY: bad }), ConfigError);
    assert.equal(loadConfig({ ROOST_SECRET_KEY: 'ab'.repeat(32) }).secretKey?.length, 32);
  });

  it('seals with a fresh nonce per value, bound to its context; another key or context does not open it', () => {
    const box = new SecretBox(Buffer.alloc(32, 1));
    const a = box.seal('s3cret', 'ctx');
    assert.notEqual(a, box.seal('s3cret', 'ctx'));
    assert.ok(!a.includes('s3cret'));
    assert.equal(box.open(a, 'ctx'), 's3cret');
    assert.throws(() => box.open(a, 'other'), SecretKeyMismatch);
    assert.throws(() => new SecretBox(Buffer.alloc(32, 2)).open(a, 'ctx'), SecretKeyMismatch);
    const altered = a.slice(0, -2) + (a.endsWith('A') ? 'BB' : 'AA');
    assert.throws(() => box.open(altered, 'ctx'), SecretKeyMismatch);
  });

  for (const engine of ENGINES) {
    it(`a key that cannot open a stored sender fails safely: 503, nothing stored, a log line without the secret [${engine}]`, async (t) => {
      const skip = await engineSkipReason(engine);
      if (skip) return t.skip(`skipped: ${skip}`);
      const first = await startTestServer(engine);
      const reuse = { dbPath: first.dbPath, databaseUrl: first.databaseUrl };
      const address = await createAddress(first.url);
      const secret = `secret-${randomUUID()}`;
      await request(first.url, 'PUT', `/api/v1/addresses/${address.id}/sender`, {
        body: { provider: 'hmac_sha256', secrets: [secret], header: 'x-sig' },
        token: address.token,
      });
      // Stopped without dropping its database: the next server, with another key, takes it over.
      await first.roost.close();
      const other = await startTestServer(engine, {
        reuse,
        env: { ROOST_SECRET_KEY: Buffer.alloc(32, 9).toString('base64') },
      });
      try {
        const inbox = `${other.url}${new URL(address.inbox).pathname}`;
        const signed = createHmac('sha256', secret).update('hello').digest('hex');
        const res = await request(other.url, 'POST', inbox, { rawBody: 'hello', headers: { 'x-sig': signed } });
        assertError(res, 503, 'unavailable');
        assert.ok(res.headers.get('retry-after'));
        const events = await request(other.url, 'GET', `/api/v1/addresses/${address.id}/events`, {
          token: address.token,
        });
        assert.equal(events.body.events.length, 0, 'nothing stored');
        assert.match(other.logs(), new RegExp(`"addressId":"${address.id}".*ROOST_SECRET_KEY`));
        assert.ok(!other.logs().includes(secret));
        const shown = await request(other.url, 'GET', `/api/v1/addresses/${address.id}/sender`, {
          token: address.token,
        });
        assert.equal(shown.body.sender.secrets, 1, 'GET needs no secret opened');
        assert.match(
          (await request(other.url, 'GET', '/metrics')).text,
          /^roost_sender_deliveries_total\{provider="unknown",outcome="unavailable"\} 1$/m,
        );
        // Set again, the sender is sealed with this key and verifies.
        await request(other.url, 'PUT', `/api/v1/addresses/${address.id}/sender`, {
          body: { provider: 'hmac_sha256', secrets: [secret], header: 'x-sig' },
          token: address.token,
        });
        const retried = await request(other.url, 'POST', inbox, { rawBody: 'hello', headers: { 'x-sig': signed } });
        assert.equal(retried.status, 202, retried.text);
      } finally {
        await other.close();
        await first.close(); // drops the database (and the SQLite folder)
      }
    });
  }
});
