// The SQLite engine's split between the event loop (reads, the address cache) and the
// writer thread (every write, group commit): batching, ordering against deletes, the cache
// after a delete, what callers see when the writer thread is gone, and what a failed
// append does to the rest of its batch. Real files.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import { newEventId } from '../src/storage/event-ids.js';
import { SqliteWrites, toAppendTuple } from '../src/storage/sqlite/writes.js';
import type { AppendInput, EmailPart } from '../src/storage/storage.js';
import { addressRecord, appendInput } from './helpers/records.js';
import { openWriterFile, type WriterFile } from './helpers/writer-file.js';

const event = (addressId: string, dataJson = '{}') => appendInput(addressId, { dataJson });

describe('SQLite writer thread', () => {
  let dir: string;
  let storage: SqliteStorage;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'roost-writer-'));
    storage = new SqliteStorage(join(dir, 'roost.db'));
  });
  /** Reopens the storage with a logger that records its fatal lines, and returns them. */
  async function reopenRecordingFatal(): Promise<unknown[]> {
    const fatal: unknown[] = [];
    await storage.close();
    storage = new SqliteStorage(join(dir, 'roost.db'), {
      logger: { fatal: (...args: unknown[]) => void fatal.push(args) },
    });
    return fatal;
  }
  afterEach(async () => {
    await storage.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  test('appends made in one turn share one commit, and each resolves with its own sequence', async () => {
    const a = addressRecord();
    await storage.insertAddress(a);
    const before = { ...storage.commitStats };
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => storage.appendEvent({ event: event(a.id, String(i)), capacity: 1000 })),
    );
    assert.deepEqual(
      results.map((r) => r.status === 'created' && r.event.sequence),
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    assert.equal(storage.commitStats.appends - before.appends, 40);
    assert.equal(storage.commitStats.commits - before.commits, 1, 'one transaction for the whole turn');
    // Each resolved event is readable at once through the event loop's own connection.
    const page = await storage.listEvents({ addressId: a.id, after: 0, limit: 100 });
    assert.deepEqual(
      page.events.map((e) => e.dataJson),
      Array.from({ length: 40 }, (_, i) => String(i)),
    );
  });

  test('appends sent before a delete land first and go with it; the cache does not outlive the delete', async () => {
    const a = addressRecord();
    await storage.insertAddress(a);
    assert.ok(await storage.getAddress(a.id, Date.now()));
    const appends = Array.from({ length: 10 }, () => storage.appendEvent({ event: event(a.id), capacity: 1000 }));
    const deleting = storage.deleteAddress(a.id);
    // A read racing the delete (the address is still in the file) must not leave it cached.
    const racingRead = storage.getAddress(a.id, Date.now());
    const after = storage.appendEvent({ event: event(a.id), capacity: 1000 });
    assert.ok((await Promise.all(appends)).every((r) => r.status === 'created'));
    assert.equal(await deleting, true);
    await racingRead;
    assert.equal((await after).status, 'address_not_found');
    assert.equal(await storage.getAddress(a.id, Date.now()), null);
    assert.deepEqual((await storage.listEvents({ addressId: a.id, after: 0, limit: 100 })).events, []);
  });

  test('when the writer thread is gone, every write and ping fails instead of hanging, and it is logged', async () => {
    const fatal = await reopenRecordingFatal();
    const a = addressRecord();
    await storage.insertAddress(a);
    const writer = (storage as unknown as { writer: Worker }).writer;
    const inFlight = storage.appendEvent({ event: event(a.id), capacity: 1000 });
    await writer.terminate();
    // The append sent before the thread went either committed or failed; it never hangs.
    await inFlight.then(
      (r) => assert.equal(r.status, 'created'),
      (error: Error) => assert.match(error.message, /writer thread/),
    );
    await assert.rejects(storage.appendEvent({ event: event(a.id), capacity: 1000 }), /writer thread/);
    await assert.rejects(storage.ackUpTo(a.id, 1, Date.now()), /writer thread/);
    await assert.rejects(storage.ping(), /writer thread/);
    assert.equal(fatal.length, 1, 'logged once, at fatal');
  });

  test('a normal close stops the writer thread without reporting it', async () => {
    const fatal = await reopenRecordingFatal();
    const a = addressRecord();
    await storage.insertAddress(a);
    await storage.appendEvent({ event: event(a.id), capacity: 1000 });
    await storage.close();
    assert.deepEqual(fatal, []);
  });

  test('one process per file: a second storage on it is refused until the first closes', async () => {
    assert.throws(() => new SqliteStorage(join(dir, 'roost.db')), /another Roost process is using .*roost\.db/);
    await storage.close();
    storage = new SqliteStorage(join(dir, 'roost.db'));
    assert.ok(await storage.ping().then(() => true));
  });

  test('one process per file: `roost serve` on a file in use exits at once with the reason', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { PATH: process.env.PATH ?? '', PORT: '0', ROOST_SMTP_PORT: '0', ROOST_DB: join(dir, 'roost.db') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.notEqual(code, 0);
    assert.match(output, /another Roost process is using/);
    assert.doesNotMatch(output, /Roost listening/);
  });

  test('an in-memory database is refused with a clear error (two connections share the file)', () => {
    assert.throws(() => new SqliteStorage(':memory:'), /needs a file path/);
  });
});

