// Property tests (fast-check) over real HTTP, for sequencing, idempotency and
// validation. One server and one SQLite file serve every run; each run
// gets a fresh address, so runs cannot see each other's events or keys.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createAddress, deliver, listEvents, request, type CreatedAddress, type WireResponse } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer('sqlite');
});
after(async () => {
  await server?.close();
});

const CAPACITY = 1000; // docs/api.md §9.1
const MAX_DEPTH = 64; // docs/api.md §3

/** Reads the whole queue, walking it with the given page sizes (cycled), and checks every page. */
async function readAll(address: CreatedAddress, limits: number[] = [100], start = 0): Promise<any[]> {
  const events: any[] = [];
  let cursor = start;
  for (let i = 0; ; i++) {
    const limit = limits[i % limits.length];
    const res = await listEvents(server.url, address, `after=${cursor}&limit=${limit}`);
    assert.equal(res.status, 200, res.text);
    const page = res.body;
    assert.ok(page.events.length <= limit, 'a page never holds more than limit');
    let previous = cursor;
    for (const event of page.events) {
      assert.ok(event.sequence > previous, 'pages are ascending and hold only sequence > after');
      previous = event.sequence;
    }
    // docs/api.md §4: next_cursor = last sequence returned, or `after` when the page is empty.
    assert.equal(page.next_cursor, page.events.length > 0 ? page.events[page.events.length - 1].sequence : cursor);
    if (i > 0) assert.ok(page.events.length > 0, 'has_more was true but the next page is empty');
    events.push(...page.events);
    if (!page.has_more) {
      // has_more false: nothing lies beyond; confirm with a read past the cursor.
      const rest = await listEvents(server.url, address, `after=${page.next_cursor}&limit=100`);
      assert.equal(rest.body.events.length, 0, 'has_more was false but events lie beyond the page');
      return events;
    }
    // has_more true: the page is full and more exists beyond it.
    assert.equal(page.events.length, limit, 'has_more is only true on a full page');
    cursor = page.next_cursor;
  }
}

// --- (a) sequencing and (b) idempotency ---------------------------------------------------

/** One delivery of a concurrent batch: keyless, or one of a few keys sent in some form. */
const deliverySpec = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ key: null as number | null, via: 'none' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      key: fc.integer({ min: 0, max: 7 }),
      via: fc.constantFrom('header' as const, 'body' as const, 'both' as const),
    }),
  },
);

describe('sequencing under concurrent deliveries (docs/api.md §3)', () => {
  test('one event per distinct key plus one per keyless delivery, sequences exactly 1..M, pages consistent', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(deliverySpec, { minLength: 1, maxLength: 60 }),
        fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 70 }),
        async (specs, pageSizes, startAfter) => {
          const address = await createAddress(server.url);
          const keyName = (k: number) => `key-${k}`;
          const responses = await Promise.all(
            specs.map((spec, i) => {
              const body: Record<string, unknown> = { type: 'prop.test', data: { i } };
              const headers: Record<string, string> = {};
              if (spec.key !== null && spec.via !== 'header') body.dedupe_key = keyName(spec.key);
              if (spec.key !== null && spec.via !== 'body') headers['idempotency-key'] = keyName(spec.key);
              return deliver(address.inbox, body, headers);
            }),
          );

          const byKey = new Map<number, WireResponse[]>();
          const created: any[] = [];
          specs.forEach((spec, i) => {
            const res = responses[i];
            assert.ok(res.status === 202 || res.status === 200, `unexpected ${res.status}: ${res.text}`);
            assert.equal(res.body.duplicate, res.status === 200);
            if (res.status === 202) created.push(res.body.event);
            if (spec.key === null) assert.equal(res.status, 202, 'a keyless delivery is never a duplicate');
            else byKey.set(spec.key, [...(byKey.get(spec.key) ?? []), res]);
          });
          for (const [key, group] of byKey) {
            const winners = group.filter((r) => r.status === 202);
            assert.equal(winners.length, 1, `exactly one delivery of key ${key} gets 202`);
            const first = winners[0].body.event;
            assert.equal(first.dedupe_key, keyName(key), 'the effective key is stored as dedupe_key');
            for (const r of group) {
              assert.equal(r.body.event.id, first.id, 'every repeat returns the first event');
              assert.deepEqual(r.body.event, first, 'the first event, unchanged');
            }
          }
          const keyless = specs.filter((s) => s.key === null).length;
          const expected = byKey.size + keyless;
          assert.equal(created.length, expected);
          const sequences = created.map((e) => e.sequence).sort((a, b) => a - b);
          assert.deepEqual(
            sequences,
            Array.from({ length: expected }, (_, i) => i + 1),
            'sequences are 1..M, no gap, no repeat',
          );
          assert.equal(new Set(created.map((e) => e.id)).size, expected, 'event ids are distinct');

          // The listed queue: every accepted event, ascending, whatever the page sizes.
          const listed = await readAll(address, pageSizes);
          const byId = [...created].sort((a, b) => a.sequence - b.sequence);
          assert.deepEqual(listed, byId);
          // Starting from an arbitrary cursor gives exactly the suffix.
          const suffix = await readAll(address, pageSizes, startAfter);
          assert.deepEqual(
            suffix,
            byId.filter((e) => e.sequence > startAfter),
          );
        },
      ),
      { numRuns: 30 },
    );
  });
});

