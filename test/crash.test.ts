// Crash and shutdown. "A 202 means the event is durable: it is committed to storage
// before the response is sent" (CONTRACT §3): kill the server with SIGKILL while
// deliveries are in flight, start it again on the same SQLite file, and every delivery
// that was answered 202 must be there, unchanged, in a gapless sequence. And SIGTERM
// answers held polls and exits 0 (CONTRACT §9).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createAddress, deliver, request, type CreatedAddress } from './helpers/http.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';

const dirs: string[] = [];
const processes: ServerProcess[] = [];
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'roost-crash-'));
  dirs.push(dir);
  return join(dir, 'roost.db');
}
async function start(dbPath: string): Promise<ServerProcess> {
  // LOG_LEVEL stays at info: spawnServer waits for the start-up line logged at that level.
  const proc = await spawnServer({ ROOST_DB: dbPath, ROOST_CREATE_RATE: '100000/sec' });
  processes.push(proc);
  return proc;
}
after(async () => {
  for (const proc of processes) await proc.kill();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The whole queue of an address, page by page. */
async function readQueue(base: string, address: CreatedAddress): Promise<any[]> {
  const events: any[] = [];
  let cursor = 0;
  for (;;) {
    const res = await request(base, 'GET', `/api/v1/addresses/${address.id}/events?after=${cursor}&limit=100`, { token: address.token });
    assert.equal(res.status, 200, res.text);
    events.push(...res.body.events);
    if (!res.body.has_more) return events;
    cursor = res.body.next_cursor;
  }
}

/** Inbox URLs point at the server's origin, which changes across restarts (PORT=0). */
const rebase = (address: CreatedAddress, base: string): CreatedAddress => ({ ...address, inbox: `${base}${new URL(address.inbox).pathname}` });

const SENDERS = 8;
const ADDRESSES = 4;
/** Answered 202s to wait for before the kill: enough that the kill lands mid-stream. */
const KILL_AFTER = 400;

describe('SIGKILL under load (CONTRACT §3: a 202 is durable)', () => {
  test('every 202 survives with its id and sequence; sequences stay gapless; the next delivery takes max+1', { timeout: 120_000 }, async () => {
    const dbPath = tempDb();
    let server = await start(dbPath);
    const addresses = await Promise.all(Array.from({ length: ADDRESSES }, (_, i) => createAddress(server.url, { name: `crash ${i}` })));

    // What the server promised: key → the event it answered 202 with.
    const accepted = new Map<string, { addressId: string; id: string; sequence: number }>();
    // Deliveries whose answer never came: committed or not, nobody knows.
    const unanswered: Array<{ key: string; address: CreatedAddress }> = [];
    let reachedThreshold!: () => void;
    const threshold = new Promise<void>((resolve) => (reachedThreshold = resolve));

    const sender = async (s: number) => {
      for (let n = 0; ; n++) {
        const address = addresses[(s + n) % ADDRESSES];
        const key = `s${s}-n${n}`;
        let res;
        try {
          res = await deliver(address.inbox, { type: 'crash.test', data: { s, n } }, { 'idempotency-key': key });
        } catch {
          unanswered.push({ key, address });
          return; // the server is gone
        }
        // Nothing else is acceptable before the kill: no 5xx, no duplicates (keys are fresh).
        assert.equal(res.status, 202, res.text);
        accepted.set(key, { addressId: address.id, id: res.body.event.id, sequence: res.body.event.sequence });
        if (accepted.size === KILL_AFTER) reachedThreshold();
      }
    };
    const senders = Array.from({ length: SENDERS }, (_, s) => sender(s));
    // A sender that fails before the threshold fails the test instead of stalling it.
    await Promise.race([threshold, Promise.all(senders).then(() => assert.fail('the senders stopped before the kill'))]);
    await server.kill(); // SIGKILL: no flush, no close, no checkpoint
    await Promise.all(senders);
    assert.ok(accepted.size >= KILL_AFTER);
    assert.equal(unanswered.length, SENDERS, 'every sender had a delivery in flight at the kill');

    server = await start(dbPath);
    const live = addresses.map((a) => rebase(a, server.url));
    const queues = new Map<string, any[]>();
    for (const address of live) {
      const events = await readQueue(server.url, address);
      queues.set(address.id, events);
      // Gapless 1..max: group commit never leaves a hole, even cut off mid-batch.
      assert.deepEqual(events.map((e) => e.sequence), Array.from({ length: events.length }, (_, i) => i + 1), `sequences of ${address.id}`);
    }
    // Every 202 is there, with the id and sequence it was answered with.
    for (const [key, promised] of accepted) {
      const found = queues.get(promised.addressId)!.find((e) => e.dedupe_key === key);
      assert.ok(found, `the event answered 202 for ${key} is lost`);
      assert.equal(found.id, promised.id);
      assert.equal(found.sequence, promised.sequence);
    }
    // Anything else stored is one of the unanswered deliveries (committed before the kill).
    const stored = [...queues.values()].flat();
    const unansweredKeys = new Set(unanswered.map((u) => u.key));
    for (const event of stored) assert.ok(accepted.has(event.dedupe_key) || unansweredKeys.has(event.dedupe_key), `unexpected ${event.dedupe_key}`);
    assert.equal(stored.length, new Set(stored.map((e) => e.dedupe_key)).size, 'no key stored twice');

    // The sender retries what went unanswered: a committed one is a duplicate of the stored
    // event; the rest are queued now, each taking the next sequence.
    for (const { key, address } of unanswered) {
      const queue = queues.get(address.id)!;
      const before = queue.find((e) => e.dedupe_key === key);
      const res = await deliver(rebase(address, server.url).inbox, { data: 'retry' }, { 'idempotency-key': key });
      if (before) {
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.event.id, before.id);
      } else {
        assert.equal(res.status, 202, res.text);
        assert.equal(res.body.event.sequence, queue.length + 1);
        queue.push(res.body.event);
      }
    }
    // A fresh delivery continues at max + 1 on every address.
    for (const address of live) {
      const res = await deliver(address.inbox, { data: 'after restart' });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.event.sequence, queues.get(address.id)!.length + 1);
    }
    assert.equal(await server.stop(), 0);
  });
});

