// Load for fault tests: senders that deliver through several Roost instances as a careful
// webhook sender would (a unique Idempotency-Key per event, the same key again after a 503
// or a dropped connection), and the checks that follow a fault: every accepted delivery
// stored exactly once, sequences gapless.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CreatedAddress } from './http.js';

export interface Accepted {
  addressId: string;
  eventId: string;
  sequence: number;
}

export interface LoadReport {
  /** Idempotency key → the event its 202 (or 200 duplicate) named. */
  accepted: Map<string, Accepted>;
  /** How many answers of each status. */
  statuses: Map<number, number>;
  /** When each 503 was asked (Date.now() at the request's start). */
  unavailableAt: number[];
  /** Anything but 200, 202 and 503: other statuses, bodies not in the Error shape, no answer. */
  unexpected: string[];
  /** The slowest answer, in milliseconds. */
  slowestMs: number;
}

export interface Load {
  stop(): Promise<LoadReport>;
}

/** `senders` loops, sender i delivering to addresses[i % n], through each base URL in turn. */
export function startSenders(
  bases: string[],
  addresses: CreatedAddress[],
  options: { senders?: number; pauseMs?: number; label?: string } = {},
): Load {
  const report: LoadReport = {
    accepted: new Map(),
    statuses: new Map(),
    unavailableAt: [],
    unexpected: [],
    slowestMs: 0,
  };
  let stopped = false;
  const sender = async (i: number) => {
    const address = addresses[i % addresses.length];
    const path = new URL(address.inbox).pathname;
    for (let n = 0, turn = i; !stopped; n++) {
      const key = `${options.label ?? 'load'}-${i}-${n}`;
      // The same key until the service gives an answer that settles it.
      for (;;) {
        const base = bases[turn++ % bases.length];
        const startedAt = Date.now();
        let status = 0;
        let body: any;
        let headers: Headers | undefined;
        try {
          const response = await fetch(`${base}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ type: 'load', data: { key } }),
            signal: AbortSignal.timeout(20_000),
          });
          status = response.status;
          headers = response.headers;
          body = await response.json().catch(() => undefined);
        } catch (error) {
          report.unexpected.push(`${key} via ${base}: no answer (${(error as Error).message})`);
        }
        report.slowestMs = Math.max(report.slowestMs, Date.now() - startedAt);
        report.statuses.set(status, (report.statuses.get(status) ?? 0) + 1);
        if (status === 202 || status === 200) {
          const earlier = report.accepted.get(key);
          if (earlier && earlier.eventId !== body.event.id)
            report.unexpected.push(`${key}: two events, ${earlier.eventId} and ${body.event.id}`);
          report.accepted.set(key, { addressId: address.id, eventId: body.event.id, sequence: body.event.sequence });
          break;
        }
        if (status === 503) {
          report.unavailableAt.push(startedAt);
          if (body?.error?.code !== 'unavailable' || !headers?.get('retry-after'))
            report.unexpected.push(`${key}: a 503 without code unavailable and Retry-After: ${JSON.stringify(body)}`);
        } else if (status !== 0) {
          report.unexpected.push(`${key} via ${base}: ${status} ${JSON.stringify(body)}`);
        }
        if (stopped && status === 0) break;
        await sleep(100);
      }
      await sleep(options.pauseMs ?? 100);
    }
  };
  const running = Promise.all(Array.from({ length: options.senders ?? 20 }, (_, i) => sender(i)));
  return {
    async stop() {
      stopped = true;
      await running;
      return report;
    },
  };
}

/** Every event of an address, read page by page. */
export async function readAll(base: string, address: CreatedAddress): Promise<any[]> {
  const events: any[] = [];
  for (let after = 0; ;) {
    const response = await fetch(`${base}/api/v1/addresses/${address.id}/events?after=${after}&limit=100`, {
      headers: { authorization: `Bearer ${address.token}` },
    });
    assert.equal(response.status, 200, `reading ${address.id}`);
    const page = (await response.json()) as { events: any[]; next_cursor: number; has_more: boolean };
    events.push(...page.events);
    after = page.next_cursor;
    if (!page.has_more) return events;
  }
}

/** Every accepted delivery is stored exactly once, and each address's sequences are 1, 2, 3… */
export async function assertStoredExactlyOnce(
  base: string,
  addresses: CreatedAddress[],
  accepted: Map<string, Accepted>,
): Promise<number> {
  let stored = 0;
  for (const address of addresses) {
    const events = await readAll(base, address);
    stored += events.length;
    assert.deepEqual(
      events.map((e) => e.sequence),
      events.map((_, i) => i + 1),
      `gapless sequences in ${address.id}`,
    );
    const keys = events.map((e) => e.dedupe_key as string);
    assert.equal(new Set(keys).size, keys.length, `no key stored twice in ${address.id}`);
    const byKey = new Map(events.map((e) => [e.dedupe_key as string, e]));
    for (const [key, at] of accepted) {
      if (at.addressId !== address.id) continue;
      assert.equal(byKey.get(key)?.id, at.eventId, `the accepted delivery ${key} is stored as answered`);
    }
    // Nothing stored that no sender was told about (a retried key settles every unknown outcome).
    for (const key of keys) assert.ok(accepted.has(key), `stored ${key} was accepted`);
  }
  return stored;
}
