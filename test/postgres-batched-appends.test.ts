// Batched appends on PostgreSQL (docs/api.md §3): two engine instances on one database each
// send the appends that arrive together as one statement. Bursts on both at once, to the
// same addresses in opposite orders, with idempotency keys repeated inside one batch, across
// the two instances' batches and in later batches, must give: no deadlock (batches lock
// address rows in id order), sequences 1..N per address with no gap and no repeat, exactly
// one event per key (every repeat answered with it), and exact caps. An append admitted on
// an address read lately goes in only while the address still admits it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { fitsAsIsSql } from '../src/storage/append-policy.js';
import { PostgresStorage } from '../src/storage/postgres/engine.js';
import { ANNOUNCE_SPACING_MS } from '../src/storage/postgres/events-append.js';
import type { AppendInput, AppendResult } from '../src/storage/storage.js';
import { addressRecord, appendInput, senderRecord } from './helpers/records.js';
import { eventually } from './helpers/engines.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';
import { createTestDatabase, postgresSkipReason, withClient, type TestDatabase } from './helpers/postgres.js';

const skip = await postgresSkipReason();

const ADDRESSES = 8;
const ROUNDS = 12;
const CAPACITY = 1000;

interface Sent {
  input: AppendInput;
  result: Promise<AppendResult>;
}

describe('batched appends from two instances on one database', { skip: skip ? `skipped: ${skip}` : false }, () => {
  let db: TestDatabase;
  let one: PostgresStorage;
  let two: PostgresStorage;

  before(async () => {
    db = await createTestDatabase();
    const config = loadConfig({ DATABASE_URL: db.url, ROOST_PG_POOL_SIZE: '6' });
    [one, two] = await Promise.all([PostgresStorage.open(config), PostgresStorage.open(config)]);
  });

  after(async () => {
    await Promise.all([one?.close(), two?.close()]);
    await db?.drop();
  });

  test('concurrent bursts: no deadlock, no gap, no duplicate, one event per key', async () => {
    const addresses = Array.from({ length: ADDRESSES }, () => addressRecord());
    for (const address of addresses) assert.equal(await one.insertAddress(address), 'ok');
    const ids = addresses.map((a) => a.id);
    const deadlocksBefore = await deadlocks(db.url);
    const sent: Sent[] = [];
    const send = (storage: PostgresStorage, addressId: string, dedupeKey: string | null = null) => {
      const input = appendInput(addressId, { dedupeKey, dataJson: JSON.stringify({ n: sent.length }) });
      sent.push({ input, result: storage.appendEvent({ event: input, capacity: CAPACITY }) });
    };
    for (let round = 0; round < ROUNDS; round++) {
      // Each burst is issued in one turn of the event loop, so each instance batches it.
      const pending = sent.length;
      for (let i = 0; i < ids.length; i++) {
        send(one, ids[i]);
        send(two, ids[ids.length - 1 - i]);
        // A key twice in one instance's batch, and once in the other's.
        const key = `round-${round}-${i}`;
        send(one, ids[i], key);
        send(one, ids[i], key);
        send(two, ids[i], key);
        // A key from the previous round again: its event is already committed (or racing).
        if (round > 0) send(two, ids[(i + 3) % ids.length], `round-${round - 1}-${(i + 3) % ids.length}`);
      }
      await Promise.all(sent.slice(pending).map((s) => s.result));
    }
    const results = await Promise.all(sent.map((s) => s.result));

    // Exactly one created event per key; every other append with that key answers with it.
    const byKey = new Map<string, Array<{ input: AppendInput; result: AppendResult }>>();
    for (let i = 0; i < sent.length; i++) {
      const { input } = sent[i];
      if (input.dedupeKey === null) {
        assert.equal(results[i].status, 'created');
        continue;
      }
      const key = `${input.addressId}/${input.dedupeKey}`;
      byKey.set(key, [...(byKey.get(key) ?? []), { input, result: results[i] }]);
    }
    assert.equal(byKey.size, ROUNDS * ADDRESSES);
    for (const [key, appends] of byKey) {
      const created = appends.filter((a) => a.result.status === 'created');
      assert.equal(created.length, 1, `one event for ${key}`);
      const winner = (created[0].result as { event: { id: string; sequence: number } }).event;
      for (const { result } of appends) {
        assert.ok(result.status === 'created' || result.status === 'duplicate', `${key}: ${result.status}`);
        assert.equal(result.event.id, winner.id);
        assert.equal(result.event.sequence, winner.sequence);
      }
    }

    // Per address: sequences 1..N, each the one its 202 carried.
    for (const id of ids) {
      const createdHere = results.filter(
        (r): r is Extract<AppendResult, { status: 'created' }> => r.status === 'created' && r.event.addressId === id,
      );
      const { events } = await one.listEvents({ addressId: id, after: 0, limit: CAPACITY });
      assert.deepEqual(
        events.map((e) => e.sequence),
        Array.from({ length: createdHere.length }, (_, i) => i + 1),
        `gapless sequences for ${id}`,
      );
      const stored = new Map(events.map((e) => [e.id, e.sequence]));
      for (const r of createdHere) assert.equal(stored.get(r.event.id), r.event.sequence);
    }

    // The appends did go together: far fewer transactions than events.
    const { events, transactions } = await withClient(db.url, async (client) => {
      const { rows } = await client.query<{ events: number; transactions: number }>(
        'SELECT count(*)::int AS events, count(DISTINCT xmin::text)::int AS transactions FROM events',
      );
      return rows[0];
    });
    assert.ok(transactions * 4 <= events, `${events} events in ${transactions} transactions`);

    // A deadlock would have been resolved by PostgreSQL aborting one batch (and the engine
    // running it again): the database's counter shows it. Backends report it as they end.
    await Promise.all([one.close(), two.close()]);
    assert.equal(await deadlocks(db.url), deadlocksBefore, 'no deadlock between the batches');
  });
});

