// Shopify (https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook):
// `X-Shopify-Hmac-Sha256` is base64 HMAC-SHA256(the app's client secret, body); Shopify signs no
// timestamp. Type: `shopify.` + `X-Shopify-Topic` (shopify.orders/create); key: `X-Shopify-Webhook-Id`
// (the same on each retry of a delivery).
import type { SenderProvider } from '../provider.js';
import {
  decodeBase64,
  deliveryKey,
  eventType,
  header,
  hmac,
  isRead,
  matchingSecret,
  NOT_ALLOWED,
  unverified,
  verified,
} from './common.js';

export const shopifyProvider: SenderProvider = {
  name: 'shopify',
  verify(request, settings) {
    if (isRead(request)) return NOT_ALLOWED;
    const fields = {
      type: eventType('shopify', header(request, 'x-shopify-topic')),
      idempotencyKey: deliveryKey(header(request, 'x-shopify-webhook-id')),
    };
    const value = header(request, 'x-shopify-hmac-sha256');
    const signature = value === undefined ? undefined : decodeBase64(value);
    if (!signature) return unverified('missing_signature', fields);
    const index = matchingSecret(settings.secrets, [signature], (secret) => hmac('sha256', secret, request.body));
    return index < 0 ? unverified('mismatch', fields) : verified(fields);
  },
};
