// Many long-polls held at once: open `perAddress` polls (wait=25) on each address, one
// socket each, read the server's RSS while it holds them, then deliver one event to every
// address and time until every poll has answered.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { BenchChild } from './processes.js';
import { JSON_HEADERS, SMALL_EVENT, inParallel, send, type BenchAddress, type Reply } from './fixtures.js';
import { percentile } from './load.js';
import { untilHeld } from './wake.js';

export interface HeldPollsResult {
  polls: number;
  /** Seconds it took to open them all (each is authenticated and registered). */
  openS: number;
  rssIdleMiB: number;
  rssHoldingMiB: number;
  /** The server's memory by kind (process.memoryUsage and V8's spaces), idle and holding. */
  memoryIdle: ServerMemory;
  memoryHolding: ServerMemory;
  /** From the first delivery sent to the last poll answered (ms). */
  allWokenMs: number;
  /** From the first delivery sent to the last 202 (ms): the deliveries' own duration. */
  deliveriesMs: number;
  /** Per poll, from its address's 202 to its answer (ms). */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Polls that did not answer 200 with exactly the one new event. */
  wrong: number;
}

export interface ServerMemory {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, { size: number; used: number }>;
}

const OPEN_BATCH = 500;

/**
 * `aroundWake` wraps the wake-up phase (to profile just that). With `snapshots`, heap
 * snapshots of the server are written idle and holding (after the RSS is read; the
 * wake-up figures after that are not comparable).
 */
export async function measureHeldPolls(
  child: BenchChild,
  addresses: BenchAddress[],
  perAddress: number,
  aroundWake: <T>(phase: () => Promise<T>) => Promise<T> = (phase) => phase(),
  snapshots?: { idle: string; holding: string },
): Promise<HeldPollsResult> {
  const rssIdleMiB = child.rssMiB();
  const memoryIdle = await child.ask<ServerMemory>({ type: 'memory' });
  if (snapshots) await child.ask({ type: 'heap-snapshot', file: snapshots.idle });
  // Keep-alive, as clients that poll in a loop do: the answer does not close the socket.
  const pollAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const polls: Array<{ address: number; answer: Promise<{ reply: Reply; at: number }> }> = [];
  const openedAt = performance.now();
  try {
    // In batches, so that the listen backlog never overflows (a dropped SYN costs a second).
    for (let round = 0; round < perAddress; round++) {
      for (let start = 0; start < addresses.length; start += OPEN_BATCH) {
        for (let i = start; i < Math.min(addresses.length, start + OPEN_BATCH); i++) {
          const a = addresses[i];
          const answer = send(
            `${child.url}${a.eventsPath}?after=0&wait=25`,
            'GET',
            { authorization: `Bearer ${a.readToken}` },
            undefined,
            pollAgent,
          ).then((reply) => ({ reply, at: performance.now() }));
          polls.push({ address: i, answer });
        }
        await untilHeld(child, polls.length);
      }
    }
    const openS = (performance.now() - openedAt) / 1000;
    if (openS > 15)
      throw new Error(`opening the polls took ${openS.toFixed(1)} s; they would time out (wait=25) before the wake-up`);
    const rssHoldingMiB = child.rssMiB();
    const memoryHolding = await child.ask<ServerMemory>({ type: 'memory' });
    if (snapshots) await child.ask({ type: 'heap-snapshot', file: snapshots.holding });

    const deliverAgent = new http.Agent({ keepAlive: true, maxSockets: 50 });
    const acceptedAt: number[] = new Array(addresses.length);
    const firstSent = performance.now();
    const answers = await aroundWake(async () => {
      await inParallel(addresses, 50, async (a, i) => {
        const reply = await send(child.url + a.inboxPath, 'POST', JSON_HEADERS, SMALL_EVENT, deliverAgent);
        if (reply.status !== 202) throw new Error(`delivery answered ${reply.status}: ${reply.body}`);
        acceptedAt[i] = performance.now();
      });
      return Promise.all(polls.map(async (p) => ({ address: p.address, ...(await p.answer) })));
    });
    const lastAccepted = Math.max(...acceptedAt);
    deliverAgent.destroy();

    let wrong = 0;
    const latencies: number[] = [];
    let lastAnswered = 0;
    for (const { address, reply, at } of answers) {
      if (reply.status !== 200 || JSON.parse(reply.body).events.length !== 1) wrong++;
      latencies.push(at - acceptedAt[address]);
      lastAnswered = Math.max(lastAnswered, at);
    }
    return {
      polls: polls.length,
      openS,
      rssIdleMiB,
      rssHoldingMiB,
      memoryIdle,
      memoryHolding,
      allWokenMs: lastAnswered - firstSent,
      deliveriesMs: lastAccepted - firstSent,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      maxMs: Math.max(...latencies),
      wrong,
    };
  } finally {
    pollAgent.destroy();
  }
}
