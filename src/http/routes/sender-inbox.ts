// The inbox of an address with a sender (docs/api.md §3.2), on the HTTP side: the request as
// sent handed to the core's sender policy (service.receiveFromSender), and its outcome mapped
// to the one answer — a handshake as the provider documents it, an error, or the delivery.
// Nothing here decides what is verified, stored or keyed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { SenderOutcome } from '../../core/service.js';
import type { SenderRequest } from '../../core/senders/provider.js';
import type { EventDeliveryResponse } from '../../contract/schemas.js';

export const HandshakeResponseSchema = Type.String({
  description: "The provider's handshake answered as it documents it (the challenge echoed, as text or JSON).",
});

/** The request as the sender sent it, for its provider's scheme. */
export function senderRequestOf(request: FastifyRequest, bytes: Buffer, baseUrl: string): SenderRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(request.headers))
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  const queryAt = request.url.indexOf('?');
  return {
    method: request.method,
    headers,
    query: new URLSearchParams(queryAt < 0 ? '' : request.url.slice(queryAt + 1)),
    // What the sender called: the public origin (Twilio signs it), the path and query as received.
    url: `${baseUrl}${request.url}`,
    body: bytes,
  };
}

/**
 * The answer to a request the sender policy handled: the payload for the handler to return
 * (its one answer), or the refusal thrown. Never sends by itself.
 */
export function senderAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  outcome: Exclude<SenderOutcome, { kind: 'no_sender' }>,
): string | EventDeliveryResponse {
  switch (outcome.kind) {
    case 'handshake':
      // The answer echoes a value from the request: never cached, never sniffed as HTML.
      reply
        .code(outcome.status)
        .type(outcome.contentType)
        .header('Cache-Control', 'no-store')
        .header('X-Content-Type-Options', 'nosniff');
      return outcome.body;
    case 'refused':
      if (outcome.keyMismatch) {
        // The address id, never a secret: the operator finds which sender to set again.
        request.log.error(
          { addressId: (request.params as { addressId?: string }).addressId },
          "an inbox's sender secrets cannot be opened with this server key (ROOST_SECRET_KEY changed?); deliveries get 503 until the key is restored or the sender is set again",
        );
      }
      throw outcome.error;
    case 'delivered':
      reply.code(outcome.status);
      return outcome.body;
  }
}