// The writer's group commit below the thread: what one failed append does to its batch.
describe('SQLite group commit: a failed append in a batch', () => {
  let file: WriterFile;
  let db: Database.Database;
  let writes: SqliteWrites;
  beforeEach(() => ({ db, writes } = file = openWriterFile()));
  afterEach(() => file.remove());
  const tuple = (input: AppendInput, capacity = 1000) => toAppendTuple(input, newEventId(input.createdAt), capacity);
  // Inserts of type 'refused' fail from then on. RAISE(ABORT) fails its statement alone, as
  // a constraint does: the transaction goes on.
  const refuseTypeRefused = () =>
    db.exec(
      `CREATE TEMP TRIGGER refuse BEFORE INSERT ON events WHEN NEW.type = 'refused' BEGIN SELECT RAISE(ABORT, 'refused'); END`,
    );
  const sequences = (addressId: string) =>
    db
      .prepare<[string], { sequence: number }>('SELECT sequence FROM events WHERE address_id = ? ORDER BY sequence')
      .all(addressId)
      .map((r) => r.sequence);

  test('fails alone: the appends around it commit, and its sequence is given to the next one', () => {
    const a = addressRecord();
    writes.insertAddress(a);
    refuseTypeRefused();
    const outcomes = writes.appendBatch([
      tuple(appendInput(a.id)),
      tuple(appendInput(a.id, { type: 'refused' })),
      tuple(appendInput(a.id)),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['created', 'failed', 'created'],
    );
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'created' ? o.sequence : null)),
      [1, null, 2],
    );
    assert.deepEqual(sequences(a.id), [1, 2]);
  });

  test('an append that evicts and then fails leaves the evicted event in place', () => {
    const a = addressRecord();
    writes.insertAddress(a);
    writes.appendBatch([tuple(appendInput(a.id), 2), tuple(appendInput(a.id), 2)]);
    writes.ackUpTo(a.id, 1, Date.now()); // the queue is full; event 1 may be evicted
    // Its insert fails after its eviction of event 1.
    refuseTypeRefused();
    const [failed] = writes.appendBatch([tuple(appendInput(a.id, { type: 'refused' }), 2)]);
    assert.equal(failed.status, 'failed');
    assert.deepEqual(sequences(a.id), [1, 2], 'its eviction was undone with it');
    assert.deepEqual(writes.appendBatch([tuple(appendInput(a.id), 2)]), [{ status: 'created', sequence: 3 }]);
    assert.deepEqual(sequences(a.id), [2, 3]);
  });

  test('an email whose parts fail fails alone, its event undone with them; the appends around it commit', () => {
    const a = addressRecord();
    writes.insertAddress(a);
    db.exec(
      `CREATE TEMP TRIGGER refuse_attachment BEFORE INSERT ON email_parts WHEN NEW.part = 0 BEGIN SELECT RAISE(ABORT, 'refused'); END`,
    );
    const part = (n: number, text: string): EmailPart => ({
      part: n,
      sha256: createHash('sha256').update(text).digest('hex'),
      contentType: 'text/plain',
      filename: null,
      bytes: Buffer.from(text),
    });
    const email = appendInput(a.id, {
      keyScope: 'email',
      dedupeKey: '<m@x>',
      parts: [part(-1, 'raw'), part(0, 'att')],
    });
    const outcomes = writes.appendBatch([tuple(appendInput(a.id)), tuple(email), tuple(appendInput(a.id))]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['created', 'failed', 'created'],
    );
    assert.deepEqual(sequences(a.id), [1, 2]);
    const count = (table: string) => db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()!.n;
    assert.equal(count('email_parts'), 0, 'not even the raw part, written before the refused one');
    assert.equal(count('email_blobs'), 0);
  });

  test('a failure that ends the transaction fails the whole batch, and nothing of it is durable', () => {
    const a = addressRecord();
    writes.insertAddress(a);
    // RAISE(ROLLBACK) ends the transaction, as an I/O error or a full disk can.
    db.exec(
      `CREATE TEMP TRIGGER poison BEFORE INSERT ON events WHEN NEW.type = 'poison' BEGIN SELECT RAISE(ROLLBACK, 'poisoned'); END`,
    );
    assert.throws(
      () =>
        writes.appendBatch([
          tuple(appendInput(a.id)),
          tuple(appendInput(a.id, { type: 'poison' })),
          tuple(appendInput(a.id)),
        ]),
      /poisoned/,
    );
    assert.deepEqual(sequences(a.id), [], 'the appends after the failure did not commit on their own');
    // The writer carries on: the next batch starts from a clean state.
    const outcomes = writes.appendBatch([tuple(appendInput(a.id))]);
    assert.deepEqual(outcomes, [{ status: 'created', sequence: 1 }]);
  });
});
