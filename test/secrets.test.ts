// Secrets stay secret (docs/api.md §1): the database file, its WAL, the logs and the metrics
// never hold a read token or an ingress secret in clear, only their SHA-256 digests; ids
// and secrets carry the entropy the contract promises; slugs have its shape; and one
// address's credentials open nothing of another's (docs/api.md §5).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { digestSecret, secretMatches } from '../src/core/secrets.js';

const sha256hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const secretOf = (address: CreatedAddress) => new URL(address.inbox).pathname.split('/').pop()!;

/** Every form in which a credential could leak: whole, its random part, and that part in other encodings. */
function leakForms(secret: string): string[] {
  const random = secret.replace(/^roost_(read|ingress)_/, '');
  assert.notEqual(random, secret, 'the secret has its prefix');
  const bytes = Buffer.from(random, 'base64url');
  return [secret, random, bytes.toString('hex'), bytes.toString('base64'), encodeURIComponent(secret)];
}

/** Every file of the SQLite database (main file, -wal, -shm, journals), concatenated. */
function databaseBytes(dbPath: string): Buffer {
  const dir = dirname(dbPath);
  const files = readdirSync(dir).filter((f) => f.startsWith('roost.db'));
  assert.ok(files.includes('roost.db'), `database file missing in ${files.join(', ')}`);
  return Buffer.concat(files.map((f) => readFileSync(join(dir, f))));
}

