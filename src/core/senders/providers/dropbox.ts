// Dropbox (https://www.dropbox.com/developers/reference/webhooks): the verification request
// `GET ?challenge=…` is answered 200 text/plain with the challenge; notifications carry
// `X-Dropbox-Signature: <hex>`, HMAC-SHA256(app secret, body), no timestamp. Type: `dropbox.` +
// the notification's kind, its first top-level member (dropbox.list_folder); key: none.
import type { SenderProvider } from '../provider.js';
import {
  decodeHex,
  eventType,
  handshakeRefused,
  header,
  hmac,
  isRead,
  matchingSecret,
  NOT_ALLOWED,
  parseJson,
  reflectable,
  textHandshake,
  unverified,
  verified,
} from './common.js';

/** The first member's name of a JSON object (`list_folder`, `delta`), or undefined. */
function notificationKind(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  for (const name in body) return name;
  return undefined;
}

export const dropboxProvider: SenderProvider = {
  name: 'dropbox',
  verify(request, settings) {
    if (isRead(request)) {
      const challenge = request.query.get('challenge');
      if (request.method !== 'GET' || challenge === null) return NOT_ALLOWED;
      const echo = reflectable(challenge);
      return echo === undefined ? handshakeRefused('challenge') : textHandshake(echo);
    }
    const fields = { type: eventType('dropbox', notificationKind(parseJson(request.body))) };
    const value = header(request, 'x-dropbox-signature');
    const signature = value === undefined ? undefined : decodeHex(value);
    if (!signature) return unverified('missing_signature', fields);
    const index = matchingSecret(settings.secrets, [signature], (secret) => hmac('sha256', secret, request.body));
    return index < 0 ? unverified('mismatch', fields) : verified(fields);
  },
};
