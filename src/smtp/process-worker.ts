// The email worker thread: parses a message and checks its SPF/DKIM/DMARC, off the event
// loop. processor.ts hands it one message at a time and stops it (worker.terminate()) when
// it runs past its deadline, so no message can hold the service however it is built. DNS
// questions go back to the event loop, which answers, counts and times them; the answers are
// kept a minute (dns-answers.ts), so mail from a domain just seen asks nothing again.
import { parentPort } from 'node:worker_threads';
import { ownBytes } from '../core/records.js';
import { authenticate, type AuthenticationSummary } from './authenticate.js';
import { DnsAnswers, type DnsOutcome } from './dns-answers.js';
import { extractHints, type Extracted } from './extract.js';
import { parseEmail, type ParseLimits, type ParsedEmail } from './parse.js';

// mailauth and its dependencies have written progress lines with console.log; a worker's
// console reaches the process's stdout, where the JSON log is. Nothing here needs it.
const silent = () => undefined;
for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dir', 'table'] as const)
  console[method] = silent;

export interface EmailJob {
  op: 'job';
  id: number;
  raw: Uint8Array;
  ip: string;
  helo: string;
  sender: string;
  mta: string;
  limits: ParseLimits;
}

export type DnsAnswer = { op: 'dns-answer'; lookup: number } & DnsOutcome;

export type ParsedWithHints = ParsedEmail & { extracted: Extracted };

/** A ParsedWithHints as it crosses postMessage, which turns Buffers into Uint8Arrays. */
type ParsedReport = Omit<ParsedWithHints, 'attachmentBytes'> & { attachmentBytes: Uint8Array[] };

export type WorkerReport =
  | { op: 'ready'; id: 0 }
  | { op: 'parsed'; id: number; parsed: ParsedReport }
  | { op: 'authenticated'; id: number; summary: AuthenticationSummary | null; error?: string }
  | { op: 'dns'; id: number; lookup: number; name: string; rrtype: string };

const port = parentPort!;
let nextLookup = 1;
const lookups = new Map<
  number,
  { name: string; rrtype: string; resolve(value: unknown): void; reject(error: Error): void }
>();
const answers = new DnsAnswers();

/**
 * A failed lookup as mailauth expects it: an Error with the resolver's code. Made without a
 * stack trace, which would name only this worker's own frames and was most of its cost; a
 * message meets several such answers ("no such name" for SPF and each DMARC step).
 */
function dnsError(outcome: Extract<DnsOutcome, { ok: false }>): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return Object.assign(new Error(outcome.message), { code: outcome.code });
  } finally {
    Error.stackTraceLimit = limit;
  }
}

function post(report: WorkerReport): void {
  port.postMessage(report);
}

async function run(job: EmailJob): Promise<void> {
  const raw = Buffer.from(job.raw.buffer, job.raw.byteOffset, job.raw.byteLength);
  const parsed = await parseEmail(raw, job.limits);
  const listUnsubscribe = parsed.data.headers['list-unsubscribe'];
  const extracted = extractHints({
    subject: parsed.data.subject,
    text: parsed.data.text,
    html: parsed.data.html,
    listUnsubscribe: Array.isArray(listUnsubscribe) ? listUnsubscribe.join(', ') : listUnsubscribe,
  });
  const attachmentBytes = parsed.attachmentBytes.map(ownBytes);
  post({ op: 'parsed', id: job.id, parsed: { ...parsed, attachmentBytes, extracted } });
  const resolver = (name: string, rrtype: string) => {
    const known = answers.get(name, rrtype, Date.now());
    if (known) return known.ok ? Promise.resolve(known.value) : Promise.reject(dnsError(known));
    return new Promise<unknown>((resolve, reject) => {
      const lookup = nextLookup++;
      lookups.set(lookup, { name, rrtype, resolve, reject });
      post({ op: 'dns', id: job.id, lookup, name, rrtype });
    });
  };
  try {
    const summary = await authenticate(
      {
        raw,
        ip: job.ip,
        helo: job.helo,
        sender: job.sender,
        mta: job.mta,
        from: parsed.data.from?.address ?? null,
        fromMailboxes: parsed.fromMailboxes,
      },
      resolver,
    );
    post({ op: 'authenticated', id: job.id, summary });
  } catch (error) {
    // mailauth rejects only on unexpected input; an unverifiable message is not an error.
    post({ op: 'authenticated', id: job.id, summary: null, error: (error as Error).message });
  }
}

// Loaded, and the parser run once, before the first job, so that a message's deadline is
// spent on the message and not on loading modules or warming up the parser's code.
await Promise.all([import('mailparser'), import('mailauth'), import('email-reply-parser'), import('tldts')]);
await parseEmail(Buffer.from('From: a@example.org\r\nSubject: warm-up\r\n\r\nready\r\n'), {
  maxTextBytes: 1024,
  maxHtmlBytes: 1024,
});
post({ op: 'ready', id: 0 });

port.on('message', (message: EmailJob | DnsAnswer) => {
  if (message.op === 'dns-answer') {
    const waiting = lookups.get(message.lookup);
    lookups.delete(message.lookup);
    if (!waiting) return;
    answers.put(waiting.name, waiting.rrtype, message, Date.now());
    if (message.ok) waiting.resolve(message.value);
    else waiting.reject(dnsError(message));
    return;
  }
  run(message).catch((error: unknown) =>
    post({ op: 'authenticated', id: message.id, summary: null, error: (error as Error).message }),
  );
});
