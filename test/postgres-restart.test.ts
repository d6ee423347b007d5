// A real PostgreSQL restart under a running Roost (issue: "a database restart is survived
// without a process restart"). The shared server cannot be restarted by a test, so this
// one makes a throwaway cluster of its own (initdb into a temp folder, ~1 s), points a
// Roost process at it, stops and starts the cluster, and checks: requests answer 503
// `unavailable` and /readyz 503 while it is down; afterwards everything works again and a
// poll held across the restart is woken by a delivery through the new connections.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createAddress, deliver, listEvents, request } from './helpers/http.js';
import { clusterSkip, createCluster, type Cluster } from './helpers/pg-cluster.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';

const processes: ServerProcess[] = [];
let cluster: Cluster | undefined;
after(async () => {
  for (const proc of processes) await proc.kill();
  cluster?.destroy();
});

describe('PostgreSQL restart under a running Roost', { skip: clusterSkip }, () => {
  test('503 while the database is down, then recovery without restarting Roost', { timeout: 120_000 }, async () => {
    cluster = await createCluster();
    cluster.start();

    const roost = await spawnServer({
      DATABASE_URL: cluster.url,
      ROOST_CREATE_RATE: '100000/sec',
    });
    processes.push(roost);
    const a = await createAddress(roost.url);
    assert.equal((await deliver(a.inbox, { data: 'before' })).status, 202);

    cluster.stop();
    const ready = await request(roost.url, 'GET', '/readyz');
    assert.equal(ready.status, 503);
    const down = await deliver(a.inbox, { data: 'while down' });
    assert.equal(down.status, 503, down.text);
    assert.equal(down.body.error.code, 'unavailable');
    assert.ok(Number(down.headers.get('retry-after')) >= 1);
    assert.equal((await listEvents(roost.url, a)).status, 503);

    cluster.start();
    // The pool reconnects on demand; the LISTEN connection with backoff (≤ 1 s).
    let readyAgain = 0;
    for (let i = 0; i < 100 && readyAgain !== 200; i++) {
      readyAgain = (await request(roost.url, 'GET', '/readyz')).status;
      if (readyAgain !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(readyAgain, 200, 'ready again after the restart');
    const page = await listEvents(roost.url, a);
    assert.deepEqual(
      page.body.events.map((e: any) => e.data),
      ['before'],
    );

    // A poll held now is woken by a delivery committed through the new connections; its
    // wait is long (20 s), so an answer with the event means it was woken, not timed out.
    const poll = listEvents(roost.url, a, 'after=1&wait=20');
    while (!/^roost_polls_held 1$/m.test((await request(roost.url, 'GET', '/metrics')).text))
      await new Promise((r) => setTimeout(r, 20));
    const after = await deliver(a.inbox, { data: 'after' });
    assert.equal(after.status, 202, after.text);
    assert.equal(after.body.event.sequence, 2, 'the failed delivery took no sequence');
    const woken = await poll;
    assert.deepEqual(
      woken.body.events.map((e: any) => e.data),
      ['after'],
    );
    assert.equal(await roost.stop(), 0);
  });
});
