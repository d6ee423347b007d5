// Chooses the storage engine from the configuration: PostgreSQL when DATABASE_URL is set,
// otherwise the embedded SQLite file. Also `roost migrate`: the schema step alone.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { PostgresOptions } from './postgres/engine.js';
import type { Storage } from './storage.js';
import { SqliteStorage } from './sqlite/engine.js';
import { lockForThisProcess, migrate, openSqlite, restrictToOwner } from './sqlite/connection.js';

/** The configuration's storage settings (config.ts's Config has them, under these names). */
export interface StorageOptions extends PostgresOptions {
  /** The SQLite file; ignored when databaseUrl is set. */
  dbPath: string;
}

export async function openStorage(config: StorageOptions, logger?: Logger): Promise<Storage> {
  if (config.databaseUrl) {
    const { PostgresStorage } = await import('./postgres/engine.js');
    return PostgresStorage.open(config, logger);
  }
  return new SqliteStorage(config.dbPath, { logger });
}

export interface MigrationReport {
  engine: 'sqlite' | 'postgres';
  /** The schema version before, and after. */
  from: number;
  to: number;
}

/**
 * Brings the schema to this build's version and stops (`roost migrate`), so that the role
 * `roost serve` runs as needs no right to change the schema. A schema newer than the build
 * is refused, as at start.
 */
export async function migrateStorage(config: StorageOptions, logger?: Logger): Promise<MigrationReport> {
  if (config.databaseUrl) {
    const { prepareDatabase } = await import('./postgres/start.js');
    const { schemaVersion } = await prepareDatabase(config, logger, { migrateOnly: true });
    return { engine: 'postgres', from: schemaVersion.before, to: schemaVersion.after };
  }
  mkdirSync(dirname(config.dbPath), { recursive: true, mode: 0o700 });
  restrictToOwner(config.dbPath);
  const lock = lockForThisProcess(config.dbPath);
  try {
    const db = openSqlite(config.dbPath, 'FULL');
    try {
      const { before, after } = migrate(db);
      return { engine: 'sqlite', from: before, to: after };
    } finally {
      db.close();
    }
  } finally {
    lock.close();
  }
}
