// The inbox of an address with a sender (docs/api.md §3.2): the request as sent is handed to
// the provider's scheme, and its verdict decides — a handshake answered as given, a request
// the provider never sends refused (405), a delivery that does not verify refused (401) or
// stored marked unverified, a verified one stored with the provider's type and delivery id.
import { hash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { RoostError, signatureInvalid } from '../../core/errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../core/limits.js';
import type { DeliveryInput } from '../../core/service.js';
import type { SenderRequest } from '../../core/senders/provider.js';
import type { AddressRecord } from '../../storage/storage.js';
import { isEventTypeName, type RawCaptureData } from '../raw-capture.js';

export const HandshakeResponseSchema = Type.String({
  description: "The provider's handshake answered as it documents it (the challenge echoed, as text or JSON).",
});

/**
 * The key an unverified delivery is stored under: apart from the verified ones, so that a
 * forged delivery naming a real delivery id cannot make the real one a duplicate.
 */
function unverifiedKey(key: string): string {
  const prefixed = `unverified:${key}`;
  return prefixed.length <= 255 ? prefixed : `unverified:${hash('sha256', key, 'hex')}`;
}

/**
 * Answers the request with the address's sender, or resolves undefined when the sender was
 * cleared since the address was read (the caller goes on as without one).
 */
export async function deliverFromSender(
  deps: FastifyInstance['roost'],
  request: FastifyRequest,
  reply: FastifyReply,
  address: AddressRecord,
  bytes: Buffer,
  capture: (type: string | undefined) => DeliveryInput,
): Promise<FastifyReply | undefined> {
  const { service, metrics, config } = deps;
  let sender;
  try {
    sender = await service.senderOf(address);
  } catch (error) {
    if (error instanceof RoostError && error.code === 'unavailable') {
      metrics.senderDeliveries.inc({ provider: 'unknown', outcome: 'unavailable' });
      // The address id, never a secret: the operator finds which sender to set again.
      request.log.error(
        { addressId: address.id },
        "an inbox's sender secrets cannot be opened with this server key (ROOST_SECRET_KEY changed?); deliveries get 503 until the key is restored or the sender is set again",
      );
    }
    throw error;
  }
  if (!sender) return undefined;
  const provider = sender.provider.name;

  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(request.headers))
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  const queryAt = request.url.indexOf('?');
  const senderRequest: SenderRequest = {
    method: request.method,
    headers,
    query: new URLSearchParams(queryAt < 0 ? '' : request.url.slice(queryAt + 1)),
    // What the sender called: the public origin (Twilio signs it), the path and query as received.
    url: `${config.baseUrl}${request.url}`,
    body: bytes,
  };
  const verdict = service.verifyDelivery(sender, senderRequest);

  switch (verdict.kind) {
    case 'handshake':
      metrics.senderDeliveries.inc({ provider, outcome: 'handshake' });
      // The answer echoes a value from the request: never cached, never sniffed as HTML.
      reply.header('Cache-Control', 'no-store').header('X-Content-Type-Options', 'nosniff');
      return reply.code(verdict.status).type(verdict.contentType).send(verdict.body);
    case 'not_allowed':
      metrics.senderDeliveries.inc({ provider, outcome: 'not_allowed' });
      reply.header('Allow', 'POST');
      throw new RoostError('method_not_allowed', 405, `This inbox takes ${provider} deliveries by POST.`);
  }
  // A read is only ever a handshake: one that failed (a wrong Meta verify token) is refused
  // whatever `enforce` says, so that no GET is stored as an event.
  if (!verdict.verified && (sender.enforce || request.method === 'GET' || request.method === 'HEAD')) {
    metrics.senderDeliveries.inc({ provider, outcome: 'rejected' });
    throw signatureInvalid(verdict.reason);
  }
  const input = capture(isEventTypeName(verdict.type) ? verdict.type : undefined);
  (input.data as RawCaptureData).verification = verdict.verified
    ? { provider, verified: true }
    : { provider, verified: false, reason: verdict.reason };
  const header = request.headers['idempotency-key'];
  const providerKey =
    verdict.idempotencyKey !== undefined && IDEMPOTENCY_KEY_PATTERN.test(verdict.idempotencyKey)
      ? verdict.idempotencyKey
      : undefined;
  const key = providerKey ?? (typeof header === 'string' ? header : undefined);
  metrics.senderDeliveries.inc({ provider, outcome: verdict.verified ? 'verified' : 'unverified' });
  const result = await service.deliver(
    address,
    input,
    key === undefined || verdict.verified ? key : unverifiedKey(key),
    'http',
  );
  return reply.code(result.status).send(result.body);
}
