// GET …/events (cursor + long-poll) and POST …/events/{eventId}/ack.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { errors } from '../../core/errors.js';
import { WAITER_RETRY_AFTER_SECONDS } from '../../core/limits.js';
import { eventFilter } from '../../core/event-filter.js';
import { isLastPart, pageBody, pageJsonInParts } from '../../core/wire.js';
import { decodeJsonBody } from '../body.js';
import { dropWhenStalled } from '../stall-watch.js';
import {
  AckRunResponseSchema,
  AckRunSchema,
  EventPageSchema,
  EventResponseSchema,
  ListEventsQuerySchema,
  type AckRun,
  type ListEventsQuery,
} from '../../contract/schemas.js';
import { AddressParamsSchema } from './addresses.js';
import { bearerSecurity, clientGone, errorResponses, requestToken } from './common.js';

const QUERY_INTEGERS = ['after', 'limit', 'wait'] as const;
/** docs/api.md §4: unacked=1 (or true) and unacked=0 (or false), as the validator's booleans. */
const QUERY_FLAGS = new Map([
  ['1', 'true'],
  ['true', 'true'],
  ['0', 'false'],
  ['false', 'false'],
]);

/** What a page's writer buffers ahead of the socket: past it, it waits for the client to read. */
const PAGE_CHUNK_BYTES = 64 * 1024;
/** A page is read from storage in parts of at most this many stored bytes (one event at least). */
const PAGE_PART_BYTES = 256 * 1024;

