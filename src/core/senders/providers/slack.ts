// Slack (https://api.slack.com/authentication/verifying-requests-from-slack): `X-Slack-Signature:
// v0=<hex>` is HMAC-SHA256(signing secret, `v0:<X-Slack-Request-Timestamp>:<body>`), the timestamp
// held to the tolerance. Type: `slack.` + the Events API type (the inner `event.type` of an
// `event_callback`, else the outer `type`; an interactive `payload`'s type; `slack.command` for a
// slash command); key: `event_id`. Handshake: a verified `url_verification` → its `challenge` as
// text/plain (https://api.slack.com/events/url_verification).
import type { ProviderEventFields, SenderProvider, SenderRequest } from '../provider.js';
import {
  deliveryKey,
  eventType,
  handshakeRefused,
  isRead,
  member,
  NOT_ALLOWED,
  parseJson,
  reflectable,
  textHandshake,
  unverified,
  verified,
  verifyV0,
} from './common.js';

/** The body as Slack sends it: JSON (Events API) or a form (interactivity, slash commands). */
function readBody(request: SenderRequest): unknown {
  const contentType = request.headers['content-type'] ?? '';
  if (!contentType.toLowerCase().startsWith('application/x-www-form-urlencoded')) return parseJson(request.body);
  const form = new URLSearchParams(request.body.toString('utf8'));
  const payload = form.get('payload');
  if (payload !== null) return parseJson(Buffer.from(payload, 'utf8'));
  return form.has('command') ? { type: 'command' } : undefined;
}

function eventFields(body: unknown): ProviderEventFields {
  const outer = member(body, 'type');
  const type = outer === 'event_callback' ? member(member(body, 'event'), 'type') : outer;
  // event_id is inside the signed body.
  return { type: eventType('slack', type), idempotencyKey: deliveryKey(member(body, 'event_id')), keySigned: true };
}

export const slackProvider: SenderProvider = {
  name: 'slack',
  verify(request, settings, nowMs) {
    if (isRead(request)) return NOT_ALLOWED;
    const body = readBody(request);
    const fields = eventFields(body);
    const check = verifyV0(request, settings, nowMs, {
      signature: 'x-slack-signature',
      timestamp: 'x-slack-request-timestamp',
    });
    if ('failure' in check) return unverified(check.failure, fields);
    if (member(body, 'type') === 'url_verification') {
      const challenge = reflectable(member(body, 'challenge'));
      return challenge === undefined ? handshakeRefused('Slack challenge') : textHandshake(challenge);
    }
    return verified(fields);
  },
};
