// Twitch EventSub (https://dev.twitch.tv/docs/eventsub/handling-webhook-events): `Twitch-Eventsub-
// Message-Signature: sha256=<hex>` is HMAC-SHA256(subscription secret, message id + timestamp +
// body), the RFC 3339 `Twitch-Eventsub-Message-Timestamp` held to the tolerance. Handshake: a
// verified `webhook_callback_verification` is answered 200 text/plain with the body's `challenge`.
// Type: `twitch.` + `Twitch-Eventsub-Subscription-Type` (twitch.channel.follow), `twitch.revocation`
// for a revocation; key: `Twitch-Eventsub-Message-Id`.
import type { SenderProvider, SenderRequest } from '../provider.js';
import {
  deliveryKey,
  eventType,
  handshakeRefused,
  header,
  hmac,
  isFresh,
  isRead,
  matchingSecret,
  member,
  NOT_ALLOWED,
  parseJson,
  prefixedHex,
  reflectable,
  textHandshake,
  unverified,
  verified,
} from './common.js';

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)$/i;

/** An RFC 3339 time (Twitch's has nanoseconds) in seconds, or undefined. */
function rfc3339Seconds(value: string | undefined): number | undefined {
  if (value === undefined || !RFC3339.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

function eventFields(request: SenderRequest, messageType: string | undefined) {
  const subscription = header(request, 'twitch-eventsub-subscription-type');
  return {
    type: messageType === 'revocation' ? 'twitch.revocation' : eventType('twitch', subscription),
    idempotencyKey: deliveryKey(header(request, 'twitch-eventsub-message-id')),
    // The message id is the first part of the signed message.
    keySigned: true,
  };
}

export const twitchProvider: SenderProvider = {
  name: 'twitch',
  verify(request, settings, nowMs) {
    if (isRead(request)) return NOT_ALLOWED;
    const messageType = header(request, 'twitch-eventsub-message-type');
    const fields = eventFields(request, messageType);
    const id = header(request, 'twitch-eventsub-message-id');
    const timestampText = header(request, 'twitch-eventsub-message-timestamp');
    const timestamp = rfc3339Seconds(timestampText);
    const signature = prefixedHex(header(request, 'twitch-eventsub-message-signature'), 'sha256=');
    if (!id || timestamp === undefined || !signature) return unverified('missing_signature', fields);
    const index = matchingSecret(settings.secrets, [signature], (secret) =>
      hmac('sha256', secret, id, timestampText!, request.body),
    );
    if (index < 0) return unverified('mismatch', fields);
    if (!isFresh(timestamp, nowMs, settings.toleranceSeconds)) return unverified('stale_timestamp', fields);
    if (messageType !== 'webhook_callback_verification') return verified(fields);
    const challenge = reflectable(member(parseJson(request.body), 'challenge'));
    return challenge === undefined ? handshakeRefused('challenge') : textHandshake(challenge);
  },
};
