// Chooses the storage engine from the configuration: PostgreSQL when DATABASE_URL is set,
// otherwise the embedded SQLite file.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Storage } from './storage.js';
import { SqliteStorage } from './sqlite.js';

export async function openStorage(config: Config, logger?: Logger): Promise<Storage> {
  if (config.databaseUrl) {
    const { PostgresStorage } = await import('./postgres.js');
    return PostgresStorage.open(config, logger);
  }
  return new SqliteStorage(config.dbPath, { logger });
}
