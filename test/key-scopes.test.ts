// Idempotency keys are scoped to how a delivery came (docs/api.md §3): an HTTP delivery (the
// inbox, raw capture) only ever matches events delivered over HTTP, an email only other
// emails. Otherwise an inbox URL, which may write and nothing else, could read an email by
// posting its Message-ID as the Idempotency-Key. End to end over real HTTP and SMTP on every
// engine, and on a database migrated from the version before the scopes (SQLite migration 9,
// PostgreSQL migration 6), where existing rows get the scope of what they are.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { PostgresStorage } from '../src/storage/postgres/engine.js';
import { PG_MIGRATIONS } from '../src/storage/postgres/migrations.js';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import { msOfId, newEventId } from '../src/storage/event-ids.js';
import { SQLITE_MIGRATIONS } from '../src/storage/sqlite/migrations.js';
import type { Storage } from '../src/storage/storage.js';
import { createAddress, deliver, listEvents, type CreatedAddress } from './helpers/http.js';
import { createTestDatabase, postgresSkipReason, withClient } from './helpers/postgres.js';
import { addressRecord, appendInput } from './helpers/records.js';
import { ENGINES, engineSkipReason, startTestServer, type TestServer } from './helpers/server.js';
import { SmtpDialogue, message } from './helpers/smtp.js';

const DOMAIN = 'mail.roost.test';
const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};

async function sendMail(port: number, to: string, messageId: string, body: string) {
  const smtp = await SmtpDialogue.open(port);
  const replies = await smtp.send(
    'sender@example.org',
    [to],
    message({ From: 'sender@example.org', Subject: 'secret answer', 'Message-ID': messageId }, body),
  );
  await smtp.quit();
  assert.equal(replies.at(-1)!.code, 250, replies.at(-1)!.text);
}

async function queue(server: TestServer, address: CreatedAddress): Promise<any[]> {
  const res = await listEvents(server.url, address, 'limit=100');
  assert.equal(res.status, 200);
  return res.body.events;
}

for (const engine of ENGINES) {
  const skip = await engineSkipReason(engine);
  describe(`idempotency keys per source [${engine}]`, { skip: skip ? `skipped: ${skip}` : false }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(engine, {
        env: { ROOST_MAIL_DOMAIN: DOMAIN },
        smtp: { port: 0, dnsResolver: offline },
      });
    });
    after(() => server?.close());

    test("an inbox delivery keyed with an email's Message-ID is a new event: the email is not returned", async () => {
      const address = await createAddress(server.url);
      await sendMail(server.roost.smtpPort!, address.email, '<question-1@example.org>', 'The launch code is 1234.');
      const [email] = await queue(server, address);
      assert.equal(email.dedupe_key, '<question-1@example.org>');

      const res = await deliver(address.inbox, { data: { probe: true } }, { 'idempotency-key': email.dedupe_key });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.duplicate, false);
      assert.notEqual(res.body.event.id, email.id);
      assert.deepEqual(res.body.event.data, { probe: true });
      assert.doesNotMatch(res.text, /launch code/);
      // The body's dedupe_key is the same key by another name: no way round.
      const viaBody = await deliver(address.inbox, { dedupe_key: email.dedupe_key });
      assert.equal(viaBody.status, 200);
      assert.equal(viaBody.body.event.id, res.body.event.id, 'matched the HTTP delivery, not the email');
      // A raw capture is an HTTP delivery too.
      const raw = await deliver(`${address.inbox}?raw=1`, 'x', {
        'content-type': 'text/plain',
        'idempotency-key': email.dedupe_key,
      });
      assert.equal(raw.status, 200);
      assert.equal(raw.body.event.id, res.body.event.id);
      assert.doesNotMatch(raw.text, /launch code/);

      // Within each scope a repeat is still a repeat.
      await sendMail(server.roost.smtpPort!, address.email, '<question-1@example.org>', 'The launch code is 1234.');
      assert.deepEqual(
        (await queue(server, address)).map((e) => [e.id, e.source]),
        [
          [email.id, 'email'],
          [res.body.event.id, 'https'],
        ],
      );
    });

    test('an email whose Message-ID equals an HTTP delivery’s key is queued, not taken for a repeat', async () => {
      const address = await createAddress(server.url);
      const key = '<callback-7@example.org>';
      const first = await deliver(address.inbox, { data: { n: 1 } }, { 'idempotency-key': key });
      assert.equal(first.status, 202);
      await sendMail(server.roost.smtpPort!, address.email, key, 'a real email');
      const events = await queue(server, address);
      assert.deepEqual(
        events.map((e) => [e.sequence, e.type, e.dedupe_key]),
        [
          [1, 'message.received', key],
          [2, 'email.received', key],
        ],
      );
      assert.match(events[1].data.text, /a real email/);
      // And the HTTP repeat still finds its own event.
      const again = await deliver(address.inbox, { data: { n: 2 } }, { 'idempotency-key': key });
      assert.equal(again.status, 200);
      assert.equal(again.body.event.id, first.body.event.id);
    });
  });
}

/** Events as the version before scopes held them: one email, one HTTP delivery, one forged pair. */
const OLD_EVENTS = [
  { sequence: 1, type: 'email.received', source: 'email', key: '<mail-1@example.org>', scope: 'email' },
  { sequence: 2, type: 'message.received', source: 'https', key: 'http-key', scope: 'http' },
  { sequence: 3, type: 'message.received', source: 'email', key: 'sender-chose-source', scope: 'http' },
] as const;

