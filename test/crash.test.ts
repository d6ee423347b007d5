// Crash and shutdown. "A 202 means the event is durable: it is committed to storage
// before the response is sent" (docs/api.md §3): kill the server with SIGKILL while
// deliveries are in flight, start it again on the same SQLite file, and every delivery
// that was answered 202 must be there, unchanged, in a gapless sequence. And SIGTERM
// answers held polls and exits 0 (docs/api.md §9).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadUntilKilled, readQueue, verifyAfterRestart } from './helpers/crash.js';
import { createAddress, deliver, request } from './helpers/http.js';
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

const SENDERS = 8;
const ADDRESSES = 4;
/** Answered 202s to wait for before the kill: enough that the kill lands mid-stream. */
const KILL_AFTER = 400;

describe('SIGKILL under load (docs/api.md §3: a 202 is durable)', () => {
  test(
    'every 202 survives with its id and sequence; sequences stay gapless; the next delivery takes max+1',
    { timeout: 120_000 },
    async () => {
      const dbPath = tempDb();
      let server = await start(dbPath);
      const addresses = await Promise.all(
        Array.from({ length: ADDRESSES }, (_, i) => createAddress(server.url, { name: `crash ${i}` })),
      );
      const outcome = await loadUntilKilled(server, addresses, SENDERS, KILL_AFTER);
      assert.equal(outcome.unanswered.length, SENDERS, 'every sender had a delivery in flight at the kill');
      server = await start(dbPath);
      // Gapless even when the kill cut a group commit short.
      await verifyAfterRestart(server.url, addresses, outcome);
      assert.equal(await server.stop(), 0);
    },
  );
});

describe('SIGTERM (docs/api.md §9: answer held polls, finish writes, exit 0)', () => {
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
    // Held means counted by the server (docs/api.md §9 metrics), not "probably by now".
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
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error('SIGTERM did not answer the held polls; the server waited for them')),
          20_000,
        ).unref(),
      ),
    ]);
    assert.equal(code, 0, server.output());
    for (const poll of await Promise.all(polls)) {
      assert.equal(poll.status, 200, poll.text);
      assert.deepEqual(poll.body, { events: [], next_cursor: 1, has_more: false, latest_sequence: 1 });
    }
    // Nothing was lost on the way out.
    const again = await start(dbPath);
    const events = await readQueue(again.url, address);
    assert.deepEqual(
      events.map((e) => e.id),
      [seeded.body.event.id],
    );
    assert.equal(await again.stop(), 0);
  });
});
