// The sender of an address, with its read token (docs/api.md §3.2): whose signatures its
// inbox verifies and with which secrets. The secrets go in; only their count comes out.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { PutSenderSchema, SenderResponseSchema, type PutSender } from '../../contract/sender-schemas.js';
import { decodeJsonBody } from '../body.js';
import { AddressParamsSchema } from './addresses.js';
import { bearerSecurity, errorResponses, requestToken } from './common.js';

type AddressParams = { Params: { addressId: string } };

export async function senderRoutes(app: FastifyInstance): Promise<void> {
  const { service } = app.roost;

  app.put<AddressParams & { Body: PutSender }>('/api/v1/addresses/:addressId/sender', {
    schema: {
      operationId: 'putSender',
      summary: 'Set the sender whose signatures the inbox verifies',
      description:
        "From now on every delivery to the inbox is captured as sent, verified with the provider's scheme over its exact bytes, " +
        "typed and keyed in the provider's terms, and refused (401 signature_invalid) when it does not verify and `enforce` is true; " +
        "the provider's URL handshakes are answered. Replaces any sender set before. The secrets are stored encrypted and never returned.",
      security: bearerSecurity,
      params: AddressParamsSchema,
      body: PutSenderSchema,
      response: { 200: SenderResponseSchema, ...errorResponses(400, 401, 403, 404, 415) },
    },
    preValidation: async (request) => {
      request.body = decodeJsonBody(request, { optional: false }) as PutSender;
    },
    handler: async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return service.putSender(request.params.addressId, requestToken(request), request.body);
    },
  });

  app.get<AddressParams>('/api/v1/addresses/:addressId/sender', {
    schema: {
      operationId: 'getSender',
      summary: 'Show the sender (never its secrets)',
      description:
        'The provider, whether it enforces, its tolerance and how many secrets are set (404 sender_not_found when none is).',
      security: bearerSecurity,
      params: AddressParamsSchema,
      response: { 200: SenderResponseSchema, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => service.getSender(request.params.addressId, requestToken(request)),
  });

  app.delete<AddressParams>('/api/v1/addresses/:addressId/sender', {
    schema: {
      operationId: 'clearSender',
      summary: 'Remove the sender',
      description: 'The inbox goes back to storing deliveries as they come, unverified.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      response: { 204: Type.Null({ description: 'Removed.' }), ...errorResponses(401, 403, 404) },
    },
    handler: async (request, reply) => {
      await service.clearSender(request.params.addressId, requestToken(request));
      return reply.code(204).send();
    },
  });
}
