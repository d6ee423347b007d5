// Credentials of an address, with its read token: rotate the read token or the inbox secret,
// and create, list and revoke view tokens (read-only bearer tokens). docs/api.md §5.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  CreateViewTokenSchema,
  InboxSecretResponseSchema,
  ReadTokenResponseSchema,
  RotateInboxSecretSchema,
  RotateReadTokenSchema,
  ViewTokenCreatedSchema,
  ViewTokenListSchema,
  type CreateViewToken,
  type RotateInboxSecret,
  type RotateReadToken,
} from '../../contract/credential-schemas.js';
import { decodeJsonBody } from '../body.js';
import { AddressParamsSchema } from './addresses.js';
import { bearerSecurity, errorResponses, requestToken } from './common.js';

type AddressParams = { Params: { addressId: string } };

export async function credentialRoutes(app: FastifyInstance): Promise<void> {
  const { service } = app.roost;
  // An optional JSON body: none at all is the same as {}.
  const optionalBody = async (request: { body: unknown }) => {
    const body = decodeJsonBody(request as Parameters<typeof decodeJsonBody>[0], { optional: true });
    request.body = body === undefined ? {} : body;
  };

  app.post<AddressParams & { Body: RotateReadToken }>('/api/v1/addresses/:addressId/read-token', {
    schema: {
      operationId: 'rotateReadToken',
      summary: 'Rotate the read token',
      description:
        'Returns a new read token, shown once; the old one stops at once, and polls and streams it holds open end (401, `event: revoked`). ' +
        'View tokens keep working unless `revoke_view_tokens` is true: then every one of them is revoked in the same change, and what they hold open ends too.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      body: RotateReadTokenSchema,
      response: { 200: ReadTokenResponseSchema, ...errorResponses(400, 401, 403, 404, 415) },
    },
    preValidation: optionalBody,
    handler: async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      const { addressId } = request.params;
      return service.rotateReadToken(addressId, requestToken(request), request.body.revoke_view_tokens === true);
    },
  });

  app.post<AddressParams & { Body: RotateInboxSecret }>('/api/v1/addresses/:addressId/inbox-secret', {
    schema: {
      operationId: 'rotateInboxSecret',
      summary: 'Rotate the inbox secret',
      description:
        'Returns a new inbox URL. The old one keeps accepting deliveries for `grace_seconds`, then answers 404 like any wrong inbox URL.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      body: RotateInboxSecretSchema,
      response: { 200: InboxSecretResponseSchema, ...errorResponses(400, 401, 403, 404, 415) },
    },
    preValidation: optionalBody,
    handler: async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      const { addressId } = request.params;
      return service.rotateInboxSecret(addressId, requestToken(request), request.body.grace_seconds);
    },
  });

  app.post<AddressParams & { Body: CreateViewToken }>('/api/v1/addresses/:addressId/view-tokens', {
    schema: {
      operationId: 'createViewToken',
      summary: 'Create a view token',
      description:
        'A read-only bearer token (roost_view_…), shown once: it may read the address and its events (poll, stream) and nothing else.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      body: CreateViewTokenSchema,
      response: { 201: ViewTokenCreatedSchema, ...errorResponses(400, 401, 403, 404, 409, 415) },
    },
    preValidation: optionalBody,
    handler: async (request, reply) => {
      const created = await service.createViewToken(request.params.addressId, requestToken(request), request.body);
      reply.header('Cache-Control', 'no-store');
      return reply.code(201).send(created);
    },
  });

  app.get<AddressParams>('/api/v1/addresses/:addressId/view-tokens', {
    schema: {
      operationId: 'listViewTokens',
      summary: 'List the view tokens (never their secrets)',
      description: 'Each view token’s id, label and lifetime; the tokens themselves were shown once, at creation.',
      security: bearerSecurity,
      params: AddressParamsSchema,
      response: { 200: ViewTokenListSchema, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => service.listViewTokens(request.params.addressId, requestToken(request)),
  });

  app.delete<{ Params: { addressId: string; tokenId: string } }>('/api/v1/addresses/:addressId/view-tokens/:tokenId', {
    schema: {
      operationId: 'revokeViewToken',
      summary: 'Revoke a view token',
      description: 'It stops at once; polls and streams it holds open end (401, `event: revoked`).',
      security: bearerSecurity,
      params: Type.Object({
        addressId: Type.String({ description: 'The address id (addr_…).' }),
        tokenId: Type.String({ description: 'The view token id (vt_…).' }),
      }),
      response: { 204: Type.Null({ description: 'Revoked.' }), ...errorResponses(401, 403, 404) },
    },
    handler: async (request, reply) => {
      const { addressId, tokenId } = request.params;
      await service.revokeViewToken(addressId, requestToken(request), tokenId);
      return reply.code(204).send();
    },
  });
}
