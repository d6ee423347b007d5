// Runs parse + authentication of each message in a small pool of worker threads
// (process-worker.ts), so that a hostile message costs a worker's time, never the event
// loop's: HTTP, polls and other SMTP sessions go on meanwhile. Each message has a deadline
// that is enforced: at the deadline its DNS questions are answered "timed out", and a
// worker still busy shortly after is terminated and replaced. DNS is asked from here,
// at most MAX_DNS_LOOKUPS names per message. A worker parses one message at a time but
// authenticates several: authentication mostly waits on DNS, and a sender whose name
// servers never answer must not hold a worker, and so everyone's mail, for its deadline.
import { promises as dns } from 'node:dns';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ownBytes } from '../core/records.js';
import { unverified, type AuthenticationSummary, type DnsResolver } from './authenticate.js';
import type { ParseLimits } from './parse.js';
import type { DnsAnswer, EmailJob, ParsedWithHints, WorkerReport } from './process-worker.js';

/** DNS names one message may make us look up (SPF alone allows 10 lookups, RFC 7208 §4.6.4). */
export const MAX_DNS_LOOKUPS = 30;

export interface ProcessorOptions {
  workers: number;
  /** Messages one worker holds at once: one parsing, the rest waiting on their DNS answers. */
  messagesPerWorker: number;
  /**
   * Bytes of messages one worker holds at once (each is a copy of what the connection
   * holds); a message larger than this still goes to a worker that holds nothing.
   */
  bytesPerWorker: number;
  deadlineMs: number;
  limits: ParseLimits;
  /** Default: the system's DNS, one server answer within 2 s, two tries, per query. */
  resolver?: DnsResolver;
  logger: Pick<Logger, 'warn'>;
}

export interface ProcessInput {
  raw: Buffer;
  ip: string;
  helo: string;
  sender: string;
  mta: string;
}

export interface Processed {
  /** null when parsing did not finish before the deadline. */
  parsed: ParsedWithHints | null;
  authentication: AuthenticationSummary;
  /** Why the deadline cut the work short, if it did. */
  overrun?: string;
}

interface Job {
  id: number;
  input: ProcessInput;
  parsed: ParsedWithHints | null;
  lookups: number;
  dnsClosed: boolean;
  pendingDns: Set<number>;
  timers: NodeJS.Timeout[];
  /** Started again once already, after its worker was stopped for another message. */
  retried: boolean;
  resolve(result: Processed): void;
}

interface Slot {
  worker: Worker | null;
  /** The worker has loaded its modules and takes messages. */
  ready: boolean;
  /** Every message the worker holds, by id. */
  jobs: Map<number, Job>;
}

/**
 * Whether the worker is parsing one of its messages (CPU work, one at a time, so that a
 * worker that runs over is known by its message); the others wait on DNS.
 */
const parsing = (slot: Slot) => [...slot.jobs.values()].some((job) => !job.parsed);
const heldBytes = (slot: Slot) => [...slot.jobs.values()].reduce((sum, job) => sum + job.input.raw.length, 0);

function systemResolver(): DnsResolver {
  const resolver = new dns.Resolver({ timeout: 2_000, tries: 2 });
  return (name, rrtype) => resolver.resolve(name, rrtype);
}

/**
 * Starts the worker from its module beside this one (its .ts source under tsx, which workers
 * inherit). Named, so that `top -H` and /proc show it (Node 24 names the OS thread).
 */
function startWorker(): Worker {
  const here = import.meta.url;
  const entry = new URL(here.endsWith('.ts') ? './process-worker.ts' : './process-worker.js', here);
  return new Worker(entry, { name: 'roost-email' });
}

export class EmailProcessor {
  private readonly slots: Slot[];
  private readonly queue: Job[] = [];
  private readonly resolver: DnsResolver;
  private nextId = 1;
  private closed = false;
  /** Workers terminated for running over, for tests and logs. */
  terminations = 0;

  /** How many workers are parsing a message now (for tests and diagnostics). */
  get parsing(): number {
    return this.slots.filter(parsing).length;
  }

