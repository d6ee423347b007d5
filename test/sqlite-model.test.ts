// The SQLite writer keeps each queue's bounds in memory and the event loop keeps address
// records in memory; both must stay exactly what the file says. Random runs of concurrent
// appends, acknowledgements, evictions at capacity, retention purges and deletes are checked
// against a model after every step, and again after the file is closed and reopened (when
// every cache starts empty): the queue matches, and the next sequence is the highest ever
// given out + 1.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import type { AddressRecord } from '../src/storage/storage.js';
import { addressRecord, appendInput } from './helpers/records.js';

const CAPACITY = 4;
const ADDRESSES = 3;
const DAY = 86_400_000;
const NOW = Date.now();

type Step =
  | { kind: 'append'; address: number; count: number; old: boolean }
  | { kind: 'ack'; address: number; pick: number }
  | { kind: 'ackAll'; address: number }
  | { kind: 'purge' }
  | { kind: 'delete'; address: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      address: fc.nat(ADDRESSES - 1),
      count: fc.integer({ min: 1, max: 6 }),
      old: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('ack' as const),
      address: fc.nat(ADDRESSES - 1),
      pick: fc.double({ min: 0, max: 0.999, noNaN: true }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('ackAll' as const), address: fc.nat(ADDRESSES - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('purge' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), address: fc.nat(ADDRESSES - 1) }) },
);

interface ModelQueue {
  record: AddressRecord;
  lastGiven: number;
  events: Array<{ id: string; sequence: number; acked: boolean; old: boolean }>;
}

const newAddress = () => addressRecord({ createdAt: NOW - 60 * DAY });

async function checkQueues(storage: SqliteStorage, queues: ModelQueue[], deleted: AddressRecord[]): Promise<void> {
  for (const q of queues) {
    const page = await storage.listEvents({ addressId: q.record.id, after: 0, limit: 100 });
    assert.deepEqual(
      page.events.map((e) => ({ id: e.id, sequence: e.sequence, acked: e.acknowledgedAt !== null })),
      q.events.map(({ id, sequence, acked }) => ({ id, sequence, acked })),
    );
    assert.ok(await storage.getAddress(q.record.id, NOW));
  }
  for (const gone of deleted) assert.equal(await storage.getAddress(gone.id, NOW), null);
}

describe('SQLite caches against a model (writer queue state, address cache)', () => {
  test('random appends, acks, evictions, purges and deletes: the file, the caches and a reopened file agree', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 25 }), async (steps) => {
        const dir = mkdtempSync(join(tmpdir(), 'roost-model-'));
        const path = join(dir, 'roost.db');
        let storage = new SqliteStorage(path);
        try {
          const queues: ModelQueue[] = [];
          const deleted: AddressRecord[] = [];
          for (let i = 0; i < ADDRESSES; i++) {
            const record = newAddress();
            await storage.insertAddress(record);
            queues.push({ record, lastGiven: 0, events: [] });
          }
          for (const s of steps) {
            if (s.kind === 'append') {
              const q = queues[s.address];
              // All in flight at once, so that they share commits; the model only counts.
              const results = await Promise.all(
                Array.from({ length: s.count }, () =>
                  storage.appendEvent({
                    event: appendInput(q.record.id, { createdAt: s.old ? NOW - 40 * DAY : NOW }),
                    capacity: CAPACITY,
                  }),
                ),
              );
              for (const r of results) {
                if (r.status === 'queue_full') {
                  assert.ok(
                    q.events.length === CAPACITY && q.events.every((e) => !e.acked),
                    'refused only when full of unacknowledged events',
                  );
                  continue;
                }
                assert.equal(r.status, 'created');
                if (r.status !== 'created') continue;
                if (q.events.length === CAPACITY)
                  q.events.splice(
                    q.events.findIndex((e) => e.acked),
                    1,
                  );
                assert.equal(r.event.sequence, q.lastGiven + 1, 'the highest ever given out + 1');
                q.lastGiven = r.event.sequence;
                q.events.push({ id: r.event.id, sequence: r.event.sequence, acked: false, old: s.old });
              }
            } else if (s.kind === 'ack') {
              const q = queues[s.address];
              if (q.events.length === 0) continue;
              const target = q.events[Math.floor(s.pick * q.events.length)];
              assert.ok(await storage.ackEvent(q.record.id, target.id, NOW));
              target.acked = true;
            } else if (s.kind === 'ackAll') {
              const q = queues[s.address];
              await storage.ackUpTo(q.record.id, q.lastGiven, NOW);
              for (const e of q.events) e.acked = true;
            } else if (s.kind === 'purge') {
              await storage.purge(NOW, NOW - 30 * DAY);
              for (const q of queues) q.events = q.events.filter((e) => !e.old);
            } else {
              // Deleted, then a fresh address takes its place in the model.
              const q = queues[s.address];
              assert.equal(await storage.deleteAddress(q.record.id), true);
              deleted.push(q.record);
              const record = newAddress();
              await storage.insertAddress(record);
              queues[s.address] = { record, lastGiven: 0, events: [] };
            }
            await checkQueues(storage, queues, deleted);
          }
          // Reopened, every cache starts empty: the file alone must give the same answers.
          await storage.close();
          storage = new SqliteStorage(path);
          await checkQueues(storage, queues, deleted);
          for (const q of queues) {
            if (q.events.length === CAPACITY && q.events.every((e) => !e.acked)) continue;
            const r = await storage.appendEvent({
              event: appendInput(q.record.id, { createdAt: NOW }),
              capacity: CAPACITY,
            });
            assert.equal(
              r.status === 'created' && r.event.sequence,
              q.lastGiven + 1,
              'after reopening, sequences go on from the highest ever given out',
            );
          }
        } finally {
          await storage.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 20 },
    );
  });
});
