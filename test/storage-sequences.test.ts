// "Sequences are never reused, not even after deletions" (docs/api.md §3), at the storage
// interface of both engines, for every way an event can leave: eviction of the newest
// event, retention purging the whole queue, and an ack-then-evict of everything. SQLite
// keeps no per-append record of the last sequence (migration 2): the next one is derived
// from the events held and a floor that a trigger raises on every delete. An eviction is
// always followed by a higher insert, so it is the retention case that needs the floor
// (it fails without the trigger). Also: a version-1 SQLite file upgrades in place.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { newEventId } from '../src/storage/event-ids.js';
import { addressRecord, appendInput } from './helpers/records.js';
import { PostgresStorage } from '../src/storage/postgres/engine.js';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import { SQLITE_MIGRATIONS } from '../src/storage/sqlite/migrations.js';
import type { Storage } from '../src/storage/storage.js';
import { createTestDatabase, postgresSkipReason, type TestDatabase } from './helpers/postgres.js';

const DAY = 86_400_000;
async function append(storage: Storage, addressId: string, capacity: number, createdAt?: number): Promise<number> {
  const result = await storage.appendEvent({
    event: appendInput(addressId, createdAt === undefined ? {} : { createdAt }),
    capacity: capacity,
  });
  assert.equal(result.status, 'created');
  return (result as { event: { sequence: number } }).event.sequence;
}

async function sequencesHeld(storage: Storage, addressId: string): Promise<number[]> {
  return (await storage.listEvents({ addressId, after: 0, limit: 1000 })).events.map((e) => e.sequence);
}

interface Opened {
  storage: Storage;
  close(): Promise<void>;
}

const postgresSkip = await postgresSkipReason();
const engines: Array<{ name: string; skip?: string; open(): Promise<Opened> }> = [
  {
    name: 'sqlite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'roost-seq-'));
      const storage = new SqliteStorage(join(dir, 'roost.db'));
      return { storage, close: async () => (await storage.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  {
    name: 'postgres',
    skip: postgresSkip,
    async open() {
      const db: TestDatabase = await createTestDatabase();
      const storage = await PostgresStorage.open(loadConfig({ DATABASE_URL: db.url }));
      return { storage, close: async () => (await storage.close(), await db.drop()) };
    },
  },
];

for (const engine of engines) {
  describe(
    `sequences are never reused after deletions [${engine.name}]`,
    { skip: engine.skip ? `skipped: ${engine.skip}` : false },
    () => {
      let opened: Opened;
      before(async () => {
        opened = await engine.open();
      });
      after(async () => {
        await opened?.close();
      });

      test('evicting the newest event (the only acknowledged one) does not hand its sequence out again', async () => {
        const { storage } = opened;
        const a = addressRecord();
        await storage.insertAddress(a);
        for (let i = 1; i <= 3; i++) assert.equal(await append(storage, a.id, 3), i);
        const newest = (await storage.listEvents({ addressId: a.id, after: 2, limit: 1 })).events[0];
        assert.ok(await storage.ackEvent(a.id, newest.id, Date.now()));
        // Full, with only sequence 3 acknowledged: it is evicted, and 4 is next, not 3.
        assert.equal(await append(storage, a.id, 3), 4);
        assert.deepEqual(await sequencesHeld(storage, a.id), [1, 2, 4]);
        assert.ok(
          await storage.ackEvent(
            a.id,
            (await storage.listEvents({ addressId: a.id, after: 3, limit: 1 })).events[0].id,
            Date.now(),
          ),
        );
        assert.equal(await append(storage, a.id, 3), 5);
        assert.deepEqual(await sequencesHeld(storage, a.id), [1, 2, 5]);
      });

      test('after retention has purged the whole queue, sequences go on from the last one', async () => {
        const { storage } = opened;
        const a = addressRecord();
        await storage.insertAddress(a);
        const old = Date.now() - 40 * DAY;
        for (let i = 1; i <= 5; i++) assert.equal(await append(storage, a.id, 1000, old), i);
        const purged = await storage.purge(Date.now(), Date.now() - 30 * DAY);
        assert.ok(purged.eventsPurged >= 5);
        assert.deepEqual(await sequencesHeld(storage, a.id), []);
        assert.equal(await append(storage, a.id, 1000), 6);
        assert.equal(await append(storage, a.id, 1000), 7);
      });

      test('a queue turned over completely by evictions keeps counting up', async () => {
        const { storage } = opened;
        const a = addressRecord();
        await storage.insertAddress(a);
        let expected = 0;
        for (let round = 0; round < 4; round++) {
          for (let i = 0; i < 2; i++) assert.equal(await append(storage, a.id, 2), ++expected);
          assert.equal(await storage.ackUpTo(a.id, expected, Date.now()), 2);
        }
        assert.deepEqual(await sequencesHeld(storage, a.id), [expected - 1, expected]);
      });
    },
  );
}

describe('SQLite: a version-1 file is upgraded in place (migration 2)', () => {
  test('the next sequence follows the last one given out, even when that event is gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-seq-'));
    try {
      const path = join(dir, 'roost.db');
      // A file as version 1 left it: last_sequence = 7 written by every append, events 1..7
      // given out, 6 and 7 since evicted.
      const v1 = new Database(path);
      v1.exec(
        'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
      );
      v1.exec(SQLITE_MIGRATIONS[0].sql);
      v1.prepare('INSERT INTO schema_migrations VALUES (1, ?, ?)').run(SQLITE_MIGRATIONS[0].name, Date.now());
      const a = addressRecord();
      v1.prepare(
        `INSERT INTO addresses (id, slug, name, email, created_at, read_token_digest, ingress_secret_digest, last_sequence)
         VALUES (?, ?, ?, ?, ?, ?, ?, 7)`,
      ).run(a.id, a.slug, a.name, a.email, a.createdAt, a.readTokenDigest, a.ingressSecretDigest);
      const insert = v1.prepare(
        'INSERT INTO events (id, address_id, sequence, type, source, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      );
      for (let s = 1; s <= 5; s++)
        insert.run(newEventId(Date.now()), a.id, s, 'message.received', 'https', '{}', Date.now());
      v1.close();

      const storage = new SqliteStorage(path);
      try {
        assert.equal(await append(storage, a.id, 1000), 8);
        assert.deepEqual(await sequencesHeld(storage, a.id), [1, 2, 3, 4, 5, 8]);
      } finally {
        await storage.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