/** Valid CreateEvent bodies (docs/api.md §3) without a key of their own. */
const createEventBody = fc.record(
  {
    type: fc.string({ maxLength: 20 }),
    source: fc.string({ maxLength: 20 }),
    data: fc.jsonValue({ maxDepth: 4 }),
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 }), { maxKeys: 4 }),
  },
  { requiredKeys: [] },
);

/** JSON as it comes back from a round trip (e.g. -0 becomes 0). */
const roundTrip = (value: unknown) => JSON.parse(JSON.stringify(value));

describe('idempotency (docs/api.md §3: "that event unchanged … whatever its body")', () => {
  test('a repeated key returns the first event unchanged, whatever the repeat says', async () => {
    const key = fc.stringMatching(/^[\x21-\x7e]{1,40}$/);
    await fc.assert(
      fc.asyncProperty(
        key,
        createEventBody,
        fc.array(fc.tuple(createEventBody, fc.constantFrom('header', 'body', 'both')), { minLength: 1, maxLength: 5 }),
        fc.constantFrom('header', 'body'),
        async (k, firstBody, repeats, firstVia) => {
          const address = await createAddress(server.url);
          const send = (body: Record<string, unknown>, via: string) =>
            deliver(
              address.inbox,
              via === 'header' ? body : { ...body, dedupe_key: k },
              via === 'body' ? {} : { 'idempotency-key': k },
            );

          const first = await send(firstBody, firstVia);
          assert.equal(first.status, 202, first.text);
          const event = first.body.event;
          // The first event holds what was delivered, with the defaults of docs/api.md §3.3.
          assert.equal(event.type, firstBody.type ?? 'message.received');
          assert.equal(event.source, firstBody.source ?? 'https');
          assert.deepEqual(event.data, 'data' in firstBody ? roundTrip(firstBody.data) : null);
          assert.equal(
            JSON.stringify(event.data),
            JSON.stringify('data' in firstBody ? firstBody.data : null),
            'data keeps its key order',
          );
          assert.equal(event.dedupe_key, k);

          for (const [body, via] of repeats) {
            const repeat = await send(body, via);
            assert.equal(repeat.status, 200, repeat.text);
            assert.equal(repeat.body.duplicate, true);
            assert.deepEqual(repeat.body.event, event, 'the duplicate is the first event, unchanged');
          }
          const listed = await readAll(address);
          assert.deepEqual(listed, [event], 'a duplicate queues nothing');
        },
      ),
      { numRuns: 40 },
    );
  });
});

