// GET /api/v1/addresses/{id}/events/stream: the queue as Server-Sent Events (docs/api.md §4.1).
// The service authenticates, subscribes to the long-poll's wake-ups and reads; this module
// frames what it reads as SSE, keeps the connection alive and frees everything when the
// stream ends (client gone, address gone, shutdown).
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { errors } from '../../core/errors.js';
import { eventFilter, type FilterParams } from '../../core/event-filter.js';
import { eventJsonParts } from '../../core/event-json.js';
import { isoTime } from '../../core/iso-time.js';
import { textSlices } from '../../core/wire.js';
import { LIMIT_MAX } from '../../core/limits.js';
import type { Metrics } from '../../core/metrics.js';
import type { EventStreamHandle } from '../../core/service.js';
import type { SharedRead } from '../../core/waiters.js';
import { EventFilterQuerySchema } from '../../contract/schemas.js';
import { dropWhenStalled } from '../stall-watch.js';
import { AddressParamsSchema } from './addresses.js';
import { bearerSecurity, clientGone, errorResponses, requestToken } from './common.js';

/** docs/api.md §4.1 asks for a comment at least every 15 s; 10 s leaves room for timer drift. */
export const HEARTBEAT_MS = 10_000;
/** The replay pages through storage in batches of the largest page size… */
const BATCH = LIMIT_MAX;
/**
 * …and of at most this many stored bytes (one event at least): what a stream holds while
 * its reader is slow is one batch and the message being written, not a page of 4 MiB.
 */
const BATCH_BYTES = 256 * 1024;
/** A message is written in slices of this many characters, each once the last has drained. */
const SLICE = 64 * 1024;
/**
 * Acknowledgements are asked for from this long before the latest one told: instances
 * stamp them by their own clocks and commit them in any order, so a later-committed ack
 * may carry an earlier time. Those already told in the window are not told again.
 */
const ACK_WINDOW_MS = 60_000;
/** setTimeout's ceiling (~24.8 days); a later expiry re-arms the timer. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const DIGITS = /^\d{1,16}$/;

const StreamQuerySchema = Type.Object({
  after: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 0,
      description: 'Start after this sequence (the Last-Event-ID header wins).',
    }),
  ),
  ...EventFilterQuerySchema.properties,
});

const StreamHeadersSchema = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ description: 'The id of the last message received; a reconnect resumes after it.' }),
  ),
});

/** One open stream: serialised reads from the cursor on, framed as SSE messages. */
class SseStream {
  private reading = false;
  /** True until a read finds nothing more past the cursor: the replay, or a backlog. */
  private behind = true;
  private again = false;
  private ended = false;
  /** The latest wake-up's shared read, not yet used (a later one supersedes it). */
  private shared?: Promise<SharedRead>;
  private heartbeat?: NodeJS.Timeout;
  private expiry?: NodeJS.Timeout;
  /** Acknowledgements at or after this time (ms) may not have been told yet. */
  private ackSince = 0;
  /** Events at or below the cursor acknowledged at or after ackSince, already told (sequence → time). */
  private readonly acksTold = new Map<number, number>();

  constructor(
    private readonly res: ServerResponse,
    private readonly handle: EventStreamHandle,
    private cursor: number,
    private readonly log: FastifyBaseLogger,
    private readonly metrics: Metrics,
    private readonly stallMs: number,
  ) {}

  /**
   * Where a shared read must start for this stream; undefined while it works through a
   * backlog on its own reads, so that one slow or lagging stream does not pull the read
   * shared by the others back to its cursor.
   */
  get sharedCursor(): number | undefined {
    return this.behind ? undefined : this.cursor;
  }

  /** From when a shared read must read acknowledgements for this stream. */
  get sharedAckSince(): number | undefined {
    return this.behind ? undefined : this.ackSince;
  }

