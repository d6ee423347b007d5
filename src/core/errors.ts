// Errors are values with a code (docs/api.md §6), thrown from the core and rendered once at
// the edge of each transport: HTTP as {"error":{code,message}}, MCP as a tool error,
// SMTP as a reply code. Every one is made from CATALOGUE below, one row per error, as
// Fastify's lib/errors.js is one table; `new ServiceError` anywhere else fails the lint.
import { StorageInvalidValueError, StorageUnavailableError } from '../storage/errors.js';
import { EVENT_CAPACITY } from './limits.js';

/** A row: the wire code, the HTTP status, the message (or its builder) and extra headers. */
interface Entry {
  readonly code: string;
  readonly status: number;
  readonly message: string | ((params: never) => string);
  readonly headers?: Readonly<Record<string, string>> | ((params: never) => Record<string, string>);
}

/** Whole seconds for Retry-After, at least 1. */
const wholeSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
const retryAfter = ({ retryAfterSeconds }: { retryAfterSeconds: number }) => ({
  'Retry-After': String(retryAfterSeconds),
});
const CLOSE = { Connection: 'close' } as const;

const CATALOGUE = {
  // --- 400 ------------------------------------------------------------------------------
  /** A schema or bound violated; the message names the field. */
  invalidRequest: { code: 'invalid_request', status: 400, message: ({ message }: { message: string }) => message },
  /** A filter of a read (docs/api.md §4.3) malformed or too large: named, with what it must be. */
  /** An answer to a person's question that is not one of its options (docs/api.md §3.6). */
  invalidAnswer: {
    code: 'invalid_request',
    status: 400,
    message: ({ options }: { options: readonly string[] }) =>
      `"answer" must be one of the options: ${options.map((o) => JSON.stringify(o)).join(', ')}.`,
  },
  invalidFilter: {
    code: 'invalid_request',
    status: 400,
    message: ({ name, rule }: { name: string; rule: string }) => `Invalid filter "${name}": ${rule}`,
  },
  malformedRequest: { code: 'invalid_request', status: 400, message: 'The request is malformed.' },
  malformedUrl: { code: 'invalid_request', status: 400, message: 'The URL is malformed.' },
  malformedUrlEncoding: {
    code: 'invalid_request',
    status: 400,
    message: 'The URL is malformed; check its percent-encoding.',
  },
  contentLengthMismatch: { code: 'invalid_request', status: 400, message: 'Content-Length does not match the body.' },
  /** Requests Node's HTTP parser rejects; the connection is closed after the answer. */
  invalidHttp: {
    code: 'invalid_request',
    status: 400,
    message: 'The request is not valid HTTP/1.1 (method, request line, headers or body framing).',
    headers: CLOSE,
  },
  requestTimeout: {
    code: 'invalid_request',
    status: 408,
    message: 'The request was not received in time.',
    headers: CLOSE,
  },
  headersTooLarge: {
    code: 'invalid_request',
    status: 431,
    message: 'The request line and headers exceed the size limit.',
    headers: CLOSE,
  },
  emptyBody: { code: 'invalid_json', status: 400, message: 'The body is empty; send a JSON object.' },
  invalidJson: {
    code: 'invalid_json',
    status: 400,
    message: ({ reason }: { reason: string }) => `The body is not valid JSON (${reason}).`,
  },
  idempotencyKeyMismatch: {
    code: 'idempotency_key_mismatch',
    status: 400,
    message: 'The Idempotency-Key header and the body field dedupe_key differ; send one, or the same value in both.',
  },

  // --- 401, 403 -------------------------------------------------------------------------
  unauthorized: {
    code: 'unauthorized',
    status: 401,
    message: ({ why }: { why: string }) =>
      `${why} Send the read token from the creation response as "Authorization: Bearer roost_read_…".`,
    headers: { 'WWW-Authenticate': 'Bearer realm="roost"' },
  },
  /** A delivery whose signature did not verify, to an inbox whose sender enforces it (docs/api.md §3.2). */
  signatureInvalid: {
    code: 'signature_invalid',
    status: 401,
    message: ({ reason }: { reason: string }) =>
      `The delivery's signature did not verify (${reason}); nothing was stored.`,
  },
  /** A valid credential that may not do this: a view token asked to write. */
  forbidden: {
    code: 'forbidden',
    status: 403,
    message: ({ what }: { what: string }) =>
      `A view token may read this return address but not ${what}. Use the read token from the creation response.`,
  },

  // --- 404 ------------------------------------------------------------------------------
  addressNotFound: {
    code: 'address_not_found',
    status: 404,
    message: 'No return address with this id exists (it may have been deleted or have expired).',
  },
  eventNotFound: {
    code: 'event_not_found',
    status: 404,
    message: 'No event with this id exists in this return address.',
  },
  /** An email's part: the event may exist without the part asked for. */
  emailPartNotFound: {
    code: 'event_not_found',
    status: 404,
    message: 'This return address has no event with this id, or it has no such part.',
  },
  inboxNotFound: {
    code: 'inbox_not_found',
    status: 404,
    message: 'No inbox exists at this URL. Check the inbox_url from the creation response.',
  },
  viewTokenNotFound: {
    code: 'view_token_not_found',
    status: 404,
    message: 'This return address has no view token with this id.',
  },
  callbackNotFound: {
    code: 'callback_not_found',
    status: 404,
    message: 'This return address has no callback with this id.',
  },
  senderNotFound: {
    code: 'sender_not_found',
    status: 404,
    message: 'This return address has no sender set; set one with PUT /api/v1/addresses/{id}/sender.',
  },
  /** The path is redacted by the caller: it may hold an inbox secret. */
  routeNotFound: {
    code: 'not_found',
    status: 404,
    message: ({ method, path }: { method: string; path: string }) =>
      `No route ${method} ${path}. See /api/v1/openapi.json.`,
  },
  /** Longer than any id or secret this service issues: nothing can live there. */
  segmentTooLong: {
    code: 'not_found',
    status: 404,
    message: 'Nothing exists at this path: one of its segments is longer than any identifier this service issues.',
  },
  assetNotFound: { code: 'not_found', status: 404, message: 'No such asset.' },

  // --- 405, 409, 413, 415 ---------------------------------------------------------------
  methodNotAllowed: {
    code: 'method_not_allowed',
    status: 405,
    message: ({ method, allowed }: { method: string; allowed: string[] }) =>
      `${method} is not allowed here; use ${allowed.join(' or ')}.`,
    headers: ({ allowed }: { allowed: string[] }) => ({ Allow: allowed.join(', ') }),
  },
  /** An inbox answers GET only for a sender's handshake; `provider` names that sender when one is set. */
  inboxTakesPost: {
    code: 'method_not_allowed',
    status: 405,
    message: ({ provider }: { provider?: string }) =>
      `This inbox takes ${provider ? `${provider} ` : ''}deliveries by POST.`,
    headers: { Allow: 'POST' },
  },
  viewTokenLimit: {
    code: 'view_token_limit',
    status: 409,
    message: ({ max }: { max: number }) =>
      `This return address holds ${max} view tokens, the most it may; revoke one (DELETE …/view-tokens/{id}) first.`,
  },
  /** The address holds ROOST_MAX_CALLBACKS waiting callbacks (docs/api.md §3.6). */
  callbackLimit: {
    code: 'callback_limit',
    status: 409,
    message: ({ max }: { max: number }) =>
      `This return address already has ${max} waiting callbacks; wait for some, or cancel them (DELETE …/callbacks/{id}).`,
  },
  /** The URL of a callback that expired or was cancelled: it takes no more deliveries. */
  callbackGone: {
    code: 'callback_gone',
    status: 410,
    message: ({ status }: { status: 'expired' | 'cancelled' }) =>
      `This callback ${status === 'expired' ? 'has expired' : 'was cancelled'}; nothing was stored.`,
  },
  payloadTooLarge: {
    code: 'payload_too_large',
    status: 413,
    message: ({ maxBytes }: { maxBytes: number }) => `The request body exceeds the ${maxBytes}-byte limit.`,
  },
  /** Fastify's own refusal of a body it has no parser for. */
  contentTypeNotJson: {
    code: 'unsupported_media_type',
    status: 415,
    message: 'Unsupported Content-Type; send JSON.',
  },
  jsonMediaTypeRequired: {
    code: 'unsupported_media_type',
    status: 415,
    message: ({ type }: { type?: string }) =>
      `The body must be JSON sent with "Content-Type: application/json"${type ? `, not "${type}"` : ''}.`,
  },
  jsonCharsetRequired: {
    code: 'unsupported_media_type',
    status: 415,
    message: 'JSON bodies must be UTF-8: send "charset=utf-8" or no charset at all.',
  },

  // --- 429 ------------------------------------------------------------------------------
  /** A refused creation (docs/api.md §9). */
  rateLimited: {
    code: 'rate_limited',
    status: 429,
    message: ({ retryAfterMs }: { retryAfterMs: number }) =>
      `Too many return addresses created from this client; retry in ${wholeSeconds(retryAfterMs)} s.`,
    headers: ({ retryAfterMs }: { retryAfterMs: number }) => ({ 'Retry-After': String(wholeSeconds(retryAfterMs)) }),
  },
  queueFull: {
    code: 'queue_full',
    status: 429,
    message: `The return address holds ${EVENT_CAPACITY} unacknowledged events; nothing is dropped, so this delivery is refused until the reader acknowledges events. Retry later.`,
    headers: retryAfter,
  },
  addressBytesFull: {
    code: 'queue_full',
    status: 429,
    message: ({ maxBytes }: { maxBytes: number }) =>
      `The return address holds its limit of ${maxBytes} bytes of unacknowledged events; nothing is dropped, so this delivery is refused until the reader acknowledges events. Retry later.`,
    headers: retryAfter,
  },
  /** A cap on held polls and streams (per address, per client, or the view tokens' share) is reached. */
  tooManyWaiters: {
    code: 'too_many_waiters',
    status: 429,
    message: ({ scope, limit }: { scope: 'address' | 'client' | 'view'; limit: number }) =>
      scope === 'address'
        ? `This return address already has ${limit} long-polls and streams open; close one, or retry later.`
        : scope === 'view'
          ? `The view tokens of this return address already hold ${limit} long-polls and streams, their share of its slots; close one, or retry later.`
          : `This client already has ${limit} long-polls, streams and unread pages open; close one, or retry later.`,
    headers: retryAfter,
  },
  tooManyConnections: {
    code: 'too_many_connections',
    status: 429,
    message: ({ max }: { max: number }) =>
      `This client address already has ${max} connections open; reuse one of them, or retry later.`,
    headers: { 'Retry-After': '1', ...CLOSE },
  },

  // --- 500, 503 -------------------------------------------------------------------------
  /** No internals: what failed is logged, not told. */
  internalError: {
    code: 'internal_error',
    status: 500,
    message: ({ what }: { what: 'request' | 'call' }) =>
      `Something went wrong on our side; the ${what} was not completed. Retry later.`,
  },
  slugExhausted: { code: 'internal_error', status: 500, message: 'Could not allocate a unique slug; retry.' },
  unavailable: {
    code: 'unavailable',
    status: 503,
    message: ({ message }: { message?: string }) => message ?? 'Storage is unavailable; retry shortly.',
    headers: { 'Retry-After': '1' },
  },
  /** GET /readyz: a probe, not a client to slow down, so no Retry-After (docs/api.md §9.3). */
  notReady: {
    code: 'unavailable',
    status: 503,
    message: ({ engine }: { engine: string }) => `Storage (${engine}) is not reachable.`,
  },
  /** GET /readyz on PostgreSQL: polls held here would wait for wake-ups that never come. */
  wakeupsNotArriving: {
    code: 'unavailable',
    status: 503,
    message: ({ engine }: { engine: string }) =>
      `Storage (${engine}) is reachable, but wake-ups from other instances are not arriving.`,
  },
  sendersUnavailable: { code: 'unavailable', status: 503, message: 'Senders are not available on this server.' },
  inspectorNotBuilt: {
    code: 'unavailable',
    status: 503,
    message: 'The inspector page is not built on this server; run "npm run build".',
  },
  /**
   * The server key cannot open this inbox's sender secrets (ROOST_SECRET_KEY differs from the one
   * that sealed them): nothing is verified or stored, and the sender is asked to retry.
   */
  senderKeyMismatch: {
    code: 'unavailable',
    status: 503,
    message: 'This inbox cannot verify deliveries right now; nothing was stored. Retry later.',
    headers: { 'Retry-After': '60' },
  },
} as const satisfies Record<string, Entry>;

