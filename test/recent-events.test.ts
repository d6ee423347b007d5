// The events SQLite keeps from the pages it read (src/storage/sqlite/recent-events.ts): what
// it holds stays within its budget, the addresses read least lately going first, whole.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RecentEvents } from '../src/storage/sqlite/recent-events.js';
import { isSharedEventRecord } from '../src/storage/storage.js';
import { appendInput } from './helpers/records.js';

const record = (addressId: string, sequence: number, dataJson = '{}') => ({
  ...appendInput(addressId, { dataJson }),
  id: `evt_${addressId}_${sequence}`,
  sequence,
  acknowledgedAt: null,
});

test('held events stay within the budget; the address read least lately goes first', () => {
  const recent = new RecentEvents(64 * 1024);
  for (let sequence = 1; sequence <= 40; sequence++) {
    recent.keep(record('addr_a', sequence, `"${'a'.repeat(200)}"`));
    recent.keep(record('addr_b', sequence, `"${'b'.repeat(200)}"`));
  }
  assert.equal(recent.of('addr_a')?.size, 40);
  assert.equal(recent.of('addr_b')?.size, 40);
  recent.of('addr_a'); // read last: addr_b is now the one read least lately
  for (let sequence = 1; sequence <= 40; sequence++) recent.keep(record('addr_c', sequence, `"${'c'.repeat(200)}"`));
  assert.equal(recent.of('addr_b'), undefined);
  assert.equal(recent.of('addr_a')?.size, 40);
  assert.equal(recent.of('addr_c')?.size, 40);
  // Whatever is kept, the total stays bounded.
  for (let n = 0; n < 2000; n++) recent.keep(record(`addr_${n % 50}`, n, `"${'x'.repeat(n % 300)}"`));
  let held = 0;
  for (let n = 0; n < 50; n++) held += recent.of(`addr_${n}`)?.size ?? 0;
  assert.ok(held > 0 && held < 2000, `${held} held`);
});

test('a kept event is the record every later read shares; a larger event is not held', () => {
  const recent = new RecentEvents(64 * 1024);
  const kept = recent.keep(record('addr_a', 1));
  assert.ok(isSharedEventRecord(kept));
  assert.equal(recent.of('addr_a')?.get(1), kept);
  // Acknowledged since: the new record replaces the old.
  const acked = recent.keep({ ...kept, acknowledgedAt: 5 });
  assert.equal(recent.of('addr_a')?.get(1), acked);
  assert.equal(acked.acknowledgedAt, 5);
  const large = recent.keep(record('addr_a', 2, `"${'l'.repeat(4096)}"`));
  assert.ok(isSharedEventRecord(large));
  assert.equal(recent.of('addr_a')?.has(2), false);
  recent.forget('addr_a');
  assert.equal(recent.of('addr_a'), undefined);
});

test('a budget of 0 holds nothing', () => {
  const recent = new RecentEvents(0);
  recent.keep(record('addr_a', 1));
  assert.equal(recent.of('addr_a'), undefined);
});
