// Migrations at the storage layer: a landed migration's text never changes (a checksum per
// migration, as migration tools keep), both engines number new migrations alike, and a
// SQLite file migrated by the first text of migration 6 — which added addresses.stored_bytes
// and two triggers before the text was edited — comes out of migration 10 without them.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { loadConfig } from '../../src/config.js';
import { msOfId } from '../../src/storage/event-ids.js';
import { PG_MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import { PostgresStorage } from '../../src/storage/postgres/engine.js';
import { SqliteStorage } from '../../src/storage/sqlite/engine.js';
import { SQLITE_MIGRATIONS, type SqliteMigration } from '../../src/storage/sqlite/migrations.js';
import { createTestDatabase, postgresSkipReason, withClient } from '../helpers/postgres.js';
import { addressRecord, appendInput } from '../helpers/records.js';

/**
 * The checksum of every landed migration. A migration that has run somewhere is never
 * edited: a database that ran the old text would keep what the new one no longer makes.
 * A new migration adds its line here when it lands.
 */
const LANDED = {
  sqlite: {
    1: '93500ef02855ee41',
    2: '96a12f7d7c750b85',
    3: '990b41e04620e20c',
    4: 'addcd58405177a01',
    5: '5a2b773f6c2f2cf4',
    6: 'bd178ade5b44ebe3',
    7: 'e7fdf46131e89d0a',
    8: '23fe4bf82cb57699',
    9: 'b8ec62def0882280',
    10: 'b1a32732efc8e461',
    11: 'e3b0c44298fc1c14',
    12: '66cbda90f5daa746',
    13: 'e3b0c44298fc1c14',
  },
  postgres: {
    1: '5ddd635e970e574f',
    2: 'dd395d83295d1226',
    3: '22f38fafb613412e',
    4: '67f5aa1ae98aca40',
    5: '56940a981815f498',
    6: '319dc5517ea4dafc',
    7: '5db6d060311d616b',
    10: 'e3b0c44298fc1c14',
    11: 'd2d6c581f0e0c871',
    12: 'c4b53faacb241523',
    13: 'b3c528956e32cd02',
  },
} as const;

/** The first number both engines share (see the header of either migrations module). */
const ALIGNED_FROM = 10;

const checksum = (m: { sql: string; onlyIf?: string }) =>
  createHash('sha256')
    .update(m.sql)
    .update(m.onlyIf === undefined ? '' : `\u0000${m.onlyIf}`)
    .digest('hex')
    .slice(0, 16);

describe('migrations: landed text and numbering', () => {
  for (const [engine, migrations] of [
    ['sqlite', SQLITE_MIGRATIONS],
    ['postgres', PG_MIGRATIONS],
  ] as const) {
    test(`${engine}: every migration has its checksum, and no landed migration's text changed`, () => {
      const actual = Object.fromEntries(migrations.map((m) => [m.version, checksum(m)]));
      assert.deepEqual(actual, Object.fromEntries(Object.entries(LANDED[engine]).map(([v, s]) => [Number(v), s])));
    });

    test(`${engine}: versions strictly ascending`, () => {
      const versions = migrations.map((m) => m.version);
      assert.deepEqual(
        versions,
        [...versions].sort((a, b) => a - b),
      );
      assert.equal(new Set(versions).size, versions.length);
    });
  }

  test(`from ${ALIGNED_FROM} on, both engines have the same numbers and names`, () => {
    const aligned = (list: ReadonlyArray<{ version: number; name: string }>) =>
      list.filter((m) => m.version >= ALIGNED_FROM).map((m) => `${m.version} ${m.name}`);
    assert.ok(aligned(SQLITE_MIGRATIONS).length > 0);
    assert.deepEqual(aligned(PG_MIGRATIONS), aligned(SQLITE_MIGRATIONS));
  });
});

/** Migration 6 as it first landed, before it was edited in place. */
const FIRST_MIGRATION_6: SqliteMigration = {
  version: 6,
  name: 'bytes held per address',
  sql: `
      ALTER TABLE events ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE addresses ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;
      UPDATE events SET size_bytes = length(CAST(data AS BLOB)) + length(CAST(type AS BLOB)) + length(CAST(source AS BLOB))
        + COALESCE(length(CAST(metadata AS BLOB)), 0) + COALESCE(length(dedupe_key), 0);
      UPDATE addresses SET stored_bytes = (SELECT COALESCE(SUM(size_bytes), 0) FROM events WHERE address_key = addresses.key);
      CREATE TRIGGER events_bytes_added AFTER INSERT ON events
      BEGIN
        UPDATE addresses SET stored_bytes = stored_bytes + NEW.size_bytes WHERE key = NEW.address_key;
      END;
      CREATE TRIGGER events_bytes_removed AFTER DELETE ON events
      BEGIN
        UPDATE addresses SET stored_bytes = stored_bytes - OLD.size_bytes WHERE key = OLD.address_key;
      END;
    `,
};

/** A file as the migrations `through` leave it, migration 6 in the text it is given. */
function fileWith(path: string, sixth: SqliteMigration, through: number): void {
  const db = new Database(path);
  try {
    // Migration 4 places each event by the millisecond its id carries, as migrate() registers it.
    db.function('roost_ms_of_id', { deterministic: true }, (id: unknown) =>
      typeof id === 'string' ? msOfId(id) : null,
    );
    db.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    for (const migration of SQLITE_MIGRATIONS.filter((m) => m.version <= through)) {
      const m = migration.version === 6 ? sixth : migration;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    }
  } finally {
    db.close();
  }
}

function leftovers(path: string) {
  const db = new Database(path, { readonly: true });
  try {
    return {
      column: db
        .prepare("SELECT count(*) FROM pragma_table_info('addresses') WHERE name = 'stored_bytes'")
        .pluck()
        .get(),
      triggers: db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'events_bytes_%' ORDER BY name")
        .pluck()
        .all(),
      versions: db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(),
      integrity: db.pragma('integrity_check', { simple: true }),
    };
  } finally {
    db.close();
  }
}

describe('SQLite migration 10', () => {
  test('a file migrated by the first text of migration 6 loses stored_bytes and its triggers; events and the byte cap stand', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-m10-'));
    try {
      const path = join(dir, 'roost.db');
      fileWith(path, FIRST_MIGRATION_6, 9);
      assert.deepEqual(leftovers(path).triggers, ['events_bytes_added', 'events_bytes_removed']);
      const address = addressRecord();
      // Events written through the old schema (its triggers running), then the upgrade.
      const old = new Database(path);
      old
        .prepare(
          `INSERT INTO addresses (id, slug, name, email, created_at, read_token_digest, ingress_secret_digest)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(address.id, address.slug, address.name, address.email, address.createdAt, 'a'.repeat(64), 'b'.repeat(64));
      const key = old.prepare('SELECT key FROM addresses WHERE id = ?').pluck().get(address.id);
      const t = Date.now();
      old
        .prepare(
          `INSERT INTO events (key, id, address_key, address_id, sequence, type, source, data, created_at, size_bytes)
           VALUES (?, ?, ?, ?, 1, 'message.received', 'https', '{"n":1}', ?, 38)`,
        )
        .run(t * 1024, `evt_old_${t}`, key, address.id, t);
      assert.equal(old.prepare('SELECT stored_bytes FROM addresses WHERE id = ?').pluck().get(address.id), 38);
      old.close();

      const storage = new SqliteStorage(path);
      try {
        const after = leftovers(path);
        assert.equal(after.column, 0, 'addresses.stored_bytes is gone');
        assert.deepEqual(after.triggers, [], 'the triggers are gone');
        assert.deepEqual(
          after.versions,
          SQLITE_MIGRATIONS.map((m) => m.version),
        );
        assert.equal(after.integrity, 'ok');
        const page = await storage.listEvents({ addressId: address.id, after: 0, limit: 10 });
        assert.deepEqual(
          page.events.map((e) => [e.sequence, e.dataJson]),
          [[1, '{"n":1}']],
        );
        // The cap still counts the event held before the upgrade: 38 + 38 > 60.
        const refused = await storage.appendEvent({
          event: appendInput(address.id, { dataJson: '{"n":2}' }),
          capacity: 10,
          maxBytes: 60,
        });
        assert.equal(refused.status, 'bytes_full');
        const created = await storage.appendEvent({
          event: appendInput(address.id, { dataJson: '{"n":2}' }),
          capacity: 10,
          maxBytes: 100,
        });
        assert.equal(created.status, 'created');
        assert.equal(created.status === 'created' && created.event.sequence, 2);
      } finally {
        await storage.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a file migrated by the final text of migration 6 records migration 10 and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-m10-'));
    try {
      const path = join(dir, 'roost.db');
      fileWith(
        path,
        SQLITE_MIGRATIONS.find((m) => m.version === 6)!,
        9,
      );
      const before = new Database(path, { readonly: true });
      const schema = before
        .prepare("SELECT sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
        .pluck()
        .all();
      before.close();
      const storage = new SqliteStorage(path);
      await storage.close();
      const after = new Database(path, { readonly: true });
      try {
        assert.deepEqual(
          // Tables that migrations after 10 add are not its doing.
          after
            .prepare(
              "SELECT sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND tbl_name NOT IN ('callbacks') ORDER BY name",
            )
            .pluck()
            .all(),
          schema,
        );
      } finally {
        after.close();
      }
      assert.deepEqual(
        leftovers(path).versions,
        SQLITE_MIGRATIONS.map((m) => m.version),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const postgresSkip = await postgresSkipReason();
test(
  `PostgreSQL records every migration, the empty ones included${postgresSkip ? ` (skipped: ${postgresSkip})` : ''}`,
  { skip: postgresSkip ? `skipped: ${postgresSkip}` : false },
  async () => {
    const db = await createTestDatabase();
    try {
      const storage = await PostgresStorage.open(loadConfig({ DATABASE_URL: db.url }));
      await storage.close();
      const versions = await withClient(db.url, async (client) =>
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map(
          (r) => r.version,
        ),
      );
      assert.deepEqual(
        versions,
        PG_MIGRATIONS.map((m) => m.version),
      );
    } finally {
      await db.drop();
    }
  },
);
