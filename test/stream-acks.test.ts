// Acknowledgements on the stream (docs/api.md §4.1): an `ack` message for each event
// acknowledged after it was sent — by REST, MCP ack_event or ack up_to_sequence, on this
// instance or another sharing PostgreSQL — and, on a reconnect with Last-Event-ID, for the
// acknowledgements made while the reader was away. Read with a real SSE parser.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { eventually, forEachEngine } from './helpers/engines.js';
import { createAddress, deliver, request, type CreatedAddress } from './helpers/http.js';
import { ENGINES, engineSkipReason, startTestServer } from './helpers/server.js';

/** A stream read through fetch and eventsource-parser: every message in arrival order. */
class SseReader {
  readonly messages: EventSourceMessage[] = [];
  private constructor(private readonly controller: AbortController) {}

  static async open(base: string, address: CreatedAddress, lastEventId?: string): Promise<SseReader> {
    const controller = new AbortController();
    const headers: Record<string, string> = { authorization: `Bearer ${address.token}` };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const res = await fetch(`${base}/api/v1/addresses/${address.id}/events/stream`, {
      headers,
      signal: controller.signal,
    });
    assert.equal(res.status, 200);
    const reader = new SseReader(controller);
    const parser = createParser({ onEvent: (message) => reader.messages.push(message) });
    void (async () => {
      try {
        for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) parser.feed(chunk);
      } catch {
        /* aborted */
      }
    })();
    return reader;
  }

  /** Sequences of the events received, in order. */
  get ids(): number[] {
    return this.messages.filter((m) => m.event === undefined).map((m) => Number(m.id));
  }

  /** The `ack` messages received, parsed. */
  get acks(): Array<{ id: string; sequence: number; acknowledged_at: string }> {
    return this.messages.filter((m) => m.event === 'ack').map((m) => JSON.parse(m.data));
  }

  close(): void {
    this.controller.abort();
  }
}

const ack = (base: string, a: CreatedAddress, eventId: string) =>
  request(base, 'POST', `/api/v1/addresses/${a.id}/events/${eventId}/ack`, { token: a.token });

await forEachEngine('stream: acknowledgements as `ack` messages', (server) => {
  it('REST ack, MCP ack_event and ack up_to_sequence each send one `ack`, without an id; a repeat sends none', async () => {
    const base = server().url;
    const a = await createAddress(base);
    const stream = await SseReader.open(base, a);
    const events = [];
    for (const n of [1, 2, 3]) events.push((await deliver(a.inbox, { data: { n } })).body.event);
    await eventually(() => stream.ids.length === 3, 'three events');

    const acked = await ack(base, a, events[1].id);
    assert.equal(acked.status, 200);
    await eventually(() => stream.acks.length === 1, 'the ack message');
    const message = stream.messages.find((m) => m.event === 'ack')!;
    assert.equal(message.id, undefined, 'an ack does not move the cursor');
    assert.deepEqual(JSON.parse(message.data), {
      id: events[1].id,
      sequence: 2,
      acknowledged_at: acked.body.event.acknowledged_at,
    });
    assert.deepEqual(Object.keys(JSON.parse(message.data)), ['id', 'sequence', 'acknowledged_at']);

    // Acknowledging again changes nothing and tells nothing: the next message is event 4.
    assert.equal((await ack(base, a, events[1].id)).status, 200);
    await deliver(a.inbox, { data: { n: 4 } });
    await eventually(() => stream.ids.length === 4, 'event 4');
    assert.equal(stream.acks.length, 1);

    const mcp = new Client({ name: 'stream-acks-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${a.id}`)));
    try {
      const one = await mcp.callTool({ name: 'ack_event', arguments: { read_token: a.token, event_id: events[0].id } });
      assert.notEqual(one.isError, true, JSON.stringify(one.content));
      await eventually(() => stream.acks.length === 2, 'the MCP ack');
      assert.equal(stream.acks[1].sequence, 1);
      const run = await mcp.callTool({ name: 'ack_event', arguments: { read_token: a.token, up_to_sequence: 4 } });
      assert.notEqual(run.isError, true, JSON.stringify(run.content));
      await eventually(() => stream.acks.length === 4, 'the acks of 3 and 4');
      assert.deepEqual(
        stream.acks.map((m) => m.sequence),
        [2, 1, 3, 4],
      );
      const page = (await request(base, 'GET', `/api/v1/addresses/${a.id}/events`, { token: a.token })).body;
      for (const told of stream.acks) {
        const event = page.events.find((e: { sequence: number }) => e.sequence === told.sequence);
        assert.equal(told.acknowledged_at, event.acknowledged_at);
        assert.equal(told.id, event.id);
      }
    } finally {
      await mcp.close();
      stream.close();
    }
  });

  it('a reconnect with Last-Event-ID hears of the acknowledgements made while it was away, and misses no event', async () => {
    const base = server().url;
    const a = await createAddress(base);
    const first = await SseReader.open(base, a);
    const events = [];
    for (const n of [1, 2, 3]) events.push((await deliver(a.inbox, { data: { n } })).body.event);
    await eventually(() => first.ids.length === 3, 'three events');
    first.close();

    // While away: 2 is acknowledged, 4 arrives and is acknowledged too.
    assert.equal((await ack(base, a, events[1].id)).status, 200);
    const fourth = (await deliver(a.inbox, { data: { n: 4 } })).body.event;
    assert.equal((await ack(base, a, fourth.id)).status, 200);

    const again = await SseReader.open(base, a, '3');
    await eventually(() => again.ids.length === 1 && again.acks.length === 1, 'event 4 and the ack of 2');
    assert.deepEqual(again.ids, [4]);
    // Event 4 came with its acknowledged_at: no `ack` message repeats it.
    assert.deepEqual(
      again.acks.map((m) => m.sequence),
      [2],
    );
    // And it stays live: acknowledging 1 now is told at once.
    assert.equal((await ack(base, a, events[0].id)).status, 200);
    await eventually(() => again.acks.length === 2, 'the live ack of 1');
    assert.equal(again.acks[1].sequence, 1);
    again.close();
  });
});

const postgresSkip = ENGINES.includes('postgres')
  ? await engineSkipReason('postgres')
  : 'PostgreSQL is not in ROOST_TEST_ENGINES';
describe(
  'stream: acknowledgements across instances [postgres]',
  { skip: postgresSkip ? `skipped: ${postgresSkip}` : false },
  () => {
    it('an ack on one instance reaches a stream on another', async () => {
      const one = await startTestServer('postgres');
      const other = await startTestServer('postgres', { reuse: { databaseUrl: one.databaseUrl } });
      try {
        const a = await createAddress(one.url);
        const stream = await SseReader.open(one.url, a);
        // Delivered through the other instance: only its announcement wakes this stream, so
        // once the event is here no wake-up of this instance is still on its way.
        const event = (await deliver(a.inbox.replace(one.url, other.url), { data: 'x' })).body.event;
        await eventually(() => stream.ids.length === 1, 'the event');
        const acked = await ack(other.url, a, event.id);
        assert.equal(acked.status, 200);
        await eventually(() => stream.acks.length === 1, 'the ack made on the other instance');
        assert.deepEqual(stream.acks[0], {
          id: event.id,
          sequence: 1,
          acknowledged_at: acked.body.event.acknowledged_at,
        });
        stream.close();
      } finally {
        await other.close();
        await one.close();
      }
    });
  },
);