  start(): void {
    this.res.once('close', () => this.end());
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-accel-buffering': 'no', // nginx and similar proxies would otherwise hold messages back
    });
    this.res.write(': stream open\n\n');
    // A stream with bytes still queued keeps its connection busy: no heartbeat is needed.
    this.heartbeat = setInterval(() => this.res.writableNeedDrain || this.res.write(': heartbeat\n\n'), HEARTBEAT_MS);
    dropWhenStalled(this.res, this.stallMs, () => {
      this.metrics.slowReadersDropped.inc({ kind: 'stream' });
      this.log.info('event stream dropped: its reader took nothing for the slow-reader timeout');
    });
    this.armExpiry();
    this.pump();
  }

  /**
   * Reads past the cursor and sends what it finds. A wake-up arriving during a read only
   * asks for one more read once this one is done: reads never overlap, so nothing is sent
   * twice or out of order.
   */
  pump(shared?: Promise<SharedRead>): void {
    if (this.ended) return;
    if (shared) this.shared = shared;
    // Shutdown (Waiters.closeAll): end now, even while a read or a slow client is pending.
    if (this.handle.closing) return this.end();
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void this.readUntilIdle();
  }

  private async readUntilIdle(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.sendPending();
      } while (this.again && !this.ended);
    } catch (error) {
      this.log.warn({ err: error }, 'event stream failed; closing it');
      this.end();
    } finally {
      // Cleared in the same tick as the last `again` check, so no wake-up slips between.
      this.reading = false;
    }
  }

  private async sendPending(): Promise<void> {
    if (this.handle.closing) return this.end(); // shutdown: clients reconnect with Last-Event-ID
    const pending = this.shared;
    this.shared = undefined;
    const shared = pending ? await pending : undefined;
    // Started after the commit that woke us, and from a cursor no later than ours.
    let page = shared ? this.handle.fromShared(shared, this.cursor, BATCH, BATCH_BYTES) : null;
    for (;;) {
      page ??= await this.handle.readAfter(this.cursor, BATCH, BATCH_BYTES);
      if (this.ended) return;
      if (page === 'gone') {
        // `data` is required for EventSource to dispatch the event at all.
        await this.send(`event: gone\ndata: ${JSON.stringify(errors.addressNotFound().toJSON())}\n\n`);
        return this.end();
      }
      if (page === 'revoked') {
        const error = errors.unauthorized({
          why: 'The bearer token was rotated or revoked while the stream was open.',
        });
        await this.send(`event: revoked\ndata: ${JSON.stringify(error.toJSON())}\n\n`);
        return this.end();
      }
      // One message at a time, each written once the last has drained (backpressure).
      for (const record of page.records) {
        // One line of JSON: stored data is JSON.stringify's output, which has no raw line break.
        const [head, data, tail] = eventJsonParts(record);
        await this.send(`id: ${record.sequence}\ndata: ${head}`);
        await this.send(data);
        await this.send(`${tail}\n\n`);
        if (this.ended) return;
        this.cursor = record.sequence;
        // The event carried its acknowledgement, if it had one: no `ack` message for it.
        if (record.acknowledgedAt !== null && record.acknowledgedAt >= this.ackSince)
          this.acksTold.set(record.sequence, record.acknowledgedAt);
      }
      // A filtered read moves past the events it scanned without a match (never sent).
      if (page.scannedTo !== undefined) this.cursor = Math.max(this.cursor, page.scannedTo);
      this.behind = page.hasMore;
      if (this.ended) return;
      if (!page.hasMore) return this.sendAcks(shared);
      page = null;
    }
  }

  /**
   * Tells the reader of acknowledgements of events it was sent (at or below the cursor)
   * since ackSince: an `ack` message each, without an id (they do not move the cursor).
   * From the wake-up's shared read when it has them, else read here. On a (re)connect
   * ackSince is 0, so a reader resuming with Last-Event-ID hears every acknowledgement of
   * the events it had been sent, including those made while it was away.
   */
  private async sendAcks(shared: SharedRead | undefined): Promise<void> {
    if (this.cursor === 0) return; // nothing sent yet, nothing to tell
    const acks =
      shared?.acks !== undefined && shared.ackSince !== undefined && shared.ackSince <= this.ackSince
        ? shared.acks
        : await this.handle.acksSince(this.ackSince, this.cursor);
    let latest = -Infinity;
    for (const ack of acks) {
      if (this.ended) return;
      if (ack.sequence > this.cursor || ack.acknowledgedAt < this.ackSince) continue;
      latest = Math.max(latest, ack.acknowledgedAt);
      if (this.acksTold.has(ack.sequence)) continue;
      this.acksTold.set(ack.sequence, ack.acknowledgedAt);
      const data = `{"id":${JSON.stringify(ack.id)},"sequence":${ack.sequence},"acknowledged_at":"${isoTime(ack.acknowledgedAt)}"}`;
      await this.send(`event: ack\ndata: ${data}\n\n`);
    }
    if (latest - ACK_WINDOW_MS > this.ackSince) {
      this.ackSince = latest - ACK_WINDOW_MS;
      for (const [sequence, at] of this.acksTold) if (at < this.ackSince) this.acksTold.delete(sequence);
    }
  }

  /**
   * Writes a message in slices, each once the client has taken the last (backpressure), so
   * that a slow reader holds at most one slice beyond the socket's buffer here.
   */
  private async send(message: string): Promise<void> {
    for (const slice of textSlices(message, SLICE)) {
      if (this.ended) return;
      if (!this.res.write(slice)) await this.drained();
    }
  }

  private drained(): Promise<void> {
    this.metrics.streamsStalled.inc();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        this.metrics.streamsStalled.dec();
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** The address ends the stream when it expires (docs/api.md §2: from expiresAt it is gone). */
  private armExpiry(): void {
    const remaining = this.handle.expiresInMs();
    if (remaining === null || this.ended) return;
    this.expiry = setTimeout(
      () => {
        this.expiry = undefined;
        const left = this.handle.expiresInMs();
        if (left !== null && left > 0)
          this.armExpiry(); // capped timer, or fired early
        else this.pump(); // the read finds the address gone
      },
      Math.min(Math.max(remaining, 0), MAX_TIMER_MS),
    );
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.expiry);
    this.handle.close();
    // A client that stopped reading would hold the connection (and a shutdown) open
    // until its buffered messages drain: cut it off; it resumes with Last-Event-ID.
    if (this.res.writableNeedDrain) this.res.destroy();
    else this.res.end();
  }
}

