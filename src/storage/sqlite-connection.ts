// Opening the SQLite file the same way from every thread that uses it, and the numbered
// migrations, run once at start before any other connection is opened.
import Database from 'better-sqlite3';
import { SQLITE_MIGRATIONS } from './sqlite-migrations.js';

export type Synchronous = 'FULL' | 'NORMAL';

export function openSqlite(path: string, synchronous: Synchronous): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  return db;
}

export function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const applied = new Set(db.prepare<[], { version: number }>('SELECT version FROM schema_migrations').all().map((r) => r.version));
  const apply = db.transaction((m: (typeof SQLITE_MIGRATIONS)[number]) => {
    db.exec(m.sql);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
  });
  for (const migration of SQLITE_MIGRATIONS) if (!applied.has(migration.version)) apply.immediate(migration);
}
