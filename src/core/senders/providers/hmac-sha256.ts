// The generic scheme (docs/api.md §3.2) for senders that sign the body alone: a header holds
// HMAC-SHA256(secret, body) in hex or base64, after an optional prefix (`sha256=`). Nothing
// names the event or the delivery: the type is the inbox's default (or ?type=) and the key
// the Idempotency-Key header, when the sender sends one.
import type { SenderProvider, SenderVerdict } from '../provider.js';
import { decodeSignature, hmacMatchesAny } from '../verify.js';

export const hmacSha256: SenderProvider = {
  name: 'hmac_sha256',
  verify(request, settings): SenderVerdict {
    if (request.method !== 'POST') return { kind: 'not_allowed' };
    const { header, encoding, prefix } = settings.hmac ?? { header: 'x-signature', encoding: 'hex', prefix: '' };
    const value = request.headers[header];
    if (value === undefined || value === '') return { kind: 'event', verified: false, reason: 'missing_signature' };
    const signature = value.startsWith(prefix) ? decodeSignature(value.slice(prefix.length), encoding) : undefined;
    if (signature === undefined || !hmacMatchesAny(settings.secrets, request.body, signature))
      return { kind: 'event', verified: false, reason: 'mismatch' };
    return { kind: 'event', verified: true };
  },
};
