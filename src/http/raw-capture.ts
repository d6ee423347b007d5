// Raw capture (docs/api.md §3.1): `POST {inbox_url}?raw=1` stores what a real webhook sender
// (GitHub, Stripe, Slack, Twilio…) posted, whatever its Content-Type, as one event whose
// `data` keeps the exact bytes (so the reader can check the sender's HMAC signature) next
// to a readable form of them. The event then takes the one deliver path like any other.
import type { IncomingHttpHeaders } from 'node:http';
import { TextDecoder } from 'node:util';
import { errors } from '../core/errors.js';
import { MAX_JSON_DEPTH } from '../core/limits.js';
import { jsonDepthExceeds } from '../core/json-depth.js';
import type { DeliveryInput } from '../core/service.js';
import { isJsonMediaType } from './body.js';

export const RAW_EVENT_TYPE = 'webhook.received';

/** The longest `?type=` accepted; event types are names, not payloads. */
const MAX_TYPE_LENGTH = 200;
// C0 controls and DEL: an event type is printed in logs, headers and terminals.
const CONTROL_CHARACTER = /\p{Cc}/u;

/** What a raw capture stores as the event's `data`. */
export interface RawCaptureData {
  /** The Content-Type header as sent, or null when there was none. */
  content_type: string | null;
  /** Request headers (lower-case names) minus credentials and hop-by-hop ones. */
  headers: Record<string, string>;
  /** Parsed JSON, parsed form fields, the text, or null for binary bytes. */
  body: unknown;
  /** The exact bytes received, base64. */
  body_base64: string;
  /** The request method, and the query string as sent (no `?`; the path is the inbox URL, a secret). */
  method: string;
  query: string;
  /** With a sender set (docs/api.md §3.2): whether the provider's signature verified, and if not why. */
  verification?: { provider: string; verified: boolean; reason?: string };
}

export interface RawQuery {
  raw?: unknown;
  type?: unknown;
}

/** Whether the request asks for raw capture at all (any `raw` value; checked later). */
export function wantsRaw(query: unknown): boolean {
  return typeof query === 'object' && query !== null && (query as RawQuery).raw !== undefined;
}

/** Whether text may be an event type: 1–200 characters, no control characters. */
export function isEventTypeName(type: unknown): type is string {
  return typeof type === 'string' && type.length > 0 && type.length <= MAX_TYPE_LENGTH && !CONTROL_CHARACTER.test(type);
}

/**
 * The event type of a delivery to an inbox with a sender whose provider names none
 * (docs/api.md §3.2): `?type=` when given, else webhook.received. Every delivery is captured
 * there, so `raw` needs no value and is ignored.
 */
export function senderCaptureType(query: RawQuery): string {
  if (query.type === undefined) return RAW_EVENT_TYPE;
  if (!isEventTypeName(query.type))
    throw errors.invalidRequest({
      message: `Invalid query parameter "type": it must be given once, 1–${MAX_TYPE_LENGTH} characters without control characters.`,
    });
  return query.type;
}

/**
 * The event type a raw capture uses, or undefined when raw capture is not asked for.
 * `raw` must be `1` or `true`; `type` only makes sense with it.
 */
export function rawCaptureType(query: RawQuery): string | undefined {
  const { raw, type } = query;
  if (raw === undefined) {
    if (type !== undefined)
      throw errors.invalidRequest({
        message: 'Invalid query parameter "type": it is only used with raw=1 (raw capture).',
      });
    return undefined;
  }
  if (raw !== '1' && raw !== 'true') {
    throw errors.invalidRequest({
      message: 'Invalid query parameter "raw": use raw=1 to store the request as sent, or leave it out.',
    });
  }
  if (type === undefined) return RAW_EVENT_TYPE;
  if (!isEventTypeName(type)) {
    throw errors.invalidRequest({
      message: `Invalid query parameter "type": it must be given once, 1–${MAX_TYPE_LENGTH} characters without control characters.`,
    });
  }
  return type;
}

