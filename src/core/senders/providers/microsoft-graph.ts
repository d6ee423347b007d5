// Microsoft Graph change notifications (https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks):
// the endpoint validation POST `?validationToken=…` is answered 200 text/plain with the token
// (Graph signs nothing here); a notification batch `{ value: [...] }` verifies when every
// notification's `clientState` is one of the secrets (Graph has no HMAC; compared in constant
// time). Type: `microsoft_graph.` + the first notification's `changeType` (created, updated,
// deleted) or `lifecycleEvent` (reauthorizationRequired…); key: none (Graph sends no delivery id).
// The clientState is the sender's secret: what is stored has every clientState replaced.
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

/** What every clientState is replaced with in what is stored (docs/api.md §3.2). */
export const CLIENT_STATE_REPLACEMENT = '[REDACTED]';

/** Replaces every `clientState` member, at any depth, in place; whether there was one. */
function replaceClientStates(root: unknown): boolean {
  let replaced = false;
  // A stack, not recursion: the body is a stranger's, nested as deep as it likes.
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) stack.push(item);
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const name of Object.keys(record)) {
      if (name === 'clientState') {
        record[name] = CLIENT_STATE_REPLACEMENT;
        replaced = true;
      } else stack.push(record[name]);
    }
  }
  return replaced;
}

/**
 * The body to store: re-serialised without its clientStates, or undefined when it has none
 * (or is not JSON, and so no notification Graph sent).
 */
function storableBody(parsed: unknown): Buffer | undefined {
  if (!replaceClientStates(parsed)) return undefined;
  try {
    return Buffer.from(JSON.stringify(parsed), 'utf8');
  } catch {
    // Too deep to write back: keep nothing of it rather than the secret.
    return Buffer.alloc(0);
  }
}

function verifyNotifications(request: SenderRequest, settings: SenderSettings): SenderVerdict {
  const body = parseJson(request.body);
  const notifications = member(body, 'value');
  const fields = eventFields(notifications);
  const check = checkClientStates(notifications, settings);
  // Checked first: the replacement changes the parsed body in place.
  const storedBody = storableBody(body);
  const stored = storedBody === undefined ? fields : { ...fields, storedBody };
  return check === 'ok' ? verified(stored) : unverified(check, stored);
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
