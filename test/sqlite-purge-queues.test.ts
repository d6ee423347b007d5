// The SQLite writer keeps each queue's bounds in memory, so that an append is one INSERT
// (src/storage/sqlite/events-append.ts). A purge step must drop exactly the bounds of the
// queues it removed events from: a kept stale bound would refuse or misnumber the next
// append, and dropping them all after every sweep would make each queue pay a sum over its
// events again. A test that changes the file behind the writer's back sees which it did: a
// kept bound ignores the change, a dropped one is read again with it.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type Database from 'better-sqlite3';
import { newEventId } from '../src/storage/event-ids.js';
import { SqliteWrites, toAppendTuple } from '../src/storage/sqlite/writes.js';
import { eventSize } from '../src/storage/storage.js';
import { addressRecord, appendInput } from './helpers/records.js';
import { openWriterFile, type WriterFile } from './helpers/writer-file.js';

const HOUR = 3_600_000;

describe('SQLite purge steps and the writer’s queue bounds', () => {
  let file: WriterFile;
  let db: Database.Database;
  let writes: SqliteWrites;
  beforeEach(() => ({ db, writes } = file = openWriterFile()));
  afterEach(() => file.remove());

  const newAddress = (expiresAt: number | null = null) => {
    const address = addressRecord({ createdAt: 0, expiresAt });
    writes.insertAddress(address);
    return address.id;
  };
  /** Appends one event to `addressId` created at `createdAt`; returns the outcome. */
  const append = (addressId: string, createdAt = Date.now(), maxBytes = 0) => {
    const input = appendInput(addressId, { createdAt });
    const [outcome] = writes.appendBatch([toAppendTuple(input, newEventId(createdAt), 1000, maxBytes)]);
    return outcome;
  };
  const sequenceOf = (outcome: ReturnType<typeof append>) => {
    assert.equal(outcome.status, 'created');
    return (outcome as { sequence: number }).sequence;
  };
  /** Moves the address's highest sequence handed out, in the file only. */
  const raiseFloor = (addressId: string, to: number) =>
    db.prepare('UPDATE addresses SET last_sequence = ? WHERE id = ?').run(to, addressId);

  test('a step that removes nothing keeps every queue’s bounds', () => {
    const a = newAddress();
    assert.equal(sequenceOf(append(a)), 1);
    raiseFloor(a, 100);
    const step = writes.purgeStep(Date.now(), Date.now() - HOUR, 1000);
    assert.deepEqual(step, { expiredAddressIds: [], eventsPurged: 0, done: true });
    assert.equal(sequenceOf(append(a)), 2, 'the bound in memory was kept');
  });

  test('events past retention: only their queues are read again, and they take what was freed', () => {
    const old = newAddress();
    const kept = newAddress();
    const now = Date.now();
    const size = eventSize(appendInput(old, { createdAt: now }));
    // The old queue full by bytes, with events past retention.
    for (let i = 1; i <= 3; i++) assert.equal(sequenceOf(append(old, now - 2 * HOUR, 3 * size)), i);
    assert.equal(append(old, now, 3 * size).status, 'bytes_full');
    assert.equal(sequenceOf(append(kept, now)), 1);
    raiseFloor(kept, 100);
    const step = writes.purgeStep(now, now - HOUR, 1000);
    assert.deepEqual(step, { expiredAddressIds: [], eventsPurged: 3, done: true });
    // Read again: its bytes freed, its numbering after the highest handed out.
    assert.equal(sequenceOf(append(old, now, 3 * size)), 4);
    assert.equal(sequenceOf(append(kept, now)), 2, 'a queue the step did not touch kept its bound');
  });

  test('an expired address: its queue is forgotten with it, and one the step reached only in part too', () => {
    const now = Date.now();
    const expiring = newAddress(now + 60_000);
    const kept = newAddress();
    for (let i = 1; i <= 5; i++) assert.equal(sequenceOf(append(expiring, now)), i);
    assert.equal(sequenceOf(append(kept, now)), 1);
    raiseFloor(expiring, 50);
    raiseFloor(kept, 100);
    // Two events a step: the first steps reach the expired queue only in part.
    const later = now + 120_000;
    const first = writes.purgeStep(later, later - HOUR, 2);
    assert.deepEqual(first, { expiredAddressIds: [], eventsPurged: 2, done: false });
    // A delivery made before the expiry (by its created_at) is judged on the queue read again.
    assert.equal(sequenceOf(append(expiring, now + 1)), 51);
    let step: { done: boolean } = first;
    while (!step.done) step = writes.purgeStep(later, later - HOUR, 2);
    assert.equal(append(expiring, now + 2).status, 'address_not_found', 'the address is gone');
    assert.equal(sequenceOf(append(kept, later)), 2, 'a queue the steps did not touch kept its bound');
  });
});
