// Chooses the storage engine from the configuration: PostgreSQL when DATABASE_URL is set,
// otherwise the embedded SQLite file.
import type { Logger } from 'pino';
import type { PostgresOptions } from './postgres/engine.js';
import type { Storage } from './storage.js';
import { SqliteStorage } from './sqlite/engine.js';

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
