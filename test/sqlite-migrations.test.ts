// Migrations 3 and 4 rebuild SQLite tables (events indexed by an integer address key, then
// stored under keys led by the time): a file written by an earlier version must come out
// with every event as it was — ids, sequences, acknowledgements, idempotency keys, the
// sequence floor — and behave as before: dedupe, ack by id and up to, capacity, retention,
// deletion of an address with its events.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import { KEYS_PER_MS, newEventId } from '../src/storage/event-ids.js';
import { SQLITE_MIGRATIONS } from '../src/storage/sqlite/migrations.js';
import { addressRecord, appendInput } from './helpers/records.js';

/** A file as version `version` leaves it, with the migrations' own SQL. */
function versionFile(path: string, version: number): Database.Database {
  const db = new Database(path);
  db.exec(
    'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  for (const migration of SQLITE_MIGRATIONS.slice(0, version)) {
    db.exec(migration.sql);
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(migration.version, migration.name, Date.now());
  }
  return db;
}

/** Opens the file read-only for `check`, then requires it consistent: foreign keys, integrity. */
function inspectFile(path: string, check: (db: Database.Database) => void): void {
  const db = new Database(path, { readonly: true });
  try {
    check(db);
    assert.deepEqual(db.pragma('foreign_key_check'), []);
    assert.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
  } finally {
    db.close();
  }
}

