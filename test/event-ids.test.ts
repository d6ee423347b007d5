// Event ids carry their millisecond and 128 random bits (docs/api.md §1), and SQLite stores
// each event under a key in the range of its created_at's millisecond, and finds it by id
// and by age through that key alone (src/storage/event-ids.ts). The
// cases where the range cannot be used — a full millisecond, a created_at before the ranges
// start, a clock that stepped back — must still give every event a key of its own, an ack
// by id that finds it, and a purge that takes exactly the events past retention.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type Database from 'better-sqlite3';
import fc from 'fast-check';
import { firstKeyOf, KEYS_PER_MS, LOW_KEYS, msOfId, newEventId } from '../src/storage/event-ids.js';
import { SqliteWrites, toAppendTuple } from '../src/storage/sqlite/writes.js';
import type { AppendInput } from '../src/storage/storage.js';
import { addressRecord, appendInput } from './helpers/records.js';
import { openWriterFile, type WriterFile } from './helpers/writer-file.js';

test('newEventId: evt_, the millisecond in 12 hex digits, then 128 random bits in base64url, never repeated', () => {
  const ms = Date.UTC(2030, 0, 1);
  const ids = Array.from({ length: 1000 }, () => newEventId(ms));
  const prefix = `evt_${ms.toString(16).padStart(12, '0')}`;
  for (const id of ids) {
    assert.match(id, /^evt_[0-9a-f]{12}[A-Za-z0-9_-]{22}$/);
    assert.ok(id.startsWith(prefix), `${id} carries its millisecond`);
    assert.equal(Buffer.from(id.slice(16), 'base64url').length, 16, '128 bits');
  }
  // Across refills of the pool of random bytes (256 ids each), every id is new.
  assert.equal(new Set(ids).size, ids.length);
  // Every one of the 128 bits varies (a stuck bit would be the same in all 1,000 ids).
  const bits = ids.map((id) => Buffer.from(id.slice(16), 'base64url'));
  for (let bit = 0; bit < 128; bit++) {
    const ones = bits.filter((b) => (b[bit >> 3] >> (7 - (bit & 7))) & 1).length;
    assert.ok(ones > 350 && ones < 650, `bit ${bit} is set in ${ones} of 1000 ids`);
  }
});

test('msOfId gives back the millisecond newEventId was given, and null for ids of other forms', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), (ms) => msOfId(newEventId(ms)) === ms));
  for (const other of [
    'evt_abc',
    `evt_${'g'.repeat(12)}${'a'.repeat(22)}`,
    `evt_0123456789ab${'a'.repeat(21)}`,
    `addr_0123456789ab${'a'.repeat(22)}`,
  ]) {
    assert.equal(msOfId(other), null, other);
  }
  assert.equal(firstKeyOf(LOW_KEYS / KEYS_PER_MS - 1), null, 'no range starts below LOW_KEYS');
  assert.equal(firstKeyOf(LOW_KEYS / KEYS_PER_MS), LOW_KEYS);
});

