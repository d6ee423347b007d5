// The one line under a row that says what an event is about without opening it: an email's
// subject and sender, a webhook's key fields (the usual names first), a raw capture's
// method and what kind of body it brought.
import { asEmail } from './email-view';
import { asRawCapture, formatBytes, decodeBase64 } from './format';
import type { RoostEvent } from './types';

// Names that webhook senders use for what happened and to what: shown first when present.
const KEY_FIELDS = ['action', 'event', 'type', 'event_type', 'status', 'state', 'name', 'id', 'ref', 'object'];
const FIELDS_SHOWN = 3;
const VALUE_CHARS = 40;

function scalar(value: unknown): string | undefined {
  if (typeof value === 'string') return value.length > VALUE_CHARS ? `${value.slice(0, VALUE_CHARS)}…` : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Up to three `key: value` pairs of an object's top level, well-known names first. */
export function keyFields(data: unknown): string {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return '';
  const record = data as Record<string, unknown>;
  const names = Object.keys(record);
  const ordered = [
    ...KEY_FIELDS.filter((name) => names.includes(name)),
    ...names.filter((n) => !KEY_FIELDS.includes(n)),
  ];
  const pairs: string[] = [];
  for (const name of ordered) {
    const value = scalar(record[name]);
    if (value === undefined || value === '') continue;
    pairs.push(`${name.length > VALUE_CHARS ? `${name.slice(0, VALUE_CHARS)}…` : name}: ${value}`);
    if (pairs.length === FIELDS_SHOWN) break;
  }
  return pairs.join(' · ');
}

export function preview(event: RoostEvent): string {
  const mail = asEmail(event.data, event.source);
  if (mail) {
    const subject = typeof mail.subject === 'string' && mail.subject !== '' ? mail.subject : '(no subject)';
    const from = mail.from && typeof mail.from === 'object' ? mail.from.name || mail.from.address : undefined;
    return typeof from === 'string' && from !== '' ? `“${subject}” from ${from}` : `“${subject}”`;
  }
  const raw = asRawCapture(event);
  if (raw) {
    const method = typeof raw.method === 'string' ? `${raw.method} ` : '';
    if (raw.body === null) {
      const size = decodeBase64(raw.body_base64).length;
      return size === 0 ? `${method}no body` : `${method}binary, ${formatBytes(size)}`;
    }
    const fields = keyFields(raw.body);
    if (fields) return `${method}${fields}`;
    return typeof raw.body === 'string' ? `${method}${scalar(raw.body.trim()) ?? ''}` : method.trim();
  }
  return keyFields(event.data);
}
