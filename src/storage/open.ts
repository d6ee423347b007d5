// Chooses the storage engine from the configuration: PostgreSQL when DATABASE_URL is set,
// otherwise the embedded SQLite file.
import type { Config } from '../config.js';
import type { Storage } from './storage.js';
import { SqliteStorage } from './sqlite.js';

export async function openStorage(config: Config): Promise<Storage> {
  if (config.databaseUrl) {
    const { PostgresStorage } = await import('./postgres.js');
    return PostgresStorage.open(config);
  }
  return new SqliteStorage(config.dbPath);
}