test('SQLite: a version-2 file is upgraded in place (migration 3), every event kept as it was', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-migrate-'));
  try {
    const path = join(dir, 'roost.db');
    const v2 = versionFile(path, 2);
    const [a, b] = [addressRecord(), addressRecord()];
    const insertAddress = v2.prepare(
      `INSERT INTO addresses (id, slug, name, email, created_at, read_token_digest, ingress_secret_digest, last_sequence)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // a gave out 1..6; 5 and 6 are gone (the floor remembers 6). b holds 1..2.
    insertAddress.run(a.id, a.slug, a.name, a.email, a.createdAt, a.readTokenDigest, a.ingressSecretDigest, 6);
    insertAddress.run(b.id, b.slug, b.name, b.email, b.createdAt, b.readTokenDigest, b.ingressSecretDigest, 0);
    const insertEvent = v2.prepare(
      `INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const t = Date.now() - 60_000;
    insertEvent.run(newEventId(t), a.id, 1, 'message.received', 'https', '{"n":1}', null, null, t, null);
    insertEvent.run(
      newEventId(t + 1),
      a.id,
      2,
      'message.received',
      'https',
      '{"n":2}',
      '{"h":"v"}',
      null,
      t + 1,
      t + 5,
    );
    insertEvent.run(newEventId(t + 2), a.id, 3, 'build.finished', 'email', '{"n":3}', null, 'key-1', t + 2, null);
    insertEvent.run(newEventId(t + 3), a.id, 4, 'message.received', 'https', '{"n":4}', null, null, t + 3, null);
    insertEvent.run(newEventId(t + 4), b.id, 1, 'message.received', 'https', '{"b":1}', null, null, t + 4, null);
    insertEvent.run(newEventId(t + 5), b.id, 2, 'message.received', 'https', '{"b":2}', null, null, t + 5, null);
    v2.close();

    const storage = new SqliteStorage(path);
    try {
      const page = await storage.listEvents({ addressId: a.id, after: 0, limit: 100 });
      assert.deepEqual(
        page.events.map((e) => [
          e.sequence,
          e.type,
          e.source,
          e.dataJson,
          e.metadataJson,
          e.dedupeKey,
          e.createdAt,
          e.acknowledgedAt,
        ]),
        [
          [1, 'message.received', 'https', '{"n":1}', null, null, t, null],
          [2, 'message.received', 'https', '{"n":2}', '{"h":"v"}', null, t + 1, t + 5],
          [3, 'build.finished', 'email', '{"n":3}', null, 'key-1', t + 2, null],
          [4, 'message.received', 'https', '{"n":4}', null, null, t + 3, null],
        ],
      );
      assert.ok(page.events.every((e) => e.addressId === a.id));
      // The floor survived: 5 and 6 are never given out again.
      const next = await storage.appendEvent({ event: appendInput(a.id), capacity: 1000 });
      assert.equal(next.status === 'created' && next.event.sequence, 7);
      // The idempotency key still finds its event.
      const again = await storage.appendEvent({ event: appendInput(a.id, { dedupeKey: 'key-1' }), capacity: 1000 });
      assert.equal(again.status === 'duplicate' && again.event.id, page.events[2].id);
      // A queue of 5 at a capacity of 5, none acknowledged but 2: the eviction takes 2.
      assert.equal((await storage.appendEvent({ event: appendInput(a.id), capacity: 5 })).status, 'created');
      assert.deepEqual(
        (await storage.listEvents({ addressId: a.id, after: 0, limit: 100 })).events.map((e) => e.sequence),
        [1, 3, 4, 7, 8],
      );
      assert.equal(await storage.ackUpTo(a.id, 4, Date.now()), 3);
      // Deleting b takes its events, and only its.
      assert.equal((await storage.listEvents({ addressId: b.id, after: 0, limit: 100 })).events.length, 2);
      assert.equal(await storage.deleteAddress(b.id), true);
    } finally {
      await storage.close();
    }

    inspectFile(path, (after) => {
      assert.deepEqual(after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get(), {
        v: SQLITE_MIGRATIONS.at(-1)!.version,
      });
      assert.deepEqual(after.prepare('SELECT address_id, COUNT(*) AS n FROM events GROUP BY address_id').all(), [
        { address_id: a.id, n: 5 },
      ]);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SQLite: migration 4 stores each event under a key of its millisecond; the others stay findable by id', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-migrate-'));
  try {
    const path = join(dir, 'roost.db');
    const v3 = versionFile(path, 3);
    const a = addressRecord();
    v3.prepare(
      `INSERT INTO addresses (id, slug, name, email, created_at, read_token_digest, ingress_secret_digest)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(a.id, a.slug, a.name, a.email, a.createdAt, a.readTokenDigest, a.ingressSecretDigest);
    const insertEvent = v3.prepare<[string, number, number]>(
      `INSERT INTO events (id, address_key, address_id, sequence, type, source, data, created_at)
       VALUES (?, (SELECT key FROM addresses), '${a.id}', ?, 'message.received', 'https', '{}', ?)`,
    );
    const DAY = 86_400_000;
    const old = Date.now() - 40 * DAY;
    const recent = Date.now() - 1000;
    const events = [
      { id: newEventId(old), createdAt: old, placed: true },
      { id: newEventId(old), createdAt: old, placed: true }, // the same millisecond: the next key
      { id: newEventId(old - 1), createdAt: old, placed: false }, // the id's millisecond ended before created_at was taken
      { id: 'evt_Rand0mIdOfAnOlderVers1', createdAt: old, placed: false }, // before time-led ids
      { id: newEventId(recent), createdAt: recent, placed: true },
      { id: 'evt_AnotherRand0mOlderId2', createdAt: recent, placed: false },
    ];
    events.forEach((e, i) => insertEvent.run(e.id, i + 1, e.createdAt));
    v3.close();

    const storage = new SqliteStorage(path);
    try {
      const page = await storage.listEvents({ addressId: a.id, after: 0, limit: 100 });
      assert.deepEqual(
        page.events.map((e) => [e.id, e.sequence, e.createdAt]),
        events.map((e, i) => [e.id, i + 1, e.createdAt]),
      );
      // Every event is found by its id, placed or not.
      for (const e of events) assert.equal((await storage.ackEvent(a.id, e.id, Date.now()))?.id, e.id);
      inspectFile(path, (reader) => {
        const unplaced = reader
          .prepare<[], { id: string }>('SELECT id FROM unplaced_event_ids ORDER BY event_key')
          .all()
          .map((r) => r.id);
        assert.deepEqual(
          unplaced,
          events.filter((e) => !e.placed).map((e) => e.id),
        );
      });
      // A new event in the millisecond of a migrated one takes the next key.
      const next = await storage.appendEvent({ event: appendInput(a.id, { createdAt: recent }), capacity: 1000 });
      assert.equal(next.status === 'created' && next.event.sequence, 7);
      // Retention takes the old events, unplaced ones too, and nothing else.
      assert.equal((await storage.purge(Date.now(), Date.now() - 30 * DAY)).eventsPurged, 4);
      assert.deepEqual(
        (await storage.listEvents({ addressId: a.id, after: 0, limit: 100 })).events.map((e) => e.sequence),
        [5, 6, 7],
      );
    } finally {
      await storage.close();
    }

    inspectFile(path, (after) => {
      // The key is the table's INTEGER PRIMARY KEY, which VACUUM never renumbers (an implicit rowid, SQLite says, it may).
      const columns = after.pragma('table_info(events)') as { pk: number; name: string; type: string }[];
      const pk = columns.filter((c) => c.pk > 0);
      assert.deepEqual(
        pk.map((c) => [c.name, c.type]),
        [['key', 'INTEGER']],
      );
      const keys = after
        .prepare<[], { key: number; id: string }>('SELECT rowid AS key, id FROM events ORDER BY sequence')
        .all();
      const first = recent * KEYS_PER_MS;
      assert.deepEqual(
        keys.map((k) => k.key),
        [first, 6, first + 1],
        'placed in its millisecond, or kept its old rowid',
      );
      assert.deepEqual(after.prepare('SELECT event_key, id FROM unplaced_event_ids').all(), [
        { event_key: 6, id: events[5].id },
      ]);
      assert.deepEqual(
        after
          .prepare("SELECT name FROM sqlite_schema WHERE tbl_name = 'events' AND type = 'index' ORDER BY name")
          .all()
          .map((r) => (r as { name: string }).name),
        ['events_acknowledged', 'events_by_dedupe_key', 'events_by_sequence'],
        'no index on ids or on age',
      );
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
