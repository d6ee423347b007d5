// Pages and streams are written in slices and read in parts (docs/api.md §4, §4.1): what
// arrives is exactly what a single write of the whole page would have been — characters
// outside the BMP across a slice boundary included, and the page's byte bound unchanged.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { textSlices } from '../src/core/wire.js';
import { eventually, forEachEngine } from './helpers/engines.js';
import { createAddress, deliver, listEvents } from './helpers/http.js';

it('textSlices never cuts a surrogate pair, and gives the text back whole', () => {
  const text = `${'x'.repeat(9)}😀${'y'.repeat(8)}😀😀`;
  for (const size of [1, 2, 3, 5, 10, 11, 64]) {
    const slices = [...textSlices(text, Math.max(size, 2))];
    assert.equal(slices.join(''), text);
    for (const slice of slices) {
      assert.ok(slice.length > 0);
      assert.ok(!/[\ud800-\udbff]$/.test(slice) && !/^[\udc00-\udfff]/.test(slice), `size ${size}: ${slice}`);
    }
  }
});

// 65,534 characters, then an emoji whose two halves sit either side of the 64 Ki-character
// slice boundary of the stored text (which starts with its opening quote).
const straddling = (n: number) => `${String(n).padStart(65_534, 'x')}😀é${'z'.repeat(200_000)}`;

await forEachEngine(
  'pages and streams in parts and slices',
  (server) => {
    it('a page read in parts is the page a single read gives: same events, bound, cursor and has_more', async () => {
      const base = server().url;
      const a = await createAddress(base);
      for (const n of [1, 2, 3, 4, 5]) assert.equal((await deliver(a.inbox, { data: straddling(n) })).status, 202);
      // Each event stores ~266 KB: a 600,000-byte page holds two, then has_more.
      const first = await listEvents(base, a, 'limit=100');
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(
        first.body.events.map((e: { sequence: number }) => e.sequence),
        [1, 2],
      );
      assert.equal(first.body.has_more, true);
      assert.equal(first.body.next_cursor, 2);
      assert.equal(first.body.latest_sequence, 5);
      for (const event of first.body.events) assert.equal(event.data, straddling(event.sequence));
      const limited = await listEvents(base, a, 'after=2&limit=1');
      assert.deepEqual(
        limited.body.events.map((e: { sequence: number }) => e.sequence),
        [3],
      );
      assert.equal(limited.body.has_more, true);
      const rest = await listEvents(base, a, 'after=4&limit=100');
      assert.deepEqual(
        rest.body.events.map((e: { sequence: number }) => e.sequence),
        [5],
      );
      assert.equal(rest.body.has_more, false);
      assert.equal(rest.body.events[0].data, straddling(5));
    });

    it('the stream sends the same text, slice by slice', async () => {
      const base = server().url;
      const a = await createAddress(base);
      assert.equal((await deliver(a.inbox, { data: straddling(7) })).status, 202);
      const controller = new AbortController();
      const res = await fetch(`${base}/api/v1/addresses/${a.id}/events/stream`, {
        headers: { authorization: `Bearer ${a.token}` },
        signal: controller.signal,
      });
      let text = '';
      const reading = (async () => {
        try {
          for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) text += chunk;
        } catch {
          /* aborted */
        }
      })();
      await eventually(() => /\n\n/.test(text.slice(text.indexOf('id: 1'))), 'the whole message');
      controller.abort();
      await reading;
      const line = text.split('\n').find((l) => l.startsWith('data: '))!;
      assert.equal(JSON.parse(line.slice(6)).data, straddling(7));
      assert.ok(!text.includes('\ufffd'), 'no replacement character');
    });
  },
  { env: { ROOST_MAX_PAGE_BYTES: '600000', ROOST_MAX_BODY_BYTES: '1MiB' } },
);
