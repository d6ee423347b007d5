// The baselines Roost is compared with, on the same machine and in the same run: a bare
// Fastify server (no logger, no schemas, no storage) that parses the same JSON body and
// answers 202, and answers the events route with a page handed to it by the bench, or,
// with ?wait=N, holds it in memory until a delivery to its address.
// With --smtp it also runs a bare smtp-server sink that parses each message with
// mailparser and drops it.
import Fastify from 'fastify';
import { parseArgs } from 'node:util';
import { serveIpc } from './processes.js';

const { values } = parseArgs({ options: { smtp: { type: 'boolean', default: false } } });

const app = Fastify();
let page: unknown = { events: [], next_cursor: 0, has_more: false };
// Long-polls held in memory, for the held-polls figure: ?wait=N holds the request until a
// delivery to its address (answered with that one event) or N seconds.
const held = new Map<string, Array<(event: unknown) => void>>();
let heldCount = 0;
app.post<{ Params: { addressId: string } }>('/api/v1/inbox/:addressId/:secret', async (request, reply) => {
  const event = { sequence: 1, data: request.body };
  const waiting = held.get(request.params.addressId);
  held.delete(request.params.addressId);
  for (const wake of waiting ?? []) wake(event);
  return reply.code(202).send({ event: request.body, duplicate: false });
});
app.get<{ Params: { addressId: string }; Querystring: { wait?: string } }>(
  '/api/v1/addresses/:addressId/events',
  async (request) => {
    const wait = Number(request.query.wait ?? 0);
    if (wait <= 0) return page;
    const event = await new Promise<unknown>((resolve) => {
      const timer = setTimeout(() => resolve(null), wait * 1000);
      const list = held.get(request.params.addressId) ?? [];
      held.set(request.params.addressId, list);
      heldCount++;
      list.push((woken) => {
        clearTimeout(timer);
        resolve(woken);
      });
    });
    heldCount--;
    return { events: event ? [event] : [], next_cursor: 1, has_more: false };
  },
);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;

let smtpPort: number | null = null;
if (values.smtp) {
  const { startSmtpSink } = await import('./smtp-sink.js');
  smtpPort = await startSmtpSink();
}

serveIpc(async (message) => {
  switch (message.type) {
    case 'page':
      page = message.page;
      return true;
    case 'stats':
      return { rssMiB: process.memoryUsage.rss() / 2 ** 20, held: heldCount };
    case 'memory':
      return { ...process.memoryUsage(), spaces: {} };
    case 'stop':
      await app.close();
      process.exit(0);
  }
  return null;
});
process.send!({ type: 'ready', url: `http://127.0.0.1:${port}`, smtpPort });
