// Crash on PostgreSQL. "A 202 means the event is durable" (CONTRACT §3): deliveries
// stream into a child Roost process on PostgreSQL, it is killed with SIGKILL mid-load and
// started again on the same database. Every delivery answered 202 must be there with its
// id and sequence; sequences stay gapless (a transaction cut off by the kill gave its
// number back); re-sending the unanswered deliveries with their keys queues each at most
// once; the next delivery takes max+1.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createAddress, deliver, request, type CreatedAddress } from './helpers/http.js';
import { createTestDatabase, postgresSkipReason, type TestDatabase } from './helpers/postgres.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';

const skip = await postgresSkipReason();

const SENDERS = 12;
const ADDRESSES = 3;
/** 202s to collect before the kill, so that it lands while deliveries are in flight. */
const KILL_AFTER = 300;

const processes: ServerProcess[] = [];
const databases: TestDatabase[] = [];
after(async () => {
  for (const proc of processes) await proc.kill();
  for (const db of databases) await db.drop();
});

async function start(databaseUrl: string): Promise<ServerProcess> {
  const proc = await spawnServer({ DATABASE_URL: databaseUrl, ROOST_CREATE_RATE: '100000/sec' });
  processes.push(proc);
  return proc;
}

/** Inbox URLs name the origin of the process that created them; it changes on restart. */
const on = (address: CreatedAddress, base: string): CreatedAddress => ({ ...address, inbox: `${base}${new URL(address.inbox).pathname}` });

async function readQueue(base: string, address: CreatedAddress): Promise<any[]> {
  const events: any[] = [];
  for (let cursor = 0; ; ) {
    const page = await request(base, 'GET', `/api/v1/addresses/${address.id}/events?after=${cursor}&limit=100`, { token: address.token });
    assert.equal(page.status, 200, page.text);
    events.push(...page.body.events);
    if (!page.body.has_more) return events;
    cursor = page.body.next_cursor;
  }
}

describe('SIGKILL under load on PostgreSQL (CONTRACT §3: a 202 is durable)', { skip: skip ? `skipped: ${skip}` : false }, () => {
  test('every 202 survives with its sequence; gapless; unanswered deliveries queue at most once', { timeout: 120_000 }, async (t) => {
    const db = await createTestDatabase();
    databases.push(db);
    const first = await start(db.url);
    const addresses = await Promise.all(Array.from({ length: ADDRESSES }, () => createAddress(first.url)));

    const accepted = new Map<string, { addressId: string; id: string; sequence: number }>();
    const unanswered: Array<{ key: string; address: CreatedAddress }> = [];
    let killNow!: () => void;
    const threshold = new Promise<void>((resolve) => (killNow = resolve));

    const sender = async (s: number) => {
      for (let n = 0; ; n++) {
        const address = addresses[(s + n) % ADDRESSES];
        const key = `s${s}-n${n}`;
        let res;
        try {
          res = await deliver(address.inbox, { type: 'crash.test', data: { s, n } }, { 'idempotency-key': key });
        } catch {
          unanswered.push({ key, address });
          return; // the process is gone
        }
        assert.equal(res.status, 202, res.text);
        accepted.set(key, { addressId: address.id, id: res.body.event.id, sequence: res.body.event.sequence });
        if (accepted.size === KILL_AFTER) killNow();
      }
    };
    const senders = Array.from({ length: SENDERS }, (_, s) => sender(s));
    await threshold;
    await first.kill();
    await Promise.all(senders);
    assert.ok(unanswered.length > 0, 'the kill landed while deliveries were in flight');

    const second = await start(db.url);
    const queues = new Map<string, any[]>();
    for (const address of addresses) queues.set(address.id, await readQueue(second.url, address));

    // Every 202 is there, unchanged.
    const stored = new Map<string, any>();
    for (const events of queues.values()) for (const e of events) stored.set(e.dedupe_key, e);
    for (const [key, promise] of accepted) {
      const e = stored.get(key);
      assert.ok(e, `the 202 for ${key} survived`);
      assert.equal(e.id, promise.id);
      assert.equal(e.sequence, promise.sequence);
      assert.equal(e.address_id, promise.addressId);
    }
    // Nothing stored that was not sent, and each queue is 1..n without a hole.
    for (const [, events] of queues) {
      assert.deepEqual(events.map((e) => e.sequence), events.map((_, i) => i + 1));
      for (const e of events) assert.match(e.dedupe_key, /^s\d+-n\d+$/);
    }
    assert.ok(stored.size >= accepted.size && stored.size <= accepted.size + unanswered.length);
    t.diagnostic(`${accepted.size} answered 202, ${unanswered.length} unanswered, of which ${stored.size - accepted.size} had committed`);

    // A sender that never heard back retries with its key: 200 if the kill came after the
    // commit (the same event), 202 if before (queued now) — once either way.
    for (const { key, address } of unanswered) {
      const retry = await deliver(on(address, second.url).inbox, { type: 'crash.test', data: 'retry' }, { 'idempotency-key': key });
      if (stored.has(key)) {
        assert.equal(retry.status, 200, retry.text);
        assert.equal(retry.body.event.id, stored.get(key).id);
      } else {
        assert.equal(retry.status, 202, retry.text);
      }
    }
    for (const address of addresses) {
      const events = await readQueue(second.url, address);
      const keys = events.map((e) => e.dedupe_key);
      assert.equal(new Set(keys).size, keys.length, 'each key queued once');
      assert.deepEqual(events.map((e) => e.sequence), events.map((_, i) => i + 1), 'still gapless');
      const next = await deliver(on(address, second.url).inbox, { data: 'after' });
      assert.equal(next.body.event.sequence, events.length + 1, 'the next delivery takes max+1');
    }
    assert.equal(await second.stop(), 0, 'SIGTERM exits 0');
  });
});
