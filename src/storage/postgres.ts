// PostgreSQL engine: not built yet (see the scale-out work). Selecting it fails clearly.
import type { Config } from '../config.js';
import type { Storage } from './storage.js';

export class PostgresStorage {
  static async open(_config: Config): Promise<Storage> {
    throw new Error('The PostgreSQL engine is not available in this build; unset DATABASE_URL to use SQLite.');
  }
}