type Catalogue = typeof CATALOGUE;
export type ErrorName = keyof Catalogue;
export type ErrorCode = Catalogue[ErrorName]['code'];

/** The server's error: one row of the catalogue, filled in. */
export class ServiceError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
    /** Extra response headers, e.g. Retry-After or WWW-Authenticate. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  /** The same error with a sentence added, e.g. a hint only one route can give. */
  withSuffix(sentence: string): ServiceError {
    return new ServiceError(this.code, this.status, `${this.message} ${sentence}`, this.headers);
  }

  toJSON() {
    return { error: { code: this.code, message: this.message } };
  }
}

type ParamsOf<F> = F extends (params: infer P) => unknown ? P : unknown;
type Params<E> = (E extends { message: infer M } ? ParamsOf<M> : unknown) &
  (E extends { headers: infer H } ? ParamsOf<H> : unknown);
/** A row's constructor: no argument without parameters, an optional one when all are optional. */
type Constructor<E> =
  unknown extends Params<E>
    ? () => ServiceError
    : Partial<Params<E>> extends Params<E>
      ? (params?: Params<E>) => ServiceError
      : (params: Params<E>) => ServiceError;

function constructorOf(entry: Entry) {
  return (params: object = {}) =>
    new ServiceError(
      entry.code as ErrorCode,
      entry.status,
      typeof entry.message === 'function' ? entry.message(params as never) : entry.message,
      typeof entry.headers === 'function' ? entry.headers(params as never) : { ...entry.headers },
    );
}

