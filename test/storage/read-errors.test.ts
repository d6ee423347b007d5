// Every read of the Storage interface maps a database that fails it the same way: 503
// `unavailable` (StorageUnavailableError), never the driver's own error. SQLite: the event
// loop's statements fail as they do on an I/O error (SQLITE_IOERR), by replacing the
// driver's statement methods in this thread only (the writer thread has its own copy).
// PostgreSQL: the database stops accepting connections and drops the open ones.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { StorageUnavailableError } from '../../src/storage/errors.js';
import type { Storage } from '../../src/storage/storage.js';
import { createTestDatabase, postgresSkipReason, withClient, ADMIN_URL } from '../helpers/postgres.js';
import { storageEngines, type OpenedStorage } from '../helpers/storage.js';
import { addressRecord, appendInput } from '../helpers/records.js';
import { loadConfig } from '../../src/config.js';
import { PostgresStorage } from '../../src/storage/postgres/engine.js';

/** Every read of the interface, on an address that exists. */
function reads(storage: Storage, addressId: string, slug: string, eventId: string) {
  const now = Date.now();
  return {
    // An id and a slug that name nothing: an address found is kept in memory (SQLite).
    getAddress: () => storage.getAddress(`${addressId}x`, now),
    getAddressBySlug: () => storage.getAddressBySlug(`${slug}x`, now),
    getSender: () => storage.getSender(addressId),
    listViewTokens: () => storage.listViewTokens(addressId, now),
    findViewToken: () => storage.findViewToken(addressId, 'a'.repeat(64), now),
    hasRoom: () => storage.hasRoom(addressId, 10),
    listEvents: () => storage.listEvents({ addressId, after: 0, limit: 10 }),
    unackedEvents: () => storage.listEvents({ addressId, after: 0, limit: 10, filter: { unacked: true } }),
    getEmailPart: () => storage.getEmailPart(addressId, eventId, -1),
    ping: () => storage.ping(),
  };
}

async function seed(storage: Storage) {
  const address = addressRecord();
  assert.equal(await storage.insertAddress(address), 'ok');
  const result = await storage.appendEvent({ event: appendInput(address.id), capacity: 10 });
  assert.equal(result.status, 'created');
  return { address, eventId: (result as { event: { id: string } }).event.id };
}

async function expectAllUnavailable(all: Record<string, () => Promise<unknown>>) {
  for (const [name, read] of Object.entries(all)) {
    await assert.rejects(read(), (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError, `${name}: ${String(error)}`);
      return true;
    });
  }
}

const engines = await storageEngines();
const sqlite = engines.find((engine) => engine.name === 'sqlite');

describe('read errors [sqlite]', { skip: sqlite ? false : 'skipped: not in ROOST_TEST_ENGINES' }, () => {
  let opened: OpenedStorage;
  const statementMethods = Object.getPrototypeOf(new Database(':memory:').prepare('SELECT 1')) as Record<
    'get' | 'all' | 'iterate',
    unknown
  >;
  const saved = { ...statementMethods };
  before(async () => {
    opened = await sqlite!.open();
  });
  after(async () => {
    Object.assign(statementMethods, saved);
    await opened.close();
  });

  test('every read fails as 503 unavailable on an I/O error', async () => {
    const { address, eventId } = await seed(opened.storage);
    const all = reads(opened.storage, address.id, address.slug, eventId);
    for (const read of Object.values(all)) await read(); // each answers while the disk does
    const ioError = () => {
      throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_READ' });
    };
    Object.assign(statementMethods, { get: ioError, all: ioError, iterate: ioError });
    try {
      await expectAllUnavailable(all);
    } finally {
      Object.assign(statementMethods, saved);
    }
  });
});

const postgresSkip = engines.some((engine) => engine.name === 'postgres')
  ? await postgresSkipReason()
  : 'not in ROOST_TEST_ENGINES';
describe('read errors [postgres]', { skip: postgresSkip ? `skipped: ${postgresSkip}` : false }, () => {
  test('every read fails as 503 unavailable when the database refuses connections', async () => {
    const db = await createTestDatabase();
    const storage = await PostgresStorage.open(
      loadConfig({ DATABASE_URL: db.url, ROOST_PG_CONNECT_TIMEOUT_MS: '2000' }),
    );
    try {
      const { address, eventId } = await seed(storage);
      const all = reads(storage, address.id, address.slug, eventId);
      for (const read of Object.values(all)) await read();
      await withClient(ADMIN_URL, async (client) => {
        await client.query(`ALTER DATABASE ${db.name} WITH ALLOW_CONNECTIONS false`);
        await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [db.name]);
      });
      await expectAllUnavailable(all);
    } finally {
      await storage.close();
      await db.drop();
    }
  });
});
