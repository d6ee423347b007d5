// The baselines Roost is compared with, on the same machine and in the same run: a bare
// Fastify server (no logger, no schemas, no storage) that parses the same JSON body and
// answers 202, and answers the events route with a page handed to it by the bench.
// With --smtp it also runs a bare smtp-server sink that parses each message with
// mailparser and drops it.
import Fastify from 'fastify';
import { parseArgs } from 'node:util';
import { serveIpc } from './processes.js';

const { values } = parseArgs({ options: { smtp: { type: 'boolean', default: false } } });

const app = Fastify();
app.post('/api/v1/inbox/:addressId/:secret', async (request, reply) =>
  reply.code(202).send({ event: request.body, duplicate: false }),
);
let page: unknown = { events: [], next_cursor: 0, has_more: false };
app.get('/api/v1/addresses/:addressId/events', async () => page);
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
      return { rssMiB: process.memoryUsage.rss() / 2 ** 20 };
    case 'stop':
      await app.close();
      process.exit(0);
  }
  return null;
});
process.send!({ type: 'ready', url: `http://127.0.0.1:${port}`, smtpPort });
