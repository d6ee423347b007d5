// The queue as Server-Sent Events (docs/api.md §4.1), read with a real streaming HTTP client
// whose SSE frames are parsed here: replay, live events, reconnects with Last-Event-ID,
// `gone`, errors, many streams at once, and the server freeing what a stream held.
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { eventually, forEachEngine } from './helpers/engines.js';
import { createAddress, deliver, request, type CreatedAddress } from './helpers/http.js';
import { ENGINES, engineSkipReason, startTestServer } from './helpers/server.js';

interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
}

/** A minimal SSE reader over node:http: messages in arrival order; comments are skipped. */
class SseClient {
  readonly messages: SseMessage[] = [];
  /** Resolves when the server ends the response. */
  readonly ended: Promise<void>;
  private buffer = '';
  private waiters: Array<() => void> = [];
  private endedFlag = false;

  private constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    readonly body: Promise<string>,
    private readonly req: ClientRequest,
    ended: Promise<void>,
  ) {
    this.ended = ended;
  }

  static open(
    base: string,
    address: CreatedAddress,
    options: { query?: string; lastEventId?: string; token?: string | null } = {},
  ): Promise<SseClient> {
    const url = `${base}/api/v1/addresses/${address.id}/events/stream${options.query ? `?${options.query}` : ''}`;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    const token = options.token === undefined ? address.token : options.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    return new Promise((resolve, reject) => {
      const req = httpRequest(url, { headers, agent: false }, (res) => {
        let text = '';
        const ended = new Promise<void>((done) => {
          res.on('end', done);
          res.on('close', done);
        });
        const body = ended.then(() => text);
        const client = new SseClient(res.statusCode!, res.headers, body, req, ended);
        void ended.then(() => client.markEnded());
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          client.feed(chunk);
        });
        res.on('error', () => {});
        resolve(client);
      });
      req.on('error', reject);
      req.end();
    });
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let cut: number;
    while ((cut = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const message: SseMessage = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id' || field === 'event') message[field] = value;
        if (field === 'data') message.data = message.data === undefined ? value : `${message.data}\n${value}`;
      }
      if (message.data !== undefined || message.event !== undefined) this.messages.push(message);
    }
    this.notify();
  }

  private markEnded(): void {
    this.endedFlag = true;
    this.notify();
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Waits until `count` messages have arrived (fails if the stream ends first). */
  async waitFor(count: number): Promise<SseMessage[]> {
    while (this.messages.length < count) {
      if (this.endedFlag) throw new Error(`stream ended after ${this.messages.length} of ${count} messages`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return this.messages;
  }

  /** The sequences of the event messages received so far. */
  ids(): number[] {
    return this.messages.filter((m) => m.event === undefined).map((m) => Number(m.id));
  }

  close(): void {
    this.req.destroy();
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function deliverMany(inbox: string, count: number, from = 1): Promise<void> {
  for (let start = 0; start < count; start += 25) {
    await Promise.all(
      range(start, Math.min(start + 25, count) - 1).map((i) => deliver(inbox, { data: { n: from + i } })),
    );
  }
}

await forEachEngine('event stream (SSE)', (server) => {
  const base = () => server().url;
  const streamsFreed = () => eventually(() => server().roost.waiters.subscribed === 0, 'every stream unsubscribed');

  it('replays past `after`, then sends live events as committed, with SSE headers', async () => {
    const address = await createAddress(base());
    await deliverMany(address.inbox, 3);
    const stream = await SseClient.open(base(), address, { query: 'after=1' });
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    assert.equal(stream.headers['cache-control'], 'no-store');
    assert.equal(stream.headers['x-accel-buffering'], 'no');
    await stream.waitFor(2);
    assert.equal((await deliver(address.inbox, { type: 'build.finished', data: { ok: true } })).status, 202);
    const [second, third, live] = await stream.waitFor(3);
    assert.deepEqual(stream.ids(), [2, 3, 4]);
    assert.equal(second.id, '2');
    const event = JSON.parse(live.data!);
    assert.equal(event.sequence, 4);
    assert.equal(event.type, 'build.finished');
    assert.deepEqual(event.data, { ok: true });
    assert.equal(event.address_id, address.id);
    assert.equal(JSON.parse(third.data!).sequence, 3);
    stream.close();
    await streamsFreed();
  });

  it('pages a long replay and interleaves live commits without gaps, repeats or disorder', async () => {
    const address = await createAddress(base());
    await deliverMany(address.inbox, 230);
    const stream = await SseClient.open(base(), address);
    // Commits landing while the replay is being read and sent.
    await deliverMany(address.inbox, 20, 231);
    await stream.waitFor(250);
    assert.deepEqual(stream.ids(), range(1, 250));
    stream.close();
    await streamsFreed();
  });

  it('a reconnect with Last-Event-ID (which wins over after) misses nothing and repeats nothing', async () => {
    const address = await createAddress(base());
    const first = await SseClient.open(base(), address);
    await deliverMany(address.inbox, 2);
    await first.waitFor(2);
    first.close();
    await streamsFreed();
    await deliverMany(address.inbox, 2, 3); // while nobody is connected
    const second = await SseClient.open(base(), address, { query: 'after=0', lastEventId: first.messages[1].id });
    await second.waitFor(2);
    await deliver(address.inbox, { data: { n: 5 } });
    await second.waitFor(3);
    assert.deepEqual(second.ids(), [3, 4, 5]);
    second.close();
    await streamsFreed();
  });

  it('with filters, sends only matching events, replayed then live; a bad filter is 400 naming it', async () => {
    const address = await createAddress(base());
    for (const body of [
      { type: 'job.done', data: { job: 1 } },
      { type: 'job.progress', data: { job: 2 } },
      { type: 'job.done', data: { job: 2 } },
    ])
      assert.equal((await deliver(address.inbox, body)).status, 202);
    const query = `type=${encodeURIComponent('job.done')}&data_contains=${encodeURIComponent('{"job":2}')}`;
    const stream = await SseClient.open(base(), address, { query });
    assert.equal(stream.status, 200);
    await stream.waitFor(1);
    for (const body of [
      { type: 'job.done', data: { job: 1 } },
      { type: 'job.done', data: { job: 2, n: 5 } },
    ])
      assert.equal((await deliver(address.inbox, body)).status, 202);
    await stream.waitFor(2);
    assert.deepEqual(stream.ids(), [3, 5]);
    stream.close();
    await streamsFreed();
    const bad = await request(base(), 'GET', `/api/v1/addresses/${address.id}/events/stream?type=a*b`, {
      token: address.token,
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /"type"/);
  });

  it('deleting the address sends `event: gone` and ends the stream', async () => {
    const address = await createAddress(base());
    await deliver(address.inbox, { data: 1 });
    const stream = await SseClient.open(base(), address);
    await stream.waitFor(1);
    const deleted = await request(base(), 'DELETE', `/api/v1/addresses/${address.id}`, { token: address.token });
    assert.equal(deleted.status, 204);
    const [, gone] = await stream.waitFor(2);
    assert.equal(gone.event, 'gone');
    assert.equal(JSON.parse(gone.data!).error.code, 'address_not_found');
    await stream.ended;
    assert.equal(stream.messages.length, 2);
    await streamsFreed();
  });

  it('errors before the stream starts are JSON: 401, 404, 400', async () => {
    const address = await createAddress(base());
    const other = await createAddress(base());
    const cases: Array<[number, string, Parameters<typeof SseClient.open>[2]]> = [
      [401, 'unauthorized', { token: null }],
      [401, 'unauthorized', { token: other.token }],
      [400, 'invalid_request', { query: 'after=-1' }],
      [400, 'invalid_request', { query: 'after=1e3' }],
      [400, 'invalid_request', { lastEventId: 'evt_abc' }],
    ];
    for (const [status, code, options] of cases) {
      const res = await SseClient.open(base(), address, options);
      assert.equal(res.status, status, JSON.stringify(options));
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.equal(JSON.parse(await res.body).error.code, code);
      if (status === 401) assert.match(String(res.headers['www-authenticate']), /^Bearer/);
    }
    const missing = await SseClient.open(base(), { ...address, id: 'addr_doesnotexist00000000' });
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(await missing.body).error.code, 'address_not_found');
    assert.equal(server().roost.waiters.subscribed, 0);
  });

  it('32 concurrent streams (the per-address cap) all receive a delivery, and leaving frees each one', async () => {
    const address = await createAddress(base());
    const streams = await Promise.all(range(1, 32).map(() => SseClient.open(base(), address)));
    assert.equal(server().roost.waiters.subscribed, 32);
    await deliver(address.inbox, { data: 'to everyone' });
    for (const stream of streams) {
      const [message] = await stream.waitFor(1);
      assert.equal(JSON.parse(message.data!).data, 'to everyone');
    }
    for (const stream of streams) stream.close();
    await streamsFreed();
  });

  it('OpenAPI documents the stream as text/event-stream', async () => {
    const doc = (await request(base(), 'GET', '/api/v1/openapi.json')).body;
    const operation = doc.paths['/api/v1/addresses/{addressId}/events/stream'].get;
    assert.ok(operation.responses['200'].content['text/event-stream']);
    assert.ok(operation.parameters.some((p: any) => p.in === 'query' && p.name === 'after'));
    assert.ok(operation.parameters.some((p: any) => p.in === 'header' && p.name === 'last-event-id'));
  });
});

// The service's clock runs ahead of real time on demand, so expiry comes within a moment.
let offsetMs = 0;
await forEachEngine(
  'event stream at expiry',
  (server) => {
    it('expiry sends `event: gone` at expiresAt and ends the stream', async () => {
      offsetMs = 0;
      const address = await createAddress(server().url, { expires_in_seconds: 60 });
      offsetMs = 59_000; // expiresAt is now about a second away
      const stream = await SseClient.open(server().url, address);
      assert.equal(stream.status, 200);
      await deliver(address.inbox, { data: 'just in time' });
      const messages = await stream.waitFor(2);
      assert.deepEqual(
        messages.map((m) => m.event),
        [undefined, 'gone'],
      );
      await stream.ended;
      await eventually(() => server().roost.waiters.subscribed === 0, 'the stream unsubscribed');
    });
  },
  { clock: () => Date.now() + offsetMs },
);

describe('event stream on shutdown', () => {
  for (const engine of ENGINES) {
    it(`ends open streams when the server shuts down [${engine}]`, async (t) => {
      const skip = await engineSkipReason(engine);
      if (skip) return t.skip(skip);
      const own = await startTestServer(engine);
      try {
        const address = await createAddress(own.url);
        const stream = await SseClient.open(own.url, address);
        assert.equal(stream.status, 200);
        await own.close();
        await stream.ended;
        assert.equal(
          stream.messages.some((m) => m.event === 'gone'),
          false,
          'shutdown is not `gone`: clients reconnect',
        );
      } finally {
        await own.close();
      }
    });
  }
});
