// Each storage engine opened directly, below HTTP, on a fresh database of its own: a SQLite
// file in a temporary folder, or a new PostgreSQL database dropped afterwards. An engine
// that cannot run here says why (PostgreSQL outside CI without a server; never under CI=true).
import { mkdtempSync, rmSync } from 'node:fs';
import { after, before, describe } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { PostgresStorage } from '../../src/storage/postgres/engine.js';
import { SqliteStorage } from '../../src/storage/sqlite/engine.js';
import type { Storage } from '../../src/storage/storage.js';
import { createTestDatabase, postgresSkipReason } from './postgres.js';
import { ENGINES, type Engine } from './server.js';

export interface OpenedStorage {
  storage: Storage;
  /** A second engine on the same database, as another instance would open it (PostgreSQL only). */
  openAnother?: () => Promise<Storage>;
  /** Closes the engine and removes its database. */
  close(): Promise<void>;
}

export interface StorageEngine {
  name: Engine;
  /** Why this engine cannot run here, or undefined. */
  skip: string | undefined;
  open(): Promise<OpenedStorage>;
}

async function openSqlite(): Promise<OpenedStorage> {
  const dir = mkdtempSync(join(tmpdir(), 'roost-storage-'));
  const storage = new SqliteStorage(join(dir, 'roost.db'));
  return {
    storage,
    close: async () => {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<OpenedStorage> {
  const db = await createTestDatabase();
  const storage = await PostgresStorage.open(loadConfig({ DATABASE_URL: db.url }));
  return {
    storage,
    openAnother: () => PostgresStorage.open(loadConfig({ DATABASE_URL: db.url })),
    close: async () => {
      await storage.close();
      await db.drop();
    },
  };
}

/** The engines ROOST_TEST_ENGINES names (default both), each with how to open it. */
export async function storageEngines(): Promise<StorageEngine[]> {
  const all: StorageEngine[] = [
    { name: 'sqlite', skip: undefined, open: openSqlite },
    { name: 'postgres', skip: await postgresSkipReason(), open: openPostgres },
  ];
  return all.filter((engine) => ENGINES.includes(engine.name));
}

/**
 * Runs `body` once per engine (River's driver-test style: one suite every engine must pass),
 * each under its own describe with a fresh database opened before and closed after.
 */
export async function forEachStorage(
  title: string,
  body: (storage: () => Storage, engine: Engine, opened: () => OpenedStorage) => void,
): Promise<void> {
  for (const engine of await storageEngines()) {
    describe(`${title} [${engine.name}]`, { skip: engine.skip ? `skipped: ${engine.skip}` : false }, () => {
      let opened: OpenedStorage | undefined;
      before(async () => {
        opened = await engine.open();
      });
      after(async () => {
        await opened?.close();
      });
      body(
        () => opened!.storage,
        engine.name,
        () => opened!,
      );
    });
  }
}
