// Wake latency: one poll held (wait=25) on an empty cursor, then one delivery to that
// address; the time from the delivery's 202 (and from its send) to the poll's answer.
// Trials run one after another so that each measures an idle server's reaction.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { BenchChild } from './processes.js';
import { JSON_HEADERS, SMALL_EVENT, send, type BenchAddress } from './fixtures.js';

export interface WakeResult {
  /** From the 202 of the delivery arriving to the poll's answer arriving (ms). */
  fromAccepted: number[];
  /** From sending the delivery to the poll's answer arriving (ms). */
  fromSent: number[];
}

/** Resolves once the server reports at least `count` polls held. */
export async function untilHeld(child: BenchChild, count: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await child.ask<{ held: number }>({ type: 'stats' });
    if (stats.held >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${stats.held} of ${count} polls held after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * A filtered wake: the poll carries `query` (filters), and each trial first delivers
 * `noise`, which the poll must sleep through, then the event it waits for.
 */
export interface FilteredWake {
  query: string;
  noise: string;
  event: string;
}

export async function measureWake(
  child: BenchChild,
  address: BenchAddress,
  trials: number,
  filtered?: FilteredWake,
): Promise<WakeResult> {
  const pollAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const deliverAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const auth = { authorization: `Bearer ${address.readToken}` };
  const result: WakeResult = { fromAccepted: [], fromSent: [] };
  let after = 0;
  try {
    for (let trial = 0; trial < trials; trial++) {
      let answeredAt = 0;
      const poll = send(
        `${child.url}${address.eventsPath}?after=${after}&wait=25${filtered ? `&${filtered.query}` : ''}`,
        'GET',
        auth,
        undefined,
        pollAgent,
      ).then((reply) => {
        answeredAt = performance.now();
        return reply;
      });
      await untilHeld(child, 1);
      if (filtered) {
        const noise = await send(child.url + address.inboxPath, 'POST', JSON_HEADERS, filtered.noise, deliverAgent);
        if (noise.status !== 202) throw new Error(`delivery answered ${noise.status}: ${noise.body}`);
      }
      const sentAt = performance.now();
      const delivered = await send(
        child.url + address.inboxPath,
        'POST',
        JSON_HEADERS,
        filtered?.event ?? SMALL_EVENT,
        deliverAgent,
      );
      const acceptedAt = performance.now();
      const answer = await poll;
      if (delivered.status !== 202) throw new Error(`delivery answered ${delivered.status}: ${delivered.body}`);
      const page = JSON.parse(answer.body);
      if (answer.status !== 200 || page.events.length !== 1)
        throw new Error(`poll answered ${answer.status}: ${answer.body.slice(0, 200)}`);
      after = page.next_cursor;
      // Negative when the poll's answer overtook the 202: both leave in the same turn.
      result.fromAccepted.push(answeredAt - acceptedAt);
      result.fromSent.push(answeredAt - sentAt);
    }
  } finally {
    pollAgent.destroy();
    deliverAgent.destroy();
  }
  return result;
}
