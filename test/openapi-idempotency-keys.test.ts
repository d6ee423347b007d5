// Idempotency keys as senders send them (docs/api.md §3.4), on every engine: a header key
// with spaces, keys of 600 and 1,024 characters, and non-ASCII dedupe_keys (some longer
// than the unique index takes as text) each deduplicate; the bounds the document declares
// are the ones the service applies.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'node:test';
import { assertErrorBody, createAddress, deliver, listEvents, request } from './helpers/http.js';
import { forEachEngine } from './helpers/engines.js';

/** Delivers twice with the same key: the first is queued, the second is the same event. */
async function deliversOnce(
  inbox: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ id: string; dedupe_key: string }> {
  const first = await deliver(inbox, { ...body, data: 'first' }, headers);
  assert.equal(first.status, 202, first.text);
  const again = await deliver(inbox, { ...body, data: 'again' }, headers);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.body.duplicate, true);
  assert.equal(again.body.event.id, first.body.event.id);
  assert.equal(again.body.event.data, 'first');
  return first.body.event;
}

await forEachEngine('idempotency keys as senders send them', (server) => {
  it('a header key with spaces deduplicates, and is kept as sent', async () => {
    const a = await createAddress(server().url);
    const event = await deliversOnce(a.inbox, {}, { 'idempotency-key': 'order 42' });
    assert.equal(event.dedupe_key, 'order 42');
    // The same key in the body agrees with the header.
    const both = await deliver(a.inbox, { dedupe_key: 'order 42' }, { 'idempotency-key': 'order 42' });
    assert.equal(both.status, 200);
    assert.equal(both.body.event.id, event.id);
  });

  it('a 600-character key deduplicates, in the header and in the body', async () => {
    const a = await createAddress(server().url);
    const key = 'k'.repeat(599) + '1';
    const inHeader = await deliversOnce(a.inbox, {}, { 'idempotency-key': key });
    assert.equal(inHeader.dedupe_key, key);
    const inBody = await deliver(a.inbox, { dedupe_key: key });
    assert.equal(inBody.status, 200, 'the body key finds the header key’s event');
    assert.equal(inBody.body.event.id, inHeader.id);
    // A key differing only in its last character is another key.
    const other = await deliver(a.inbox, { dedupe_key: 'k'.repeat(599) + '2' });
    assert.equal(other.status, 202);
  });

  it('a non-ASCII dedupe_key deduplicates and comes back as sent', async () => {
    const a = await createAddress(server().url);
    const event = await deliversOnce(a.inbox, { dedupe_key: 'invoice #7 / März' });
    assert.equal(event.dedupe_key, 'invoice #7 / März');
    const emoji = await deliversOnce(a.inbox, { dedupe_key: '注文 42 🧾' });
    assert.equal(emoji.dedupe_key, '注文 42 🧾');
    assert.notEqual(emoji.id, event.id);
  });

  it('1,024-character keys: header kept as sent; a body key beyond 1,024 bytes of UTF-8 kept as its digest', async () => {
    const a = await createAddress(server().url);
    const header = 'h '.repeat(512);
    assert.equal((await deliversOnce(a.inbox, {}, { 'idempotency-key': header.trim() + 'x' })).dedupe_key.length, 1024);
    // 1,024 varied characters of three bytes each: more than PostgreSQL's unique index holds as text.
    const wide = (last: string) =>
      Array.from({ length: 1023 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20000))).join('') + last;
    const stored = await deliversOnce(a.inbox, { dedupe_key: wide('a') });
    assert.match(stored.dedupe_key, /^sha256:[0-9a-f]{64}$/);
    const otherWide = await deliversOnce(a.inbox, { dedupe_key: wide('b') });
    assert.notEqual(otherWide.id, stored.id);
    assert.notEqual(otherWide.dedupe_key, stored.dedupe_key);
    // Four-byte characters count once each, as JSON Schema's maxLength counts them.
    await deliversOnce(a.inbox, { dedupe_key: '🧾'.repeat(1024) });
    const page = await listEvents(server().url, a);
    assert.equal(page.body.events.length, 4);
  });

  it('refuses what no key may be, with 400 invalid_request, storing nothing', async () => {
    const a = await createAddress(server().url);
    const refusals: Array<[Record<string, unknown>, Record<string, string>]> = [
      [{}, { 'idempotency-key': 'x'.repeat(1025) }],
      [{}, { 'idempotency-key': 'tab\tkey' }],
      [{ dedupe_key: 'x'.repeat(1025) }, {}],
      [{ dedupe_key: '🧾'.repeat(1025) }, {}],
      [{ dedupe_key: '' }, {}],
      [{ dedupe_key: 'nul \u0000' }, {}],
    ];
    for (const [body, headers] of refusals) {
      const res = await deliver(a.inbox, body, headers);
      assert.equal(res.status, 400, JSON.stringify([body, headers]).slice(0, 80));
      assertErrorBody(res.body, 'invalid_request');
    }
    const page = await request(server().url, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token });
    assert.equal(page.body.events.length, 0);
  });

  it('a key with a comma is one key; two Idempotency-Key lines are refused, not joined into one', async () => {
    const a = await createAddress(server().url);
    const event = await deliversOnce(a.inbox, {}, { 'idempotency-key': 'order 42, attempt 1' });
    assert.equal(event.dedupe_key, 'order 42, attempt 1');
    const url = new URL(a.inbox);
    const body = '{"data":1}';
    const socket = connect(Number(url.port), url.hostname);
    socket.end(
      `POST ${url.pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Idempotency-Key: order 42\r\nIdempotency-Key: attempt 1\r\nConnection: close\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    );
    let answer = '';
    for await (const chunk of socket) answer += String(chunk);
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /"invalid_request"/);
    const page = await listEvents(server().url, a);
    assert.equal(page.body.events.length, 1);
  });

  it('raw capture takes a header key with spaces too', async () => {
    const a = await createAddress(server().url);
    const send = () =>
      request(server().url, 'POST', `${a.inbox}?raw=1`, {
        rawBody: 'payload=1',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': 'delivery 7 of 9' },
      });
    const first = await send();
    assert.equal(first.status, 202, first.text);
    const again = await send();
    assert.equal(again.status, 200);
    assert.equal(again.body.event.id, first.body.event.id);
  });
});
