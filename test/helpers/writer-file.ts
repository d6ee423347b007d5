// The SQLite writer's operations (SqliteWrites) on a fresh, migrated file of their own, below
// the writer thread: for tests of what one batch or one purge step does to the file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { migrate, openSqlite } from '../../src/storage/sqlite/connection.js';
import { SqliteWrites } from '../../src/storage/sqlite/writes.js';

export interface WriterFile {
  db: Database.Database;
  writes: SqliteWrites;
  /** Closes the file and removes its folder. */
  remove(): void;
}

export function openWriterFile(): WriterFile {
  const dir = mkdtempSync(join(tmpdir(), 'roost-writes-'));
  const db = openSqlite(join(dir, 'roost.db'), 'FULL');
  migrate(db);
  return {
    db,
    writes: new SqliteWrites(db),
    remove() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