describe('caps, gone addresses and admissions in batches', { skip: skip ? `skipped: ${skip}` : false }, () => {
  let db: TestDatabase;
  let one: PostgresStorage;
  let two: PostgresStorage;

  before(async () => {
    db = await createTestDatabase();
    const config = loadConfig({ DATABASE_URL: db.url });
    [one, two] = await Promise.all([PostgresStorage.open(config), PostgresStorage.open(config)]);
  });

  after(async () => {
    await Promise.all([one?.close(), two?.close()]);
    await db?.drop();
  });

  test('a burst past the capacity: exactly capacity events, the rest queue_full', async () => {
    const address = addressRecord();
    await one.insertAddress(address);
    const capacity = 25;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? one : two).appendEvent({ event: appendInput(address.id), capacity: capacity }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 'created').length, capacity);
    assert.equal(results.filter((r) => r.status === 'queue_full').length, 40 - capacity);
    const { events } = await one.listEvents({ addressId: address.id, after: 0, limit: 100 });
    assert.deepEqual(
      events.map((e) => e.sequence),
      Array.from({ length: capacity }, (_, i) => i + 1),
    );
  });

  test('a burst past the byte cap: exactly what fits, the rest bytes_full; acknowledged events make room', async () => {
    const address = addressRecord();
    await one.insertAddress(address);
    const input = () => appendInput(address.id, { dataJson: JSON.stringify({ pad: 'x'.repeat(80) }) });
    const size = Buffer.byteLength(input().dataJson) + 'message.received'.length + 'https'.length;
    const maxBytes = size * 7 + size / 2;
    const burst = () =>
      Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 ? one : two).appendEvent({ event: input(), capacity: 1000, maxBytes }),
        ),
      );
    let results = await burst();
    assert.equal(results.filter((r) => r.status === 'created').length, 7);
    assert.equal(results.filter((r) => r.status === 'bytes_full').length, 5);
    // Three acknowledged: the next burst evicts them (oldest first) and takes their place.
    assert.equal(await one.ackUpTo(address.id, 3, Date.now()), 3);
    results = await burst();
    assert.equal(results.filter((r) => r.status === 'created').length, 3);
    const { events } = await one.listEvents({ addressId: address.id, after: 0, limit: 100 });
    assert.deepEqual(
      events.map((e) => e.sequence),
      [4, 5, 6, 7, 8, 9, 10],
    );
  });

  test('appends to a deleted address in a batch answer address_not_found; the rest of the batch goes in', async () => {
    const live = addressRecord();
    const gone = addressRecord();
    await one.insertAddress(live);
    await one.insertAddress(gone);
    assert.equal(await one.deleteAddress(gone.id), true);
    const results = await Promise.all([
      one.appendEvent({ event: appendInput(live.id), capacity: 1000 }),
      one.appendEvent({ event: appendInput(gone.id), capacity: 1000 }),
      one.appendEvent({ event: appendInput(live.id), capacity: 1000 }),
    ]);
    assert.deepEqual(
      results.map((r) => (r.status === 'created' ? r.event.sequence : r.status)),
      [1, 'address_not_found', 2],
    );
  });

  test('the batch function keeps one generic plan on its connection, however small its batches', async () => {
    // Through a transaction pooler every statement goes unnamed, so a plan is kept only inside
    // a function; left to choose, PostgreSQL would plan afresh for each batch of one or two
    // (BENCHMARKS.md, "planned at every call"). auto_explain, loaded into this session, shows
    // each plan: a generic one names the function's parameters (`ANY ($2)`), one made for a
    // call shows its values. As through a transaction pooler, each call is an unnamed
    // statement in a transaction of its own, and the session leaves the choice to PostgreSQL.
    const address = addressRecord();
    await one.insertAddress(address);
    const calls = 12;
    const plans = await withClient(db.url, async (client) => {
      const notices: string[] = [];
      client.on('notice', (notice) => notices.push(notice.message ?? ''));
      for (const setting of [
        "LOAD 'auto_explain'",
        'SET auto_explain.log_min_duration = 0',
        'SET auto_explain.log_nested_statements = on',
        "SET auto_explain.log_level = 'notice'",
        'SET plan_cache_mode = auto',
      ])
        await client.query(setting);
      for (let i = 0; i < calls; i++) {
        const { rows } = await client.query(
          `SELECT event_id, event_sequence FROM roost_append_batch($1::text[], $2::text[], $3::bigint[],
             $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::bigint[],
             $12::bigint[], $13::bigint[], $14::text[], $15::text[], $16::text[], $17::bigint[])`,
          // One event, as events-append.ts sends it: its columns, size, capacity, byte cap, key scope, admission.
          [
            [`evt_plan_${i}`],
            [address.id],
            [0],
            ['t'],
            ['https'],
            ['{}'],
            [null],
            [null],
            [Date.now()],
            [null],
            [2],
            [CAPACITY],
            [0],
            ['http'],
            [null],
            [null],
            [null],
          ],
        );
        assert.deepEqual(rows, [{ event_id: `evt_plan_${i}`, event_sequence: String(i + 1) }]);
      }
      return notices.filter((notice) => notice.includes('Query Text: WITH input AS'));
    });
    assert.equal(plans.length, calls, 'each call of the batch explained');
    for (const plan of plans) {
      assert.match(plan, /= ANY \(\$2\)/, 'a generic plan: the parameter, not its value');
      assert.ok(!plan.includes(address.id), 'no plan made for the values of one call');
    }
  });

  test('the batch function decides fit by the rule of the append policy', async () => {
    // Migration 13 holds the batch's SQL as it landed; its fit must stay append-policy.ts's.
    const body = await withClient(db.url, async (client) => {
      const { rows } = await client.query<{ prosrc: string; proconfig: string[] }>(
        "SELECT prosrc, proconfig FROM pg_proc WHERE proname = 'roost_append_batch'",
      );
      assert.deepEqual(rows[0].proconfig, ['plan_cache_mode=force_generic_plan']);
      return rows[0].prosrc;
    });
    const fit = fitsAsIsSql({
      held: 'c.last_sequence + c.k - 1',
      heldBytes: 'c.stored_bytes + c.bytes_so_far - c.size_bytes',
      size: 'c.size_bytes',
      capacity: 'c.capacity',
      maxBytes: 'c.max_bytes',
    });
    assert.ok(body.includes(`bool_and(${fit})`), `the function's fit is fitsAsIsSql's: ${fit}`);
  });

  /** A third instance whose pool goes through a TCP proxy, and the addresses the second hears of. */
  async function thirdBehindProxy() {
    const proxy = await startTcpProxy(Number(new URL(db.url).port || 5432));
    const viaProxy = new URL(db.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const heard = new Set<string>();
    const unsubscribe = two.onExternalChange((id) => heard.add(id));
    const three = await PostgresStorage.open(loadConfig({ DATABASE_URL: viaProxy.href, ROOST_PG_POOL_SIZE: '4' }));
    const stop = async () => {
      unsubscribe();
      await three.close();
      await proxy.close();
    };
    return { proxy, three, heard, stop };
  }

  test('wake-ups go out one announcement at a time, none dropped between them or at close', async () => {
    // Each announcement is held back on its way to the database, so that appends commit
    // while one is under way: they must wait for it and go out together in the next
    // (events-append.ts announce), and the instance's close must still send them.
    const { proxy, three, heard, stop } = await thirdBehindProxy();
    try {
      proxy.delaySending('roost_append_announce', 150);
      const addresses = Array.from({ length: 18 }, () => addressRecord());
      for (const address of addresses) assert.equal(await one.insertAddress(address), 'ok');
      for (let turn = 0; turn < 6; turn++) {
        const results = await Promise.all(
          addresses
            .slice(turn * 3, turn * 3 + 3)
            .map((address) => three.appendEvent({ event: appendInput(address.id), capacity: CAPACITY })),
        );
        for (const result of results) assert.equal(result.status, 'created');
      }
      await three.close();
      await eventually(() => addresses.every((a) => heard.has(a.id)), 'every address heard by the other instance');
      assert.equal(proxy.mostDelayedAtOnce, 1, 'one announcement under way at a time');
    } finally {
      await stop();
    }
  });

  test('under load, announcements start ANNOUNCE_SPACING_MS apart; every wake-up still arrives', async () => {
    // Appends one after another, each committed in about a round trip: sent as each commit
    // came back, announcements would follow each other that closely (events-append.ts).
    const { proxy, three, heard, stop } = await thirdBehindProxy();
    try {
      const sent = proxy.recordArrivals('roost_append_announce');
      const addresses = Array.from({ length: 200 }, () => addressRecord());
      for (const address of addresses) assert.equal(await one.insertAddress(address), 'ok');
      const appended: string[] = [];
      for (const address of addresses) {
        const result = await three.appendEvent({ event: appendInput(address.id), capacity: CAPACITY });
        assert.equal(result.status, 'created');
        appended.push(address.id);
        if (sent.length >= 8) break;
      }
      await eventually(() => appended.every((id) => heard.has(id)), 'every address heard by the other instance');
      assert.ok(sent.length >= 8, `announcements seen: ${sent.length}`);
      // Timed where the proxy reads them, on the event loop this test shares with Roost: one
      // reading can come late, so the spacing is asked of the whole run, less 1 ms a gap.
      const gaps = sent.slice(1).map((at, i) => at - sent[i]);
      assert.ok(
        sent.at(-1)! - sent[0] >= (sent.length - 1) * (ANNOUNCE_SPACING_MS - 1),
        `gaps between announcements: ${gaps.map((gap) => gap.toFixed(2)).join(', ')} ms`,
      );
    } finally {
      await stop();
    }
  });

  test('appends admitted on an address read lately go in while its row has the same secrets and no sender; else address_changed', async () => {
    const now = Date.now();
    const address = addressRecord();
    await one.insertAddress(address);
    assert.equal(two.recentAddress(address.id, now), null, 'nothing read yet');
    const seen = await two.getAddress(address.id, now);
    assert.deepEqual(two.recentAddress(address.id, now), seen);
    const keyed = await two.appendEvent({ event: appendInput(address.id, { dedupeKey: 'k' }), capacity: 1000 });
    assert.equal(keyed.status, 'created');

    // Rotated on the other instance: appends admitted by the old secrets change nothing,
    // a repeated key included; in the same batch, the others go in.
    const rotated = await one.replaceIngressSecret({
      id: address.id,
      digest: 'd'.repeat(64),
      previousUntil: null,
      now,
    });
    const admitted = (admittedBy: typeof seen, dedupeKey: string | null = null) =>
      two.appendEvent({ event: appendInput(address.id, { dedupeKey }), capacity: 1000, admittedBy: admittedBy! });
    const batch = await Promise.all([
      admitted(seen),
      admitted(seen, 'k'),
      admitted(rotated),
      two.appendEvent({ event: appendInput(address.id), capacity: 1000 }),
    ]);
    assert.deepEqual(
      batch.map((r) => (r.status === 'created' ? r.event.sequence : r.status)),
      ['address_changed', 'address_changed', 2, 3],
    );
    // The same, one at a time (the full transaction); and once a sender is set, nothing admitted goes in.
    assert.equal((await admitted(seen)).status, 'address_changed');
    assert.equal((await admitted(rotated, 'k')).status, 'duplicate');
    // A rotation with a grace period: the row names its previous secret and until when.
    await one.replaceIngressSecret({ id: address.id, digest: 'e'.repeat(64), previousUntil: now + 60_000, now });
    const graced = await two.getAddress(address.id, now);
    assert.equal(graced?.previousIngressUntil, now + 60_000);
    assert.equal((await admitted(graced, 'k')).status, 'duplicate');
    assert.equal(await one.putSender(senderRecord(address.id), now), true);
    assert.equal((await admitted(graced)).status, 'address_changed');
    const { events } = await one.listEvents({ addressId: address.id, after: 0, limit: 100 });
    assert.deepEqual(
      events.map((e) => e.sequence),
      [1, 2, 3],
    );
  });
});

async function deadlocks(url: string): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ deadlocks: string }>(
      'SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(rows[0].deadlocks);
  });
}
