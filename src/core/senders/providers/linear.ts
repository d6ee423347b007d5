// Linear (https://linear.app/developers/webhooks#securing-webhooks): `Linear-Signature: <hex>` is
// HMAC-SHA256(webhook signing secret, body); the signed body's `webhookTimestamp` (milliseconds)
// is held to the tolerance, as Linear's SDK does (the Linear-Timestamp header is not signed).
// Type: `linear.` + `type` + `.` + `action` (linear.Issue.create); key: `Linear-Delivery`.
import type { SenderProvider } from '../provider.js';
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
  unverified,
  verified,
} from './common.js';

export const linearProvider: SenderProvider = {
  name: 'linear',
  verify(request, settings, nowMs) {
    if (isRead(request)) return NOT_ALLOWED;
    const body = parseJson(request.body);
    const fields = {
      type: eventType('linear', member(body, 'type'), member(body, 'action')),
      idempotencyKey: deliveryKey(header(request, 'linear-delivery')),
    };
    const value = header(request, 'linear-signature');
    const signature = value === undefined ? undefined : decodeHex(value);
    if (!signature) return unverified('missing_signature', fields);
    const index = matchingSecret(settings.secrets, [signature], (secret) => hmac('sha256', secret, request.body));
    if (index < 0) return unverified('mismatch', fields);
    const timestamp = member(body, 'webhookTimestamp');
    if (typeof timestamp !== 'number' || !isFresh(timestamp / 1000, nowMs, settings.toleranceSeconds)) {
      return unverified('stale_timestamp', fields);
    }
    return verified(fields);
  },
};
