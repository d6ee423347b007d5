// Zoom (https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events): `x-zm-signature:
// v0=<hex>` is HMAC-SHA256(secret token, `v0:<x-zm-request-timestamp>:<body>`), the timestamp
// held to the tolerance. Handshake: a verified `endpoint.url_validation` is answered with JSON
// `{ plainToken, encryptedToken }`, encryptedToken = hex HMAC-SHA256(the secret that verified,
// plainToken) (https://developers.zoom.us/docs/api/webhooks/#validate-your-webhook-endpoint).
// Type: `zoom.` + `event` (zoom.meeting.started); key: none (x-zm-trackingid is per request).
import type { SenderProvider } from '../provider.js';
import {
  eventType,
  handshakeRefused,
  hmac,
  isRead,
  jsonHandshake,
  member,
  NOT_ALLOWED,
  parseJson,
  reflectable,
  unverified,
  verified,
  verifyV0,
} from './common.js';

export const zoomProvider: SenderProvider = {
  name: 'zoom',
  verify(request, settings, nowMs) {
    if (isRead(request)) return NOT_ALLOWED;
    const body = parseJson(request.body);
    const fields = { type: eventType('zoom', member(body, 'event')) };
    const check = verifyV0(request, settings, nowMs, {
      signature: 'x-zm-signature',
      timestamp: 'x-zm-request-timestamp',
    });
    if ('failure' in check) return unverified(check.failure, fields);
    if (member(body, 'event') !== 'endpoint.url_validation') return verified(fields);
    const plainToken = reflectable(member(member(body, 'payload'), 'plainToken'));
    if (plainToken === undefined) return handshakeRefused('plainToken');
    const encryptedToken = hmac('sha256', check.secret, plainToken).toString('hex');
    return jsonHandshake({ plainToken, encryptedToken });
  },
};
