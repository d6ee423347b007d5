// Operations endpoints (CONTRACT §9): liveness, readiness, Prometheus metrics, OpenAPI.
import type { FastifyInstance } from 'fastify';

export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const { storage, metrics, config } = app.roost;

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await storage.ping();
      return { status: 'ready', storage: storage.engine };
    } catch {
      return reply
        .code(503)
        .send({ error: { code: 'unavailable', message: `Storage (${storage.engine}) is not reachable.` } });
    }
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
