// Twilio (https://www.twilio.com/docs/usage/webhooks/webhooks-security): `X-Twilio-Signature` is
// base64 HMAC-SHA1(auth token, the full URL Twilio called + each POST parameter's name and value,
// sorted by name); for a JSON body the URL carries `bodySHA256` (the body's hex SHA-256) and is
// signed alone; any other body is covered by no signature, so it is a mismatch. The URL is
// tried with and without its default port, as Twilio's SDK does; Twilio signs no timestamp.
// Type: `twilio.message.` + MessageStatus/SmsStatus or `twilio.call.` + CallStatus for a form,
// `twilio.` + `type` for a JSON event (Event Streams: its first event's); key:
// `I-Twilio-Idempotency-Token`, which is not signed.
import { createHash } from 'node:crypto';
import type { ProviderEventFields, SenderProvider, SenderRequest } from '../provider.js';
import {
  decodeBase64,
  decodeHex,
  deliveryKey,
  eventType,
  first,
  header,
  hmac,
  isRead,
  matchingSecret,
  member,
  NOT_ALLOWED,
  parseJson,
  sameBytes,
  unverified,
  verified,
} from './common.js';

function isForm(request: SenderRequest): boolean {
  return (request.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
}

/** The form's parameters as Twilio signs them: by name, each name's distinct values sorted. */
function signedParameters(form: URLSearchParams): string {
  const names = [...new Set(form.keys())].sort();
  return names
    .map((name) =>
      [...new Set(form.getAll(name))]
        .sort()
        .map((value) => name + value)
        .join(''),
    )
    .join('');
}

/** The URL as called, without its port and with the scheme's default one (Twilio may sign either). */
function urlVariants(url: string): string[] {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)(:\d*)?(.*)$/is.exec(url);
  if (!match) return [url];
  const [, scheme, userInfo = '', host, , rest] = match;
  const defaultPort = scheme.toLowerCase() === 'https://' ? ':443' : ':80';
  return [...new Set([url, scheme + userInfo + host + rest, scheme + userInfo + host + defaultPort + rest])];
}

function eventFields(request: SenderRequest, form: URLSearchParams | undefined): ProviderEventFields {
  const idempotencyKey = deliveryKey(header(request, 'i-twilio-idempotency-token'));
  if (form) {
    if (form.has('CallSid')) return { type: eventType('twilio', 'call', form.get('CallStatus')), idempotencyKey };
    const status = form.get('MessageStatus') ?? form.get('SmsStatus');
    if (form.has('MessageSid') || form.has('SmsSid'))
      return { type: eventType('twilio', 'message', status), idempotencyKey };
    return { idempotencyKey };
  }
  const body = parseJson(request.body);
  return { type: eventType('twilio', member(first(body) ?? body, 'type')), idempotencyKey };
}

export const twilioProvider: SenderProvider = {
  name: 'twilio',
  verify(request, settings) {
    if (isRead(request)) return NOT_ALLOWED;
    const bodyHash = request.query.get('bodySHA256');
    const form = bodyHash === null && isForm(request) ? new URLSearchParams(request.body.toString('utf8')) : undefined;
    const fields = eventFields(request, form);
    const value = header(request, 'x-twilio-signature');
    const signature = value === undefined ? undefined : decodeBase64(value);
    if (!signature) return unverified('missing_signature', fields);
    const parameters = form ? signedParameters(form) : '';
    const urls = urlVariants(request.url);
    const index = matchingSecret(settings.secrets, [signature], (secret) =>
      urls.map((url) => hmac('sha1', secret, url, parameters)),
    );
    if (index < 0) return unverified('mismatch', fields);
    if (bodyHash !== null) {
      const expected = createHash('sha256').update(request.body).digest();
      const provided = decodeHex(bodyHash);
      if (!provided || !sameBytes(provided, expected)) return unverified('mismatch', fields);
    } else if (!form) {
      // Neither a form nor a body hash: only the URL was signed, and the body is anyone's.
      return unverified('mismatch', fields);
    }
    return verified(fields);
  },
};
