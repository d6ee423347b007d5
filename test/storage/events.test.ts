// Events at the Storage interface of every engine: appends and their outcomes, the page
// (cursor, count and byte bounds, filters, latest sequence), acknowledgements, email
// parts, purge, the rate buckets and ping. The same calls give the same answers on each.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { RAW_EMAIL_PART, type EmailPart, type Storage } from '../../src/storage/storage.js';
import { forEachStorage } from '../helpers/storage.js';
import { addressRecord, appendInput } from '../helpers/records.js';

async function newAddress(storage: Storage, expiresAt: number | null = null): Promise<string> {
  const address = addressRecord({ expiresAt });
  assert.equal(await storage.insertAddress(address), 'ok');
  return address.id;
}

async function appendMany(storage: Storage, addressId: string, data: string[]): Promise<void> {
  for (const dataJson of data) {
    const result = await storage.appendEvent({ event: appendInput(addressId, { dataJson }), capacity: 1000 });
    assert.equal(result.status, 'created');
  }
}

function part(number: number, text: string): EmailPart {
  const bytes = Buffer.from(text);
  return {
    part: number,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    contentType: 'text/plain',
    filename: number === RAW_EMAIL_PART ? null : `part-${number}.txt`,
    bytes,
  };
}

await forEachStorage('events', (storage, engine, opened) => {
  test('an append returns the event as stored, with the next sequence', async () => {
    const id = await newAddress(storage());
    const input = appendInput(id, { dataJson: '{"b":1,"a":2}', metadataJson: '{"h":"v"}', type: 'build.done' });
    const result = await storage().appendEvent({ event: input, capacity: 10 });
    assert.equal(result.status, 'created');
    const { event } = result;
    assert.equal(event.sequence, 1);
    assert.match(event.id, /^evt_/);
    const page = await storage().listEvents({ addressId: id, after: 0, limit: 10 });
    assert.deepEqual(page.events, [event]);
    assert.deepEqual(
      { ...event, id: undefined },
      {
        id: undefined,
        addressId: id,
        sequence: 1,
        type: 'build.done',
        source: 'https',
        dataJson: '{"b":1,"a":2}',
        metadataJson: '{"h":"v"}',
        dedupeKey: null,
        createdAt: input.createdAt,
        acknowledgedAt: null,
      },
    );
  });

  test('a repeated key within its scope returns the held event and uses no sequence; another scope is another event', async () => {
    const id = await newAddress(storage());
    const first = await storage().appendEvent({ event: appendInput(id, { dedupeKey: 'k' }), capacity: 10 });
    const again = await storage().appendEvent({
      event: appendInput(id, { dedupeKey: 'k', dataJson: '{"other":true}' }),
      capacity: 10,
    });
    assert.equal(again.status, 'duplicate');
    assert.deepEqual((again as { event: unknown }).event, (first as { event: unknown }).event);
    const email = await storage().appendEvent({
      event: appendInput(id, { dedupeKey: 'k', keyScope: 'email' }),
      capacity: 10,
    });
    assert.equal(email.status === 'created' && email.event.sequence, 2);
  });

  test('an unknown address, or one expired at the delivery time, is address_not_found', async () => {
    const now = Date.now();
    const expiring = await newAddress(storage(), now + 1000);
    assert.deepEqual(await storage().appendEvent({ event: appendInput('addr_unknown'), capacity: 10 }), {
      status: 'address_not_found',
    });
    assert.deepEqual(
      await storage().appendEvent({ event: appendInput(expiring, { createdAt: now + 1000 }), capacity: 10 }),
      { status: 'address_not_found' },
    );
    assert.equal(
      (await storage().appendEvent({ event: appendInput(expiring, { createdAt: now + 999 }), capacity: 10 })).status,
      'created',
    );
  });

  test('pages: after a cursor, at most limit, hasMore and the latest sequence', async () => {
    const id = await newAddress(storage());
    await appendMany(storage(), id, ['1', '2', '3', '4', '5']);
    const page = await storage().listEvents({ addressId: id, after: 1, limit: 2 });
    assert.deepEqual(
      page.events.map((e) => e.sequence),
      [2, 3],
    );
    assert.equal(page.hasMore, true);
    assert.equal(page.latestSequence, 5);
    const last = await storage().listEvents({ addressId: id, after: 3, limit: 2 });
    assert.deepEqual(
      last.events.map((e) => e.sequence),
      [4, 5],
    );
    assert.equal(last.hasMore, false);
    assert.deepEqual(await storage().listEvents({ addressId: id, after: 5, limit: 2 }), {
      events: [],
      hasMore: false,
      latestSequence: 5,
    });
    assert.deepEqual(await storage().listEvents({ addressId: 'addr_unknown', after: 0, limit: 2 }), {
      events: [],
      hasMore: false,
      latestSequence: 0,
    });
  });

  test('pages: maxBytes bounds the data and metadata read, but the first event always comes', async () => {
    const id = await newAddress(storage());
    await appendMany(storage(), id, ['"' + 'a'.repeat(98) + '"', '"' + 'b'.repeat(48) + '"', '"c"', '"d"']);
    const tight = await storage().listEvents({ addressId: id, after: 0, limit: 10, maxBytes: 10 });
    assert.deepEqual(
      tight.events.map((e) => e.sequence),
      [1],
    );
    assert.equal(tight.hasMore, true);
    const exact = await storage().listEvents({ addressId: id, after: 0, limit: 10, maxBytes: 150 });
    assert.deepEqual(
      exact.events.map((e) => e.sequence),
      [1, 2],
    );
    const roomy = await storage().listEvents({ addressId: id, after: 1, limit: 10, maxBytes: 56 });
    assert.deepEqual(
      roomy.events.map((e) => e.sequence),
      [2, 3, 4],
    );
    assert.equal(roomy.hasMore, false);
  });

  // SQLite reads a page in one scan when every event is small against maxBytes / limit and
  // in two steps otherwise (page-query.ts pageCandidatesQuery): both must cut where the
  // bound says, sizes on either side of maxBytes / limit, with metadata and with type and
  // source counted in the stored size but not in the page's bytes.
  test('pages: the byte bound cuts where the data and metadata say, whatever the mix of sizes', async () => {
    const id = await newAddress(storage());
    const stored: { bytes: number }[] = [];
    const sizes = fc.sample(fc.integer({ min: 0, max: 120 }), { numRuns: 40, seed: 37 });
    for (const [n, size] of sizes.entries()) {
      const metadataJson = n % 3 === 0 ? `{"m":"${'m'.repeat(size % 17)}"}` : null;
      const dataJson = `"${'é'.repeat(size % 5)}${'d'.repeat(size)}"`;
      const input = appendInput(id, { dataJson, metadataJson, type: `type.${'t'.repeat(size % 40)}` });
      assert.equal((await storage().appendEvent({ event: input, capacity: 1000 })).status, 'created');
      stored.push({
        bytes: Buffer.byteLength(dataJson) + (metadataJson === null ? 0 : Buffer.byteLength(metadataJson)),
      });
    }
    const reads = fc.sample(
      fc.record({
        after: fc.integer({ min: 0, max: stored.length }),
        limit: fc.integer({ min: 1, max: 12 }),
        maxBytes: fc.integer({ min: 1, max: 1500 }),
      }),
      { numRuns: 150, seed: 37 },
    );
    for (const { after, limit, maxBytes } of reads) {
      const expected: number[] = [];
      let bytes = 0;
      for (let sequence = after + 1; sequence <= stored.length && expected.length < limit; sequence++) {
        bytes += stored[sequence - 1].bytes;
        if (expected.length > 0 && bytes > maxBytes) break;
        expected.push(sequence);
      }
      const page = await storage().listEvents({ addressId: id, after, limit, maxBytes });
      const read = { after, limit, maxBytes };
      assert.deepEqual(
        page.events.map((event) => event.sequence),
        expected,
        JSON.stringify(read),
      );
      assert.equal(page.hasMore, after + expected.length < stored.length, JSON.stringify(read));
      for (const event of page.events) assert.notEqual(event.dataJson, null, JSON.stringify(read));
    }
  });

  // SQLite keeps the events of pages it read and reads again only what can change of them
  // (sqlite/recent-events.ts): what changed since must show all the same.
  test('a page read again shows what changed since: acknowledgements, events added, events removed', async () => {
    const id = await newAddress(storage());
    await appendMany(storage(), id, ['1', '2', '3', '4']);
    const page = (after: number, unacked = false) =>
      storage().listEvents({ addressId: id, after, limit: 10, filter: { unacked } });
    const first = await page(0);
    assert.deepEqual(
      first.events.map((e) => [e.sequence, e.acknowledgedAt]),
      [
        [1, null],
        [2, null],
        [3, null],
        [4, null],
      ],
    );
    assert.equal(await storage().ackUpTo(id, 2, 5000), 2);
    await appendMany(storage(), id, ['5', '6']);
    const again = await page(0);
    assert.deepEqual(
      again.events.map((e) => [e.sequence, e.dataJson, e.acknowledgedAt]),
      [
        [1, '1', 5000],
        [2, '2', 5000],
        [3, '3', null],
        [4, '4', null],
        [5, '5', null],
        [6, '6', null],
      ],
    );
    assert.equal(again.latestSequence, 6);
    assert.deepEqual(
      (await page(0, true)).events.map((e) => e.sequence),
      [3, 4, 5, 6],
    );
    // Acknowledged one by one once held: the page says so, and an event not acknowledged reads the same.
    assert.ok(await storage().ackEvent(id, again.events[3].id, 6000));
    const third = await page(2);
    assert.deepEqual(
      third.events.map((e) => [e.sequence, e.acknowledgedAt]),
      [
        [3, null],
        [4, 6000],
        [5, null],
        [6, null],
      ],
    );
    assert.deepEqual({ ...third.events[0] }, { ...again.events[2] });
    // The oldest acknowledged events make room for new ones: gone from every page after.
    for (const dataJson of ['7', '8']) {
      const result = await storage().appendEvent({ event: appendInput(id, { dataJson }), capacity: 6 });
      assert.equal(result.status, 'created');
    }
    assert.deepEqual(
      (await page(0)).events.map((e) => e.sequence),
      [3, 4, 5, 6, 7, 8],
    );
  });

  test('pages: the unacked filter keeps only unacknowledged events; hasMore counts only those', async () => {
    const id = await newAddress(storage());
    await appendMany(storage(), id, ['1', '2', '3', '4', '5']);
    assert.equal(await storage().ackUpTo(id, 2, Date.now()), 2);
    const { events } = await storage().listEvents({ addressId: id, after: 0, limit: 10 });
    assert.ok(await storage().ackEvent(id, events[3].id, Date.now()));
    const page = await storage().listEvents({ addressId: id, after: 0, limit: 1, filter: { unacked: true } });
    assert.deepEqual(
      page.events.map((e) => e.sequence),
      [3],
    );
    assert.equal(page.hasMore, true);
    const rest = await storage().listEvents({ addressId: id, after: 3, limit: 10, filter: { unacked: true } });
    assert.deepEqual(
      rest.events.map((e) => e.sequence),
      [5],
    );
    assert.equal(rest.hasMore, false);
    assert.equal(rest.latestSequence, 5);
    const off = await storage().listEvents({ addressId: id, after: 0, limit: 10, filter: { unacked: false } });
    assert.equal(off.events.length, 5);
  });

  test('ack keeps the first acknowledged_at; an event of another address or unknown is null', async () => {
    const id = await newAddress(storage());
    const other = await newAddress(storage());
    await appendMany(storage(), id, ['1']);
    const [event] = (await storage().listEvents({ addressId: id, after: 0, limit: 1 })).events;
    const acked = await storage().ackEvent(id, event.id, 1000);
    assert.deepEqual(acked, { ...event, acknowledgedAt: 1000 });
    assert.deepEqual(await storage().ackEvent(id, event.id, 2000), { ...event, acknowledgedAt: 1000 });
    assert.equal(await storage().ackEvent(other, event.id, 2000), null);
    assert.equal(await storage().ackEvent(id, 'evt_unknown', 2000), null);
    assert.equal(await storage().ackUpTo(id, 1, 3000), 0);
  });

  test('listAcknowledged: acknowledged at or after since, sequence up to upTo, by sequence, at most limit', async () => {
    const id = await newAddress(storage());
    const other = await newAddress(storage());
    await appendMany(storage(), id, ['1', '2', '3', '4', '5', '6']);
    await appendMany(storage(), other, ['1']);
    const events = (await storage().listEvents({ addressId: id, after: 0, limit: 10 })).events;
    const [otherEvent] = (await storage().listEvents({ addressId: other, after: 0, limit: 1 })).events;
    // Acknowledged out of sequence order, at different times; #3 never.
    const ackedAt = new Map([
      [5, 1000],
      [1, 2000],
      [2, 3000],
      [4, 4000],
      [6, 5000],
    ]);
    for (const [sequence, at] of ackedAt) assert.ok(await storage().ackEvent(id, events[sequence - 1].id, at));
    assert.ok(await storage().ackEvent(other, otherEvent.id, 3000));
    const ack = (sequence: number) => ({
      id: events[sequence - 1].id,
      sequence,
      acknowledgedAt: ackedAt.get(sequence),
    });

    assert.deepEqual(await storage().listAcknowledged({ addressId: id, since: 0, upTo: 6, limit: 10 }), [
      ack(1),
      ack(2),
      ack(4),
      ack(5),
      ack(6),
    ]);
    // since is inclusive: #2 was acknowledged at 3000 exactly.
    assert.deepEqual(await storage().listAcknowledged({ addressId: id, since: 3000, upTo: 6, limit: 10 }), [
      ack(2),
      ack(4),
      ack(6),
    ]);
    // upTo is inclusive and bounds the sequence, not the time.
    assert.deepEqual(await storage().listAcknowledged({ addressId: id, since: 0, upTo: 4, limit: 10 }), [
      ack(1),
      ack(2),
      ack(4),
    ]);
    // The limit keeps the lowest sequences.
    assert.deepEqual(await storage().listAcknowledged({ addressId: id, since: 0, upTo: 6, limit: 2 }), [
      ack(1),
      ack(2),
    ]);
    assert.deepEqual(await storage().listAcknowledged({ addressId: id, since: 5001, upTo: 6, limit: 10 }), []);
    assert.deepEqual(await storage().listAcknowledged({ addressId: id, since: 0, upTo: 0, limit: 10 }), []);
    assert.deepEqual(await storage().listAcknowledged({ addressId: 'addr_unknown', since: 0, upTo: 6, limit: 10 }), []);
  });

  test('hasRoom: below capacity, or full with an acknowledged event to evict', async () => {
    const id = await newAddress(storage());
    assert.equal(await storage().hasRoom(id, 2), true);
    await appendMany(storage(), id, ['1', '2']);
    assert.equal(await storage().hasRoom(id, 2), false);
    await storage().ackUpTo(id, 1, Date.now());
    assert.equal(await storage().hasRoom(id, 2), true);
  });

  test('hasRoom counts the events a queue holds, not the sequences it spans', async () => {
    const id = await newAddress(storage());
    await appendMany(storage(), id, ['1', '2', '3']);
    const page = await storage().listEvents({ addressId: id, after: 0, limit: 10 });
    assert.ok(await storage().ackEvent(id, page.events[1].id, Date.now()));
    // Full at 3: the append makes room by evicting the acknowledged event, sequence 2.
    const fourth = await storage().appendEvent({ event: appendInput(id, { dataJson: '4' }), capacity: 3 });
    assert.equal(fourth.status, 'created');
    const held = await storage().listEvents({ addressId: id, after: 0, limit: 10 });
    assert.deepEqual(
      held.events.map((event) => event.sequence),
      [1, 3, 4],
    );
    // Sequences 1 to 4 span 4, but 3 events are held.
    assert.equal(await storage().hasRoom(id, 4), true);
    assert.equal(await storage().hasRoom(id, 3), false);
  });

  test("email parts: stored with their event, read by the event's address only; a repeat adds the parts it lacks", async () => {
    const id = await newAddress(storage());
    const other = await newAddress(storage());
    const raw = part(RAW_EMAIL_PART, 'From: a@example.com\r\n\r\nhello');
    const attachment = part(0, 'attachment bytes');
    const first = await storage().appendEvent({
      event: appendInput(id, { dedupeKey: '<m1@example.com>', keyScope: 'email', parts: [raw] }),
      capacity: 10,
    });
    assert.equal(first.status, 'created');
    const eventId = (first as { event: { id: string } }).event.id;
    const read = await storage().getEmailPart(id, eventId, RAW_EMAIL_PART);
    assert.deepEqual({ ...read, bytes: Buffer.from(read!.bytes) }, { ...raw, bytes: Buffer.from(raw.bytes) });
    assert.equal(await storage().getEmailPart(other, eventId, RAW_EMAIL_PART), null);
    assert.equal(await storage().getEmailPart(id, eventId, 0), null);
    const again = await storage().appendEvent({
      event: appendInput(id, { dedupeKey: '<m1@example.com>', keyScope: 'email', parts: [raw, attachment] }),
      capacity: 10,
    });
    assert.equal(again.status, 'duplicate');
    const added = await storage().getEmailPart(id, eventId, 0);
    assert.equal(Buffer.from(added!.bytes).toString(), 'attachment bytes');
    assert.equal(added!.filename, 'part-0.txt');
  });

  test('purge: expired addresses go with their events; events past retention go', async () => {
    const now = Date.now();
    const expiring = await newAddress(storage(), now + 1000);
    const kept = await newAddress(storage());
    await appendMany(storage(), expiring, ['1', '2']);
    await storage().appendEvent({ event: appendInput(kept, { createdAt: now - 5000 }), capacity: 10 });
    await storage().appendEvent({ event: appendInput(kept, { createdAt: now }), capacity: 10 });
    const result = await storage().purge(now + 1000, now - 1000);
    assert.ok(result.expiredAddressIds.includes(expiring));
    assert.ok(result.eventsPurged >= 3);
    assert.equal(await storage().getAddress(expiring, now), null);
    assert.deepEqual(
      (await storage().listEvents({ addressId: kept, after: 0, limit: 10 })).events.map((e) => e.sequence),
      [2],
    );
  });

  test('rate buckets: limit tokens, then refused with the wait for the next one', async () => {
    const key = `create:test-${Math.random()}`;
    const now = Date.now();
    const taken = [];
    for (let i = 0; i < 3; i++) taken.push(await storage().takeToken({ key, limit: 2, periodMs: 60_000, now }));
    assert.deepEqual(
      taken.map((t) => [t.allowed, t.remaining]),
      [
        [true, 1],
        [true, 0],
        [false, 0],
      ],
    );
    assert.equal(taken[2].retryAfterMs, 30_000);
    assert.equal((await storage().takeToken({ key, limit: 2, periodMs: 60_000, now: now + 30_000 })).allowed, true);
  });

  test('ping answers', async () => {
    await storage().ping();
  });

  test('an engine shared by several processes reports appends and deletes made by another; SQLite is not shared', async () => {
    if (engine === 'sqlite') {
      assert.equal('onExternalChange' in storage(), false);
      return;
    }
    const other = await opened().openAnother!();
    /** Resolves when this engine next reports `addressId` changed elsewhere. */
    const reported = (addressId: string) =>
      new Promise<void>((resolve) => {
        const stop = storage().onExternalChange!((id) => {
          if (id !== addressId) return;
          stop();
          resolve();
        });
      });
    try {
      const id = await newAddress(storage());
      const appended = reported(id);
      await other.appendEvent({ event: appendInput(id), capacity: 10 });
      await appended;
      const deleted = reported(id);
      assert.equal(await other.deleteAddress(id), true);
      await deleted;
    } finally {
      await other.close();
    }
  });
});
