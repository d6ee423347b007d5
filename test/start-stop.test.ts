// The built service, started as `npm start` starts it (node dist/cli.js serve), through
// repeated start → deliver → read → SIGTERM cycles on one SQLite file: every stop is a clean
// exit 0 with nothing on stderr, and every event delivered in an earlier cycle is still there.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createAddress, deliver, listEvents, type CreatedAddress } from './helpers/http.js';
import { spawnServer } from './helpers/process.js';

const CYCLES = 20;

describe('the built service, started and stopped', () => {
  it(`exits 0 after each of ${CYCLES} start → deliver → read → SIGTERM cycles`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-cycles-'));
    let address: CreatedAddress | undefined;
    try {
      for (let cycle = 1; cycle <= CYCLES; cycle++) {
        const server = await spawnServer({ ROOST_DB: join(dir, 'roost.db') }, 30_000, { built: true });
        try {
          address ??= await createAddress(server.url);
          const inbox = `${server.url}${new URL(address.inbox).pathname}`;
          assert.equal((await deliver(inbox, { type: 'cycle', data: { cycle } })).status, 202);
          const page = await listEvents(server.url, address);
          assert.deepEqual(
            (page.body as { events: { data: { cycle: number } }[] }).events.map((event) => event.data.cycle),
            Array.from({ length: cycle }, (_, index) => index + 1),
          );
        } finally {
          const code = await server.stop();
          const stderr = server
            .output()
            .split('\n')
            .filter((line) => line !== '' && !line.startsWith('{'));
          assert.equal(code, 0, `cycle ${cycle} exited ${code}:\n${server.output()}`);
          assert.deepEqual(stderr, [], `cycle ${cycle} wrote outside the JSON log`);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