/** One constructor per row, named as the row: `errors.addressNotFound()`. */
export const errors = Object.fromEntries(
  Object.entries(CATALOGUE).map(([name, entry]) => [name, constructorOf(entry)]),
) as { readonly [N in ErrorName]: Constructor<Catalogue[N]> };

/** Each row's code and status, for the test that keeps docs/api.md §6 in step. */
export const catalogueRows = (): Array<{ name: ErrorName; code: ErrorCode; status: number; headers: string[] }> =>
  (Object.entries(CATALOGUE) as Array<[ErrorName, Entry]>).map(([name, entry]) => ({
    name,
    code: entry.code as ErrorCode,
    status: entry.status,
    headers: typeof entry.headers === 'object' ? Object.keys(entry.headers) : [],
  }));

/**
 * What a storage failure is to a client: unavailable (503, retry shortly) or an invalid
 * request (400), in the engine's words; any other error as it is. Each transport applies
 * this once, where it renders errors.
 */
export function fromStorage<E>(error: E): E | ServiceError {
  if (error instanceof StorageUnavailableError)
    return Object.assign(errors.unavailable({ message: error.message }), { cause: error.cause });
  if (error instanceof StorageInvalidValueError)
    return Object.assign(errors.invalidRequest({ message: error.message }), { cause: error.cause });
  return error;
}