// --- (c) capacity ------------------------------------------------------------------------

type Step = { kind: 'deliver'; count: number } | { kind: 'ack'; picks: number[] };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('deliver' as const), count: fc.integer({ min: 1, max: 150 }) }),
  fc.record({
    kind: fc.constant('ack' as const),
    picks: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 40 }),
  }),
);

describe('capacity of 1,000 events (docs/api.md §9.1, docs/api.md §3)', () => {
  test('never more than 1000 held, nothing unacknowledged dropped, 429 exactly when 1000 are unacknowledged, oldest acknowledged evicted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 8 }), async (steps) => {
        const address = await createAddress(server.url);
        // The model: what the queue must hold, in sequence order.
        const model: Array<{ id: string; sequence: number; acked: boolean }> = [];
        let lastSequence = 0;

        const deliverBatch = async (count: number) => {
          // All in flight at once: group commit orders them, the model only counts.
          const acked = model.filter((e) => e.acked).length;
          const room = CAPACITY - model.length + acked;
          const responses = await Promise.all(
            Array.from({ length: count }, (_, i) => deliver(address.inbox, { data: i })),
          );
          const accepted = responses.filter((r) => r.status === 202);
          const refused = responses.filter((r) => r.status !== 202);
          assert.equal(
            accepted.length,
            Math.min(count, room),
            'accepted exactly while room (free or acknowledged) remained',
          );
          for (const r of refused) {
            assert.equal(r.status, 429, r.text);
            assert.equal(r.body.error.code, 'queue_full');
            assert.match(r.headers.get('retry-after') ?? '', /^\d+$/, '429 carries Retry-After in whole seconds');
          }
          const sequences = accepted.map((r) => r.body.event.sequence).sort((a, b) => a - b);
          assert.deepEqual(
            sequences,
            Array.from({ length: accepted.length }, (_, i) => lastSequence + i + 1),
          );
          // Each event beyond capacity evicts the oldest acknowledged one, in sequence order.
          const overflow = Math.max(0, model.length + accepted.length - CAPACITY);
          for (let n = 0; n < overflow; n++)
            model.splice(
              model.findIndex((e) => e.acked),
              1,
            );
          for (const r of [...accepted].sort((a, b) => a.body.event.sequence - b.body.event.sequence)) {
            model.push({ id: r.body.event.id, sequence: r.body.event.sequence, acked: false });
          }
          lastSequence += accepted.length;
          return refused.length;
        };

        const ackPicks = async (picks: number[]) => {
          if (model.length === 0) return;
          const targets = [...new Set(picks.map((p) => model[Math.floor(p * model.length)]))];
          const responses = await Promise.all(
            targets.map((e) =>
              request(server.url, 'POST', `/api/v1/addresses/${address.id}/events/${e.id}/ack`, {
                token: address.token,
              }),
            ),
          );
          responses.forEach((r) => assert.equal(r.status, 200, r.text));
          for (const e of targets) e.acked = true;
        };

        const checkQueue = async () => {
          const listed = await readAll(address);
          assert.ok(listed.length <= CAPACITY, 'never more than 1000 held');
          assert.deepEqual(
            listed.map((e) => ({ id: e.id, sequence: e.sequence, acked: e.acknowledged_at !== undefined })),
            model,
            'the queue is exactly the model: no unacknowledged event dropped, the oldest acknowledged evicted first',
          );
        };

        for (const s of steps) {
          if (s.kind === 'deliver') await deliverBatch(s.count);
          else await ackPicks(s.picks);
          await checkQueue();
        }
        // Always cross the boundary: fill every free and acknowledged slot and 5 more…
        const unacked = () => model.filter((e) => !e.acked).length;
        const refused = await deliverBatch(CAPACITY - unacked() + 5);
        assert.equal(refused, 5);
        assert.equal(unacked(), CAPACITY);
        await checkQueue();
        // …then free some by acknowledging, scattered over the queue, and take fewer than
        // were freed: only the oldest acknowledged events may go…
        await ackPicks([0.9, 0.1, 0.5, ...steps.flatMap((s) => (s.kind === 'ack' ? s.picks : []))]);
        const freed = model.filter((e) => e.acked).length;
        assert.ok(freed >= 2);
        const some = Math.floor(freed / 2);
        assert.equal(await deliverBatch(some), 0);
        await checkQueue();
        // …and the queue takes exactly as many as were freed, no more.
        assert.equal(await deliverBatch(freed - some + 3), 3);
        await checkQueue();
      }),
      { numRuns: 3 },
    );
  });
});