describe('SIGTERM (CONTRACT §9: answer held polls, finish writes, exit 0)', () => {
  test('held polls are answered with an empty page and the process exits 0', { timeout: 120_000 }, async () => {
    const dbPath = tempDb();
    const server = await start(dbPath);
    const address = await createAddress(server.url);
    const seeded = await deliver(address.inbox, { data: 'before' });
    assert.equal(seeded.status, 202);
    // Past the only event, with the longest wait: these polls are held.
    const polls = Array.from({ length: 3 }, () =>
      request(server.url, 'GET', `/api/v1/addresses/${address.id}/events?after=1&wait=25`, { token: address.token }),
    );
    // Held means counted by the server (CONTRACT §9 metrics), not "probably by now".
    for (;;) {
      const metrics = await request(server.url, 'GET', '/metrics');
      if (/^roost_polls_held 3$/m.test(metrics.text)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const exited = server.stop();
    // The polls are answered because of the shutdown, not because their 25 s ran out: the
    // process must be gone well before that (a bound, with 20 s to spare, not a measurement).
    const code = await Promise.race([
      exited,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('SIGTERM did not answer the held polls; the server waited for them')), 20_000).unref()),
    ]);
    assert.equal(code, 0, server.output());
    for (const poll of await Promise.all(polls)) {
      assert.equal(poll.status, 200, poll.text);
      assert.deepEqual(poll.body, { events: [], next_cursor: 1, has_more: false });
    }
    // Nothing was lost on the way out.
    const again = await start(dbPath);
    const events = await readQueue(again.url, address);
    assert.deepEqual(events.map((e) => e.id), [seeded.body.event.id]);
    assert.equal(await again.stop(), 0);
  });
});
