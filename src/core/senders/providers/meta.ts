// Meta (WhatsApp, Instagram, Messenger; https://developers.facebook.com/docs/graph-api/webhooks/getting-started):
// the subscription handshake `GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…` is
// answered with the challenge (text/plain) when the verify token is the sender's `verify_token`;
// POSTs carry `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256(app secret, body), no timestamp.
// Type: `meta.` + `object` + `.` + the first change's `field` (meta.whatsapp_business_account.messages),
// or `.messaging` for Messenger-style entries; key: none (Meta sends no delivery id).
import type { ProviderEventFields, SenderProvider, SenderRequest, SenderSettings } from '../provider.js';
import {
  eventType,
  first,
  handshakeRefused,
  header,
  hmac,
  isRead,
  matchingSecret,
  member,
  NOT_ALLOWED,
  parseJson,
  prefixedHex,
  reflectable,
  sameText,
  textHandshake,
  unverified,
  verified,
} from './common.js';

function subscriptionHandshake(request: SenderRequest, settings: SenderSettings) {
  const { query } = request;
  if (request.method !== 'GET' || query.get('hub.mode') !== 'subscribe') return NOT_ALLOWED;
  const token = query.get('hub.verify_token');
  if (token === null || token === '' || settings.verifyToken === undefined) return unverified('missing_signature', {});
  if (!sameText(token, settings.verifyToken)) return unverified('mismatch', {});
  const challenge = reflectable(query.get('hub.challenge'));
  return challenge === undefined ? handshakeRefused('hub.challenge') : textHandshake(challenge);
}

function eventFields(body: unknown): ProviderEventFields {
  const entry = first(member(body, 'entry'));
  const field =
    member(first(member(entry, 'changes')), 'field') ?? (member(entry, 'messaging') ? 'messaging' : undefined);
  return { type: eventType('meta', member(body, 'object'), field) ?? eventType('meta', member(body, 'object')) };
}

export const metaProvider: SenderProvider = {
  name: 'meta',
  verify(request, settings) {
    if (isRead(request)) return subscriptionHandshake(request, settings);
    const fields = eventFields(parseJson(request.body));
    const signature = prefixedHex(header(request, 'x-hub-signature-256'), 'sha256=');
    if (!signature) return unverified('missing_signature', fields);
    const index = matchingSecret(settings.secrets, [signature], (secret) => hmac('sha256', secret, request.body));
    return index < 0 ? unverified('mismatch', fields) : verified(fields);
  },
};