// --- (d) validation ----------------------------------------------------------------------

const ALLOWED = new Set(['type', 'source', 'data', 'metadata', 'dedupe_key']);
/** docs/api.md §3.4: a header key is visible ASCII and spaces, a body key any text without NUL; 1–1,024 characters. */
const HEADER_KEY = /^[\x20-\x7e]{1,1024}$/;
const BODY_KEY = {
  test: (key: string) => /^[^\uD800-\uDFFF]{1,1024}$/u.test(key) && !key.includes('\u0000'),
};

function depth(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((max, child) => Math.max(max, depth(child)), 0);
}

function nest(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = i % 2 ? { n: value } : [value];
  return value;
}

/** The codes a body (and header key) may legitimately fail with; empty when valid. */
function expectedFailures(body: unknown, headerKey: string | undefined): Set<string> {
  const codes = new Set<string>();
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return new Set(['invalid_request']);
  const b = body as Record<string, unknown>;
  if (Object.keys(b).some((k) => !ALLOWED.has(k))) codes.add('invalid_request');
  if ('type' in b && typeof b.type !== 'string') codes.add('invalid_request');
  if ('source' in b && typeof b.source !== 'string') codes.add('invalid_request');
  if ('metadata' in b) {
    const m = b.metadata;
    if (m === null || typeof m !== 'object' || Array.isArray(m) || Object.values(m).some((v) => typeof v !== 'string'))
      codes.add('invalid_request');
  }
  if ('dedupe_key' in b && (typeof b.dedupe_key !== 'string' || !BODY_KEY.test(b.dedupe_key)))
    codes.add('invalid_request');
  if (headerKey !== undefined && !HEADER_KEY.test(headerKey)) codes.add('invalid_request');
  if (headerKey !== undefined && typeof b.dedupe_key === 'string' && b.dedupe_key !== headerKey)
    codes.add('idempotency_key_mismatch');
  if ('data' in b && depth(b.data) > MAX_DEPTH) codes.add('invalid_request');
  return codes;
}

let keyCounter = 0;
/** Keys unique to this file's run, so that a valid keyed body is never a duplicate. */
const freshKey = fc.constant(null).map(() => `k${Date.now().toString(36)}-${keyCounter++}`);
const badKey = (valid: { test(key: string): boolean }) =>
  fc.oneof(
    fc.constant(''),
    fc.constant('x'.repeat(1025)),
    fc.constant('nul\u0000key'),
    fc.constant('lone \ud800 surrogate'),
    // Random text a key may not be (for a body key, hardly any: one with a NUL).
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).map((s) => (valid.test(s) ? `${s}\u0000` : s)),
  );
const wrongType = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);