// Credentials never reach storage (docs/api.md §1, §3.1); hop-by-hop headers describe the
// connection to us, not the sender's message (RFC 9110 §7.6.1). These go whatever the
// operator configures; ROOST_RAW_DROP_HEADERS adds the credential-like rest.
const DROPPED_HEADERS = new Set([
  'authorization',
  'cookie',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Whether a (lower-case) header name is dropped, by glob patterns (`*` any run of characters). */
export type HeaderFilter = (name: string) => boolean;

export function headerFilter(patterns: readonly string[]): HeaderFilter {
  const glob = (pattern: string) =>
    new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i');
  const keep = patterns.filter((p) => p.startsWith('!')).map((p) => glob(p.slice(1)));
  const drop = patterns.filter((p) => !p.startsWith('!')).map(glob);
  return (name) => drop.some((re) => re.test(name)) && !keep.some((re) => re.test(name));
}

export function storedHeaders(headers: IncomingHttpHeaders, dropped: HeaderFilter): Record<string, string> {
  // Headers the Connection header names are hop-by-hop too (RFC 9110 §7.6.1).
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROPPED_HEADERS.has(name) || name.startsWith('proxy-') || named.has(name)) continue;
    if (dropped(name)) continue;
    kept[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}

/** The body as text in its declared charset (UTF-8 by default), or null for binary bytes. */
function decodeText(bytes: Buffer, contentType: string | undefined): string | null {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8', { fatal: true });
  } catch {
    decoder = new TextDecoder('utf-8', { fatal: true }); // unknown label
  }
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return null;
  }
  // A NUL does not occur in text that people or senders write; it marks binary data
  // that happens to be valid UTF-8.
  return text.includes('\0') ? null : text;
}

/** Form fields in order of first appearance; a repeated key becomes an array. */
function parseForm(text: string): Record<string, string | string[]> {
  const fields = new Map<string, string | string[]>();
  for (const [key, value] of new URLSearchParams(text)) {
    const seen = fields.get(key);
    if (seen === undefined) fields.set(key, value);
    else if (Array.isArray(seen)) seen.push(value);
    else fields.set(key, [seen, value]);
  }
  // fromEntries defines own properties, so a "__proto__" field stays a field.
  return Object.fromEntries(fields);
}

/**
 * The readable form of the body: parsed JSON for JSON media types, form fields for
 * application/x-www-form-urlencoded, else the text. Raw means as sent, so bytes that do
 * not parse as their type claims are kept as text rather than refused.
 */
function readableBody(bytes: Buffer, contentType: string | undefined): unknown {
  const text = decodeText(bytes, contentType);
  if (text === null) return null;
  const media = contentType?.split(';')[0].trim().toLowerCase();
  if (isJsonMediaType(media)) {
    try {
      const parsed: unknown = JSON.parse(text);
      // `data` wraps the body two levels deep; deeper JSON than the service stores
      // (docs/api.md §3) is kept as text instead of refusing the capture.
      if (!jsonDepthExceeds(parsed, MAX_JSON_DEPTH - 2)) return parsed;
    } catch {
      /* not JSON after all: keep the text */
    }
    return text;
  }
  if (media === 'application/x-www-form-urlencoded') return parseForm(text);
  return text;
}

/** The parts of a request that a capture keeps besides its body. */
export interface CapturedRequest {
  headers: IncomingHttpHeaders;
  method: string;
  url: string;
}

/** The delivery that stores one request as sent. */
export function captureRequest(
  request: CapturedRequest,
  bytes: Buffer,
  type: string,
  dropped: HeaderFilter,
): DeliveryInput {
  const contentType = request.headers['content-type'];
  const queryAt = request.url.indexOf('?');
  const data: RawCaptureData = {
    content_type: contentType ?? null,
    headers: storedHeaders(request.headers, dropped),
    body: readableBody(bytes, contentType),
    body_base64: bytes.toString('base64'),
    method: request.method,
    query: queryAt === -1 ? '' : request.url.slice(queryAt + 1),
  };
  return { type, source: 'https', data };
}
