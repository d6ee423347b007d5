// Pieces shared by the route modules: the Error response schemas for OpenAPI, and the
// bearer credential of a request.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken } from '../../core/wire.js';
import { ErrorSchema } from '../../contract/schemas.js';

/** Error responses, keyed by status, for a route's `response` schema. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorSchema> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorSchema]));
}

export const bearerSecurity = [{ bearer: [] as string[] }];
/** An operation anyone may call: no credential, or (inbox) a secret in the path. */
export const noSecurity: Array<Record<string, string[]>> = [];
/** The bearer token is optional: MCP tools may carry it as an argument instead. */
export const optionalBearerSecurity: Array<Record<string, string[]>> = [{ bearer: [] }, {}];

export const requestToken = (request: FastifyRequest) => bearerToken(request.headers.authorization);

/** An AbortSignal that fires when the client goes away before the answer is written. */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
