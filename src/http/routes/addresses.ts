// POST /api/v1/addresses (create, rate-limited), GET, PATCH and DELETE /api/v1/addresses/{id}.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { errors } from '../../core/errors.js';
import {
  AddressResponseSchema,
  CreateAddressResponseSchema,
  CreateAddressSchema,
  type CreateAddress,
} from '../../contract/schemas.js';
import { UpdateAddressSchema, type UpdateAddress } from '../../contract/credential-schemas.js';
import { decodeJsonBody } from '../body.js';
import { clientKey } from '../client-ip.js';
import { bearerSecurity, errorResponses, noSecurity, requestToken } from './common.js';

export const AddressParamsSchema = Type.Object({
  addressId: Type.String({ description: 'The address id (addr_…).' }),
});

export async function addressRoutes(app: FastifyInstance): Promise<void> {
  const { service } = app.roost;

  app.post<{ Body: CreateAddress }>('/api/v1/addresses', {
    schema: {
      operationId: 'createAddress',
      summary: 'Create a return address (no authentication)',
      security: noSecurity,
      description: 'The body is optional. The read token in the response is shown once: store the whole response.',
      body: CreateAddressSchema,
      response: { 201: CreateAddressResponseSchema, ...errorResponses(400, 413, 415, 429) },
    },
    // Every create request takes a token, valid or not, before its body is even read (docs/api.md §9).
    onRequest: async (request, reply) => {
      const bucket = await service.takeCreateToken(clientKey(request.ip));
      reply.header('RateLimit-Limit', app.roost.config.createRate.limit);
      reply.header('RateLimit-Remaining', bucket.remaining);
      reply.header('RateLimit-Reset', Math.ceil(bucket.resetMs / 1000));
      if (!bucket.allowed) throw errors.rateLimited({ retryAfterMs: bucket.retryAfterMs });
    },
    preValidation: async (request) => {
      const body = decodeJsonBody(request, { optional: true });
      // No body at all is the same as {} (docs/api.md §2); an explicit null is not an object.
      request.body = (body === undefined ? {} : body) as CreateAddress;
    },
    handler: async (request, reply) => {
      const created = await service.createAddress(request.body);
      reply.header('Location', `/api/v1/addresses/${created.address.id}`);
      reply.header('Cache-Control', 'no-store');
      return reply.code(201).send(created);
    },
  });

  app.get<{ Params: { addressId: string } }>('/api/v1/addresses/:addressId', {
    schema: {
      operationId: 'getAddress',
      summary: 'Get a return address',
      description: 'The address as created or last updated; the credentials are never shown again.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      response: { 200: AddressResponseSchema, ...errorResponses(401, 404) },
    },
    handler: async (request) => service.getAddress(request.params.addressId, requestToken(request)),
  });

  app.patch<{ Params: { addressId: string }; Body: UpdateAddress }>('/api/v1/addresses/:addressId', {
    schema: {
      operationId: 'updateAddress',
      summary: 'Update a return address',
      description:
        'Any of name, task_id (null removes it) and expires_in_seconds (counted from now, with the same bounds and cap as at creation; null removes the lifetime where the service allows none). The email address and the credentials do not change.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      body: UpdateAddressSchema,
      response: { 200: AddressResponseSchema, ...errorResponses(400, 401, 403, 404, 415) },
    },
    preValidation: async (request) => {
      request.body = decodeJsonBody(request, { optional: false }) as UpdateAddress;
    },
    handler: async (request) => service.updateAddress(request.params.addressId, requestToken(request), request.body),
  });

  app.delete<{ Params: { addressId: string } }>('/api/v1/addresses/:addressId', {
    schema: {
      operationId: 'deleteAddress',
      summary: 'Delete a return address and its events',
      description: 'The read token and the inbox URL stop working at once.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      response: { 204: Type.Null({ description: 'Deleted.' }), ...errorResponses(401, 403, 404) },
    },
    handler: async (request, reply) => {
      await service.deleteAddress(request.params.addressId, requestToken(request));
      return reply.code(204).send();
    },
  });
}