describe('SQLite event keys', () => {
  let file: WriterFile;
  let db: Database.Database;
  let writes: SqliteWrites;
  let addressId: string;
  beforeEach(() => {
    ({ db, writes } = file = openWriterFile());
    const a = addressRecord({ createdAt: 0 });
    writes.insertAddress(a);
    addressId = a.id;
  });
  afterEach(() => file.remove());

  /** Appends one event created at `createdAt` (its id minted as SqliteStorage does); returns the id. */
  function append(createdAt: number, to = writes): string {
    const input: AppendInput = appendInput(addressId, { createdAt });
    const id = newEventId(createdAt);
    const [outcome] = to.appendBatch([toAppendTuple(input, id, 100_000)]);
    assert.equal(outcome.status, 'created');
    return id;
  }

  /** Every event's key is in its created_at's range, with the id carrying the same millisecond, or below LOW_KEYS and found through unplaced_event_ids. */
  function checkKeys(): { placed: number; unplaced: number } {
    const rows = db
      .prepare<[], { key: number; id: string; created_at: number }>('SELECT rowid AS key, id, created_at FROM events')
      .all();
    const unplaced = new Map(
      db
        .prepare<[], { event_key: number; id: string }>('SELECT event_key, id FROM unplaced_event_ids')
        .all()
        .map((r) => [r.event_key, r.id]),
    );
    let placed = 0;
    for (const row of rows) {
      if (row.key >= LOW_KEYS) {
        assert.equal(Math.floor(row.key / KEYS_PER_MS), row.created_at, `${row.id} is in its millisecond's range`);
        assert.equal(msOfId(row.id), row.created_at);
        placed++;
      } else assert.equal(unplaced.get(row.key), row.id, `${row.id} is found through unplaced_event_ids`);
    }
    assert.equal(unplaced.size, rows.length - placed, 'no row of unplaced_event_ids outlives its event');
    return { placed, unplaced: unplaced.size };
  }

  const ack = (id: string) => writes.ackEvent(addressId, id, Date.now())?.id;

  test('events of one millisecond take its keys in order; a later one starts its own range', () => {
    const t = Date.now();
    const ids = [append(t), append(t), append(t), append(t + 1)];
    const keys = db
      .prepare<[], { key: number }>('SELECT rowid AS key FROM events ORDER BY sequence')
      .all()
      .map((r) => r.key);
    const first = t * KEYS_PER_MS;
    assert.deepEqual(keys, [first, first + 1, first + 2, first + KEYS_PER_MS]);
    for (const id of ids) assert.equal(ack(id), id);
    assert.deepEqual(checkKeys(), { placed: 4, unplaced: 0 });
  });

  test('more than 1,024 events in one millisecond: the rest are unplaced, found by id, and purged with the others', () => {
    const t = Date.now() - 1000;
    const ids = Array.from({ length: KEYS_PER_MS + 3 }, () => append(t));
    const later = append(t + 1);
    assert.deepEqual(checkKeys(), { placed: KEYS_PER_MS + 1, unplaced: 3 });
    for (const id of [ids[0], ids[KEYS_PER_MS - 1], ids[KEYS_PER_MS], ids[KEYS_PER_MS + 2], later])
      assert.equal(ack(id), id);
    assert.equal(writes.purge(Date.now(), t + 1).eventsPurged, KEYS_PER_MS + 3);
    assert.deepEqual(checkKeys(), { placed: 1, unplaced: 0 });
    assert.equal(ack(ids[KEYS_PER_MS + 1]), undefined, 'a purged event is not found');
    assert.equal(ack(later), later);
  });

  test('the clock steps back: the earlier events take keys of their own milliseconds, and retention is still exact', () => {
    const t = Date.now();
    const newer = [append(t), append(t)];
    const earlier = [append(t - 5000), append(t - 5000), append(t - 9000)];
    const newest = append(t);
    assert.deepEqual(checkKeys(), { placed: 6, unplaced: 0 });
    for (const id of [...newer, ...earlier, newest]) assert.equal(ack(id), id);
    assert.equal(writes.purge(Date.now(), t - 4999).eventsPurged, 3);
    const left = db
      .prepare<[], { id: string }>('SELECT id FROM events ORDER BY sequence')
      .all()
      .map((r) => r.id);
    assert.deepEqual(left, [...newer, newest]);
  });

  test('a created_at before the ranges start (a test clock) is unplaced, found by id and purged by created_at', () => {
    const ids = [append(1000), append(1000), append(LOW_KEYS / KEYS_PER_MS - 1)];
    assert.deepEqual(checkKeys(), { placed: 0, unplaced: 3 });
    for (const id of ids) assert.equal(ack(id), id);
    assert.equal(writes.purge(Date.now(), 1001).eventsPurged, 2);
    assert.deepEqual(checkKeys(), { placed: 0, unplaced: 1 });
  });

  test('a writer opened again on the file goes on after the highest key, in the same millisecond too', () => {
    const t = Date.now();
    const before = append(t);
    const again = new SqliteWrites(db);
    const after = append(t, again);
    assert.deepEqual(checkKeys(), { placed: 2, unplaced: 0 });
    assert.equal(again.ackEvent(addressId, before, t)?.id, before);
    assert.equal(again.ackEvent(addressId, after, t)?.id, after);
  });

  test('an ack by an id that was never given, or of another address, finds nothing', () => {
    const t = Date.now();
    const id = append(t);
    assert.equal(ack(newEventId(t)), undefined, 'same millisecond, other random bits');
    assert.equal(ack('evt_not-a-time-led-id'), undefined);
    assert.equal(writes.ackEvent(addressRecord().id, id, t), null);
  });
});
