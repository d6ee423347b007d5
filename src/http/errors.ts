// Renders every failure of the REST interface as {"error":{code,message}} (docs/api.md §6):
// our RoostErrors, Fastify's validation and parsing errors, unknown routes (404), wrong
// methods (405) and crashes (500 without internals).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { RoostError, fromStorage } from '../core/errors.js';
import type { Metrics } from '../core/metrics.js';
import { redactUrl } from '../redact.js';

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** "/metadata/a" → "metadata.a"; the whole body or query when the path is empty. */
function fieldName(path: string | undefined, context: string | undefined): string {
  const field = (path ?? '').replace(/^\//, '').split('/').filter(Boolean).join('.');
  return field || (context === 'querystring' ? 'query' : context || 'body');
}

export function validationMessage(errors: AjvError[], context: string | undefined): string {
  const first = errors[0] ?? {};
  const params = first.params ?? {};
  const base = fieldName(first.instancePath, context);
  if (first.keyword === 'additionalProperties') {
    const prop = String(params.additionalProperty);
    return `Unknown field "${base === 'body' ? prop : `${base}.${prop}`}": it is not part of this request's schema.`;
  }
  if (first.keyword === 'required') return `Missing required field "${String(params.missingProperty)}".`;
  if (base === 'body' && first.keyword === 'type') return `The body must be a JSON ${String(params.type)}.`;
  return `Invalid ${base}: ${first.message ?? 'is not valid'}.`;
}

const FASTIFY_CODES: Record<string, { status: number; code: RoostError['code']; message: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    code: 'payload_too_large',
    message: 'The request body exceeds the size limit.',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'Unsupported Content-Type; send JSON.',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_request',
    message: 'Content-Length does not match the body.',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The body is empty; send a JSON object.' },
  FST_ERR_BAD_URL: { status: 400, code: 'invalid_request', message: 'The URL is malformed.' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, code: 'invalid_request', message: 'The request is malformed.' },
};

export function sendError(reply: FastifyReply, error: RoostError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).type('application/json; charset=utf-8').send(error.toJSON());
}

/** A 503's cause is logged at most once per cause in this long, with how many were not. */
const UNAVAILABLE_LOG_EVERY_MS = 10_000;
const UNAVAILABLE_CAUSES_KEPT = 64;

/**
 * Logs why storage answered 503 (too many clients, a timeout, a refused connection), one
 * line per cause per period: an outage answers thousands of requests, and its cause needs
 * saying once, not thousands of times.
 */
function unavailableLogger() {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (request: FastifyRequest, cause: unknown) => {
    if (cause === undefined) return;
    const error = cause as { code?: unknown; message?: unknown };
    const message = typeof error.message === 'string' ? error.message : 'no message';
    const key = typeof error.code === 'string' ? error.code : message.slice(0, 80);
    const now = Date.now();
    const seen = last.get(key);
    if (seen && now - seen.at < UNAVAILABLE_LOG_EVERY_MS) {
      seen.suppressed++;
      return;
    }
    if (last.size >= UNAVAILABLE_CAUSES_KEPT) last.clear();
    last.set(key, { at: now, suppressed: 0 });
    request.log.warn(
      { cause: { code: error.code, message }, notLoggedSince: seen?.suppressed ?? 0 },
      `answered 503 unavailable: ${message}`,
    );
  };
}

export function installErrorHandling(app: FastifyInstance, metrics: Metrics, maxBodyBytes: number): void {
  const logUnavailable = unavailableLogger();
  // Collected as routes are added, to tell a wrong method (405) from an unknown path (404).
  const routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  app.addHook('onRoute', (route) => {
    const pattern = new RegExp(
      `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`,
    );
    const methods = ([] as string[]).concat(route.method);
    const existing = routes.find((r) => r.pattern.source === pattern.source);
    if (existing) methods.forEach((m) => existing.methods.add(m));
    else routes.push({ pattern, methods: new Set(methods) });
  });

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0];
    const allowed = new Set<string>();
    for (const route of routes) if (route.pattern.test(path)) route.methods.forEach((m) => allowed.add(m));
    if (allowed.size > 0) {
      reply.header('Allow', [...allowed].sort().join(', '));
      return sendError(
        reply,
        new RoostError(
          'method_not_allowed',
          405,
          `${request.method} is not allowed here; use ${[...allowed].sort().join(' or ')}.`,
        ),
      );
    }
    return sendError(
      reply,
      new RoostError('not_found', 404, `No route ${request.method} ${redactUrl(path)}. See /api/v1/openapi.json.`),
    );
  });

  app.setErrorHandler((thrown: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const error = fromStorage(thrown);
    if (error instanceof RoostError) {
      // Storage that cannot be reached answers 503 `unavailable`: count it with the crashes.
      if (error.code === 'unavailable') {
        metrics.storageErrors.inc();
        logUnavailable(request, error.cause);
      } else if (error.status < 500) metrics.refusals.inc({ code: error.code });
      return sendError(reply, error);
    }
    if (error.validation) {
      return sendError(
        reply,
        new RoostError('invalid_request', 400, validationMessage(error.validation, error.validationContext)),
      );
    }
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known) {
      const message =
        known.code === 'payload_too_large' ? `The request body exceeds the ${maxBodyBytes}-byte limit.` : known.message;
      return sendError(reply, new RoostError(known.code, known.status, message));
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return sendError(reply, new RoostError('invalid_request', 400, 'The request is malformed.'));
    }
    metrics.storageErrors.inc();
    request.log.error({ err: error }, 'request failed');
    return sendError(
      reply,
      new RoostError(
        'internal_error',
        500,
        'Something went wrong on our side; the request was not completed. Retry later.',
      ),
    );
  });
}

/**
 * Router failures that Fastify answers before any route, hook or error handler runs (a
 * malformed percent-encoding, a path segment over maxParamLength). Without this they
 * would leave in Fastify's own shape; docs/api.md §6 wants ours.
 */
export function renderFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    // Longer than any id or secret this service issues: nothing can live there.
    sendError(
      reply,
      new RoostError(
        'not_found',
        404,
        'Nothing exists at this path: one of its segments is longer than any identifier this service issues.',
      ),
    );
    return;
  }
  sendError(reply, new RoostError('invalid_request', 400, 'The URL is malformed; check its percent-encoding.'));
}

/**
 * Requests Node's HTTP parser rejects (unknown methods, bad framing, oversized headers,
 * timeouts) never reach Fastify's routes; they are answered here, on the socket, in the
 * Error shape of docs/api.md §6 — as Node's own handler does, then the connection is closed.
 */
export function renderClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'The request was not received in time.']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request line and headers exceed the size limit.']
        : [400, 'The request is not valid HTTP/1.1 (method, request line, headers or body framing).'];
  const body = JSON.stringify(new RoostError('invalid_request', status, message).toJSON());
  const pending = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !pending?.headersSent) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