/** After the migration: each old key is found by its own scope only. */
async function checkMigrated(storage: Storage, addressId: string, ids: string[]) {
  for (const [i, old] of OLD_EVENTS.entries()) {
    const same = await storage.appendEvent({
      event: appendInput(addressId, { dedupeKey: old.key, keyScope: old.scope }),
      capacity: 1000,
    });
    assert.equal(same.status, 'duplicate', `${old.key} in its own scope`);
    assert.equal(same.status === 'duplicate' && same.event.id, ids[i]);
    const other = old.scope === 'http' ? ('email' as const) : ('http' as const);
    const across = await storage.appendEvent({
      event: appendInput(addressId, { dedupeKey: old.key, keyScope: other }),
      capacity: 1000,
    });
    assert.equal(across.status, 'created', `${old.key} from the other scope`);
    // The new event is now the one its own scope finds.
    const repeat = await storage.appendEvent({
      event: appendInput(addressId, { dedupeKey: old.key, keyScope: other }),
      capacity: 1000,
    });
    assert.equal(repeat.status === 'duplicate' && repeat.event.id, across.status === 'created' && across.event.id);
  }
  const page = await storage.listEvents({ addressId, after: 0, limit: 100 });
  assert.deepEqual(
    page.events.map((e) => e.sequence),
    [1, 2, 3, 4, 5, 6],
  );
  assert.equal(page.latestSequence, 6);
}

test('SQLite: a version-7 file gets key scopes from what each event is (migration 9)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-scopes-'));
  try {
    const path = join(dir, 'roost.db');
    const db = new Database(path);
    // Migration 4 places events by the millisecond of their id (migrate() registers it too).
    db.function('roost_ms_of_id', { deterministic: true }, (id: unknown) =>
      typeof id === 'string' ? msOfId(id) : null,
    );
    db.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    for (const migration of SQLITE_MIGRATIONS.filter((m) => m.version < 9)) {
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(migration.version, migration.name, Date.now());
    }
    const a = addressRecord();
    db.prepare(
      `INSERT INTO addresses (id, slug, name, email, created_at, read_token_digest, ingress_secret_digest)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(a.id, a.slug, a.name, a.email, a.createdAt, a.readTokenDigest, a.ingressSecretDigest);
    const t = Date.now() - 1000;
    const ids = OLD_EVENTS.map((_, i) => newEventId(t + i));
    for (const [i, e] of OLD_EVENTS.entries()) {
      db.prepare(
        `INSERT INTO events (key, id, address_key, address_id, sequence, type, source, data, dedupe_key, created_at)
         VALUES (?, ?, (SELECT key FROM addresses), ?, ?, ?, ?, '{}', ?, ?)`,
      ).run((t + i) * 1024, ids[i], a.id, e.sequence, e.type, e.source, e.key, t + i);
    }
    db.close();

    const storage = new SqliteStorage(path);
    try {
      await checkMigrated(storage, a.id, ids);
    } finally {
      await storage.close();
    }
    const after = new Database(path, { readonly: true });
    try {
      assert.deepEqual(
        after.prepare('SELECT sequence, key_scope FROM events WHERE sequence <= 3 ORDER BY sequence').all(),
        OLD_EVENTS.map((e) => ({ sequence: e.sequence, key_scope: e.scope })),
      );
      assert.deepEqual(after.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
    } finally {
      after.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const pgSkip = await postgresSkipReason();
test(
  'PostgreSQL: a database at the version before gets key scopes from what each event is (migration 6)',
  { skip: pgSkip ? `skipped: ${pgSkip}` : false },
  async () => {
    const database = await createTestDatabase();
    try {
      const a = addressRecord();
      const t = Date.now() - 1000;
      const ids = OLD_EVENTS.map((_, i) => newEventId(t + i));
      await withClient(database.url, async (client) => {
        await client.query(
          'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
        );
        for (const migration of PG_MIGRATIONS.filter((m) => m.version < 6)) {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations VALUES ($1, $2, $3)', [
            migration.version,
            migration.name,
            Date.now(),
          ]);
        }
        await client.query(
          `INSERT INTO addresses (id, slug, name, email, created_at, read_token_digest, ingress_secret_digest, last_sequence)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 3)`,
          [a.id, a.slug, a.name, a.email, a.createdAt, a.readTokenDigest, a.ingressSecretDigest],
        );
        for (const [i, e] of OLD_EVENTS.entries()) {
          await client.query(
            `INSERT INTO events (id, address_id, sequence, type, source, data, dedupe_key, created_at)
             VALUES ($1, $2, $3, $4, $5, '{}', $6, $7)`,
            [ids[i], a.id, e.sequence, e.type, e.source, e.key, t + i],
          );
        }
      });

      const storage = await PostgresStorage.open(loadConfig({ DATABASE_URL: database.url }));
      try {
        await checkMigrated(storage, a.id, ids);
      } finally {
        await storage.close();
      }
      const scopes = await withClient(
        database.url,
        async (client) =>
          (await client.query('SELECT sequence::int, key_scope FROM events WHERE sequence <= 3 ORDER BY sequence'))
            .rows,
      );
      assert.deepEqual(
        scopes,
        OLD_EVENTS.map((e) => ({ sequence: e.sequence, key_scope: e.scope })),
      );
    } finally {
      await database.drop();
    }
  },
);
