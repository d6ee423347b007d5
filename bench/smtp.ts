// SMTP ingest: messages per second through an SMTP server, sent by nodemailer over a pool
// of connections, each message a small text email to one of many recipients. Used for
// Roost's SMTP server and for the bare sink (bench/smtp-sink.ts) alike.
import nodemailer from 'nodemailer';
import { performance } from 'node:perf_hooks';
import { percentile } from './load.js';
import { busyShare, machineCpu } from './machine.js';
import { perUnit, type ThreadCpu } from './processes.js';

export interface SmtpResult {
  /** Messages answered 250 per second. */
  rate: number;
  sent: number;
  failed: number;
  p50: number;
  p99: number;
  /** CPU time a message, in ms, during the measured run: the server's process (all of it, and by kind of thread) and this one (the load generator). */
  serverCpuMs: number;
  serverThreadsMs: ThreadCpu;
  loadCpuMs: number;
  /** The share of the whole machine's CPU in use during the measured run (load.ts LoadResult). */
  machineBusy: number;
}

/** Two runs of one figure as one: rates and percentiles averaged, CPU a message weighted by the messages of each. */
export function meanSmtp(a: SmtpResult, b: SmtpResult): SmtpResult {
  const sent = a.sent + b.sent;
  const weighted = (pick: (r: SmtpResult) => number) => (pick(a) * a.sent + pick(b) * b.sent) / sent;
  const kinds = Object.keys(a.serverThreadsMs) as Array<keyof ThreadCpu>;
  return {
    rate: (a.rate + b.rate) / 2,
    sent,
    failed: a.failed + b.failed,
    p50: (a.p50 + b.p50) / 2,
    p99: (a.p99 + b.p99) / 2,
    serverCpuMs: weighted((r) => r.serverCpuMs),
    serverThreadsMs: Object.fromEntries(
      kinds.map((kind) => [kind, weighted((r) => r.serverThreadsMs[kind])]),
    ) as unknown as ThreadCpu,
    loadCpuMs: weighted((r) => r.loadCpuMs),
    machineBusy: (a.machineBusy + b.machineBusy) / 2,
  };
}

/**
 * A pool of `connections` SMTP connections to `port`; each sendOne sends the next small text
 * message, to the recipients in turn, and resolves with its latency in ms.
 */
function smtpSender(port: number, recipients: string[], connections: number) {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: connections,
    maxMessages: Infinity,
  });
  let next = 0;
  const sendOne = async (): Promise<number> => {
    const i = next++;
    const startedAt = performance.now();
    await transport.sendMail({
      from: 'ci@builds.example.com',
      to: recipients[i % recipients.length],
      subject: `Build ${i} finished`,
      text: `Build ${i} finished: all 412 tests passed in 3m12s.\nhttps://ci.example.com/builds/${i}\n`,
    });
    return performance.now() - startedAt;
  };
  return { sendOne, close: () => transport.close() };
}

/** Sends `amount` messages over `connections` pooled connections, each sender back to back. */
export async function sendMessages(
  port: number,
  recipients: string[],
  options: { connections: number; amount: number },
): Promise<{ sent: number; failed: number }> {
  const { sendOne, close } = smtpSender(port, recipients, options.connections);
  let started = 0;
  let failed = 0;
  try {
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        while (started++ < options.amount) await sendOne().catch(() => failed++);
      }),
    );
  } finally {
    close();
  }
  return { sent: options.amount - failed, failed };
}

export async function measureSmtp(
  port: number,
  recipients: string[],
  options: { connections: number; durationS: number; warmupS: number },
  /** The server's CPU time so far by kind of thread, in ms (BenchChild.threadCpuMs). */
  serverCpu: () => ThreadCpu,
): Promise<SmtpResult> {
  const { sendOne, close } = smtpSender(port, recipients, options.connections);
  // As many senders as pooled connections, each sending back to back until time is up.
  const run = async (seconds: number) => {
    const until = performance.now() + seconds * 1000;
    const latencies: number[] = [];
    let failed = 0;
    const startedAt = performance.now();
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        while (performance.now() < until) {
          try {
            latencies.push(await sendOne());
          } catch {
            failed++;
          }
        }
      }),
    );
    return { latencies, failed, elapsedS: (performance.now() - startedAt) / 1000 };
  };
  try {
    if (options.warmupS > 0) await run(options.warmupS);
    const serverBefore = serverCpu();
    const loadBefore = process.cpuUsage();
    const machineBefore = machineCpu();
    const { latencies, failed, elapsedS } = await run(options.durationS);
    const machineBusy = busyShare(machineBefore, machineCpu());
    const load = process.cpuUsage(loadBefore);
    return {
      rate: latencies.length / elapsedS,
      sent: latencies.length,
      failed,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      ...perUnit(serverBefore, serverCpu(), latencies.length),
      loadCpuMs: (load.user + load.system) / 1000 / latencies.length,
      machineBusy,
    };
  } finally {
    close();
  }
}
