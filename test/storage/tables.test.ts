// The columns tables.ts declares exist, under those names, in the schema each engine's
// migrations build: a declaration and its migration cannot drift apart unnoticed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { loadConfig } from '../../src/config.js';
import { PostgresStorage } from '../../src/storage/postgres/engine.js';
import { SqliteStorage } from '../../src/storage/sqlite/engine.js';
import { ADDRESSES, EVENTS, SENDERS, VIEW_TOKENS } from '../../src/storage/tables.js';
import { createTestDatabase, postgresSkipReason, withClient } from '../helpers/postgres.js';

const TABLES = [ADDRESSES, EVENTS, SENDERS, VIEW_TOKENS];

test('SQLite: every declared column is in the migrated schema', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-tables-'));
  try {
    const path = join(dir, 'roost.db');
    await new SqliteStorage(path).close();
    const db = new Database(path, { readonly: true });
    try {
      for (const table of TABLES) {
        const columns = db.prepare<[string], string>('SELECT name FROM pragma_table_info(?)').pluck().all(table.table);
        for (const name of table.names) assert.ok(columns.includes(name), `${table.table}.${name}`);
      }
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const postgresSkip = await postgresSkipReason();
test(
  `PostgreSQL: every declared column is in the migrated schema, of the declared type${postgresSkip ? ` (skipped: ${postgresSkip})` : ''}`,
  { skip: postgresSkip ? `skipped: ${postgresSkip}` : false },
  async () => {
    const db = await createTestDatabase();
    try {
      await (await PostgresStorage.open(loadConfig({ DATABASE_URL: db.url }))).close();
      const types = await withClient(db.url, async (client) => {
        const { rows } = await client.query<{ table_name: string; column_name: string; data_type: string }>(
          "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'public'",
        );
        return new Map(rows.map((r) => [`${r.table_name}.${r.column_name}`, r.data_type]));
      });
      for (const table of TABLES)
        table.names.forEach((name, i) => {
          const declared = table.columns[i].pgType;
          assert.equal(types.get(`${table.table}.${name}`), declared, `${table.table}.${name}`);
        });
    } finally {
      await db.drop();
    }
  },
);
