// Callbacks with the address's bearer token (docs/api.md §3.6): POST …/callbacks (create,
// idempotent on key), GET …/callbacks (list, wait for any or all), GET …/callbacks/{id}
// (one, wait for it), DELETE …/callbacks/{id} (cancel). The callback URL itself is
// callback-url.ts.
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import {
  CallbackListSchema,
  CallbackResponseSchema,
  CallbackStatusSchema,
  CallbackWaitResponseSchema,
  CreateCallbackSchema,
} from '../../contract/callback-schemas.js';
import { CALLBACK_LIMITS, type CallbackSelection, type CreateCallbackInput } from '../../core/callbacks.js';
import { errors } from '../../core/errors.js';
import { WAIT_MAX_SECONDS } from '../../core/limits.js';
import { decodeJsonBody } from '../body.js';
import { AddressParamsSchema } from './addresses.js';
import { bearerSecurity, clientGone, errorResponses, requestToken } from './common.js';

const CallbackParamsSchema = Type.Object({
  addressId: Type.String({ description: 'The address id (addr_…).' }),
  callbackId: Type.String({ description: 'The callback id (cb_…).' }),
});

const WaitQuery = Type.Optional(
  Type.Integer({ minimum: 0, maximum: WAIT_MAX_SECONDS, description: `Seconds to hold, 0–${WAIT_MAX_SECONDS}.` }),
);

const OneQuerySchema = Type.Object({
  wait: WaitQuery,
  include: Type.Optional(Type.Literal('event', { description: 'include=event adds the whole completing event.' })),
});

const ListQuerySchema = Type.Object({
  ids: Type.Optional(Type.String({ description: 'Comma-separated callback ids.' })),
  key: Type.Optional(Type.String({ maxLength: CALLBACK_LIMITS.key })),
  key_prefix: Type.Optional(Type.String({ minLength: 1, maxLength: CALLBACK_LIMITS.key })),
  status: Type.Optional(CallbackStatusSchema),
  wait: WaitQuery,
  mode: Type.Optional(
    Type.Union([Type.Literal('any'), Type.Literal('all')], {
      description: 'With wait: hold until any (default) or all of the selected callbacks have left `waiting`.',
    }),
  ),
});

type CallbackParams = Static<typeof CallbackParamsSchema>;

export async function callbackRoutes(app: FastifyInstance): Promise<void> {
  const { callbacks } = app.roost;

  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('Cache-Control', 'no-store');
    done();
  });

  app.post<{ Params: { addressId: string }; Body: CreateCallbackInput }>('/api/v1/addresses/:addressId/callbacks', {
    schema: {
      operationId: 'createCallback',
      summary: 'Create a one-shot callback URL (idempotent on key)',
      description:
        'Returns a secret URL that completes the callback when a delivery matching `complete_when` (by default the first) is posted to it. ' +
        'Every delivery is also an event of the queue (type callback.delivery, source callback, metadata.callback_id and callback_key). ' +
        'With the same `key` again, the existing callback is returned (200). 409 callback_limit past ROOST_MAX_CALLBACKS waiting callbacks.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      body: CreateCallbackSchema,
      response: {
        200: CallbackResponseSchema,
        201: CallbackResponseSchema,
        ...errorResponses(400, 401, 403, 404, 409, 415),
      },
    },
    preValidation: async (request) => {
      const body = decodeJsonBody(request, { optional: true });
      request.body = (body === undefined ? {} : body) as CreateCallbackInput;
    },
    handler: async (request, reply) => {
      const result = await callbacks.create(request.params.addressId, requestToken(request), request.body);
      reply.code(result.status);
      return result.body;
    },
  });

  app.get<{ Params: { addressId: string }; Querystring: Static<typeof ListQuerySchema> }>(
    '/api/v1/addresses/:addressId/callbacks',
    {
      schema: {
        operationId: 'listCallbacks',
        summary: 'List callbacks, optionally waiting for any or all of them',
        description:
          'Oldest first, at most 1,000: those named by `ids`, `key`, `key_prefix` and `status`. ' +
          'With wait > 0 the request is held until any (mode=any, the default) or all (mode=all) of the selected callbacks have left `waiting` (completed, expired or cancelled), or the wait ends.',
        security: bearerSecurity,
        params: AddressParamsSchema,
        querystring: ListQuerySchema,
        response: { 200: CallbackListSchema, ...errorResponses(400, 401, 404, 429) },
      },
      handler: async (request, reply) => {
        const { ids, key, key_prefix, status, wait, mode } = request.query;
        const selection: CallbackSelection = { key, key_prefix, status };
        if (ids !== undefined) {
          selection.ids = ids.split(',').filter((id) => id !== '');
          if (selection.ids.length === 0)
            throw errors.invalidRequest({
              message: 'Invalid query parameter "ids": name callback ids, comma-separated.',
            });
        }
        return callbacks.list(request.params.addressId, requestToken(request), selection, {
          wait,
          mode,
          signal: clientGone(reply),
          client: request.ip,
        });
      },
    },
  );

  app.get<{ Params: CallbackParams; Querystring: Static<typeof OneQuerySchema> }>(
    '/api/v1/addresses/:addressId/callbacks/:callbackId',
    {
      schema: {
        operationId: 'getCallback',
        summary: 'Read a callback, optionally waiting for it',
        description:
          "With wait > 0 the request is held until the callback leaves `waiting`. `body` is the completing delivery's parsed body (null until then, or once the event is gone).",
        security: bearerSecurity,
        params: CallbackParamsSchema,
        querystring: OneQuerySchema,
        response: { 200: CallbackWaitResponseSchema, ...errorResponses(400, 401, 404, 429) },
      },
      handler: async (request, reply) =>
        callbacks.get(request.params.addressId, requestToken(request), request.params.callbackId, {
          wait: request.query.wait,
          includeEvent: request.query.include === 'event',
          signal: clientGone(reply),
          client: request.ip,
        }),
    },
  );

  app.delete<{ Params: CallbackParams }>('/api/v1/addresses/:addressId/callbacks/:callbackId', {
    schema: {
      operationId: 'cancelCallback',
      summary: 'Cancel a callback: its URL answers 410 from now on',
      description:
        'A waiting (or completed) callback becomes `cancelled`: its URL answers 410 and waits on it answer. Its events stay in the queue.',
      security: bearerSecurity,
      params: CallbackParamsSchema,
      response: { 200: CallbackResponseSchema, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) =>
      callbacks.cancel(request.params.addressId, requestToken(request), request.params.callbackId),
  });
}
