// Callbacks at the Storage interface of every engine (docs/api.md §3.6): create is
// idempotent on key by the unique index, the waiting limit holds, a callback completes at
// most once however many completions race, and expiry, cancellation, listing and purge.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallbackRecord, Storage } from '../../src/storage/storage.js';
import { forEachStorage } from '../helpers/storage.js';
import { addressRecord } from '../helpers/records.js';

const HOUR = 3_600_000;
let counter = 0;

function callback(addressId: string, overrides: Partial<CallbackRecord> = {}): CallbackRecord {
  counter++;
  return {
    id: `cb_test${counter}_${Math.random().toString(36).slice(2)}`,
    addressId,
    key: null,
    label: null,
    secretDigest: 'ab'.repeat(32),
    status: 'waiting',
    createdAt: Date.now() + counter,
    expiresAt: Date.now() + HOUR,
    completedAt: null,
    eventId: null,
    eventSequence: null,
    deliveries: 0,
    completeWhenJson: null,
    humanJson: null,
    answerJson: null,
    ...overrides,
  };
}

async function address(storage: Storage) {
  const record = addressRecord();
  assert.equal(await storage.insertAddress(record), 'ok');
  return record;
}

await forEachStorage('callbacks', (storage, engine, opened) => {
  test('create, then read it back; the same key again finds the first, unchanged', async () => {
    const { id: addressId } = await address(storage());
    const first = callback(addressId, { key: 'job-1', label: 'first' });
    const created = await storage().createCallback({ callback: first, maxWaiting: 10, now: Date.now() });
    assert.deepEqual(created, { status: 'created', callback: first });
    assert.deepEqual(await storage().getCallback(addressId, first.id), first);
    const again = await storage().createCallback({
      callback: callback(addressId, { key: 'job-1', label: 'second' }),
      maxWaiting: 10,
      now: Date.now(),
    });
    assert.deepEqual(again, { status: 'existing', callback: first });
    assert.equal(await storage().getCallback('addr_other', first.id), null);
  });

  test('concurrent creates with one key make one callback', async () => {
    const { id: addressId } = await address(storage());
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        storage().createCallback({ callback: callback(addressId, { key: 'race' }), maxWaiting: 100, now: Date.now() }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 'created').length, 1);
    const ids = new Set(results.map((r) => (r.status === 'created' || r.status === 'existing' ? r.callback.id : '')));
    assert.equal(ids.size, 1);
    assert.equal((await storage().listCallbacks({ addressId, key: 'race', limit: 10 })).length, 1);
  });

  test('the waiting limit refuses one more, counting waiting ones only; an unknown address is reported', async () => {
    const { id: addressId } = await address(storage());
    const a = callback(addressId);
    assert.equal((await storage().createCallback({ callback: a, maxWaiting: 2, now: Date.now() })).status, 'created');
    const b = callback(addressId);
    assert.equal((await storage().createCallback({ callback: b, maxWaiting: 2, now: Date.now() })).status, 'created');
    const c = callback(addressId);
    assert.deepEqual(await storage().createCallback({ callback: c, maxWaiting: 2, now: Date.now() }), {
      status: 'limit',
    });
    assert.ok(await storage().cancelCallback(addressId, a.id));
    assert.equal((await storage().createCallback({ callback: c, maxWaiting: 2, now: Date.now() })).status, 'created');
    assert.deepEqual(
      await storage().createCallback({ callback: callback('addr_nowhere'), maxWaiting: 2, now: Date.now() }),
      { status: 'address_not_found' },
    );
  });

  test('a callback completes at most once: many concurrent completions, one winner', async () => {
    const { id: addressId } = await address(storage());
    const cb = callback(addressId);
    await storage().createCallback({ callback: cb, maxWaiting: 10, now: Date.now() });
    // On PostgreSQL the racers come from two engines on one database, as two instances would.
    const other = engine === 'postgres' ? await opened().openAnother!() : storage();
    try {
      const now = Date.now();
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 ? other : storage()).completeCallback({
            addressId,
            id: cb.id,
            eventId: `evt_${i}`,
            eventSequence: i + 1,
            answerJson: null,
            now,
          }),
        ),
      );
      const winners = results.filter((r) => r !== null);
      assert.equal(winners.length, 1);
      const stored = await storage().getCallback(addressId, cb.id);
      assert.equal(stored?.status, 'completed');
      assert.equal(stored?.eventId, winners[0].eventId);
      assert.equal(stored?.completedAt, now);
    } finally {
      if (other !== storage()) await other.close();
    }
  });

  test('an expired, cancelled or completed callback is not completed; deliveries are counted', async () => {
    const { id: addressId } = await address(storage());
    const now = Date.now();
    const late = callback(addressId, { expiresAt: now - 1 });
    await storage().createCallback({ callback: late, maxWaiting: 10, now });
    const complete = (id: string) =>
      storage().completeCallback({ addressId, id, eventId: 'evt_x', eventSequence: 1, answerJson: '{}', now });
    assert.equal(await complete(late.id), null);
    const cancelled = callback(addressId);
    await storage().createCallback({ callback: cancelled, maxWaiting: 10, now });
    assert.equal((await storage().cancelCallback(addressId, cancelled.id))?.status, 'cancelled');
    assert.equal(await complete(cancelled.id), null);
    assert.equal(await storage().cancelCallback(addressId, 'cb_unknown'), null);
    const done = callback(addressId);
    await storage().createCallback({ callback: done, maxWaiting: 10, now });
    await storage().countCallbackDelivery(addressId, done.id);
    await storage().countCallbackDelivery(addressId, done.id);
    const completed = await complete(done.id);
    assert.equal(completed?.answerJson, '{}');
    assert.equal(completed?.deliveries, 2);
    assert.equal(await complete(done.id), null);
  });

  test('due callbacks are the waiting ones past expiry; expire moves each once', async () => {
    const { id: addressId } = await address(storage());
    const now = Date.now();
    const due = callback(addressId, { expiresAt: now - 10 });
    const later = callback(addressId, { expiresAt: now + HOUR });
    await storage().createCallback({ callback: due, maxWaiting: 10, now });
    await storage().createCallback({ callback: later, maxWaiting: 10, now });
    const found = (await storage().dueCallbacks(now, 1000)).filter((c) => c.addressId === addressId);
    assert.deepEqual(
      found.map((c) => c.id),
      [due.id],
    );
    assert.equal(await storage().expireCallback(addressId, due.id), true);
    assert.equal(await storage().expireCallback(addressId, due.id), false);
    assert.equal((await storage().getCallback(addressId, due.id))?.status, 'expired');
    assert.equal((await storage().dueCallbacks(now, 1000)).filter((c) => c.addressId === addressId).length, 0);
  });

  test('list by ids, key, key prefix and status; purge removes settled ones past retention only', async () => {
    const { id: addressId } = await address(storage());
    const now = Date.now();
    const a = callback(addressId, { key: 'deploy/1' });
    const b = callback(addressId, { key: 'deploy/2' });
    const c = callback(addressId, { key: 'other%_1' });
    for (const cb of [a, b, c]) await storage().createCallback({ callback: cb, maxWaiting: 10, now });
    const ids = async (params: Omit<Parameters<Storage['listCallbacks']>[0], 'addressId' | 'limit'>) =>
      (await storage().listCallbacks({ addressId, limit: 100, ...params })).map((cb) => cb.id);
    assert.deepEqual(await ids({}), [a.id, b.id, c.id]);
    assert.deepEqual(await ids({ ids: [c.id, a.id, 'cb_none'] }), [a.id, c.id]);
    assert.deepEqual(await ids({ keyPrefix: 'deploy/' }), [a.id, b.id]);
    assert.deepEqual(await ids({ keyPrefix: 'other%' }), [c.id]);
    assert.deepEqual(await ids({ keyPrefix: 'other_' }), []);
    assert.deepEqual(await ids({ key: 'deploy/2' }), [b.id]);
    await storage().completeCallback({ addressId, id: a.id, eventId: 'e', eventSequence: 1, answerJson: null, now });
    assert.deepEqual(await ids({ status: 'completed' }), [a.id]);
    assert.deepEqual(await ids({ status: 'waiting', keyPrefix: 'deploy/' }), [b.id]);
    await storage().purgeCallbacks(now);
    assert.deepEqual(await ids({}), [a.id, b.id, c.id]);
    assert.ok((await storage().purgeCallbacks(now + 1)) >= 1);
    assert.deepEqual(await ids({}), [b.id, c.id]);
    await storage().deleteAddress(addressId);
    assert.equal(await storage().getCallback(addressId, b.id), null);
  });
});