export async function eventRoutes(app: FastifyInstance): Promise<void> {
  const { service, waiters, metrics, config } = app.roost;

  // Event reads carry what outside senders wrote: never sniffed as another type, never cached.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('X-Content-Type-Options', 'nosniff').header('Cache-Control', 'no-store');
    done();
  });

  app.get<{ Params: { addressId: string }; Querystring: Required<ListEventsQuery> }>(
    '/api/v1/addresses/:addressId/events',
    {
      schema: {
        operationId: 'listEvents',
        summary: 'Read the queue by cursor, optionally long-polling',
        description:
          'Events with sequence > after, ascending: at most `limit`, and a page stops before the event that would take it past the page byte bound (ROOST_MAX_PAGE_BYTES of stored data, 4 MiB by default), though it always holds at least one event; `has_more` is true when events were left for the next page. ' +
          'With wait > 0 and nothing past `after`, the request is held until an event is committed or `wait` seconds pass; a held poll counts against the caps on waiters per address and per client, and a page being written against the client cap until it has been read (429 too_many_waiters). Acknowledged events stay in pages. ' +
          'With unacked=1 only events without acknowledged_at are returned (and waited for); `latest_sequence` tells a cursor past the end of the queue from a quiet queue. ' +
          'With filters (type, source, callback, data_contains, body_contains) only matching events are returned, and a long poll sleeps through the others; `next_cursor` moves past what was scanned, so a filtered cursor belongs to that filter: to resume everything, use unacked=1 or your unfiltered cursor. ' +
          'A read scans at most ROOST_FILTER_SCAN_EVENTS events (500 by default); when that stops a page, `has_more` and `scan_limited` are true.',
        security: bearerSecurity,
        params: AddressParamsSchema,
        querystring: ListEventsQuerySchema,
        response: { 200: EventPageSchema, ...errorResponses(400, 401, 404, 429) },
      },
      // docs/api.md §4: decimal digits only — no sign, fraction, exponent, blank or repeat —
      // checked on the raw text, before the validator coerces it to a number.
      preValidation: async (request) => {
        const query = request.query as Record<string, unknown>;
        for (const name of QUERY_INTEGERS) {
          const value = query[name];
          if (value !== undefined && (typeof value !== 'string' || !/^\d{1,16}$/.test(value))) {
            throw errors.invalidRequest({
              message: `Invalid query parameter "${name}": it must be a non-negative whole number written in decimal digits.`,
            });
          }
        }
        const flag = query.unacked;
        if (flag !== undefined) {
          const value = typeof flag === 'string' ? QUERY_FLAGS.get(flag) : undefined;
          if (value === undefined)
            throw errors.invalidRequest({
              message:
                'Invalid query parameter "unacked": use unacked=1 (or true) for unacknowledged events only, or unacked=0 (or false) for all.',
            });
          query.unacked = value;
        }
      },
      handler: async (request, reply) => {
        const { after, limit, wait, unacked } = request.query;
        const { addressId } = request.params;
        const filter = eventFilter(request.query, true);
        const page = await service.listEvents(
          addressId,
          requestToken(request),
          // A filtered page is read at once: each part would be a scan of its own.
          { after, limit, wait, unacked, filter, partBytes: filter ? undefined : PAGE_PART_BYTES },
          clientGone(reply),
          request.ip,
        );
        // Written here rather than by the schema's serialiser: stored data goes out as stored;
        // a page larger than its first part goes event by event as the client takes it
        // (backpressure), read in parts as the writer gets to them. Until the client has read
        // it the answer takes a slot of the client's waiter cap, and a client that reads
        // nothing is dropped.
        const release = waiters.admitClient(request.ip);
        if (!release) {
          metrics.waitersRefused.inc({ limit: 'client' });
          throw errors.tooManyWaiters({
            scope: 'client',
            limit: config.maxWaitersPerIp,
            retryAfterSeconds: WAITER_RETRY_AFTER_SECONDS,
          });
        }
        reply.raw.once('close', release);
        dropWhenStalled(reply.raw, config.slowReaderTimeoutMs, () => {
          metrics.slowReadersDropped.inc({ kind: 'page' });
          request.log.info('events page dropped: its reader took nothing for the slow-reader timeout');
        });
        reply.type('application/json; charset=utf-8');
        // A page whose first part is all of it (most are) goes at once; a larger one streams,
        // piece by piece as the client takes them.
        if (isLastPart(page, page.records.length, limit)) return reply.send(pageBody(page));
        const pieces = pageJsonInParts(
          page,
          limit,
          config.maxPageBytes,
          PAGE_PART_BYTES,
          (from, left, maxBytes) => service.readPagePart(addressId, from, left, maxBytes, unacked, filter),
          PAGE_CHUNK_BYTES,
        );
        return reply.send(Readable.from(pieces, { objectMode: false, highWaterMark: PAGE_CHUNK_BYTES }));
      },
    },
  );

  app.post<{ Params: { addressId: string }; Body: AckRun }>('/api/v1/addresses/:addressId/events/ack', {
    schema: {
      operationId: 'ackEvents',
      summary: 'Acknowledge a run of events',
      description:
        'Sets acknowledged_at on every event of the address whose sequence is at most up_to_sequence and that has none (as MCP ack_event with up_to_sequence). ' +
        'Answers how many this call newly acknowledged; repeating is harmless (0).',
      security: bearerSecurity,
      params: AddressParamsSchema,
      body: AckRunSchema,
      response: { 200: AckRunResponseSchema, ...errorResponses(400, 401, 403, 404, 415) },
    },
    preValidation: async (request) => {
      request.body = decodeJsonBody(request, { optional: false }) as AckRun;
    },
    handler: async (request) =>
      service.ackUpTo(request.params.addressId, requestToken(request), request.body.up_to_sequence),
  });

  app.post<{ Params: { addressId: string; eventId: string } }>('/api/v1/addresses/:addressId/events/:eventId/ack', {
    schema: {
      operationId: 'ackEvent',
      summary: 'Acknowledge an event',
      description: 'Sets acknowledged_at. Acknowledging again returns the event with its first acknowledged_at.',
      security: bearerSecurity,
      params: Type.Object({
        addressId: Type.String({ description: 'The address id (addr_…).' }),
        eventId: Type.String({ description: 'The event id (evt_…).' }),
      }),
      response: { 200: EventResponseSchema, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) =>
      service.ackEvent(request.params.addressId, requestToken(request), request.params.eventId),
  });
}
