// A lost or wrong cursor can recover (docs/api.md §4): every page carries latest_sequence, the
// highest sequence the address has given out, and ?unacked=1 reads only the events not yet
// acknowledged — same cursor, paging and long-poll rules — so that "what I have not handled"
// needs no cursor. Over real HTTP on every engine, and through the client library.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { RoostClient } from '../src/index.js';
import { eventually, forEachEngine } from './helpers/engines.js';
import { assertError, createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';

async function fill(address: CreatedAddress, count: number) {
  for (let i = 0; i < count; i++) assert.equal((await deliver(address.inbox, { data: { i } })).status, 202);
}

const ack = (base: string, address: CreatedAddress, id: string) =>
  request(base, 'POST', `/api/v1/addresses/${address.id}/events/${id}/ack`, { token: address.token });

const sequences = (body: any) => body.events.map((e: any) => e.sequence);

await forEachEngine('unacknowledged events and the latest sequence', (server) => {
  it('latest_sequence is 0 before any event, then the highest sequence given out, whatever the cursor', async () => {
    const a = await createAddress(server().url);
    const empty = await listEvents(server().url, a);
    assert.deepEqual(empty.body, { events: [], next_cursor: 0, has_more: false, latest_sequence: 0 });
    await fill(a, 4);
    for (const after of [0, 2, 4, 999]) {
      const page = await listEvents(server().url, a, `after=${after}`);
      assert.equal(page.body.latest_sequence, 4, `after=${after}`);
    }
    // A cursor past the end answers an empty page whose latest_sequence shows the mistake.
    const lost = await listEvents(server().url, a, 'after=999');
    assert.deepEqual([lost.body.events, lost.body.next_cursor], [[], 999]);
    assert.ok(lost.body.next_cursor > lost.body.latest_sequence);
  });

  it('unacked=1 pages through unacknowledged events only, with next_cursor and has_more among them', async () => {
    const a = await createAddress(server().url);
    await fill(a, 8);
    const all = (await listEvents(server().url, a)).body.events;
    for (const seq of [1, 2, 4, 7]) assert.equal((await ack(server().url, a, all[seq - 1].id)).status, 200);

    const first = await listEvents(server().url, a, 'unacked=1&limit=2');
    assert.equal(first.status, 200);
    assert.deepEqual(sequences(first.body), [3, 5]);
    assert.ok(first.body.events.every((e: any) => e.acknowledged_at === undefined));
    assert.deepEqual([first.body.next_cursor, first.body.has_more, first.body.latest_sequence], [5, true, 8]);
    const second = await listEvents(server().url, a, `unacked=true&limit=2&after=${first.body.next_cursor}`);
    assert.deepEqual(sequences(second.body), [6, 8]);
    assert.deepEqual([second.body.next_cursor, second.body.has_more], [8, false]);
    // has_more is about unacknowledged events: 7 (acknowledged) does not count.
    const edge = await listEvents(server().url, a, 'unacked=1&limit=1&after=5');
    assert.deepEqual([sequences(edge.body), edge.body.has_more], [[6], true]);
    const last = await listEvents(server().url, a, 'unacked=1&limit=1&after=6');
    assert.deepEqual([sequences(last.body), last.body.has_more], [[8], false]);
    // unacked=0 / false: every event, as without the parameter.
    for (const flag of ['0', 'false']) {
      assert.deepEqual(
        sequences((await listEvents(server().url, a, `unacked=${flag}`)).body),
        [1, 2, 3, 4, 5, 6, 7, 8],
      );
    }
    // Everything acknowledged: an empty page, the cursor kept.
    for (const seq of [3, 5, 6, 8]) await ack(server().url, a, all[seq - 1].id);
    const none = await listEvents(server().url, a, 'unacked=1');
    assert.deepEqual(none.body, { events: [], next_cursor: 0, has_more: false, latest_sequence: 8 });
  });

  it('a long poll with unacked=1 waits past acknowledged events for an unacknowledged one', async () => {
    const a = await createAddress(server().url);
    await fill(a, 2);
    const held = (await listEvents(server().url, a)).body.events;
    for (const e of held) await ack(server().url, a, e.id);
    const waitersBefore = server().roost.waiters.held;
    const poll = listEvents(server().url, a, 'unacked=1&wait=20');
    await eventually(() => server().roost.waiters.held > waitersBefore, 'the poll to be held');
    assert.equal((await deliver(a.inbox, { data: 'new' })).status, 202);
    const res = await poll;
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.events.map((e: any) => [e.sequence, e.data]),
      [[3, 'new']],
    );
    assert.deepEqual([res.body.next_cursor, res.body.has_more, res.body.latest_sequence], [3, false, 3]);
    // With an unacknowledged event already there, it answers at once.
    const started = Date.now();
    assert.deepEqual(sequences((await listEvents(server().url, a, 'unacked=1&wait=20')).body), [3]);
    assert.ok(Date.now() - started < 10_000, 'not held');
  });

  it('refuses an unacked value other than 1, true, 0 or false, naming the parameter', async () => {
    const a = await createAddress(server().url);
    for (const query of ['unacked=yes', 'unacked=2', 'unacked=', 'unacked=1&unacked=1', 'unacked=TRUE']) {
      const res = await listEvents(server().url, a, query);
      assertError(res, 400, 'invalid_request');
      assert.match(res.body.error.message, /"unacked"/, query);
    }
  });

  it('the client exposes both: listEvents({ unacked }) with latest_sequence, and events({ unacked })', async () => {
    const anonymous = new RoostClient({ baseUrl: server().url });
    const created = await anonymous.createAddress();
    const client = new RoostClient({
      baseUrl: server().url,
      addressId: created.address.id,
      readToken: created.credentials.read_token,
    });
    const inbox = `${server().url}${new URL(created.endpoints.inbox_url).pathname}`;
    for (const i of [1, 2, 3]) await anonymous.deliver(inbox, { data: { i } });
    const page = await client.listEvents();
    await client.ack(page.events[1].id);
    const unacked = await client.listEvents({ unacked: true });
    assert.deepEqual(
      unacked.events.map((e) => e.sequence),
      [1, 3],
    );
    assert.equal(unacked.latest_sequence, 3);
    const controller = new AbortController();
    const seen: number[] = [];
    for await (const event of client.events({ unacked: true, wait: 1, signal: controller.signal })) {
      seen.push(event.sequence);
      if (seen.length === 2) controller.abort();
    }
    assert.deepEqual(seen, [1, 3]);
  });
});