export async function streamRoutes(app: FastifyInstance): Promise<void> {
  const { service, metrics, config } = app.roost;

  app.get<{ Params: { addressId: string }; Querystring: { after: number } & FilterParams }>(
    '/api/v1/addresses/:addressId/events/stream',
    {
      schema: {
        operationId: 'streamEvents',
        summary: 'Follow the queue as Server-Sent Events',
        description:
          'Every event past `after` (or the Last-Event-ID header, which wins) is sent first, then each new one as it is committed. ' +
          'Each message is `id: {sequence}` and `data: {Event as JSON}`; a comment line comes at least every 15 s. ' +
          'When an event already sent is acknowledged, `event: ack` comes with `data: {"id","sequence","acknowledged_at"}` and no id; a connection that starts after a cursor first tells the acknowledgements of the events up to it. ' +
          'When the address is deleted or expires the server sends `event: gone` and closes. A reconnect with Last-Event-ID misses nothing and repeats nothing. ' +
          'With filters (type, source, callback, data_contains, body_contains, as on GET …/events) only matching events are sent; a reconnect with the same filters and Last-Event-ID resumes them.',
        security: bearerSecurity,
        params: AddressParamsSchema,
        querystring: StreamQuerySchema,
        headers: StreamHeadersSchema,
        response: {
          200: {
            description: 'A stream of events (text/event-stream).',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          ...errorResponses(400, 401, 404, 429),
        },
      },
      // Digits only, as on the events URL (docs/api.md §4), checked before coercion.
      preValidation: async (request) => {
        const after = (request.query as unknown as Record<string, unknown>).after;
        if (after !== undefined && (typeof after !== 'string' || !DIGITS.test(after))) {
          throw errors.invalidRequest({
            message:
              'Invalid query parameter "after": it must be a non-negative whole number written in decimal digits.',
          });
        }
        const lastEventId = request.headers['last-event-id'];
        if (
          lastEventId !== undefined &&
          lastEventId !== '' &&
          (typeof lastEventId !== 'string' || !DIGITS.test(lastEventId) || !Number.isSafeInteger(Number(lastEventId)))
        ) {
          throw errors.invalidRequest({
            message: 'Invalid Last-Event-ID header: it must be the id (a sequence number) of a message of this stream.',
          });
        }
      },
      handler: async (request, reply) => {
        const lastEventId = request.headers['last-event-id'];
        const cursor =
          typeof lastEventId === 'string' && lastEventId !== '' ? Number(lastEventId) : request.query.after;
        const filter = eventFilter(request.query, true);
        const left = clientGone(reply);
        // Wake-ups before the stream exists are covered by its first read (subscribed first).
        const opened: { stream?: SseStream } = {};
        const handle = await service.openStream(
          request.params.addressId,
          requestToken(request),
          () => opened.stream?.sharedCursor,
          (read) => opened.stream?.pump(read),
          request.ip,
          () => opened.stream?.sharedAckSince,
          filter,
        );
        reply.hijack();
        if (left.aborted) {
          handle.close();
          reply.raw.destroy();
          return;
        }
        opened.stream = new SseStream(reply.raw, handle, cursor, request.log, metrics, config.slowReaderTimeoutMs);
        opened.stream.start();
      },
    },
  );
}
