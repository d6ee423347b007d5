// pageJson answers GET …/events with each event's stored data spliced in as text. It must
// say exactly what serialising toPage's objects says, byte for byte, with the keys in the
// order of the Event schema (the order the schema's serialiser wrote before).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { eventJson } from '../src/core/event-json.js';
import { deliveryJson, pageBody, pageJson, toPage, toWireEvent } from '../src/core/wire.js';
import { EventSchema } from '../src/contract/schemas.js';
import { shareEventRecord, type EventRecord } from '../src/storage/storage.js';

const instant = fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) });
const record: fc.Arbitrary<EventRecord> = fc.record({
  id: fc.string({ unit: 'grapheme' }).map((s) => `evt_${s}`),
  addressId: fc.string({ unit: 'grapheme' }).map((s) => `addr_${s}`),
  sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  // Plain ASCII is written without JSON.stringify: both kinds, quotes and backslashes among them.
  type: fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary-ascii' })),
  source: fc.constantFrom('https', 'email', 'mcp'),
  // As stored: JSON.stringify of what was delivered (any JSON value; raw capture stores a string).
  dataJson: fc.jsonValue().map((value) => JSON.stringify(value)),
  metadataJson: fc.option(
    fc.dictionary(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' })).map((m) => JSON.stringify(m)),
    { nil: null },
  ),
  dedupeKey: fc.option(fc.string({ unit: 'grapheme', minLength: 1 }), { nil: null }),
  createdAt: instant,
  acknowledgedAt: fc.option(instant, { nil: null }),
});

test('eventJson and pageJson write what JSON.stringify writes of toWireEvent and toPage', () => {
  fc.assert(
    fc.property(
      fc.array(record, { maxLength: 5 }),
      fc.boolean(),
      fc.nat(),
      fc.nat(),
      (records, hasMore, after, latest) => {
        for (const r of records) assert.equal(eventJson(r), JSON.stringify(toWireEvent(r)));
        const page = { records, hasMore, after, latestSequence: latest };
        assert.equal(pageJson(page), JSON.stringify(toPage(page)));
        // Records storage shares go as bytes kept with each: the same text, twice over (kept).
        const shared = { ...page, records: records.map((r) => shareEventRecord({ ...r })) };
        for (let read = 0; read < 2; read++) {
          const body = pageBody(shared);
          assert.ok(Buffer.isBuffer(body));
          assert.equal(body.toString(), JSON.stringify(toPage(page)));
        }
      },
    ),
    { numRuns: 500 },
  );
});

test('a page of shared records kept by earlier pages, in any mix, is what JSON.stringify writes', () => {
  // Pages of one address overlap, skip events (acknowledged, filtered) and mix records kept
  // by different reads: pageBody joins the bytes each record keeps (some in one slice, some
  // apart) and must still write each event once, in order, a comma between two.
  const subsequence = <T>(items: T[], picks: boolean[]) => items.filter((_, i) => picks[i % picks.length]);
  fc.assert(
    fc.property(
      fc.array(record, { maxLength: 12 }),
      fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }), { maxLength: 4 }),
      fc.boolean(),
      fc.nat(),
      (records, reads, hasMore, latest) => {
        const shared = records.map((r) => shareEventRecord({ ...r }));
        for (const picks of [...reads, [true]]) {
          const page = { records: subsequence(shared, picks), hasMore, after: 0, latestSequence: latest };
          const expected = JSON.stringify(toPage({ ...page, records: subsequence(records, picks) }));
          assert.equal(pageBody(page).toString(), expected);
        }
      },
    ),
    { numRuns: 500 },
  );
});

test("an event's keys come in the order of the Event schema", () => {
  const schemaOrder = Object.keys(EventSchema.properties);
  fc.assert(
    fc.property(record, (r) => {
      const keys = Object.keys(JSON.parse(eventJson(r)));
      assert.deepEqual(
        keys,
        schemaOrder.filter((key) => keys.includes(key)),
      );
    }),
    { numRuns: 200 },
  );
});

test("deliveryJson writes what JSON.stringify writes of a delivery's answer", () => {
  fc.assert(
    fc.property(record, fc.boolean(), (r, duplicate) => {
      const body = { event: toWireEvent(r), duplicate };
      assert.equal(deliveryJson({ status: duplicate ? 200 : 202, body, record: r }), JSON.stringify(body));
    }),
    { numRuns: 300 },
  );
});
