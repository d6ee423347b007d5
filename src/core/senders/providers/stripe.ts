// Stripe (https://docs.stripe.com/webhooks#verify-manually): `Stripe-Signature: t=<unix>,v1=<hex>…`
// is HMAC-SHA256(endpoint secret `whsec_…`, `<t>.<body>`); each `v1` may be the one, `t` is held
// to the tolerance. Type: `stripe.` + body `type` (stripe.payment_intent.succeeded); key: body `id` (evt_…).
import type { SenderProvider, SenderRequest } from '../provider.js';
import {
  decodeHex,
  deliveryKey,
  eventType,
  header,
  hmac,
  isFresh,
  isRead,
  matchingSecret,
  member,
  NOT_ALLOWED,
  parseJson,
  unixSeconds,
  unverified,
  verified,
} from './common.js';

interface StripeSignature {
  timestamp: number;
  signatures: Buffer[];
}

/** `t=…,v1=…,v1=…,v0=…` read as Stripe's libraries read it; undefined without a `t` or a `v1`. */
function parseSignatureHeader(value: string | undefined): StripeSignature | undefined {
  if (value === undefined) return undefined;
  let timestamp: number | undefined;
  const signatures: Buffer[] = [];
  for (const item of value.split(',')) {
    const equals = item.indexOf('=');
    if (equals < 0) continue;
    const name = item.slice(0, equals).trim();
    const content = item.slice(equals + 1).trim();
    if (name === 't') timestamp = unixSeconds(content);
    else if (name === 'v1') {
      const signature = decodeHex(content);
      if (signature) signatures.push(signature);
    }
  }
  return timestamp === undefined || signatures.length === 0 ? undefined : { timestamp, signatures };
}

function eventFields(request: SenderRequest) {
  const body = parseJson(request.body);
  // The event id is inside the signed body.
  return {
    type: eventType('stripe', member(body, 'type')),
    idempotencyKey: deliveryKey(member(body, 'id')),
    keySigned: true,
  };
}

export const stripeProvider: SenderProvider = {
  name: 'stripe',
  verify(request, settings, nowMs) {
    if (isRead(request)) return NOT_ALLOWED;
    const fields = eventFields(request);
    const signed = parseSignatureHeader(header(request, 'stripe-signature'));
    if (!signed) return unverified('missing_signature', fields);
    const prefix = `${signed.timestamp}.`;
    const index = matchingSecret(settings.secrets, signed.signatures, (secret) =>
      hmac('sha256', secret, prefix, request.body),
    );
    if (index < 0) return unverified('mismatch', fields);
    if (!isFresh(signed.timestamp, nowMs, settings.toleranceSeconds)) return unverified('stale_timestamp', fields);
    return verified(fields);
  },
};
