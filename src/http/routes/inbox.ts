// POST /api/v1/inbox/{addressId}/{secret}: the write-only inbox that remote services call.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { RoostError } from '../../core/errors.js';
import type { DeliveryInput } from '../../core/service.js';
import { CreateEventSchema, EventDeliveryResponseSchema } from '../../schemas.js';
import { validationMessage } from '../errors.js';
import { decodeJsonBody } from '../body.js';
import { errorResponses } from './common.js';

export async function inboxRoutes(app: FastifyInstance): Promise<void> {
  const { service } = app.roost;

  app.post<{ Params: { addressId: string; secret: string }; Body: DeliveryInput }>('/api/v1/inbox/:addressId/:secret', {
    schema: {
      summary: 'Deliver an event (the secret in the path is the only credential)',
      description:
        'Body: CreateEvent. 202 when queued (durable before the answer), 200 with duplicate=true for a repeated Idempotency-Key or dedupe_key.',
      params: Type.Object({
        addressId: Type.String({ description: 'The address id (addr_…).' }),
        secret: Type.String({ description: 'The ingress secret (roost_ingress_…) from inbox_url.' }),
      }),
      headers: Type.Object({
        'idempotency-key': Type.Optional(Type.String({ description: 'Deduplicates retried deliveries within this return address (1–255 visible ASCII characters).' })),
      }),
      body: CreateEventSchema,
      response: {
        200: EventDeliveryResponseSchema,
        202: EventDeliveryResponseSchema,
        ...errorResponses(400, 404, 413, 415, 429),
      },
    },
    // The inbox is checked before the body's content, so that a wrong URL answers 404
    // whatever is sent; validation errors are therefore attached, not thrown.
    attachValidation: true,
    preValidation: async (request) => {
      request.body = decodeJsonBody(request, { optional: false }) as DeliveryInput;
    },
    handler: async (request, reply) => {
      const address = await service.authorizeInbox(request.params.addressId, request.params.secret);
      if (request.validationError) {
        const error = request.validationError as Error & { validation?: []; validationContext?: string };
        throw new RoostError('invalid_request', 400, validationMessage(error.validation ?? [], error.validationContext));
      }
      const key = request.headers['idempotency-key'];
      const result = await service.deliver(address, request.body, typeof key === 'string' ? key : undefined, 'http');
      return reply.code(result.status).send(result.body);
    },
  });
}
