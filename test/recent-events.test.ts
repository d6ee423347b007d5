// The events SQLite keeps from the pages it read (src/storage/sqlite/recent-events.ts): what
// it holds stays within its budget, the addresses read least lately going first, whole, and
// no page says anything else for it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { pageBody } from '../src/core/wire.js';
import { openSqlite } from '../src/storage/sqlite/connection.js';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import { EventReads } from '../src/storage/sqlite/events-read.js';
import { RecentEvents } from '../src/storage/sqlite/recent-events.js';
import { isSharedEventRecord } from '../src/storage/storage.js';
import { addressRecord, appendInput } from './helpers/records.js';

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

// What a page says must not depend on what was kept: the same file read through a second
// connection that keeps nothing gives the same pages, and the same text, after every step
// of a random mix of appends (evicting acknowledged events past a small capacity),
// acknowledgements and reads.
test('pages read with events kept say what a reader keeping nothing says, through appends, acks and evictions', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-recent-'));
  const path = join(dir, 'roost.db');
  const storage = new SqliteStorage(path);
  const plain = openSqlite(path, 'FULL');
  try {
    const reference = new EventReads(plain, 0);
    const addresses = [addressRecord(), addressRecord()];
    for (const address of addresses) assert.equal(await storage.insertAddress(address), 'ok');
    const step = fc.oneof(
      fc.record({ op: fc.constant('append' as const), to: fc.nat(1), size: fc.nat(300) }),
      fc.record({ op: fc.constant('ack' as const), to: fc.nat(1), upTo: fc.nat(40) }),
      fc.record({
        op: fc.constant('read' as const),
        to: fc.nat(1),
        after: fc.nat(40),
        limit: fc.integer({ min: 1, max: 12 }),
        maxBytes: fc.integer({ min: 1, max: 3000 }),
        unacked: fc.boolean(),
      }),
    );
    for (const s of fc.sample(step, { numRuns: 600, seed: 37 })) {
      const addressId = addresses[s.to].id;
      if (s.op === 'append') {
        const dataJson = JSON.stringify('é'.repeat(s.size % 7) + 'd'.repeat(s.size));
        const result = await storage.appendEvent({ event: appendInput(addressId, { dataJson }), capacity: 12 });
        assert.ok(['created', 'queue_full'].includes(result.status), result.status);
      } else if (s.op === 'ack') {
        await storage.ackUpTo(addressId, s.upTo, Date.now());
      } else {
        const params = {
          addressId,
          after: s.after,
          limit: s.limit,
          maxBytes: s.maxBytes,
          filter: { unacked: s.unacked },
        };
        const page = await storage.listEvents(params);
        const expected = reference.list(params);
        assert.deepEqual(page, expected, JSON.stringify(s));
        const body = (p: typeof page) =>
          pageBody({ records: p.events, hasMore: p.hasMore, after: s.after, latestSequence: p.latestSequence });
        assert.equal(body(page).toString(), body(expected).toString(), JSON.stringify(s));
      }
    }
  } finally {
    plain.close();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// A reader that follows an address (it read a page of it) gets the events committed since
// from memory: the record the append answered with is the one the next page holds.
test('an event committed to an address being read is kept; one to an address no one reads is not', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-recent-'));
  const storage = new SqliteStorage(join(dir, 'roost.db'));
  try {
    const [followed, unread] = [addressRecord(), addressRecord()];
    for (const address of [followed, unread]) assert.equal(await storage.insertAddress(address), 'ok');
    const append = async (addressId: string) => {
      const result = await storage.appendEvent({ event: appendInput(addressId, { dataJson: '1' }), capacity: 10 });
      assert.equal(result.status, 'created');
      return result.status === 'created' ? result.event : assert.fail();
    };
    const page = (addressId: string, after: number) => storage.listEvents({ addressId, after, limit: 10 });
    await append(followed.id);
    assert.equal((await page(followed.id, 0)).events.length, 1);
    const next = await append(followed.id);
    assert.ok(isSharedEventRecord(next));
    assert.equal((await page(followed.id, 1)).events[0], next);
    const other = await append(unread.id);
    assert.equal(isSharedEventRecord(other), false);
    assert.notEqual((await page(unread.id, 0)).events[0], other);
  } finally {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
