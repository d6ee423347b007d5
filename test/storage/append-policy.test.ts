// The append policy (docs/api.md §3 and §9.1): capacity, the byte cap and eviction of the
// oldest acknowledged events, at the Storage interface of every engine — on the path one
// append takes alone and on the path of appends made together (PostgreSQL's batch
// statement decides those by append-policy.ts's SQL form) — and the pure rule itself.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { fitsAsIs, fitsAsIsSql, makeRoom } from '../../src/storage/append-policy.js';
import { eventSize, type AppendResult, type Storage } from '../../src/storage/storage.js';
import { forEachStorage } from '../helpers/storage.js';
import { addressRecord, appendInput } from '../helpers/records.js';

/** An append whose event counts exactly `bytes` against the cap (storage.ts eventSize). */
function sized(addressId: string, bytes: number, createdAt = Date.now()) {
  const overhead = eventSize(appendInput(addressId, { dataJson: '""' })) - 2;
  const input = appendInput(addressId, { dataJson: JSON.stringify('x'.repeat(bytes - overhead - 2)), createdAt });
  assert.equal(eventSize(input), bytes);
  return input;
}

async function newAddress(storage: Storage): Promise<string> {
  const address = addressRecord();
  assert.equal(await storage.insertAddress(address), 'ok');
  return address.id;
}

const sequenceOf = (result: AppendResult) => {
  assert.equal(result.status, 'created', JSON.stringify(result));
  return (result as { event: { sequence: number } }).event.sequence;
};

async function held(storage: Storage, addressId: string): Promise<number[]> {
  return (await storage.listEvents({ addressId, after: 0, limit: 1000 })).events.map((e) => e.sequence);
}

async function ack(storage: Storage, addressId: string, ...sequences: number[]): Promise<void> {
  const { events } = await storage.listEvents({ addressId, after: 0, limit: 1000 });
  for (const sequence of sequences) {
    const event = events.find((e) => e.sequence === sequence)!;
    assert.ok(await storage.ackEvent(addressId, event.id, Date.now()));
  }
}

await forEachStorage('append policy', (storage) => {
  test('capacity: full of unacknowledged events refuses with queue_full and changes nothing', async () => {
    const id = await newAddress(storage());
    for (let i = 0; i < 3; i++) sequenceOf(await storage().appendEvent({ event: appendInput(id), capacity: 3 }));
    assert.deepEqual(await storage().appendEvent({ event: appendInput(id), capacity: 3 }), { status: 'queue_full' });
    assert.deepEqual(await held(storage(), id), [1, 2, 3]);
    assert.equal(await storage().hasRoom(id, 3), false);
  });

  test('capacity: the oldest acknowledged event goes, not the oldest event', async () => {
    const id = await newAddress(storage());
    for (let i = 0; i < 3; i++) await storage().appendEvent({ event: appendInput(id), capacity: 3 });
    await ack(storage(), id, 2, 3);
    assert.equal(await storage().hasRoom(id, 3), true);
    assert.equal(sequenceOf(await storage().appendEvent({ event: appendInput(id), capacity: 3 })), 4);
    assert.deepEqual(await held(storage(), id), [1, 3, 4]);
  });

  test('byte cap: exactly at the cap fits; one byte over is bytes_full', async () => {
    const id = await newAddress(storage());
    sequenceOf(await storage().appendEvent({ event: sized(id, 100), capacity: 100, maxBytes: 250 }));
    sequenceOf(await storage().appendEvent({ event: sized(id, 150), capacity: 100, maxBytes: 250 }));
    assert.deepEqual(await storage().appendEvent({ event: sized(id, 50), capacity: 100, maxBytes: 250 }), {
      status: 'bytes_full',
    });
    assert.deepEqual(await held(storage(), id), [1, 2]);
  });

  test('byte cap: as many of the oldest acknowledged events go as make room, oldest first', async () => {
    const id = await newAddress(storage());
    for (let i = 0; i < 3; i++) await storage().appendEvent({ event: sized(id, 100), capacity: 100, maxBytes: 300 });
    await ack(storage(), id, 1, 2, 3);
    // 300 + 150 > 300: the first and second must go (100 + 150 ≤ 300), the third stays.
    assert.equal(sequenceOf(await storage().appendEvent({ event: sized(id, 150), capacity: 100, maxBytes: 300 })), 4);
    assert.deepEqual(await held(storage(), id), [3, 4]);
    // The total is kept right after the eviction: 250 held, so 50 more fit with no eviction.
    assert.equal(sequenceOf(await storage().appendEvent({ event: sized(id, 50), capacity: 100, maxBytes: 300 })), 5);
    assert.deepEqual(await held(storage(), id), [3, 4, 5]);
  });

  test('byte cap: when the acknowledged events are not enough, bytes_full and none of them goes', async () => {
    const id = await newAddress(storage());
    for (let i = 0; i < 3; i++) await storage().appendEvent({ event: sized(id, 100), capacity: 100, maxBytes: 300 });
    await ack(storage(), id, 1);
    assert.deepEqual(await storage().appendEvent({ event: sized(id, 250), capacity: 100, maxBytes: 300 }), {
      status: 'bytes_full',
    });
    assert.deepEqual(await held(storage(), id), [1, 2, 3]);
    // The refused append used no sequence.
    assert.equal(sequenceOf(await storage().appendEvent({ event: sized(id, 100), capacity: 100, maxBytes: 300 })), 4);
    assert.deepEqual(await held(storage(), id), [2, 3, 4]);
  });

  test('byte cap: an event larger than the cap alone is bytes_full', async () => {
    const id = await newAddress(storage());
    assert.deepEqual(await storage().appendEvent({ event: sized(id, 301), capacity: 100, maxBytes: 300 }), {
      status: 'bytes_full',
    });
    assert.deepEqual(await held(storage(), id), []);
  });

  test('both bounds: the count is what fails first (queue_full), and one eviction serves both', async () => {
    const id = await newAddress(storage());
    for (let i = 0; i < 2; i++) await storage().appendEvent({ event: sized(id, 70), capacity: 2, maxBytes: 150 });
    assert.deepEqual(await storage().appendEvent({ event: sized(id, 70), capacity: 2, maxBytes: 150 }), {
      status: 'queue_full',
    });
    await ack(storage(), id, 1, 2);
    assert.equal(sequenceOf(await storage().appendEvent({ event: sized(id, 70), capacity: 2, maxBytes: 150 })), 3);
    assert.deepEqual(await held(storage(), id), [2, 3]);
  });

  test('appends made together stop at the bounds in arrival order', async () => {
    const byCount = await newAddress(storage());
    const byBytes = await newAddress(storage());
    const results = await Promise.all([
      ...Array.from({ length: 8 }, () => storage().appendEvent({ event: appendInput(byCount), capacity: 5 })),
      ...Array.from({ length: 8 }, () =>
        storage().appendEvent({ event: sized(byBytes, 100), capacity: 100, maxBytes: 500 }),
      ),
    ]);
    assert.deepEqual(
      results.map((r) => (r.status === 'created' ? r.event.sequence : r.status)),
      [
        1,
        2,
        3,
        4,
        5,
        'queue_full',
        'queue_full',
        'queue_full',
        1,
        2,
        3,
        4,
        5,
        'bytes_full',
        'bytes_full',
        'bytes_full',
      ],
    );
  });

  test('appends made together that need evictions make them one at a time, each by the rule', async () => {
    const id = await newAddress(storage());
    for (let i = 0; i < 3; i++) await storage().appendEvent({ event: sized(id, 100), capacity: 100, maxBytes: 500 });
    await ack(storage(), id, 1, 2, 3);
    const results = await Promise.all(
      Array.from({ length: 4 }, () => storage().appendEvent({ event: sized(id, 100), capacity: 100, maxBytes: 500 })),
    );
    assert.deepEqual(results.map(sequenceOf).sort(), [4, 5, 6, 7]);
    // Two fit as they stood; the other two took the two oldest acknowledged events.
    assert.deepEqual(await held(storage(), id), [3, 4, 5, 6, 7]);
  });

  test('bytes freed by retention and by acknowledgement-evictions count again at once', async () => {
    const id = await newAddress(storage());
    const old = Date.now() - 10_000;
    for (let i = 0; i < 3; i++)
      await storage().appendEvent({ event: sized(id, 100, old + i), capacity: 100, maxBytes: 300 });
    assert.equal((await storage().purge(Date.now(), old + 2)).eventsPurged, 2);
    assert.deepEqual(await held(storage(), id), [3]);
    for (let i = 0; i < 2; i++)
      sequenceOf(await storage().appendEvent({ event: sized(id, 100), capacity: 100, maxBytes: 300 }));
    assert.deepEqual(await storage().appendEvent({ event: sized(id, 30), capacity: 100, maxBytes: 300 }), {
      status: 'bytes_full',
    });
  });
});

