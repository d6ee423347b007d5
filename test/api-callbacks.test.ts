// One-shot callbacks over real HTTP on every engine (docs/api.md §3.6): create and create
// again with the same key, a held wait answered by the delivery, complete_when keeping
// every delivery, duplicates, cancel and expiry (410, callback.expired in the queue),
// multi-waits (any, all), the limit, view tokens, and a wait on one PostgreSQL instance
// woken by a delivery through another.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createAddress, listEvents, request } from './helpers/http.js';
import { eventually, forEachEngine } from './helpers/engines.js';
import { startTestServer } from './helpers/server.js';

const HOUR_MS = 3_600_000;
/** How far the test clock is ahead of real time: expiry without sleeping. */
let ahead = 0;
const clock = () => Date.now() + ahead;

async function createCallback(base: string, a: { id: string; token: string }, body: unknown = {}) {
  return request(base, 'POST', `/api/v1/addresses/${a.id}/callbacks`, { token: a.token, body });
}

/** POSTs to a callback URL as a provider would: JSON, or `rawBody` as sent. */
function post(url: string, data: unknown, headers: Record<string, string> = {}) {
  return request('', 'POST', url, {
    rawBody: typeof data === 'string' ? data : JSON.stringify(data),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

await forEachEngine(
  'callbacks',
  (server, engine) => {
    const base = () => server().url;
    const heldPolls = () => server().roost.waiters.held;

    it('create → 201 waiting with a secret URL; the same key again → 200, the same callback and URL', async () => {
      const a = await createAddress(base());
      const created = await createCallback(base(), a, { key: 'job-1', label: 'Job one' });
      assert.equal(created.status, 201);
      const cb = created.body.callback;
      assert.match(cb.id, /^cb_/);
      assert.equal(cb.key, 'job-1');
      assert.equal(cb.label, 'Job one');
      assert.equal(cb.status, 'waiting');
      assert.equal(cb.completed_at, null);
      assert.equal(cb.event_id, null);
      assert.equal(cb.deliveries, 0);
      assert.equal(cb.human, null);
      assert.match(cb.url, /\/api\/v1\/inbox\/addr_[^/]+\/callbacks\/cb_[^/]+\/roost_callback_[A-Za-z0-9_-]{43}$/);
      const again = await createCallback(base(), a, { key: 'job-1', label: 'ignored' });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body.callback, cb);
      const byKey = await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks?key=job-1`, { token: a.token });
      assert.deepEqual(byKey.body.callbacks, [cb]);
      // Nothing of the secret is stored in clear: the logs and the database never see it.
      assert.ok(!server().logs().includes(cb.url.split('/').at(-1)));
    });

    it('a held wait answers completed with the body when the URL is posted to', async () => {
      const a = await createAddress(base());
      const cb = (await createCallback(base(), a, { key: 'build' })).body.callback;
      const held = heldPolls();
      const waiting = request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks/${cb.id}?wait=25`, {
        token: a.token,
      });
      await eventually(() => heldPolls() > held, 'the wait is held');
      const delivered = await post(cb.url, { result: 'ok', n: 1 });
      assert.equal(delivered.status, 202);
      assert.deepEqual(delivered.body, { duplicate: false, callback: { id: cb.id, status: 'completed' } });
      const answer = await waiting;
      assert.equal(answer.status, 200);
      assert.equal(answer.body.callback.status, 'completed');
      assert.deepEqual(answer.body.body, { result: 'ok', n: 1 });
      assert.equal(answer.body.callback.deliveries, 1);
      assert.ok(answer.body.callback.completed_at);
      // The delivery is an event of the queue, with the callback's id and key.
      const events = (await listEvents(base(), a)).body.events;
      assert.equal(events.length, 1);
      assert.equal(events[0].id, answer.body.callback.event_id);
      assert.equal(events[0].type, 'callback.delivery');
      assert.equal(events[0].source, 'callback');
      assert.deepEqual(events[0].metadata, { callback_id: cb.id, callback_key: 'build' });
      assert.deepEqual(events[0].data.body, { result: 'ok', n: 1 });
      const withEvent = await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks/${cb.id}?include=event`, {
        token: a.token,
      });
      assert.equal(withEvent.body.event.id, events[0].id);
    });

    it('"processing" then "succeeded" with complete_when: completed by the second, both kept', async () => {
      const a = await createAddress(base());
      const cb = (
        await createCallback(base(), a, {
          complete_when: { body_contains: { status: 'succeeded', job: { tags: ['x'] } } },
        })
      ).body.callback;
      const first = await post(cb.url, { status: 'processing', job: { id: 7, tags: ['x', 'y'] } });
      assert.deepEqual(first.body.callback, { id: cb.id, status: 'waiting' });
      const second = await post(cb.url, { status: 'succeeded', job: { id: 7, tags: ['y', 'x'] } });
      assert.deepEqual(second.body.callback, { id: cb.id, status: 'completed' });
      const third = await post(cb.url, { status: 'succeeded', late: true });
      assert.equal(third.status, 202);
      assert.equal(third.body.callback.status, 'completed');
      const got = await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks/${cb.id}`, { token: a.token });
      assert.equal(got.body.body.status, 'succeeded');
      assert.equal(got.body.callback.deliveries, 3);
      const events = (await listEvents(base(), a)).body.events;
      assert.deepEqual(
        events.map((e: { data: { body: { status: string } } }) => e.data.body.status),
        ['processing', 'succeeded', 'succeeded'],
      );
      assert.equal(got.body.callback.event_id, events[1].id);
    });

    it('twenty different deliveries at once: every one kept, exactly one completes it', async () => {
      const a = await createAddress(base());
      const cb = (await createCallback(base(), a)).body.callback;
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(cb.url, { i })));
      assert.ok(answers.every((res) => res.status === 202));
      const got = await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks/${cb.id}`, { token: a.token });
      assert.equal(got.body.callback.status, 'completed');
      assert.equal(got.body.callback.deliveries, 20);
      const events = (await listEvents(base(), a)).body.events;
      assert.equal(events.length, 20);
      // The completing event is one of them, and its body is what the wait shows.
      const completing = events.find((e: { id: string }) => e.id === got.body.callback.event_id);
      assert.deepEqual(completing.data.body, got.body.body);
    });

    it('a byte-identical repeat, or the same Idempotency-Key, is a duplicate that shows no event', async () => {
      const a = await createAddress(base());
      const cb = (await createCallback(base(), a, { complete_when: { body_contains: { done: true } } })).body.callback;
      assert.equal((await post(cb.url, '{"done":false}')).status, 202);
      const repeat = await post(cb.url, '{"done":false}');
      assert.equal(repeat.status, 200);
      assert.deepEqual(repeat.body, { duplicate: true, callback: { id: cb.id, status: 'waiting' } });
      assert.equal((await post(cb.url, '{"done":true}', { 'idempotency-key': 'k1' })).status, 202);
      const keyed = await post(cb.url, '{"other":1}', { 'idempotency-key': 'k1' });
      assert.deepEqual(keyed.body, { duplicate: true, callback: { id: cb.id, status: 'completed' } });
      assert.equal((await listEvents(base(), a)).body.events.length, 2);
    });

    it('a wrong secret, id or address is the inbox 404; cancel makes the URL 410', async () => {
      const a = await createAddress(base());
      const cb = (await createCallback(base(), a)).body.callback;
      const wrong = `${cb.url.slice(0, -1)}${cb.url.endsWith('A') ? 'B' : 'A'}`;
      const missing = await post(wrong, {});
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, 'inbox_not_found');
      assert.equal((await post(cb.url.replace(cb.id, 'cb_nothing'), {})).status, 404);
      const cancelled = await request(base(), 'DELETE', `/api/v1/addresses/${a.id}/callbacks/${cb.id}`, {
        token: a.token,
      });
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.body.callback.status, 'cancelled');
      const gone = await post(cb.url, { late: true });
      assert.equal(gone.status, 410);
      assert.equal(gone.body.error.code, 'callback_gone');
      assert.equal((await listEvents(base(), a)).body.events.length, 0);
      const unknown = await request(base(), 'DELETE', `/api/v1/addresses/${a.id}/callbacks/cb_nothing`, {
        token: a.token,
      });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, 'callback_not_found');
    });

    it('expiry: a held wait answers expired, callback.expired is queued, the URL is 410', async () => {
      const a = await createAddress(base());
      const cb = (await createCallback(base(), a, { key: 'slow', expires_in_seconds: 60 })).body.callback;
      assert.equal(Date.parse(cb.expires_at) - Date.parse(cb.created_at), 60_000);
      const held = heldPolls();
      const waiting = request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks?ids=${cb.id}&wait=25`, {
        token: a.token,
      });
      await eventually(() => heldPolls() > held, 'the wait is held');
      ahead += 61_000;
      await server().roost.sweeper.sweep();
      const answer = await waiting;
      assert.equal(answer.body.callbacks[0].status, 'expired');
      const events = (await listEvents(base(), a)).body.events;
      const expired = events.filter((e: { type: string }) => e.type === 'callback.expired');
      assert.equal(expired.length, 1);
      assert.equal(expired[0].source, 'callback');
      assert.deepEqual(expired[0].metadata, { callback_id: cb.id, callback_key: 'slow' });
      assert.equal((await post(cb.url, {})).status, 410);
      // A second sweep queues no second event.
      await server().roost.sweeper.sweep();
      const after = (await listEvents(base(), a)).body.events;
      assert.equal(after.filter((e: { type: string }) => e.type === 'callback.expired').length, 1);
    });

    it('a callback never outlives its address', async () => {
      const a = await createAddress(base(), { expires_in_seconds: 3600 });
      const cb = (await createCallback(base(), a, { expires_in_seconds: 7200 })).body.callback;
      assert.equal(cb.expires_at, a.response.address.expiresAt);
      const b = await createAddress(base());
      const plain = (await createCallback(base(), b)).body.callback;
      const lifetime = Date.parse(plain.expires_at) - Date.parse(plain.created_at);
      assert.equal(
        lifetime,
        b.response.address.expiresAt
          ? Date.parse(b.response.address.expiresAt) - Date.parse(plain.created_at)
          : 7 * 24 * HOUR_MS,
      );
    });

    it('a multi-wait on three callbacks: any answers at the first, all at the last', async () => {
      const a = await createAddress(base());
      const cbs = [];
      for (const key of ['batch/1', 'batch/2', 'batch/3'])
        cbs.push((await createCallback(base(), a, { key })).body.callback);
      const path = `/api/v1/addresses/${a.id}/callbacks?key_prefix=batch/&wait=25`;
      let held = heldPolls();
      const any = request(base(), 'GET', `${path}&mode=any`, { token: a.token });
      await eventually(() => heldPolls() > held, 'the any-wait is held');
      await post(cbs[1].url, { n: 2 });
      const anyAnswer = await any;
      assert.deepEqual(
        anyAnswer.body.callbacks.map((c: { status: string }) => c.status),
        ['waiting', 'completed', 'waiting'],
      );
      held = heldPolls();
      const all = request(base(), 'GET', `${path}&mode=all`, { token: a.token });
      await eventually(() => heldPolls() > held, 'the all-wait is held');
      await post(cbs[0].url, { n: 1 });
      // Still held: one is waiting. The third completes it.
      await eventually(() => heldPolls() > held, 'the all-wait is held again after the first wake-up');
      await post(cbs[2].url, { n: 3 });
      const allAnswer = await all;
      assert.deepEqual(
        allAnswer.body.callbacks.map((c: { status: string }) => c.status),
        ['completed', 'completed', 'completed'],
      );
      const ids = `${cbs[2].id},${cbs[0].id}`;
      const listed = await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks?ids=${ids}`, { token: a.token });
      assert.deepEqual(
        listed.body.callbacks.map((c: { id: string }) => c.id),
        [cbs[0].id, cbs[2].id],
      );
      const none = await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks?status=waiting`, {
        token: a.token,
      });
      assert.deepEqual(none.body.callbacks, []);
    });

    it('view tokens read callbacks without their URL, and may not create or cancel', async () => {
      const a = await createAddress(base());
      const cb = (await createCallback(base(), a, { key: 'v' })).body.callback;
      const view = await request(base(), 'POST', `/api/v1/addresses/${a.id}/view-tokens`, { token: a.token, body: {} });
      const viewToken = view.body.token ?? view.body.view_token?.token;
      assert.ok(viewToken, JSON.stringify(view.body));
      const read = await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks/${cb.id}`, { token: viewToken });
      assert.equal(read.status, 200);
      assert.equal(read.body.callback.url, null);
      assert.equal((await createCallback(base(), { id: a.id, token: viewToken }, { key: 'v2' })).status, 403);
      const cancel = await request(base(), 'DELETE', `/api/v1/addresses/${a.id}/callbacks/${cb.id}`, {
        token: viewToken,
      });
      assert.equal(cancel.status, 403);
      assert.equal((await request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks`)).status, 401);
    });

    it('bad input is 400 naming the field', async () => {
      const a = await createAddress(base());
      for (const body of [
        { key: '' },
        { key: 'k'.repeat(201) },
        { label: 'l'.repeat(101) },
        { expires_in_seconds: 0 },
        { complete_when: {} },
        { complete_when: { data_contains: 1 } },
        { human: { question: 'q', options: [] } },
        { human: { question: 'q', options: ['a', 'a'] } },
        { human: { question: 'q'.repeat(501), options: ['a'] } },
        { unknown: 1 },
      ]) {
        const res = await createCallback(base(), a, body);
        assert.equal(res.status, 400, JSON.stringify(body));
      }
    });

    it('the limit of waiting callbacks is 409; a completed one frees its place', async () => {
      const a = await createAddress(base());
      const first = (await createCallback(base(), a)).body.callback;
      assert.equal((await createCallback(base(), a)).status, 201);
      assert.equal((await createCallback(base(), a)).status, 201);
      const refused = await createCallback(base(), a);
      assert.equal(refused.status, 409);
      assert.equal(refused.body.error.code, 'callback_limit');
      await post(first.url, {});
      assert.equal((await createCallback(base(), a)).status, 201);
    });

    it("a waiting callback's completing delivery is taken by a full queue", async () => {
      const a = await createAddress(base());
      const cb = (await createCallback(base(), a, { complete_when: { body_contains: { done: true } } })).body.callback;
      const inbox = a.inbox;
      for (let i = 0; i < 1000; i++) {
        const res = await request('', 'POST', inbox, { body: { data: i } });
        assert.equal(res.status, 202);
      }
      assert.equal((await request('', 'POST', inbox, { body: { data: 'over' } })).status, 429);
      // Not completing: refused like any delivery.
      assert.equal((await post(cb.url, { done: false })).status, 429);
      const completing = await post(cb.url, { done: true });
      assert.equal(completing.status, 202);
      assert.equal(completing.body.callback.status, 'completed');
    });

    if (engine === 'postgres')
      it('a wait held on one instance is woken by a delivery through another', async () => {
        const other = await startTestServer('postgres', {
          reuse: { databaseUrl: server().databaseUrl },
          env: { ROOST_MAX_CALLBACKS: '3' },
        });
        try {
          const a = await createAddress(base());
          const cb = (await createCallback(base(), a)).body.callback;
          const held = heldPolls();
          const waiting = request(base(), 'GET', `/api/v1/addresses/${a.id}/callbacks/${cb.id}?wait=25`, {
            token: a.token,
          });
          await eventually(() => heldPolls() > held, 'the wait is held');
          const onOther = cb.url.replace(base(), other.url);
          assert.equal((await post(onOther, { from: 'other' })).status, 202);
          const answer = await waiting;
          assert.equal(answer.body.callback.status, 'completed');
          assert.deepEqual(answer.body.body, { from: 'other' });
        } finally {
          await other.close();
        }
      });
  },
  { clock, env: { ROOST_MAX_CALLBACKS: '3' } },
);
