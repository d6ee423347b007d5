// POST /api/v1/inbox/{addressId}/{secret}: the write-only inbox that remote services call.
// A CreateEvent JSON body (docs/api.md §3), or with ?raw=1 any body as sent (§3.1); with a
// sender set, every request as sent, verified with the provider's scheme (§3.2).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ServiceError, errors } from '../../core/errors.js';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../../core/limits.js';
import { deliveryJson } from '../../core/wire.js';
import type { DeliveryInput, InboxAdmission, RoostService } from '../../core/service.js';
import { CreateEventSchema, EventDeliveryResponseSchema } from '../../contract/schemas.js';
import { validationMessage } from '../errors.js';
import { decodeJsonBody, rawBody } from '../body.js';
import {
  RAW_EVENT_TYPE,
  captureRequest,
  senderCaptureType,
  headerFilter,
  rawCaptureType,
  wantsRaw,
  type RawQuery,
} from '../raw-capture.js';
import { errorResponses, noSecurity } from './common.js';
import { HandshakeResponseSchema, senderAnswer, senderRequestOf } from './sender-inbox.js';

// Raw values are checked in the handler, after the inbox (so a wrong URL answers 404
// whatever is sent); the schema only documents them.
const InboxQuerySchema = Type.Object({
  raw: Type.Optional(
    Type.String({
      enum: ['1', 'true'],
      description:
        'Raw capture (for webhook senders that post their own payloads): store the request as sent, any Content-Type. ' +
        'data = { content_type, headers, body, body_base64 }; body_base64 holds the exact bytes for signature checks.',
    }),
  ),
  type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: `With raw=1: the event type (default ${RAW_EVENT_TYPE}).`,
    }),
  ),
});

/** Bodies that could not be decoded, answered only once the inbox URL proved valid. */
const undecodable = new WeakMap<FastifyRequest, ServiceError>();
/**
 * The exact bytes of a body decoded as JSON, which an inbox with a sender verifies and keeps
 * (docs/api.md §3.2): a request decoration, declared up front, so that keeping them costs a
 * field write and no change of the request's shape.
 */
type WithBytes = FastifyRequest & { inboxBytes: Buffer | null };

const InboxParamsSchema = Type.Object({
  addressId: Type.String({ description: 'The address id (addr_…).' }),
  secret: Type.String({ description: 'The ingress secret (roost_ingress_…) from inbox_url.' }),
});
type InboxParams = { addressId: string; secret: string };
/** The address an inbox URL opens, as the service hands it over. */
type InboxAddress = Awaited<ReturnType<RoostService['authorizeInbox']>>;

/**
 * What a sender with a payload of its own shape should do instead (docs/api.md §3), added to
 * the refusals it meets: an unknown field, a body that is not a JSON object, bytes that are
 * not JSON, a Content-Type that is not JSON. Said only once the inbox URL proved valid.
 */
export const OWN_PAYLOAD_HINT =
  'To deliver a payload of your own shape, put it in "data" ({"data": {...}}), ' +
  'or POST it to this inbox URL with ?raw=1, which stores any body exactly as sent.';

const withHint = (error: ServiceError) => error.withSuffix(OWN_PAYLOAD_HINT);

/** Validation failures about the body's shape as a whole (not a bad value in a known field). */
function isShapeError(error: { validation?: Array<{ keyword?: string; instancePath?: string }> }): boolean {
  const first = error.validation?.[0];
  return first?.keyword === 'additionalProperties' || (first?.keyword === 'type' && !first.instancePath);
}

/** The Idempotency-Key header of a plain delivery (checked by the service). */
function idempotencyHeader(request: FastifyRequest): string | undefined {
  const header = request.headers['idempotency-key'];
  return typeof header === 'string' ? header : undefined;
}

