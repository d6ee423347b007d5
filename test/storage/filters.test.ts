// The page's filters at the Storage interface of every engine: type patterns, source,
// callback, data and body containment, with unacked, and the scan bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AppendInput, EventFilter, Storage } from '../../src/storage/storage.js';
import { forEachStorage } from '../helpers/storage.js';
import { addressRecord, appendInput } from '../helpers/records.js';

async function newAddress(storage: Storage): Promise<string> {
  const address = addressRecord();
  assert.equal(await storage.insertAddress(address), 'ok');
  return address.id;
}

async function append(storage: Storage, addressId: string, events: Array<Partial<AppendInput>>): Promise<void> {
  for (const event of events) {
    const result = await storage.appendEvent({ event: appendInput(addressId, event), capacity: 1000 });
    assert.equal(result.status, 'created');
  }
}

/** The sequences a filtered page from the start holds. */
async function matching(storage: Storage, addressId: string, filter: EventFilter): Promise<number[]> {
  const page = await storage.listEvents({ addressId, after: 0, limit: 100, filter });
  return page.events.map((event) => event.sequence);
}

const raw = (body: string | null) => JSON.stringify({ content_type: 'application/json', headers: {}, body });

await forEachStorage('filters', (storage) => {
  test('type: exact names and trailing-star prefixes, case and LIKE characters taken literally', async () => {
    const id = await newAddress(storage());
    await append(
      storage(),
      id,
      [
        'stripe.payment_intent.succeeded',
        'stripe.payment_intent.failed',
        'stripe.charge',
        'STRIPE.charge',
        'a%b',
        'a_b',
        'axb',
      ].map((type) => ({ type })),
    );
    assert.deepEqual(await matching(storage(), id, { types: ['stripe.payment_intent.*'] }), [1, 2]);
    assert.deepEqual(await matching(storage(), id, { types: ['stripe.charge'] }), [3]);
    assert.deepEqual(await matching(storage(), id, { types: ['stripe.charge', 'stripe.payment_intent.f*'] }), [2, 3]);
    assert.deepEqual(await matching(storage(), id, { types: ['stripe.*'] }), [1, 2, 3]);
    assert.deepEqual(await matching(storage(), id, { types: ['a_*'] }), [6]);
    assert.deepEqual(await matching(storage(), id, { types: ['a%*'] }), [5]);
    assert.deepEqual(await matching(storage(), id, { types: ['*'] }), [1, 2, 3, 4, 5, 6, 7]);
  });

  test('source exact; callback by id or key in the metadata', async () => {
    const id = await newAddress(storage());
    await append(storage(), id, [
      { source: 'github' },
      { source: 'callback', metadataJson: JSON.stringify({ callback_id: 'cb_1', callback_key: 'job-1' }) },
      { source: 'callback', metadataJson: JSON.stringify({ callback_id: 'cb_2', callback_key: 'job-2' }) },
      { source: 'githubx', metadataJson: JSON.stringify({ other: 'cb_1' }) },
    ]);
    assert.deepEqual(await matching(storage(), id, { source: 'github' }), [1]);
    assert.deepEqual(await matching(storage(), id, { callback: 'cb_1' }), [2]);
    assert.deepEqual(await matching(storage(), id, { callback: 'job-2' }), [3]);
    assert.deepEqual(await matching(storage(), id, { callback: 'job-3' }), []);
    assert.deepEqual(
      await matching(storage(), id, { source: 'callback', callback: 'job-1', types: ['message.*'] }),
      [2],
    );
  });

  test('data_contains: nested objects by subset of keys, arrays by their elements, scalars equal', async () => {
    const id = await newAddress(storage());
    await append(
      storage(),
      id,
      [
        { job: { id: 2, status: 'succeeded', tags: ['a', 'b'] } },
        { job: { id: 1, status: 'succeeded', tags: ['b'] } },
        { job: { id: 2, status: 'processing' }, items: [{ sku: 'x', qty: 1 }, { sku: 'y' }] },
        [1, 2, 3],
        'text',
        { n: 1.0, flag: false, none: null },
      ].map((data) => ({ dataJson: JSON.stringify(data) })),
    );
    const dataContains = (value: unknown) => matching(storage(), id, { dataContains: JSON.stringify(value) });
    assert.deepEqual(await dataContains({ job: { id: 2 } }), [1, 3]);
    assert.deepEqual(await dataContains({ job: { id: 2, status: 'succeeded' } }), [1]);
    assert.deepEqual(await dataContains({ job: { tags: ['b'] } }), [1, 2]);
    assert.deepEqual(await dataContains({ job: { tags: ['a', 'b', 'b'] } }), [1]);
    assert.deepEqual(await dataContains({ job: { tags: 'b' } }), []);
    assert.deepEqual(await dataContains({ items: [{ sku: 'y' }] }), [3]);
    assert.deepEqual(await dataContains({ items: [{ qty: 1 }, { sku: 'y' }] }), [3]);
    assert.deepEqual(await dataContains({ items: [{ qty: 2 }] }), []);
    assert.deepEqual(await dataContains([3, 1]), [4]);
    assert.deepEqual(await dataContains(2), [4]);
    assert.deepEqual(await dataContains('text'), [5]);
    assert.deepEqual(await dataContains({ n: 1, flag: false, none: null }), [6]);
    assert.deepEqual(await dataContains({}), [1, 2, 3, 6]);
  });

  test('body_contains: the JSON a raw capture body holds, or an object body; text that is not JSON never matches', async () => {
    const id = await newAddress(storage());
    await append(
      storage(),
      id,
      [
        raw(JSON.stringify({ type: 'payment_intent.succeeded', data: { object: { id: 'pi_1', amount: 5 } } })),
        raw(JSON.stringify({ type: 'payment_intent.failed', data: { object: { id: 'pi_2' } } })),
        raw('not json {"type":"payment_intent.succeeded"}'),
        raw(null),
        JSON.stringify({ body: { answer: 'yes', list: [1, [2, 3]] } }),
        JSON.stringify({ body: '"\\u0000"' }),
      ].map((dataJson) => ({ dataJson })),
    );
    const bodyContains = (value: unknown) => matching(storage(), id, { bodyContains: JSON.stringify(value) });
    assert.deepEqual(await bodyContains({ type: 'payment_intent.succeeded' }), [1]);
    assert.deepEqual(await bodyContains({ data: { object: { id: 'pi_2' } } }), [2]);
    assert.deepEqual(await bodyContains({ answer: 'yes' }), [5]);
    assert.deepEqual(await bodyContains({ list: [[3]] }), [5]);
    assert.deepEqual(await bodyContains({ list: [3] }), []);
    assert.deepEqual(await bodyContains({}), [1, 2, 5]);
    assert.deepEqual(await bodyContains(null), [4]);
  });

  test('a content filter with unacked keeps only unacknowledged matches', async () => {
    const id = await newAddress(storage());
    await append(storage(), id, [{ type: 'job.done' }, { type: 'job.done' }, { type: 'other' }, { type: 'job.done' }]);
    assert.equal(await storage().ackUpTo(id, 2, Date.now()), 2);
    assert.deepEqual(await matching(storage(), id, { unacked: true, types: ['job.*'] }), [4]);
  });

  test('the page moves past what it scanned, and says when the scan bound stopped it', async () => {
    const id = await newAddress(storage());
    await append(
      storage(),
      id,
      Array.from({ length: 12 }, (_, i) => ({ type: i === 8 || i === 10 ? 'wanted' : 'noise' })),
    );
    const read = (after: number, limit = 10) =>
      storage().listEvents({ addressId: id, after, limit, filter: { types: ['wanted'] }, scanLimit: 5 });
    const first = await read(0);
    assert.deepEqual(
      {
        events: first.events.length,
        hasMore: first.hasMore,
        scanLimited: first.scanLimited,
        scannedTo: first.scannedTo,
      },
      { events: 0, hasMore: true, scanLimited: true, scannedTo: 5 },
    );
    const second = await read(5);
    assert.deepEqual(
      second.events.map((e) => e.sequence),
      [9],
    );
    assert.deepEqual(
      { hasMore: second.hasMore, scanLimited: second.scanLimited, scannedTo: second.scannedTo },
      {
        hasMore: true,
        scanLimited: true,
        scannedTo: 10,
      },
    );
    const third = await read(10);
    assert.deepEqual(
      third.events.map((e) => e.sequence),
      [11],
    );
    assert.deepEqual(
      { hasMore: third.hasMore, scanLimited: third.scanLimited, scannedTo: third.scannedTo },
      {
        hasMore: false,
        scanLimited: undefined,
        scannedTo: 12,
      },
    );
    // A page full of matches leaves the rest to the next: its cursor is its last event.
    const full = await storage().listEvents({ addressId: id, after: 0, limit: 1, filter: { types: ['wanted'] } });
    assert.deepEqual(
      full.events.map((e) => e.sequence),
      [9],
    );
    assert.equal(full.hasMore, true);
    assert.equal(full.scannedTo, undefined);
    // Nothing past the cursor: an empty page that scanned nothing, and says the latest sequence.
    const empty = await read(12);
    assert.deepEqual(
      { events: empty.events, hasMore: empty.hasMore, latest: empty.latestSequence, scannedTo: empty.scannedTo },
      {
        events: [],
        hasMore: false,
        latest: 12,
        scannedTo: undefined,
      },
    );
  });

  test('a filtered page keeps the byte bound, its first event always', async () => {
    const id = await newAddress(storage());
    const big = JSON.stringify({ kind: 'x', pad: 'p'.repeat(100) });
    await append(storage(), id, [
      { dataJson: big },
      { dataJson: '{"kind":"y"}' },
      { dataJson: big },
      { dataJson: big },
    ]);
    const page = await storage().listEvents({
      addressId: id,
      after: 0,
      limit: 10,
      maxBytes: 150,
      filter: { dataContains: '{"kind":"x"}' },
    });
    assert.deepEqual(
      page.events.map((e) => e.sequence),
      [1],
    );
    assert.equal(page.hasMore, true);
    assert.equal(page.scannedTo, undefined);
  });
});
