// Secrets never reach a log line (docs/api.md §1). Two layers: request URLs are logged as
// the route that matched them, with secret parameters and credential-like query values
// cut out; and every finished log line is scrubbed of anything shaped like a secret,
// wherever it sits (a header echoed in an error, a percent-encoded path, a message).
import { ENCODED_SECRET_SHAPE, SECRET_SHAPE } from './core/secrets.js';

/** What redactRequestUrl reads of a routed request (Fastify's request has these fields). */
export interface RoutedRequest {
  url: string;
  routeOptions?: { url?: string };
  params?: unknown;
}

const REDACTED = '[REDACTED]';
/** Route parameters that hold a secret. */
const SECRET_PARAMS = new Set(['secret', 'callbackSecret']);
/** Query parameters whose values are credentials, whatever they look like. */
const SECRET_QUERY = /token|secret|key|auth|pass|sig|credential/i;

/** Every secret-shaped value in `text` replaced by [REDACTED]; cheap when there is none. */
export function scrubSecrets(text: string): string {
  let out = text.includes('_') ? text.replace(SECRET_SHAPE, REDACTED) : text;
  if (out.includes('%')) out = out.replace(ENCODED_SECRET_SHAPE, REDACTED);
  return out;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function redactQuery(query: string): string {
  if (query === '') return '';
  const parts = query.split('&').map((part) => {
    const at = part.indexOf('=');
    const name = at === -1 ? part : part.slice(0, at);
    return at !== -1 && SECRET_QUERY.test(safeDecode(name)) ? `${name}=${REDACTED}` : part;
  });
  return `?${parts.join('&')}`;
}

/**
 * A URL with the secret segment of inbox paths cut out, however the path was encoded
 * (the router decodes `%69nbox` to `inbox`, so this does too), and credential-like query
 * values cut out. For URLs no route matched; logs of routed requests use redactRequestUrl.
 */
export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  const path = at === -1 ? url : url.slice(0, at);
  const segments = path.split('/');
  for (let i = 0; i + 2 < segments.length; i++) {
    if (safeDecode(segments[i]).toLowerCase() === 'inbox') segments[i + 2] = REDACTED;
  }
  return scrubSecrets(segments.join('/') + redactQuery(at === -1 ? '' : url.slice(at + 1)));
}

/**
 * Route patterns split at their parameters, text and names alternating
 * (`/a/:id/b` → ['/a/', 'id', '/b']): split once, filled in for every request logged.
 */
const patterns = new Map<string, string[]>();
/** More than the routes of the app: patterns come from its route table, not from requests. */
const PATTERNS_KEPT = 256;

function splitPattern(pattern: string): string[] {
  let parts = patterns.get(pattern);
  if (parts === undefined) {
    parts = pattern.split(/:([A-Za-z0-9_]+)/);
    if (patterns.size < PATTERNS_KEPT) patterns.set(pattern, parts);
  }
  return parts;
}

/** The URL of a routed request as its route's pattern, parameters filled in and secret ones cut out. */
export function redactRequestUrl(request: RoutedRequest): string {
  const pattern = request.routeOptions?.url;
  const params = request.params as Record<string, string> | undefined;
  if (pattern === undefined || params === undefined) return redactUrl(request.url);
  const parts = splitPattern(pattern);
  let path = parts[0];
  for (let i = 1; i < parts.length; i += 2) {
    const name = parts[i];
    path += (SECRET_PARAMS.has(name) ? REDACTED : encodeURIComponent(params[name] ?? '')) + parts[i + 1];
  }
  const at = request.url.indexOf('?');
  return scrubSecrets(path + redactQuery(at === -1 ? '' : request.url.slice(at + 1)));
}