  constructor(private readonly options: ProcessorOptions) {
    this.slots = Array.from({ length: options.workers }, () => ({
      worker: null,
      ready: false,
      jobs: new Map<number, Job>(),
    }));
    this.resolver = options.resolver ?? systemResolver();
  }

  process(input: ProcessInput): Promise<Processed> {
    return new Promise((resolve) => {
      this.queue.push({
        id: this.nextId++,
        input,
        parsed: null,
        lookups: 0,
        dnsClosed: false,
        pendingDns: new Set(),
        timers: [],
        retried: false,
        resolve,
      });
      this.dispatch();
    });
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0 || this.closed) return;
      if (slot.jobs.size >= this.options.messagesPerWorker || parsing(slot)) continue;
      if (!slot.ready) {
        this.workerFor(slot);
        continue;
      }
      // The first in line that fits: small mail is not held up behind a large message.
      const held = heldBytes(slot);
      const next = this.queue.findIndex(
        (job) => held === 0 || held + job.input.raw.length <= this.options.bytesPerWorker,
      );
      if (next >= 0) this.begin(slot, this.queue.splice(next, 1)[0]);
    }
  }

  private workerFor(slot: Slot): Worker {
    if (slot.worker) return slot.worker;
    const worker = startWorker();
    slot.worker = worker;
    slot.ready = false;
    worker.unref();
    worker.on('message', (report: WorkerReport) => {
      if (slot.worker !== worker) return;
      if (report.op !== 'ready') return this.onReport(slot, worker, report);
      slot.ready = true;
      this.dispatch();
    });
    worker.on('error', (error) => {
      if (slot.worker !== worker) return;
      this.options.logger.warn({ err: error }, 'email worker failed; replacing it');
      this.loseWorker(slot, 'the message could not be processed');
    });
    worker.on('exit', () => {
      if (slot.worker !== worker) return;
      const starting = !slot.ready;
      this.loseWorker(slot, 'the message could not be processed');
      // A worker that cannot even start must not leave messages waiting for ever: one of
      // them is answered unprocessed (still queued whole), and the next try starts another.
      const waiting = starting && slot.jobs.size === 0 ? this.queue.shift() : undefined;
      if (waiting)
        waiting.resolve({
          parsed: null,
          authentication: unverified(
            { sender: waiting.input.sender, from: null },
            'The email worker could not start, so nothing was verified.',
          ),
          overrun: 'the email worker could not start',
        });
      this.dispatch();
    });
    return worker;
  }

  private begin(slot: Slot, job: Job): void {
    slot.jobs.set(job.id, job);
    const worker = this.workerFor(slot);
    const { deadlineMs, limits } = this.options;
    // The deadline starts when a worker takes the message, not while it waits its turn.
    job.timers.push(
      setTimeout(() => {
        job.dnsClosed = true;
        // Parsing has not finished: stop now. Otherwise let authentication end on the
        // "timed out" DNS answers, and stop the worker if it has not after a grace period.
        if (!job.parsed) return this.overrun(slot, job, 'parsing');
        for (const lookup of job.pendingDns) this.answerDns(worker, lookup, null);
        job.timers.push(setTimeout(() => this.overrun(slot, job, 'authentication'), Math.min(1_000, deadlineMs)));
      }, deadlineMs),
    );
    const message: EmailJob = { op: 'job', id: job.id, ...job.input, raw: ownBytes(job.input.raw), limits };
    worker.postMessage(message);
  }

  private onReport(slot: Slot, worker: Worker, report: Exclude<WorkerReport, { op: 'ready' }>): void {
    const job = slot.jobs.get(report.id);
    if (!job) return;
    if (report.op === 'parsed') {
      const attachmentBytes = report.parsed.attachmentBytes.map((b) =>
        Buffer.from(b.buffer, b.byteOffset, b.byteLength),
      );
      job.parsed = { ...report.parsed, attachmentBytes };
      // Parsed: what is left waits mostly on DNS, and the worker can parse the next one.
      this.dispatch();
    } else if (report.op === 'dns') {
      if (job.dnsClosed || ++job.lookups > MAX_DNS_LOOKUPS) return this.answerDns(worker, report.lookup, null);
      // This worker's lookups: a job started again elsewhere has a set of its own.
      const pending = job.pendingDns;
      pending.add(report.lookup);
      this.resolver(report.name, report.rrtype).then(
        (value) => {
          if (pending.delete(report.lookup) && slot.worker === worker)
            worker.postMessage({ op: 'dns-answer', lookup: report.lookup, ok: true, value } satisfies DnsAnswer);
        },
        (error: Error & { code?: string }) => {
          if (pending.delete(report.lookup) && slot.worker === worker)
            worker.postMessage({
              op: 'dns-answer',
              lookup: report.lookup,
              ok: false,
              message: error.message,
              code: error.code === undefined ? undefined : String(error.code),
            } satisfies DnsAnswer);
        },
      );
    } else {
      const authentication =
        report.summary ??
        unverified(
          { sender: job.input.sender, from: job.parsed?.data.from?.address ?? null },
          'The message could not be checked.',
        );
      // DNS cut short by the deadline or the budget leaves temperror results: say why.
      if (report.summary && (job.dnsClosed || job.lookups > MAX_DNS_LOOKUPS))
        authentication.note += job.dnsClosed
          ? ` DNS did not answer in time (client ${job.input.ip}); unanswered lookups are temperror.`
          : ` The message needed more than ${MAX_DNS_LOOKUPS} DNS lookups; the rest were not made.`;
      this.finish(slot, job, { parsed: job.parsed, authentication });
    }
  }

  /** A timed-out answer: mailauth records temperror for it. */
  private answerDns(worker: Worker, lookup: number, _value: null): void {
    worker.postMessage({
      op: 'dns-answer',
      lookup,
      ok: false,
      message: 'DNS timed out',
      code: 'ETIMEOUT',
    } satisfies DnsAnswer);
  }

  private overrun(slot: Slot, job: Job, phase: string): void {
    if (slot.jobs.get(job.id) !== job) return;
    this.terminations++;
    const overrun = `${phase} took longer than ${this.options.deadlineMs} ms and was stopped`;
    this.options.logger.warn({ bytes: job.input.raw.length, phase }, 'email processing ran over its deadline');
    this.loseWorker(slot, 'the message could not be processed', job, {
      parsed: job.parsed,
      authentication: unverified(
        { sender: job.input.sender, from: job.parsed?.data.from?.address ?? null },
        `Checking the message ${overrun}, so nothing was verified.`,
      ),
      overrun,
    });
  }

  /**
   * Stops the slot's worker. `culprit` (the message that ran over) gets `result`; the others
   * it held did nothing wrong and start again in the next worker, once: one that loses its
   * worker a second time is answered unprocessed (it is still queued whole).
   */
  private loseWorker(slot: Slot, why: string, culprit?: Job, result?: Processed): void {
    const worker = slot.worker;
    slot.worker = null;
    slot.ready = false;
    void worker?.terminate();
    const others = [...slot.jobs.values()].filter((job) => job !== culprit);
    if (culprit && result) this.finish(slot, culprit, result);
    for (const job of others) {
      this.release(slot, job);
      if (!job.retried && !this.closed) {
        Object.assign(job, { parsed: null, lookups: 0, dnsClosed: false, pendingDns: new Set(), retried: true });
        this.queue.unshift(job);
        continue;
      }
      job.resolve({
        parsed: job.parsed,
        authentication: unverified({ sender: job.input.sender, from: job.parsed?.data.from?.address ?? null }, why),
        overrun: job.parsed ? undefined : why,
      });
    }
    // A replaced worker is started now, so that it is ready before the next message.
    if (!this.closed) this.workerFor(slot);
    this.dispatch();
  }

  private finish(slot: Slot, job: Job, result: Processed): void {
    if (slot.jobs.get(job.id) !== job) return;
    this.release(slot, job);
    job.resolve(result);
    if (!slot.worker && !this.closed) this.workerFor(slot);
    this.dispatch();
  }

  /** Takes the job off its slot and stops its timers. */
  private release(slot: Slot, job: Job): void {
    for (const timer of job.timers) clearTimeout(timer);
    job.timers = [];
    slot.jobs.delete(job.id);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot.worker?.terminate() ?? Promise.resolve(0)));
  }
}
