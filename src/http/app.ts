// Builds the Fastify application: body handling, validation, error rendering, OpenAPI,
// and the routes. Transports register here; the operations live in core/service.ts.
import { Ajv } from 'ajv';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { errors } from '../core/errors.js';
import type { Metrics } from '../core/metrics.js';
import type { RoostService } from '../core/service.js';
import type { CallbackService } from '../core/callbacks.js';
import type { Waiters } from '../core/waiters.js';
import type { Storage } from '../core/records.js';
import { fastifyTrustProxy } from './client-ip.js';
import { limitConnectionsPerPeer } from './connection-limit.js';
import { lazyRequestLogger } from './request-logger.js';
import { registerOpenApi } from './openapi.js';
import { repeatedIdempotencyKey } from './idempotency-header.js';
import { installErrorHandling, renderClientError, renderFrameworkError } from './errors.js';
import { addressRoutes } from './routes/addresses.js';
import { credentialRoutes } from './routes/credentials.js';
import { senderRoutes } from './routes/sender.js';
import { emailPartRoutes } from './routes/email-parts.js';
import { eventRoutes } from './routes/events.js';
import { inboxRoutes } from './routes/inbox.js';
import { inspectRoutes } from './routes/inspect.js';
import { opsRoutes } from './routes/ops.js';
import { streamRoutes } from './routes/stream.js';
import { llmsRoutes } from './routes/llms.js';
import { mcpRoutes } from './routes/mcp.js';
import { callbackRoutes } from './routes/callbacks.js';
import { callbackUrlRoutes } from './routes/callback-url.js';

export interface AppDeps {
  config: Config;
  service: RoostService;
  callbacks: CallbackService;
  storage: Storage;
  waiters: Waiters;
  metrics: Metrics;
  logger: Logger;
}

declare module 'fastify' {
  interface FastifyInstance {
    roost: AppDeps;
  }
}

/**
 * The access log: one line per answered request (redacted URL, status, time) instead of
 * Fastify's two ("incoming request" + "request completed"), halving log work on ingest.
 */
class AccessLog extends LogController {
  /**
   * Successful requests skip pino's redaction pass, which is costly per line: the line is built
   * here from fields that hold no secret — the req serializer cuts the inbox secret out of the
   * URL and keeps no header. Errors keep the redacting logger.
   */
  private readonly plain: Logger;

  constructor(logger: Logger) {
    super();
    this.plain = logger.child({}, { redact: [] });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error)
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else if (this.plain.isLevelEnabled('info')) {
      this.plain.info(
        { reqId: request.id, req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime },
        'request completed',
      );
    }
  }
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, metrics } = deps;
  // Typed as Fastify's logger, so that the instance is the plain FastifyInstance routes take.
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance,
    bodyLimit: config.maxBodyBytes,
    trustProxy: fastifyTrustProxy(config.trustProxy),
    onProtoPoisoning: 'ignore', // bodies are stored, never merged into objects: keep them as sent
    onConstructorPoisoning: 'ignore',
    return503OnClosing: false, // answered by the onRequest hook below, in the Error shape
    // On close, idle keep-alive sockets go at once; requests in flight finish (docs/api.md §9).
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // A request must arrive in time, headers and body: one that never comes, or dribbles,
    // would hold its socket for ever. A long-poll or a stream is a short request with a
    // long answer, which these limits do not touch.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      headersTimeout: config.headersTimeoutMs,
      // How often Node checks those two limits (its default, 30 s, would let a request overstay by that much).
      connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs),
    },
    logController: new AccessLog(deps.logger),
    childLoggerFactory: lazyRequestLogger,
    // Failures answered before any route runs still get the Error shape (docs/api.md §6).
    frameworkErrors: renderFrameworkError,
    clientErrorHandler: (error: Error & { code?: string }, socket) => {
      if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') metrics.requestsTimedOut.inc();
      renderClientError(error, socket);
    },
  });
  app.decorate('roost', deps);
  limitConnectionsPerPeer(app.server, config.maxConnectionsPerIp, () => metrics.connectionsRefused.inc());
  // SIGTERM (docs/api.md §9): held polls are answered as shutdown begins, so their sockets turn
  // idle only after Node has reaped the idle ones; kept alive, they would hold the close
  // (and the process) for the whole keep-alive timeout. From now on, idle means closed.
  let shuttingDown = false;
  app.addHook('preClose', async () => {
    shuttingDown = true;
    app.server.keepAliveTimeout = 1;
    app.server.closeIdleConnections();
  });
  // Requests still arriving on open connections during shutdown get 503 in the Error shape
  // (Fastify's own return503OnClosing answers in its shape, docs/api.md §6 wants ours); an
  // inbox request repeating Idempotency-Key gets 400, whatever its URL (docs/api.md §3.4).
  // A callback hook, not an async one: it runs on every request, and a flag that is almost
  // always false is not worth a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    if (!shuttingDown) return done(repeatedIdempotencyKey(request));
    reply.header('Connection', 'close');
    done(errors.unavailable({ message: 'The service is shutting down; retry shortly.' }));
  });

  // Bodies: Fastify collects the bytes (bounded by bodyLimit → 413); routes decode them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  // Bodies are validated strictly (no coercion, no silent removal: docs/api.md §3 wants 400);
  // query strings arrive as text, are pre-checked as digits, then coerced.
  const bodyAjv = new Ajv({
    coerceTypes: false,
    removeAdditional: false,
    useDefaults: false,
    allErrors: false,
    strict: false,
  });
  const queryAjv = new Ajv({
    coerceTypes: true,
    removeAdditional: false,
    useDefaults: true,
    allErrors: false,
    strict: false,
  });
  for (const ajv of [bodyAjv, queryAjv]) {
    ajv.addFormat('date-time', true).addFormat('email', true).addFormat('uri', true);
  }
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : queryAjv).compile(schema));

  installErrorHandling(app, metrics, config.maxBodyBytes);

  await registerOpenApi(app, config);

  await app.register(addressRoutes);
  await app.register(credentialRoutes);
  await app.register(senderRoutes);
  await app.register(eventRoutes);
  await app.register(emailPartRoutes);
  await app.register(inboxRoutes);
  await app.register(callbackRoutes);
  await app.register(callbackUrlRoutes);
  await app.register(streamRoutes);
  await app.register(opsRoutes);
  await app.register(mcpRoutes);
  await app.register(llmsRoutes);
  await app.register(inspectRoutes);
  return app;
}
