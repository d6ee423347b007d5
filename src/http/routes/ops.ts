// Operations endpoints (docs/api.md §9): liveness, readiness, Prometheus metrics, OpenAPI.
import type { FastifyInstance } from 'fastify';
import { unavailable } from '../../core/errors.js';
import { sendError } from '../errors.js';

/**
 * /readyz answers within this long. A database that hangs rather than refuses (a stalled
 * server, a full pool) would otherwise hold the probe until the storage's own timeouts,
 * and a balancer's probe gives up first and learns nothing.
 */
const READY_WITHIN_MS = 2_000;

/** Resolves when the storage answered in time, rejects otherwise. */
function pingWithin(ping: () => Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no answer in time')), ms);
  });
  return Promise.race([ping(), late]).finally(() => clearTimeout(timer));
}

export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const { storage, metrics, config } = app.roost;

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await pingWithin(() => storage.ping(), READY_WITHIN_MS);
    } catch {
      return sendError(reply, unavailable(`Storage (${storage.engine}) is not reachable.`));
    }
    // A reachable database whose wake-ups do not arrive leaves polls held here waiting.
    if (storage.wakeupsArriving === false)
      return sendError(
        reply,
        unavailable(`Storage (${storage.engine}) is reachable, but wake-ups from other instances are not arriving.`),
      );
    return { status: 'ready', storage: storage.engine };
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => {
    const document = app.swagger() as { servers?: Array<{ url: string }> };
    // The base URL may only be known after listening (PORT=0).
    return { ...document, servers: [{ url: config.baseUrl }] };
  });
}