describe('tokens and ingress secrets never appear in clear (docs/api.md §1)', () => {
  let server: TestServer;
  const addresses: CreatedAddress[] = [];
  let deleted: CreatedAddress;

  before(async () => {
    // The chattiest log level: whatever is logged at all is checked.
    server = await startTestServer('sqlite', { env: { LOG_LEVEL: 'trace' } });
    for (let i = 0; i < 3; i++)
      addresses.push(await createAddress(server.url, { name: `secret keeper ${i}`, task_id: `task-${i}` }));
    deleted = await createAddress(server.url, { name: 'to be deleted' });

    // Use every credential the ways a client would, and the ways a confused one would.
    for (const [i, a] of addresses.entries()) {
      const other = addresses[(i + 1) % addresses.length];
      const secret = secretOf(a);
      // A held long-poll woken by a delivery.
      const poll = listEvents(server.url, a, 'after=0&wait=5');
      await waitForHeldPoll(server);
      const delivered = await deliver(a.inbox, { type: 'secret.test', data: { i } }, { 'idempotency-key': `key-${i}` });
      assert.equal(delivered.status, 202, delivered.text);
      assert.equal((await poll).body.events.length, 1);
      await deliver(a.inbox, { data: 'again' }, { 'idempotency-key': `key-${i}` }); // duplicate
      await request(a.inbox, 'POST', `${a.inbox}?raw=1`, {
        rawBody: 'a=1&b=2',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${a.token}` },
      });
      await request(server.url, 'GET', `/api/v1/addresses/${a.id}`, { token: a.token });
      await request(server.url, 'POST', `/api/v1/addresses/${a.id}/events/${delivered.body.event.id}/ack`, {
        token: a.token,
      });
      // Failing ones: another address's token, a token sent as the wrong scheme, a
      // wrong secret, the right secret on the wrong address, wrong methods, bad bodies.
      await request(server.url, 'GET', `/api/v1/addresses/${other.id}`, { token: a.token });
      await request(server.url, 'GET', `/api/v1/addresses/${a.id}/events`, {
        headers: { authorization: `Basic ${a.token}` },
      });
      await request(server.url, 'GET', `/api/v1/addresses/${a.id}/events`, { token: secret });
      await request(server.url, 'GET', `/api/v1/addresses/addr_unknown/events`, { token: a.token });
      await request(server.url, 'POST', `/api/v1/inbox/${other.id}/${secret}`, { body: { data: 1 } });
      await request(server.url, 'POST', `/api/v1/inbox/${a.id}/${a.token}`, { body: { data: 1 } });
      await request(server.url, 'GET', a.inbox);
      await request(server.url, 'POST', `${a.inbox}/extra`, { body: {} });
      await request(server.url, 'POST', a.inbox, { rawBody: '{', headers: { 'content-type': 'application/json' } });
      await request(server.url, 'POST', a.inbox, { rawBody: 'x', headers: { 'content-type': 'text/plain' } });
      await request(server.url, 'POST', a.inbox, { body: { unknown: a.token } });
      await request(server.url, 'POST', a.inbox, { body: { data: 'x'.repeat(300 * 1024) } });
      await request(server.url, 'POST', `/api/v1/inbox/${a.id}/%zz${secret}`, { body: {} });
      await request(server.url, 'POST', `/api/v1/addresses/${a.id}/events/evt_unknown/ack`, { token: a.token });
    }
    const res = await request(server.url, 'DELETE', `/api/v1/addresses/${deleted.id}`, { token: deleted.token });
    assert.equal(res.status, 204);
    await request(server.url, 'GET', `/api/v1/addresses/${deleted.id}`, { token: deleted.token });
    await deliver(deleted.inbox, { data: 'gone' });
  });

  after(async () => {
    await server?.close();
  });

  const allSecrets = () => [...addresses, deleted].flatMap((a) => [a.token, secretOf(a)]);

  test('the SQLite file and its WAL hold digests, never the secrets', async () => {
    const bytes = databaseBytes(server.dbPath!);
    const text = bytes.toString('latin1');
    for (const secret of allSecrets()) {
      for (const form of leakForms(secret))
        assert.ok(!text.includes(form), `the database holds ${form.slice(0, 16)}… in clear`);
    }
    // Proof that these are the right bytes: the live addresses' digests are in them.
    for (const a of addresses) {
      assert.ok(text.includes(sha256hex(a.token)), 'the read token digest is stored');
      assert.ok(text.includes(sha256hex(secretOf(a))), 'the ingress secret digest is stored');
      assert.ok(text.includes(a.id));
    }
  });

  test('the logs hold neither the secrets nor the token, and do log the requests', async () => {
    const logs = server.logs();
    for (const secret of allSecrets()) {
      for (const form of leakForms(secret))
        assert.ok(!logs.includes(form), `the logs hold ${form.slice(0, 16)}… in clear`);
    }
    // Proof that the logs were looked at: inbox requests are logged, with the secret cut out.
    for (const a of addresses)
      assert.ok(logs.includes(`/api/v1/inbox/${a.id}/`), `no log line for the inbox of ${a.id}`);
    assert.ok(logs.includes(`/api/v1/addresses/${addresses[0].id}`));
  });

  test('the metrics hold neither the secrets nor the token', async () => {
    const metrics = await request(server.url, 'GET', '/metrics');
    assert.equal(metrics.status, 200);
    assert.ok(metrics.text.includes('roost_deliveries_total'));
    for (const secret of allSecrets()) for (const form of leakForms(secret)) assert.ok(!metrics.text.includes(form));
  });

  test('after a clean shutdown (WAL checkpointed into the main file) the file still holds no secret', async () => {
    await server.roost.close();
    const bytes = databaseBytes(server.dbPath!).toString('latin1');
    for (const secret of allSecrets()) for (const form of leakForms(secret)) assert.ok(!bytes.includes(form));
    assert.ok(bytes.includes(sha256hex(addresses[0].token)));
    assert.ok(existsSync(server.dbPath!));
  });
});

async function waitForHeldPoll(server: TestServer): Promise<void> {
  // The poll is held once the server counts it; no sleeping on a guess.
  for (let i = 0; i < 1000; i++) {
    if (server.roost.waiters.held > 0) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error('the long-poll was never held');
}

// --- shape and entropy -------------------------------------------------------------------

const B64URL = /^[A-Za-z0-9_-]+$/;

/** Random parts: all distinct, of one length, whose alphabet and length give at least `bits`. */
function assertEntropy(values: string[], prefix: string, bits: number): void {
  const parts = values.map((v) => {
    assert.ok(v.startsWith(prefix), `${v} lacks ${prefix}`);
    const part = v.slice(prefix.length);
    assert.match(part, B64URL, 'URL-safe, no padding');
    return part;
  });
  assert.equal(new Set(parts).size, parts.length, 'all distinct');
  const length = Math.min(...parts.map((p) => p.length));
  // The alphabet actually used: with hundreds of samples every letter of a 64- (or
  // 62-) letter alphabet shows up, so a narrower or skewed generator cannot hide.
  const alphabet = new Set(parts.join(''));
  assert.ok(alphabet.size >= 62, `alphabet of ${alphabet.size} letters only`);
  assert.ok(
    length * Math.log2(alphabet.size) >= bits,
    `${length} letters of ${alphabet.size} carry fewer than ${bits} bits`,
  );
  // No position is fixed (e.g. a timestamp or counter prefix): the first letters vary.
  for (let i = 0; i < Math.min(length - 1, 8); i++)
    assert.ok(new Set(parts.map((p) => p[i])).size > 8, `position ${i} barely varies`);
}

describe('identifiers, secrets and slugs have the contract shape (docs/api.md §1)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(async () => {
    await server?.close();
  });

  test('addr_ ≥ 128 bits, evt_ time + 128 bits, roost_read_ and roost_ingress_ ≥ 256 bits, all URL-safe', async () => {
    const created = await Promise.all(Array.from({ length: 150 }, () => createAddress(server.url)));
    assertEntropy(
      created.map((a) => a.id),
      'addr_',
      128,
    );
    assertEntropy(
      created.map((a) => a.token),
      'roost_read_',
      256,
    );
    assertEntropy(created.map(secretOf), 'roost_ingress_', 256);
    const target = created[0];
    const before = Date.now();
    const events = await Promise.all(Array.from({ length: 150 }, (_, i) => deliver(target.inbox, { data: i })));
    const after = Date.now();
    // evt_ ids lead with their creation time (12 hex digits of ms), then 128 random bits.
    const eventIds: string[] = events.map((r) => r.body.event.id);
    for (const id of eventIds) {
      assert.match(id, /^evt_[0-9a-f]{12}[A-Za-z0-9_-]{22}$/);
      const at = parseInt(id.slice(4, 16), 16);
      assert.ok(at >= before && at <= after, `${id} carries ${at}, not a time of this test`);
    }
    assertEntropy(
      eventIds.map((id) => `evt_${id.slice(16)}`),
      'evt_',
      128,
    );
    // The inbox URL has exactly the contract's shape.
    for (const a of created.slice(0, 5)) {
      assert.equal(a.response.endpoints.inbox_url, `${server.config.baseUrl}/api/v1/inbox/${a.id}/${secretOf(a)}`);
      assert.notEqual(a.token.slice('roost_read_'.length), secretOf(a).slice('roost_ingress_'.length));
    }
  });

  test('slugs of arbitrary (unicode) names: ^[a-z0-9]+(-[a-z0-9]+)*$, ≤ 40 chars, the email local part, random', async () => {
    const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
    const codePoints = (s: string) => [...s].length;
    // A NUL is refused in any stored text (test/nul-text.test.ts); every other character is fair.
    const name = fc
      .oneof(
        fc.string({ unit: 'binary', maxLength: 100 }),
        fc.string({ unit: 'grapheme', maxLength: 100 }).filter((s) => codePoints(s) <= 100),
        fc.constantFrom(
          'Déjà vu — café',
          'ÆØÅ',
          '日本語のタスク',
          '---',
          '   ',
          'A'.repeat(100),
          'İstanbul ß ﬁ',
          '\u0001\u200b\ufeff',
          'a--b__c',
          '1234567890'.repeat(10),
        ),
      )
      .filter((s) => !s.includes('\u0000'));
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.option(name, { nil: undefined }), async (n) => {
        const res = await request(server.url, 'POST', '/api/v1/addresses', {
          body: n === undefined ? {} : { name: n },
        });
        assert.equal(res.status, 201, res.text);
        const { slug, email, name: stored } = res.body.address;
        assert.match(slug, SLUG);
        assert.ok(slug.length <= 40, `${slug} is longer than 40`);
        assert.equal(email, `${slug}@${server.config.mailDomain}`);
        assert.equal(stored, n ?? 'Untitled');
        assert.ok(!seen.has(slug), 'slugs are unique');
        seen.add(slug);
        // At least 40 random bits: the same name twice gives two different slugs.
        const again = await request(server.url, 'POST', '/api/v1/addresses', {
          body: n === undefined ? {} : { name: n },
        });
        assert.notEqual(again.body.address.slug, slug);
        seen.add(again.body.address.slug);
      }),
      { numRuns: 60 },
    );
  });

  test("another address's token gives 401, another address's secret 404, and a secret is no token", async () => {
    const [a, b] = await Promise.all([createAddress(server.url), createAddress(server.url)]);
    const sent = await deliver(a.inbox, { data: 'for a' });
    const evt = sent.body.event.id;
    const routes: Array<[string, string]> = [
      ['GET', `/api/v1/addresses/${a.id}`],
      ['GET', `/api/v1/addresses/${a.id}/events`],
      ['POST', `/api/v1/addresses/${a.id}/events/${evt}/ack`],
      ['DELETE', `/api/v1/addresses/${a.id}`],
    ];
    for (const [method, path] of routes) {
      for (const token of [b.token, secretOf(a), `${a.token}x`, a.token.slice(0, -1), a.token.toUpperCase()]) {
        const res = await request(server.url, method, path, { token });
        assert.equal(res.status, 401, `${method} ${path} with a wrong token: ${res.text}`);
        assert.equal(res.body.error.code, 'unauthorized');
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
    }
    // The inbox: b's secret on a's address, a's token as a secret: the same 404 as any miss.
    for (const path of [
      `/api/v1/inbox/${a.id}/${secretOf(b)}`,
      `/api/v1/inbox/${a.id}/${a.token}`,
      `/api/v1/inbox/${b.id}/${secretOf(a)}`,
    ]) {
      const res = await request(server.url, 'POST', path, { body: { data: 'intruder' } });
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.error.code, 'inbox_not_found');
    }
    // Nothing reached a's queue, and a's own credentials still work.
    const page = await listEvents(server.url, a);
    assert.deepEqual(
      page.body.events.map((e: any) => e.id),
      [evt],
    );
    assert.equal((await request(server.url, 'DELETE', `/api/v1/addresses/${a.id}`, { token: a.token })).status, 204);
  });
});

test('secretMatches: exactly the secret whose digest is stored, whatever secret or digest is presented', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (secret, other) => {
      const stored = digestSecret(secret);
      assert.equal(stored, sha256hex(secret), 'the stored form is hex SHA-256 of the UTF-8 secret');
      assert.equal(secretMatches(secret, stored), true);
      assert.equal(secretMatches(other, stored), other === secret);
    }),
  );
  const secret = 'roost_ingress_abc';
  const stored = digestSecret(secret);
  // A digest of another length or form (a hand-edited row) opens nothing, and throws nothing.
  for (const digest of ['', stored.slice(1), `${stored}0`, stored.toUpperCase(), 'é'.repeat(64)])
    assert.equal(secretMatches(secret, digest), false, JSON.stringify(digest));
});
