// The SMTP baseline: a bare smtp-server that accepts any recipient, parses each message
// with mailparser (as Roost does before storing it) and drops it. Given durable appends
// (bench/durable.ts), it is the limit of Roost's design instead: each message parsed in one
// of two threads, as Roost's email workers do (bench/parse-worker.ts), and its 250 sent
// once it is committed. No recipient check, authentication (SPF, DKIM, DMARC) or parts.
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream } from 'smtp-server';
import { Worker } from 'node:worker_threads';
import type { DurableAppends } from './durable.js';
import type { ParseJob, ParseReply } from './parse-worker.js';

/** Roost's email workers by default. */
const PARSERS = 2;

export async function startSmtpSink(durable: DurableAppends | null = null): Promise<number> {
  const store = durable ? storing(durable) : null;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      if (!store) return void simpleParser(stream).then(() => callback(), callback);
      store(stream, session.envelope.rcptTo[0]?.address ?? '').then(() => callback(), callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

/** Reads a message, parses it in a parsing thread and appends it to its recipient's queue. */
function storing(durable: DurableAppends) {
  const parse = parsers();
  const addresses = new Map<string, number>();
  return async (stream: SMTPServerDataStream, recipient: string): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const data = await parse(Buffer.concat(chunks));
    if (!addresses.has(recipient)) addresses.set(recipient, addresses.size);
    await durable.append(addresses.get(recipient)!, data);
  };
}

function parsers(): (raw: Buffer) => Promise<ParseReply['data']> {
  const here = import.meta.url;
  const entry = new URL(here.endsWith('.ts') ? './parse-worker.ts' : './parse-worker.js', here);
  // Named as Roost's email workers, so that the bench puts their CPU under the same kind of thread.
  const workers = Array.from({ length: PARSERS }, () => new Worker(entry, { name: 'roost-email' }));
  const waiting = new Map<number, { resolve: (data: ParseReply['data']) => void; reject: (error: Error) => void }>();
  let next = 0;
  for (const worker of workers) {
    worker.unref();
    worker.on('message', ({ id, data, error }: ParseReply) => {
      const job = waiting.get(id)!;
      waiting.delete(id);
      if (error === undefined) job.resolve(data);
      else job.reject(new Error(error));
    });
  }
  return (raw) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      workers[id % PARSERS].postMessage({ id, raw } satisfies ParseJob);
    });
}
