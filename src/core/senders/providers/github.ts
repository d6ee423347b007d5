// GitHub (docs/api.md §3.2): `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`.
// The event type is `github.` + X-GitHub-Event (its ping, when a webhook is created, is an
// ordinary event: `github.ping`); the key is X-GitHub-Delivery, which a redelivery repeats.
import type { SenderProvider, SenderVerdict } from '../provider.js';
import { decodeSignature, deliveryId, eventName, hmacMatchesAny } from '../verify.js';

const PREFIX = 'sha256=';

export const github: SenderProvider = {
  name: 'github',
  verify(request, settings): SenderVerdict {
    if (request.method !== 'POST') return { kind: 'not_allowed' };
    const event = eventName(request.headers['x-github-event']);
    const fields = {
      type: event === undefined ? undefined : `github.${event}`,
      idempotencyKey: deliveryId(request.headers['x-github-delivery']),
    };
    const header = request.headers['x-hub-signature-256'];
    if (header === undefined || header === '')
      return { kind: 'event', verified: false, reason: 'missing_signature', ...fields };
    const signature = header.startsWith(PREFIX) ? decodeSignature(header.slice(PREFIX.length), 'hex') : undefined;
    if (signature === undefined || !hmacMatchesAny(settings.secrets, request.body, signature))
      return { kind: 'event', verified: false, reason: 'mismatch', ...fields };
    return { kind: 'event', verified: true, ...fields };
  },
};
