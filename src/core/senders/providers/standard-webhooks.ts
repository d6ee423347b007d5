// Standard Webhooks (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md),
// the Svix scheme: `webhook-signature: v1,<base64> …` (space-separated) is HMAC-SHA256(the base64
// secret after `whsec_`, `<webhook-id>.<webhook-timestamp>.<body>`), the timestamp held to the
// tolerance; Svix's `svix-id`/`svix-timestamp`/`svix-signature` are read first when present, as
// its SDK does. Type: the body's `type` as the sender names it (the spec's payload field, e.g.
// `invoice.paid`; senders on this scheme are many, so no prefix); key: `webhook-id`.
import type { SenderProvider, SenderRequest } from '../provider.js';
import {
  decodeBase64,
  deliveryKey,
  eventType,
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

const SECRET_PREFIX = 'whsec_';

/** A `webhook-*` header, or its `svix-*` twin when that is present. */
function signedHeader(request: SenderRequest, name: 'id' | 'timestamp' | 'signature'): string | undefined {
  return request.headers[`svix-${name}`] ?? request.headers[`webhook-${name}`];
}

/** The HMAC key a secret stands for: the bytes of its base64 after `whsec_`; undefined if none. */
function signingKey(secret: string): Buffer | undefined {
  const key = decodeBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  return key && key.length > 0 ? key : undefined;
}

/** The `v1` signatures of the header; other versions (`v1a`, asymmetric) are not this scheme's. */
function v1Signatures(value: string | undefined): Buffer[] {
  const signatures: Buffer[] = [];
  for (const entry of value?.split(' ') ?? []) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const signature = decodeBase64(entry.slice(comma + 1));
    if (signature) signatures.push(signature);
  }
  return signatures;
}

export const standardWebhooksProvider: SenderProvider = {
  name: 'standard_webhooks',
  verify(request, settings, nowMs) {
    if (isRead(request)) return NOT_ALLOWED;
    const id = signedHeader(request, 'id');
    const fields = {
      type: eventType(member(parseJson(request.body), 'type')),
      idempotencyKey: deliveryKey(id),
      // webhook-id is the first part of the signed content.
      keySigned: true,
    };
    const timestamp = unixSeconds(signedHeader(request, 'timestamp'));
    const signatures = v1Signatures(signedHeader(request, 'signature'));
    if (!id || timestamp === undefined || signatures.length === 0) return unverified('missing_signature', fields);
    const prefix = `${id}.${timestamp}.`;
    const index = matchingSecret(settings.secrets, signatures, (secret) => {
      const key = signingKey(secret);
      return key && hmac('sha256', key, prefix, request.body);
    });
    if (index < 0) return unverified('mismatch', fields);
    if (!isFresh(timestamp, nowMs, settings.toleranceSeconds)) return unverified('stale_timestamp', fields);
    return verified(fields);
  },
};
