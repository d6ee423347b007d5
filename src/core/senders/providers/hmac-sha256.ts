// The generic scheme (docs/api.md §3.2) for senders that sign the body alone: a header holds
// HMAC-SHA256(secret, body) in hex or base64, after an optional prefix (`sha256=`). Nothing
// names the event or the delivery: the type is the inbox's default (or ?type=) and the key
// the Idempotency-Key header, when the sender sends one.
import type { SenderProvider } from '../provider.js';
import {
  decodeBase64,
  decodeHex,
  header,
  hmac,
  isRead,
  matchingSecret,
  NOT_ALLOWED,
  unverified,
  verified,
} from './common.js';

export const hmacSha256Provider: SenderProvider = {
  name: 'hmac_sha256',
  verify(request, settings) {
    if (isRead(request)) return NOT_ALLOWED;
    const { header: name, encoding, prefix } = settings.hmac ?? { header: 'x-signature', encoding: 'hex', prefix: '' };
    const value = header(request, name);
    if (value === undefined) return unverified('missing_signature', {});
    const text = value.startsWith(prefix) ? value.slice(prefix.length).trim() : undefined;
    const signature = text === undefined ? undefined : encoding === 'hex' ? decodeHex(text) : decodeBase64(text);
    const index =
      signature === undefined
        ? -1
        : matchingSecret(settings.secrets, [signature], (secret) => hmac('sha256', secret, request.body));
    return index < 0 ? unverified('mismatch', {}) : verified({});
  },
};
