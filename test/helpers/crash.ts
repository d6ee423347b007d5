// The crash scenario shared by both engines' crash tests (docs/api.md §3: "a 202 means the
// event is durable"): senders stream keyed deliveries into a server process until it is
// killed with SIGKILL; after a restart on the same database, every 202 must be there.
import assert from 'node:assert/strict';
import { deliver, request, type CreatedAddress } from './http.js';
import type { ServerProcess } from './process.js';

export interface Promised {
  addressId: string;
  id: string;
  sequence: number;
}

export interface LoadOutcome {
  /** What the server promised: key → the event it answered 202 with. */
  accepted: Map<string, Promised>;
  /** Deliveries whose answer never came: committed or not, nobody knows. */
  unanswered: Array<{ key: string; address: CreatedAddress }>;
}

/** The whole queue of an address, page by page. */
export async function readQueue(base: string, address: CreatedAddress): Promise<any[]> {
  const events: any[] = [];
  for (let cursor = 0; ;) {
    const page = await request(base, 'GET', `/api/v1/addresses/${address.id}/events?after=${cursor}&limit=100`, {
      token: address.token,
    });
    assert.equal(page.status, 200, page.text);
    events.push(...page.body.events);
    if (!page.body.has_more) return events;
    cursor = page.body.next_cursor;
  }
}

/** Inbox URLs name the origin of the process that created them; it changes on restart. */
export const rebase = (address: CreatedAddress, base: string): CreatedAddress => ({
  ...address,
  inbox: `${base}${new URL(address.inbox).pathname}`,
});

/** Runs `senders` concurrent senders over `addresses` and SIGKILLs `server` after `killAfter` 202s. */
export async function loadUntilKilled(
  server: ServerProcess,
  addresses: CreatedAddress[],
  senders: number,
  killAfter: number,
): Promise<LoadOutcome> {
  const outcome: LoadOutcome = { accepted: new Map(), unanswered: [] };
  let reachedThreshold!: () => void;
  const threshold = new Promise<void>((resolve) => (reachedThreshold = resolve));
  const sender = async (s: number) => {
    for (let n = 0; ; n++) {
      const address = addresses[(s + n) % addresses.length];
      const key = `s${s}-n${n}`;
      let res;
      try {
        res = await deliver(address.inbox, { type: 'crash.test', data: { s, n } }, { 'idempotency-key': key });
      } catch {
        outcome.unanswered.push({ key, address });
        return; // the server is gone
      }
      // Nothing else is acceptable before the kill: no 5xx, no duplicates (keys are fresh).
      assert.equal(res.status, 202, res.text);
      outcome.accepted.set(key, { addressId: address.id, id: res.body.event.id, sequence: res.body.event.sequence });
      if (outcome.accepted.size === killAfter) reachedThreshold();
    }
  };
  const running = Array.from({ length: senders }, (_, s) => sender(s));
  // A sender that fails before the threshold fails the test instead of stalling it.
  await Promise.race([threshold, Promise.all(running).then(() => assert.fail('the senders stopped before the kill'))]);
  await server.kill(); // SIGKILL: no flush, no close, no checkpoint
  await Promise.all(running);
  assert.ok(outcome.unanswered.length > 0, 'the kill landed while deliveries were in flight');
  return outcome;
}

/**
 * After the restart: every 202 is there with its id and sequence; each queue is gapless
 * 1..n; anything else stored is an unanswered delivery; retrying the unanswered keys
 * queues each at most once; the next delivery takes max+1. Returns how many of the
 * unanswered deliveries had committed before the kill.
 */
export async function verifyAfterRestart(
  base: string,
  addresses: CreatedAddress[],
  { accepted, unanswered }: LoadOutcome,
): Promise<number> {
  const queues = new Map<string, any[]>();
  for (const address of addresses) {
    const events = await readQueue(base, address);
    queues.set(address.id, events);
    assert.deepEqual(
      events.map((e) => e.sequence),
      events.map((_, i) => i + 1),
      `sequences of ${address.id} are gapless`,
    );
  }
  const stored = new Map<string, any>();
  for (const events of queues.values()) for (const e of events) stored.set(e.dedupe_key, e);
  for (const [key, promised] of accepted) {
    const found = stored.get(key);
    assert.ok(found, `the event answered 202 for ${key} is lost`);
    assert.equal(found.id, promised.id);
    assert.equal(found.sequence, promised.sequence);
    assert.equal(found.address_id, promised.addressId);
  }
  const unansweredKeys = new Set(unanswered.map((u) => u.key));
  for (const key of stored.keys()) assert.ok(accepted.has(key) || unansweredKeys.has(key), `unexpected ${key}`);
  assert.equal(
    stored.size,
    [...queues.values()].reduce((n, q) => n + q.length, 0),
    'no key stored twice',
  );

  // A sender that never heard back retries with its key: 200 with the stored event if the
  // kill came after the commit, 202 with the next sequence if before — once either way.
  for (const { key, address } of unanswered) {
    const queue = queues.get(address.id)!;
    const res = await deliver(rebase(address, base).inbox, { data: 'retry' }, { 'idempotency-key': key });
    if (stored.has(key)) {
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.event.id, stored.get(key).id);
    } else {
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.event.sequence, queue.length + 1);
      queue.push(res.body.event);
    }
  }
  for (const address of addresses) {
    const res = await deliver(rebase(address, base).inbox, { data: 'after restart' });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.event.sequence, queues.get(address.id)!.length + 1, 'the next delivery takes max+1');
  }
  return stored.size - accepted.size;
}
