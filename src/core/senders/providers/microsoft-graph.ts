// Microsoft Graph change notifications (https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks):
// the endpoint validation POST `?validationToken=…` is answered 200 text/plain with the token
// (Graph signs nothing here); a notification batch `{ value: [...] }` verifies when every
// notification's `clientState` is one of the secrets (Graph has no HMAC; compared in constant
// time). Type: `microsoft_graph.` + the first notification's `changeType` (created, updated,
// deleted) or `lifecycleEvent` (reauthorizationRequired…); key: none (Graph sends no delivery id).
import type { ProviderEventFields, SenderProvider, SenderRequest, SenderSettings, SenderVerdict } from '../provider.js';
import {
  eventType,
  first,
  handshakeRefused,
  member,
  NOT_ALLOWED,
  isRead,
  parseJson,
  reflectable,
  sameText,
  textHandshake,
  unverified,
  verified,
} from './common.js';

function eventFields(notifications: unknown): ProviderEventFields {
  const notification = first(notifications);
  return {
    type: eventType('microsoft_graph', member(notification, 'changeType') ?? member(notification, 'lifecycleEvent')),
  };
}

/** Whether every notification carries a clientState, and whether each is one of the secrets. */
function checkClientStates(notifications: unknown, settings: SenderSettings): 'missing_signature' | 'mismatch' | 'ok' {
  if (!Array.isArray(notifications) || notifications.length === 0) return 'missing_signature';
  let missing = false;
  let matches = true;
  for (const notification of notifications) {
    const state = member(notification, 'clientState');
    if (typeof state !== 'string' || state === '') {
      missing = true;
      continue;
    }
    let match = false;
    for (const secret of settings.secrets) match = sameText(state, secret) || match;
    matches = matches && match;
  }
  if (missing) return 'missing_signature';
  return matches ? 'ok' : 'mismatch';
}

function verifyNotifications(request: SenderRequest, settings: SenderSettings): SenderVerdict {
  const notifications = member(parseJson(request.body), 'value');
  const fields = eventFields(notifications);
  const check = checkClientStates(notifications, settings);
  return check === 'ok' ? verified(fields) : unverified(check, fields);
}

export const microsoftGraphProvider: SenderProvider = {
  name: 'microsoft_graph',
  verify(request, settings) {
    if (isRead(request)) return NOT_ALLOWED;
    const token = request.query.get('validationToken');
    if (token === null) return verifyNotifications(request, settings);
    const echo = reflectable(token);
    return echo === undefined ? handshakeRefused('validationToken') : textHandshake(echo);
  },
};
