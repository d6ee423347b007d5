// The baselines Roost is compared with, on the same machine and in the same run: a bare
// Fastify server (no logger, no schemas, no storage) that parses the same JSON body and
// answers 202, and answers the events route with a page handed to it by the bench, or,
// with ?wait=N, holds it in memory until a delivery to its address.
// With --smtp it also runs a bare smtp-server sink that parses each message with
// mailparser and drops it. With --node-http the same two routes are served by node:http
// alone, no framework: what Node's HTTP server itself costs per held poll (BENCHMARKS.md).
// With --durable-sqlite PATH or --durable-postgres URL the inbox route answers 202 only once
// the delivery is committed, and does nothing else (bench/durable.ts), and the SMTP sink its
// 250 once the parsed message is: the limits of Roost's design on this machine.
import Fastify from 'fastify';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { postgresAppends, sqliteAppends, type DurableAppends } from './durable.js';
import { serveIpc } from './processes.js';

const { values } = parseArgs({
  options: {
    smtp: { type: 'boolean', default: false },
    'node-http': { type: 'boolean', default: false },
    'durable-sqlite': { type: 'string' },
    'durable-postgres': { type: 'string' },
  },
});

let page: unknown = { events: [], next_cursor: 0, has_more: false };
// Long-polls held in memory, for the held-polls figure: ?wait=N holds the request until a
// delivery to its address (answered with that one event) or N seconds.
const held = new Map<string, Array<(event: unknown) => void>>();
let heldCount = 0;

function deliver(addressId: string, body: unknown): unknown {
  const event = { sequence: 1, data: body };
  const waiting = held.get(addressId);
  held.delete(addressId);
  for (const wake of waiting ?? []) wake(event);
  return { event: body, duplicate: false };
}

async function events(addressId: string, wait: number): Promise<unknown> {
  if (wait <= 0) return page;
  const event = await new Promise<unknown>((resolve) => {
    const timer = setTimeout(() => resolve(null), wait * 1000);
    const list = held.get(addressId) ?? [];
    held.set(addressId, list);
    heldCount++;
    list.push((woken) => {
      clearTimeout(timer);
      resolve(woken);
    });
  });
  heldCount--;
  return { events: event ? [event] : [], next_cursor: 1, has_more: false };
}

const durable: DurableAppends | null = values['durable-sqlite']
  ? sqliteAppends(values['durable-sqlite'])
  : values['durable-postgres']
    ? await postgresAppends(values['durable-postgres'])
    : null;

function fastifyServer() {
  const app = Fastify();
  app.post<{ Params: { addressId: string } }>('/api/v1/inbox/:addressId/:secret', async (request, reply) => {
    if (!durable) return reply.code(202).send(deliver(request.params.addressId, request.body));
    const sequence = await durable.append(Number(request.params.addressId.slice('addr_'.length)), request.body);
    return reply.code(202).send({ event: { sequence, data: request.body }, duplicate: false });
  });
  app.get<{ Params: { addressId: string }; Querystring: { wait?: string } }>(
    '/api/v1/addresses/:addressId/events',
    (request) => events(request.params.addressId, Number(request.query.wait ?? 0)),
  );
  return app;
}

const INBOX = /^\/api\/v1\/inbox\/([^/]+)\/[^/?]+$/;
const EVENTS = /^\/api\/v1\/addresses\/([^/]+)\/events(?:\?(.*))?$/;

function nodeHttpServer(): http.Server {
  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  return http.createServer((req, res) => {
    const url = req.url ?? '';
    const inbox = req.method === 'POST' ? INBOX.exec(url) : null;
    const list = req.method === 'GET' ? EVENTS.exec(url) : null;
    if (inbox) {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => answer(res, 202, deliver(inbox[1], JSON.parse(Buffer.concat(chunks).toString('utf8')))));
    } else if (list) {
      const wait = Number(new URLSearchParams(list[2] ?? '').get('wait') ?? 0);
      void events(list[1], wait).then((body) => answer(res, 200, body));
    } else answer(res, 404, { error: { code: 'not_found' } });
  });
}

const app = values['node-http'] ? null : fastifyServer();
const server = app ? app.server : nodeHttpServer();
if (app) await app.listen({ port: 0, host: '127.0.0.1' });
else await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as AddressInfo).port;

let smtpPort: number | null = null;
if (values.smtp) {
  const { startSmtpSink } = await import('./smtp-sink.js');
  smtpPort = await startSmtpSink(durable);
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
      if (app) await app.close();
      else server.closeAllConnections();
      await durable?.close();
      process.exit(0);
  }
  return null;
});
process.send!({ type: 'ready', url: `http://127.0.0.1:${port}`, smtpPort });
