// Opening the SQLite file the same way from every thread that uses it, and the numbered
// migrations, run once at start before any other connection is opened.
import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import { msOfId } from '../event-ids.js';
import { SQLITE_MIGRATIONS } from './migrations.js';

export type Synchronous = 'FULL' | 'NORMAL';

export function openSqlite(path: string, synchronous: Synchronous): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  return db;
}

/**
 * Makes the database file and its companions readable and writable by this user only:
 * they hold every event. SQLite creates the WAL and shared-memory files with the mode of
 * the database file, so creating that one 0600 is enough for new files; files left by an
 * older version are tightened here.
 */
export function restrictToOwner(path: string): void {
  for (const file of [path, `${path}.lock`]) closeSync(openSync(file, 'a', 0o600));
  for (const file of [path, `${path}.lock`, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, 0o600);
}

/** The schema version this build knows: the highest migration it carries. */
export const SQLITE_SCHEMA_VERSION = Math.max(...SQLITE_MIGRATIONS.map((m) => m.version));

/**
 * Applies the migrations the file lacks, and returns the schema version before and after.
 * A file migrated by a newer Roost is refused: this build would misread what it does not know.
 */
export function migrate(db: Database.Database): { before: number; after: number } {
  // Migration 4 places each event by the millisecond its id carries.
  db.function('roost_ms_of_id', { deterministic: true }, (id: unknown) => (typeof id === 'string' ? msOfId(id) : null));
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  const applied = new Set(
    db
      .prepare<[], { version: number }>('SELECT version FROM schema_migrations')
      .all()
      .map((r) => r.version),
  );
  const before = Math.max(0, ...applied);
  if (before > SQLITE_SCHEMA_VERSION)
    throw new Error(
      `the database schema is at version ${before}, newer than this build of Roost knows (version ${SQLITE_SCHEMA_VERSION}): ` +
        'a newer Roost has migrated it. Run that newer Roost, or restore the copy of the file taken before the upgrade',
    );
  const apply = db.transaction((m: (typeof SQLITE_MIGRATIONS)[number]) => {
    if (m.onlyIf === undefined || db.prepare(m.onlyIf).pluck().get()) db.exec(m.sql);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
      m.version,
      m.name,
      Date.now(),
    );
  });
  for (const migration of SQLITE_MIGRATIONS) if (!applied.has(migration.version)) apply.immediate(migration);
  return { before, after: SQLITE_SCHEMA_VERSION };
}

/**
 * Holds `${path}.lock` exclusively for as long as this process runs, so that a second Roost
 * process pointed at the same file stops at start with a clear error. One process per file
 * is what the design rests on: the writer thread keeps each queue's bounds in memory, and
 * the event loop caches addresses. SQLite's own file lock does the work (an exclusive
 * transaction on a file of its own), so the operating system releases it when the process
 * ends, however it ends.
 */
export function lockForThisProcess(path: string): Database.Database {
  const lock = new Database(`${path}.lock`);
  try {
    lock.pragma('busy_timeout = 0');
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') {
      throw new Error(
        `another Roost process is using ${path}: one process per SQLite file (run several instances on PostgreSQL)`,
        { cause: error },
      );
    }
    throw error;
  }
  return lock;
}
