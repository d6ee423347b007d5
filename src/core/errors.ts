// Errors are values with a code (docs/api.md §6), thrown from the core and rendered once at
// the edge of each transport: HTTP as {"error":{code,message}}, MCP as a tool error,
// SMTP as a reply code.
import { StorageInvalidValueError, StorageUnavailableError } from '../storage/errors.js';
import { EVENT_CAPACITY } from './limits.js';

export type ErrorCode =
  | 'invalid_request'
  | 'invalid_json'
  | 'idempotency_key_mismatch'
  | 'unauthorized'
  | 'forbidden'
  | 'address_not_found'
  | 'event_not_found'
  | 'view_token_not_found'
  | 'view_token_limit'
  | 'callback_not_found'
  | 'callback_limit'
  | 'callback_gone'
  | 'sender_not_found'
  | 'signature_invalid'
  | 'inbox_not_found'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'queue_full'
  | 'too_many_waiters'
  | 'too_many_connections'
  | 'internal_error'
  | 'unavailable';

export class RoostError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
    /** Extra response headers, e.g. Retry-After or WWW-Authenticate. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'RoostError';
  }

  toJSON() {
    return { error: { code: this.code, message: this.message } };
  }
}

export const invalidRequest = (message: string) => new RoostError('invalid_request', 400, message);

export const addressNotFound = () =>
  new RoostError(
    'address_not_found',
    404,
    'No return address with this id exists (it may have been deleted or have expired).',
  );

export const unauthorized = (why: string) =>
  new RoostError(
    'unauthorized',
    401,
    `${why} Send the read token from the creation response as "Authorization: Bearer roost_read_…".`,
    {
      'WWW-Authenticate': 'Bearer realm="roost"',
    },
  );

/** A valid credential that may not do this: a view token asked to write. */
export const forbidden = (what: string) =>
  new RoostError(
    'forbidden',
    403,
    `A view token may read this return address but not ${what}. Use the read token from the creation response.`,
  );

export const inboxNotFound = () =>
  new RoostError(
    'inbox_not_found',
    404,
    'No inbox exists at this URL. Check the inbox_url from the creation response.',
  );

export const eventNotFound = () =>
  new RoostError('event_not_found', 404, 'No event with this id exists in this return address.');

/** A refused creation (docs/api.md §9): Retry-After in whole seconds, at least 1. */
export const rateLimited = (retryAfterMs: number) => {
  const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new RoostError(
    'rate_limited',
    429,
    `Too many return addresses created from this client; retry in ${retryAfter} s.`,
    { 'Retry-After': String(retryAfter) },
  );
};

export const queueFull = (retryAfterSeconds: number) =>
  new RoostError(
    'queue_full',
    429,
    `The return address holds ${EVENT_CAPACITY} unacknowledged events; nothing is dropped, so this delivery is refused until the reader acknowledges events. Retry later.`,
    { 'Retry-After': String(retryAfterSeconds) },
  );

export const addressBytesFull = (maxBytes: number, retryAfterSeconds: number) =>
  new RoostError(
    'queue_full',
    429,
    `The return address holds its limit of ${maxBytes} bytes of unacknowledged events; nothing is dropped, so this delivery is refused until the reader acknowledges events. Retry later.`,
    { 'Retry-After': String(retryAfterSeconds) },
  );

export const unavailable = (message = 'Storage is unavailable; retry shortly.') =>
  new RoostError('unavailable', 503, message, { 'Retry-After': '1' });

/**
 * What a storage failure is to a client: unavailable (503, retry shortly) or an invalid
 * request (400), in the engine's words; any other error as it is. Each transport applies
 * this once, where it renders errors.
 */
export function fromStorage<E>(error: E): E | RoostError {
  if (error instanceof StorageUnavailableError)
    return Object.assign(unavailable(error.message), { cause: error.cause });
  if (error instanceof StorageInvalidValueError)
    return Object.assign(invalidRequest(error.message), { cause: error.cause });
  return error;
}

/** A cap on held polls and streams (per address or per client) is reached. */
export const tooManyWaiters = (scope: 'address' | 'client' | 'view', limit: number, retryAfterSeconds: number) =>
  new RoostError(
    'too_many_waiters',
    429,
    scope === 'address'
      ? `This return address already has ${limit} long-polls and streams open; close one, or retry later.`
      : scope === 'view'
        ? `The view tokens of this return address already hold ${limit} long-polls and streams, their share of its slots; close one, or retry later.`
        : `This client already has ${limit} long-polls, streams and unread pages open; close one, or retry later.`,
    { 'Retry-After': String(retryAfterSeconds) },
  );

export const senderNotFound = () =>
  new RoostError(
    'sender_not_found',
    404,
    'This return address has no sender set; set one with PUT /api/v1/addresses/{id}/sender.',
  );

/** A delivery whose signature did not verify, to an inbox whose sender enforces it (docs/api.md §3.2). */
export const signatureInvalid = (reason: string) =>
  new RoostError('signature_invalid', 401, `The delivery's signature did not verify (${reason}); nothing was stored.`);

/**
 * The server key cannot open this inbox's sender secrets (ROOST_SECRET_KEY differs from the one
 * that sealed them): nothing is verified or stored, and the sender is asked to retry.
 */
export const senderKeyMismatch = () =>
  new RoostError(
    'unavailable',
    503,
    'This inbox cannot verify deliveries right now; nothing was stored. Retry later.',
    { 'Retry-After': '60' },
  );

export const callbackNotFound = () =>
  new RoostError('callback_not_found', 404, 'This return address has no callback with this id.');

/** The address holds ROOST_MAX_CALLBACKS waiting callbacks (docs/api.md §3.6). */
export const callbackLimit = (max: number) =>
  new RoostError(
    'callback_limit',
    409,
    `This return address already has ${max} waiting callbacks; wait for some, or cancel them (DELETE …/callbacks/{id}).`,
  );

/** The callback URL of a callback that expired or was cancelled: no longer takes deliveries. */
export const callbackGone = (status: 'expired' | 'cancelled') =>
  new RoostError(
    'callback_gone',
    410,
    `This callback ${status === 'expired' ? 'has expired' : 'was cancelled'}; nothing was stored.`,
  );

/** An answer to a person's question that is not one of its options (docs/api.md §3.6). */
export const invalidAnswer = (options: readonly string[]) =>
  invalidRequest(`"answer" must be one of the options: ${options.map((o) => JSON.stringify(o)).join(', ')}.`);