const candidateBody = fc.oneof(
  // Valid shapes, some with a key.
  fc.tuple(createEventBody, fc.option(freshKey)).map(([b, k]) => (k === null ? b : { ...b, dedupe_key: k })),
  // One field of the wrong type.
  fc
    .tuple(createEventBody, fc.constantFrom('type', 'source', 'metadata', 'dedupe_key'), wrongType)
    .map(([b, field, v]) => ({ ...b, [field]: v })),
  // metadata with a non-string value.
  fc
    .tuple(createEventBody, fc.string({ maxLength: 5 }), wrongType)
    .map(([b, k, v]) => ({ ...b, metadata: { ok: 'yes', [k]: v } })),
  // An unknown property.
  fc
    .tuple(
      createEventBody,
      fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !ALLOWED.has(k)),
      fc.jsonValue({ maxDepth: 2 }),
    )
    .map(([b, k, v]) => ({ ...b, [k]: v })),
  // A bad dedupe_key.
  fc.tuple(createEventBody, badKey(BODY_KEY)).map(([b, k]) => ({ ...b, dedupe_key: k })),
  // data around the depth limit.
  fc
    .tuple(createEventBody, fc.integer({ min: MAX_DEPTH - 2, max: MAX_DEPTH + 3 }))
    .map(([b, n]) => ({ ...b, data: nest(n) })),
  // Not an object at all.
  fc.jsonValue({ maxDepth: 2 }).filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)),
  // Anything at all.
  fc.jsonValue({ maxDepth: 3 }),
);

const headerChoice = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.constant({ kind: 'same' as const }),
  fc.record({ kind: fc.constant('fresh' as const), key: freshKey }),
  fc.record({
    kind: fc.constant('bad' as const),
    key: badKey(HEADER_KEY).filter((k) => !/[^\x20-\x7e\x80-\xff]/.test(k) && k.trim() === k),
  }),
);

describe('validation of deliveries (docs/api.md §3, docs/api.md §3 and §6)', () => {
  let address: CreatedAddress;
  before(async () => {
    address = await createAddress(server.url);
  });

  test('arbitrary JSON bodies: 202 iff valid CreateEvent, else 400 with the Error shape and a fitting code', async () => {
    await fc.assert(
      fc.asyncProperty(candidateBody, headerChoice, async (body, header) => {
        let headerKey: string | undefined;
        if (header.kind === 'fresh' || header.kind === 'bad') headerKey = header.key;
        if (header.kind === 'same') {
          const b = body as Record<string, unknown> | null;
          headerKey =
            b && typeof b === 'object' && typeof b.dedupe_key === 'string' && HEADER_KEY.test(b.dedupe_key)
              ? b.dedupe_key
              : undefined;
        }
        const res = await deliver(address.inbox, body, headerKey === undefined ? {} : { 'idempotency-key': headerKey });
        const failures = expectedFailures(body, headerKey);
        if (failures.size === 0) {
          assert.equal(res.status, 202, `valid body refused: ${JSON.stringify(body)} → ${res.text}`);
          assert.equal(res.body.duplicate, false);
        } else {
          assert.equal(res.status, 400, `invalid body accepted: ${JSON.stringify(body)} → ${res.text}`);
          assert.deepEqual(Object.keys(res.body), ['error']);
          assert.deepEqual(Object.keys(res.body.error).sort(), ['code', 'message']);
          assert.ok(
            failures.has(res.body.error.code),
            `code ${res.body.error.code} not among ${[...failures].join(', ')}`,
          );
          assert.ok(typeof res.body.error.message === 'string' && res.body.error.message.length > 0);
        }
      }),
      { numRuns: 150 },
    );
  });

  test('bodies that are not JSON: 400 invalid_json', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .oneof(
            fc.string({ maxLength: 40 }),
            // Valid JSON cut short or with garbage after it.
            fc.jsonValue({ maxDepth: 2 }).chain((v) => {
              const text = JSON.stringify(v);
              return fc.oneof(
                fc.nat({ max: Math.max(0, text.length - 1) }).map((n) => text.slice(0, n)),
                fc.constant(`${text} x`),
              );
            }),
          )
          .filter((text) => {
            try {
              JSON.parse(text);
              return false;
            } catch {
              return text.length > 0; // an empty body is its own case (invalid_json too, but not "unparsable")
            }
          }),
        async (text) => {
          const res = await request(address.inbox, 'POST', address.inbox, {
            rawBody: text,
            headers: { 'content-type': 'application/json' },
          });
          assert.equal(res.status, 400, res.text);
          assert.equal(res.body.error.code, 'invalid_json');
        },
      ),
      { numRuns: 40 },
    );
  });
});
