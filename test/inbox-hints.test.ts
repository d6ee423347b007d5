// Refusals at the inbox that point the way (docs/api.md §3): a provider's own JSON shape
// (unknown field), a body that is not a JSON object, bytes that are not JSON, a form or text
// body (415) — each says that the payload belongs in "data" or that ?raw=1 stores any body
// as sent, and then the advice works. A wrong inbox URL still answers the one 404, whatever
// the body: the hint is given only to a caller that holds the inbox URL.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { forEachEngine } from './helpers/engines.js';
import { assertError, createAddress, deliver, request } from './helpers/http.js';

const HINT =
  /put it in "data" \(\{"data": \{\.\.\.\}\}\), or POST it to this inbox URL with \?raw=1, which stores any body exactly as sent\.$/;

const post = (url: string, rawBody: string, contentType?: string) =>
  request(url, 'POST', url, { rawBody, headers: contentType ? { 'content-type': contentType } : {} });

await forEachEngine('inbox refusals that point the way', (server) => {
  it('an unknown field names the field and says where the payload goes; data then takes it', async () => {
    const a = await createAddress(server().url);
    const res = await deliver(a.inbox, { order_id: 'A-17', status: 'paid' });
    assertError(res, 400, 'invalid_request');
    assert.match(res.body.error.message, /^Unknown field "order_id"/);
    assert.match(res.body.error.message, HINT);
    const followed = await deliver(a.inbox, { data: { order_id: 'A-17', status: 'paid' } });
    assert.equal(followed.status, 202);
  });

  it('a body that is not a JSON object (an array, a string) says the same', async () => {
    const a = await createAddress(server().url);
    for (const body of [[{ order_id: 1 }], 'text', 42]) {
      const res = await deliver(a.inbox, body);
      assertError(res, 400, 'invalid_request');
      assert.match(res.body.error.message, /^The body must be a JSON object\./);
      assert.match(res.body.error.message, HINT);
    }
  });

  it('bytes that are not JSON: invalid_json, with the hint', async () => {
    const a = await createAddress(server().url);
    const res = await post(a.inbox, 'order_id=A-17', 'application/json');
    assertError(res, 400, 'invalid_json');
    assert.match(res.body.error.message, /^The body is not valid JSON/);
    assert.match(res.body.error.message, HINT);
  });

  it('a form or text body: 415 with the hint; with ?raw=1 the same body is stored as sent', async () => {
    const a = await createAddress(server().url);
    for (const [body, type] of [
      ['order_id=A-17&status=paid', 'application/x-www-form-urlencoded'],
      ['paid', 'text/plain'],
      ['paid', undefined],
    ] as const) {
      const res = await post(a.inbox, body, type);
      assertError(res, 415, 'unsupported_media_type');
      assert.match(res.body.error.message, /^The body must be JSON sent with "Content-Type: application\/json"/);
      assert.match(res.body.error.message, HINT);
    }
    const raw = await post(`${a.inbox}?raw=1`, 'order_id=A-17&status=paid', 'application/x-www-form-urlencoded');
    assert.equal(raw.status, 202, raw.text);
    assert.deepEqual(raw.body.event.data.body, { order_id: 'A-17', status: 'paid' });
  });

  it('a bad value in a known field gets its own message, without the hint', async () => {
    const a = await createAddress(server().url);
    const res = await deliver(a.inbox, { type: 7 });
    assertError(res, 400, 'invalid_request');
    assert.match(res.body.error.message, /type/);
    assert.doesNotMatch(res.body.error.message, /raw=1/);
  });

  it('every wrong inbox URL answers the same 404 whatever the body: no hint, nothing revealed', async () => {
    const a = await createAddress(server().url);
    const secret = new URL(a.inbox).pathname.split('/').at(-1)!;
    const wrong = [
      a.inbox.replace(secret, `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`),
      a.inbox.replace(a.id, 'addr_nobodyhere0000000000000'),
      a.inbox.replace(secret, 'not-even-a-secret'),
    ];
    const answers = new Set<string>();
    for (const url of wrong) {
      for (const [body, type] of [
        ['{"order_id":1}', 'application/json'],
        ['{"data":1}', 'application/json'],
        ['not json', 'application/json'],
        ['a=1', 'application/x-www-form-urlencoded'],
      ]) {
        const res = await post(url, body, type);
        assertError(res, 404, 'inbox_not_found');
        answers.add(res.text);
      }
    }
    assert.equal(answers.size, 1, [...answers].join('\n'));
    assert.doesNotMatch([...answers][0], /raw=1|data/);
  });
});