export async function inboxRoutes(app: FastifyInstance): Promise<void> {
  const { service, config } = app.roost;
  app.decorateRequest('inboxBytes', null);
  const droppedHeader = headerFilter(config.rawDropHeaders);

  app.post<{ Params: { addressId: string; secret: string }; Querystring: RawQuery; Body: DeliveryInput }>(
    '/api/v1/inbox/:addressId/:secret',
    {
      schema: {
        operationId: 'deliverEvent',
        summary: 'Deliver an event (the secret in the path is the only credential)',
        security: noSecurity,
        description:
          'Body: CreateEvent. 202 when queued (durable before the answer), 200 with duplicate=true for a repeated Idempotency-Key or dedupe_key. ' +
          `With ?raw=1 the body may be anything (JSON, a form, text, bytes): it is stored as sent in an event of type ${RAW_EVENT_TYPE} ` +
          '(or ?type=), with the request headers minus Authorization, Cookie, hop-by-hop ones and credential-like ones (ROOST_RAW_DROP_HEADERS). ' +
          "With a sender set (PUT …/sender) every delivery is captured so, verified with the provider's scheme (401 signature_invalid when it fails and the sender enforces), " +
          "typed in the provider's terms and keyed so that retries and replays of the same signed bytes are duplicates, " +
          'and its URL handshakes (Slack, Zoom, Twitch…) answered as the provider expects, storing nothing whatever body or query rides along; ?raw= is ignored.',
        params: InboxParamsSchema,
        querystring: InboxQuerySchema,
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
              pattern: '^[\\x20-\\x7e]+$',
              description:
                'Deduplicates retried deliveries within this return address: 1–1,024 visible ASCII characters or spaces.',
            }),
          ),
        }),
        body: CreateEventSchema,
        response: {
          200: EventDeliveryResponseSchema,
          202: EventDeliveryResponseSchema,
          ...errorResponses(400, 401, 404, 413, 415, 429, 503),
        },
      },
      // The inbox is checked before the body's content, so that a wrong URL answers 404
      // whatever is sent; validation errors are therefore attached, not thrown.
      attachValidation: true,
      // A callback hook (not async): one promise fewer on the hottest route.
      preValidation: (request, _reply, done) => {
        // Raw capture keeps the bytes as they came (docs/api.md §3.1): no JSON decoding.
        if (wantsRaw(request.query)) return done();
        (request as WithBytes).inboxBytes = request.body as Buffer;
        try {
          request.body = decodeJsonBody(request, { optional: false }) as DeliveryInput;
        } catch (error) {
          // Like validation errors, undecodable bodies (400, 415) wait for the inbox check.
          if (!(error instanceof ServiceError)) return done(error as Error);
          undecodable.set(request, error);
          request.body = {};
        }
        done();
      },
      handler: async (request, reply) => {
        const { addressId, secret } = request.params;
        const { address, admittedBy } = await service.admitToInbox(addressId, secret);
        if (!admittedBy) return answer(request, reply, address);
        try {
          return await answer(request, reply, address, admittedBy);
        } catch (error) {
          // Admitted on the address as this instance read it lately (docs/scale-out.md): a
          // refusal is answered as the address stands now, read afresh — but a full queue,
          // which the append decided with the address as it stands, and an unavailable
          // database, which is not asked again.
          if (!(error instanceof ServiceError) || error.status >= 500 || error.code === 'queue_full') throw error;
          return answer(request, reply, await service.authorizeInbox(addressId, secret));
        }
      },
    },
  );

  /** A POST to an inbox that opened: exactly one of the sender's, raw and JSON paths answers it. */
  async function answer(
    request: FastifyRequest<{ Querystring: RawQuery; Body: DeliveryInput }>,
    reply: FastifyReply,
    address: InboxAddress,
    admittedBy?: InboxAdmission['admittedBy'],
  ) {
    // The sender's path, the raw path and the JSON path are alternatives: exactly one of
    // them answers, by the value returned here, and none goes on after another.
    if (address.hasSender) {
      const kept = Buffer.isBuffer(request.body) ? request.body : (request as WithBytes).inboxBytes;
      const bytes = Buffer.isBuffer(kept) ? kept : Buffer.alloc(0);
      const outcome = await receiveFromSender(request, address, bytes);
      if (outcome.kind !== 'no_sender') return senderAnswer(request, reply, outcome);
    }
    const input = plainDelivery(request);
    const result = await service.deliver(address, input, idempotencyHeader(request), 'http', false, admittedBy);
    // Written as text from the stored event, as pages are: its data goes out as stored.
    reply.code(result.status).type('application/json; charset=utf-8');
    return deliveryJson(result);
  }

  /** An inbox without a sender: raw capture (?raw=1, §3.1) or a CreateEvent body (§3). */
  function plainDelivery(request: FastifyRequest<{ Querystring: RawQuery; Body: DeliveryInput }>): DeliveryInput {
    const decodeError = undecodable.get(request);
    if (decodeError) throw withHint(decodeError);
    const rawType = rawCaptureType(request.query);
    if (rawType !== undefined) return captureRequest(request, rawBody(request), rawType, droppedHeader);
    if (request.validationError) {
      const error = request.validationError as Error & { validation?: []; validationContext?: string };
      const refusal = errors.invalidRequest({
        message: validationMessage(error.validation ?? [], error.validationContext),
      });
      throw isShapeError(error) ? withHint(refusal) : refusal;
    }
    return request.body;
  }

  /** The request handed to the core's sender policy (docs/api.md §3.2); it decides and stores. */
  const receiveFromSender = (request: FastifyRequest, address: InboxAddress, bytes: Buffer) =>
    service.receiveFromSender(address, senderRequestOf(request, bytes, config.baseUrl), (type, body) =>
      captureRequest(request, body, type ?? senderCaptureType(request.query as RawQuery), droppedHeader),
    );

  // GET answers only a sender's URL handshake (Meta, Microsoft Graph, Dropbox…); a wrong
  // inbox URL is the same 404 as for POST, and an inbox without a sender answers 405.
  app.get<{ Params: InboxParams }>('/api/v1/inbox/:addressId/:secret', {
    schema: {
      operationId: 'answerInboxHandshake',
      summary: "Answer a sender's URL handshake (with a sender set)",
      security: noSecurity,
      description:
        'Only for an inbox whose sender checks the URL with a GET (meta: hub.challenge, dropbox: challenge), answered 200 in text. ' +
        'Anything else answers 405 (microsoft_graph validates with a POST ?validationToken=…, answered by the POST operation); nothing is stored.',
      params: InboxParamsSchema,
      response: { 200: HandshakeResponseSchema, ...errorResponses(401, 404, 405, 503) },
    },
    handler: async (request, reply) => {
      const address = await service.authorizeInbox(request.params.addressId, request.params.secret);
      if (address.hasSender) {
        const outcome = await receiveFromSender(request, address, Buffer.alloc(0));
        if (outcome.kind !== 'no_sender') return senderAnswer(request, reply, outcome);
      }
      throw errors.inboxTakesPost();
    },
  });
}
