// GitHub (docs/api.md §3.2): `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`.
// The event type is `github.` + X-GitHub-Event (its ping, when a webhook is created, is an
// ordinary event: `github.ping`); the key is X-GitHub-Delivery, which a redelivery repeats.
import type { SenderProvider } from '../provider.js';
import {
  deliveryKey,
  eventType,
  header,
  hmac,
  isRead,
  matchingSecret,
  NOT_ALLOWED,
  prefixedHex,
  unverified,
  verified,
} from './common.js';

export const githubProvider: SenderProvider = {
  name: 'github',
  verify(request, settings) {
    if (isRead(request)) return NOT_ALLOWED;
    const fields = {
      type: eventType('github', header(request, 'x-github-event')),
      idempotencyKey: deliveryKey(header(request, 'x-github-delivery')),
    };
    const value = header(request, 'x-hub-signature-256');
    if (value === undefined) return unverified('missing_signature', fields);
    const signature = prefixedHex(value, 'sha256=');
    const index =
      signature === undefined
        ? -1
        : matchingSecret(settings.secrets, [signature], (secret) => hmac('sha256', secret, request.body));
    return index < 0 ? unverified('mismatch', fields) : verified(fields);
  },
};