describe('append-policy.ts', () => {
  test('makeRoom reads only as many acknowledged events as it needs, and evicts none on refusal', () => {
    let read = 0;
    function* acknowledged() {
      for (const [key, size] of [
        ['a', 10],
        ['b', 20],
        ['c', 30],
      ] as const) {
        read++;
        yield { key, size };
      }
    }
    assert.deepEqual(makeRoom({ held: 5, heldBytes: 100 }, 20, { capacity: 10, maxBytes: 100 }, acknowledged), {
      status: 'room',
      evict: ['a', 'b'],
    });
    assert.equal(read, 2);
    assert.deepEqual(
      makeRoom({ held: 10, heldBytes: 0 }, 1, { capacity: 10, maxBytes: 0 }, () => []),
      {
        status: 'queue_full',
      },
    );
    assert.deepEqual(makeRoom({ held: 3, heldBytes: 100 }, 120, { capacity: 10, maxBytes: 150 }, acknowledged), {
      status: 'bytes_full',
    });
  });

  test('fitsAsIsSql decides as fitsAsIs does, over a grid of states (evaluated by SQLite)', () => {
    const db = new Database(':memory:');
    try {
      const sql = fitsAsIsSql({ held: '?', heldBytes: '?', size: '?', capacity: '?', maxBytes: '?' });
      // The placeholders come in the order the expression names them.
      const order = ['held', 'capacity', 'maxBytes', 'heldBytes', 'size', 'maxBytes'] as const;
      const statement = db.prepare(`SELECT ${sql} AS fits`).pluck();
      for (const held of [0, 1, 4, 5, 6])
        for (const heldBytes of [0, 50, 99, 100])
          for (const size of [0, 1, 50])
            for (const maxBytes of [0, 100, 149, 150]) {
              const values = { held, heldBytes, size, capacity: 5, maxBytes };
              const fits = Boolean(statement.get(...order.map((name) => values[name])));
              assert.equal(
                fits,
                fitsAsIs({ held, heldBytes }, size, { capacity: 5, maxBytes }),
                JSON.stringify(values),
              );
            }
    } finally {
      db.close();
    }
  });
});
