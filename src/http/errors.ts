// Renders every failure of the REST interface as {"error":{code,message}} (docs/api.md §6):
// the core's ServiceErrors, Fastify's validation and parsing errors, unknown routes (404), wrong
// methods (405) and crashes (500 without internals).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ServiceError, errors, fromStorage } from '../core/errors.js';
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

export function validationMessage(issues: AjvError[], context: string | undefined): string {
  const first = issues[0] ?? {};
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

/** Fastify's own refusals, as rows of the catalogue. */
const FASTIFY_CODES: Record<string, (maxBodyBytes: number) => ServiceError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (maxBytes) => errors.payloadTooLarge({ maxBytes }),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => errors.contentTypeNotJson(),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => errors.contentLengthMismatch(),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => errors.emptyBody(),
  FST_ERR_BAD_URL: () => errors.malformedUrl(),
  FST_ERR_ASYNC_CONSTRAINT: () => errors.malformedRequest(),
};

export function sendError(reply: FastifyReply, error: ServiceError): FastifyReply {
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
      return sendError(reply, errors.methodNotAllowed({ method: request.method, allowed: [...allowed].sort() }));
    }
    return sendError(reply, errors.routeNotFound({ method: request.method, path: redactUrl(path) }));
  });

  app.setErrorHandler((thrown: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const error = fromStorage(thrown);
    if (error instanceof ServiceError) {
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
        errors.invalidRequest({ message: validationMessage(error.validation, error.validationContext) }),
      );
    }
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known) return sendError(reply, known(maxBodyBytes));
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return sendError(reply, errors.malformedRequest());
    }
    metrics.storageErrors.inc();
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, errors.internalError({ what: 'request' }));
  });
}

/**
 * Router failures that Fastify answers before any route, hook or error handler runs (a
 * malformed percent-encoding, a path segment over maxParamLength). Without this they
 * would leave in Fastify's own shape; docs/api.md §6 wants ours.
 */
export function renderFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    sendError(reply, errors.segmentTooLong());
    return;
  }
  sendError(reply, errors.malformedUrlEncoding());
}

/**
 * Requests Node's HTTP parser rejects (unknown methods, bad framing, oversized headers,
 * timeouts) never reach Fastify's routes; they are answered here, on the socket, in the
 * Error shape of docs/api.md §6 — as Node's own handler does, then the connection is closed.
 */
export function renderClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? errors.requestTimeout()
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? errors.headersTooLarge()
        : errors.invalidHttp();
  const body = JSON.stringify(refusal.toJSON());
  const headers = Object.entries(refusal.headers).map(([name, value]) => `${name}: ${value}\r\n`);
  const pending = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !pending?.headersSent) {
    socket.write(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n${headers.join('')}\r\n${body}`,
    );
  }
  socket.destroy(error);
}
