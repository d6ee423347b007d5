// `npm run bench:instructions`: instructions a delivery, counted by callgrind (valgrind), for
// Roost, the limit of its design and bare Fastify (bench/baseline.ts). Rates and CPU times
// on a shared machine move by a third from one run to the next; the instructions a build
// executes for the same load move by a few percent (BENCHMARKS.md, "instructions a request,
// counted"), so a change worth more than that can be told here. Counted: user-space
// instructions of every thread of the server's process. Not counted: the kernel's work
// (sockets, WAL writes, fsync) and, on PostgreSQL, the database's processes.
//
//   npm run bench:instructions                          SQLite: bare Fastify, the limit, Roost
//   npm run bench:instructions -- --figures ingest,postgres,smtp
//   npm run bench:instructions -- --against REV         also REV's Roost, and this tree's over it
//   npm run bench:instructions -- --requests 10000 --warmup 5000 --runs 2 --servers limit,roost
//   npm run bench:instructions -- --keep DIR            keep callgrind's files, for callgrind_annotate
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createAddresses, JSON_HEADERS, MANY_CLIENTS, roostEnv, SMALL_EVENT, type BenchAddress } from './fixtures.js';
import { baselineInboxes } from './ingest.js';
import { fmt, hammer } from './load.js';
import {
  compileRevision,
  compileServers,
  kindsText,
  startChild,
  type BenchChild,
  type ChildOptions,
  type ThreadCpu,
} from './processes.js';
import { withBenchDatabase } from './postgres.js';
import { sendMessages } from './smtp.js';
import { SERVE_NODE_FLAGS } from '../src/node-flags.js';

const { values } = parseArgs({
  options: {
    figures: { type: 'string', default: 'ingest' },
    against: { type: 'string' },
    requests: { type: 'string', default: '10000' },
    warmup: { type: 'string', default: '5000' },
    runs: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    // Node flags for Roost's servers too, e.g. --node-args=--perf-basic-prof-only-functions
    // (V8 then writes /tmp/perf-PID.map, which names the JIT code callgrind shows as addresses,
    // and leaves its isolate-*.log files in the working directory, this repository's root).
    'node-args': { type: 'string' },
    // Which servers to count: bare (bare Fastify), limit, roost.
    servers: { type: 'string', default: 'bare,limit,roost' },
    // Keep callgrind's files (one a thread) there, for callgrind_annotate.
    keep: { type: 'string' },
  },
});
const FIGURES = ['ingest', 'postgres', 'smtp'] as const;
type Figure = (typeof FIGURES)[number];
const figures = values.figures.split(',') as Figure[];
for (const figure of figures)
  if (!FIGURES.includes(figure)) throw new Error(`--figures: ${figure} is not one of ${FIGURES.join(', ')}`);
const requests = Number(values.requests);
const warmup = Number(values.warmup);
const runs = Number(values.runs);
const connections = Number(values.connections);
const ADDRESSES = 1000;
/** SMTP: as `npm run bench` sends it (bench/run.ts), small text messages to 200 recipients over 10 connections. */
const SMTP = { recipients: 200, connections: 10 } as const;
const SERVERS = ['bare', 'limit', 'roost'];
const servers = new Set(values.servers.split(','));
for (const server of servers)
  if (!SERVERS.includes(server)) throw new Error(`--servers: ${server} is not one of ${SERVERS.join(', ')}`);

if (spawnSync('valgrind', ['--version']).status !== 0)
  throw new Error('valgrind is not installed (Debian: apt-get install valgrind)');

const work = values.keep ?? mkdtempSync(join(tmpdir(), 'roost-bench-instructions-'));
if (values.keep) mkdirSync(values.keep, { recursive: true });
let dbCount = 0;
const freshDb = () => join(work, `roost-${++dbCount}.db`);

/** Instructions by kind of thread (processes.ts ThreadCpu's kinds). */
type Counts = ThreadCpu;

/** A server to count: how to start it and which inboxes it answers. */
interface Server {
  label: string;
  entry: 'bench/server.ts' | 'bench/baseline.ts';
  /** Given a fresh PostgreSQL database's URL on that figure. */
  options(databaseUrl?: string): ChildOptions;
  /** Roost's inboxes (or return addresses) are made through its API; the baselines check none. */
  inboxes(child: BenchChild): Promise<BenchAddress[]>;
}

/** Sends `amount` deliveries of the figure to `child`: HTTP posts, or SMTP messages on `smtp`. */
async function deliver(name: Figure, child: BenchChild, inboxes: BenchAddress[], amount: number): Promise<void> {
  if (name === 'smtp') {
    if (child.smtpPort === null) throw new Error('the server has no SMTP port');
    const recipients = inboxes.map((inbox) => inbox.email);
    const { failed } = await sendMessages(child.smtpPort, recipients, { connections: SMTP.connections, amount });
    if (failed > 0) throw new Error(`${failed} messages of ${amount} were refused`);
    return;
  }
  const result = await hammer({
    url: child.url,
    paths: inboxes.map((inbox) => inbox.inboxPath),
    method: 'POST' as const,
    headers: JSON_HEADERS,
    body: SMALL_EVENT,
    connections,
    durationS: 0,
    amount,
  });
  if (result.errors + result.timeouts + result.non2xx > 0)
    throw new Error(`${result.errors + result.timeouts} errors, ${result.non2xx} not 2xx`);
}

/**
 * Runs `server` under callgrind with instrumentation off (far faster than counting) through
 * its start and `warmup` requests, so that the JIT has done its work; then counts the
 * instructions of `requests` more, by thread.
 */
async function count(name: Figure, server: Server, databaseUrl?: string): Promise<Counts> {
  const out = join(work, `callgrind-${++dbCount}-${server.label.replace(/\W+/g, '-')}`);
  const options = server.options(databaseUrl);
  const child = await startChild(server.entry, {
    ...options,
    wrapper: [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      '--separate-threads=yes',
      // V8 writes and rewrites machine code: valgrind must see every change to it.
      '--smc-check=all-non-file',
      `--callgrind-out-file=${out}.%p`,
      // Valgrind's own messages (its banner, a warning about brk) in a file, not in the report.
      `--log-file=${out}.log`,
    ],
    readyTimeoutMs: 300_000,
  });
  try {
    const inboxes = await server.inboxes(child);
    await deliver(name, child, inboxes, warmup);
    control(child.pid, '--instr=on');
    control(child.pid, '--zero');
    await deliver(name, child, inboxes, requests).catch((error: Error) => {
      throw new Error(`${server.label}: ${error.message}`);
    });
    control(child.pid, '--dump');
    return perRequest(threadCounts(child.pid, out), requests);
  } finally {
    await child.stop();
  }
}

function control(pid: number, command: string): void {
  const result = spawnSync('callgrind_control', [command, String(pid)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`callgrind_control ${command}: ${result.stdout}${result.stderr}`);
}

/**
 * The dump's instructions by kind of thread: callgrind numbers the main thread 1 (the event
 * loop); the thread that ran SQLite's statements is the writer; another thread that took
 * messages from a MessagePort is a worker, which in these servers is an email worker (or
 * the SMTP limit's parsing thread); the rest, counted as V8's helpers, are those (GC,
 * compiler) and libuv's pool.
 */
function threadCounts(pid: number, out: string): Counts {
  const counts: Counts = { eventLoop: 0, writer: 0, email: 0, workers: 0, v8: 0, other: 0 };
  const prefix = `${out.slice(out.lastIndexOf('/') + 1)}.${pid}.1-`;
  for (const file of readdirSync(work).filter((name) => name.startsWith(prefix))) {
    const text = readFileSync(join(work, file), 'utf8');
    const thread = Number(/^thread: (\d+)$/m.exec(text)?.[1]);
    const total = Number(/^(?:summary|totals): (\d+)$/m.exec(text)?.[1] ?? 0);
    const kind =
      thread === 1
        ? 'eventLoop'
        : / sqlite3_step$/m.test(text)
          ? 'writer'
          : /MessagePort::OnMessage/.test(text)
            ? 'email'
            : 'v8';
    counts[kind] += total;
  }
  return counts;
}

const perRequest = (counts: Counts, total: number): Counts =>
  Object.fromEntries(Object.entries(counts).map(([kind, n]) => [kind, n / total])) as unknown as Counts;
/**
 * A delivery's own work: the event loop, the writer and the email workers. V8's helpers (GC,
 * optimising compiles) are left out of the ratios: under valgrind the same work takes far
 * longer, so what V8 schedules by the clock comes oftener a request than natively
 * (BENCHMARKS.md, "instructions a request, counted").
 */
const own = (counts: Counts) => counts.eventLoop + counts.writer + counts.email;

const thousands = (n: number) => `${fmt(n / 1000)}k`;
const countsText = (counts: Counts) => kindsText(counts, thousands);

/** Counts `server` once, in a fresh process (and database); prints the count. */
async function countOnce(name: Figure, server: Server): Promise<Counts> {
  let counts: Counts;
  if (name !== 'postgres') counts = await count(name, server);
  else {
    const outcome = await withBenchDatabase((url) => count(name, server, url));
    if (!outcome.ok) throw new Error(`PostgreSQL: ${outcome.reason}`);
    counts = outcome.value;
  }
  console.log(
    `  ${server.label.padEnd(24)} ${thousands(own(counts)).padStart(6)} a ${name === 'smtp' ? 'message' : 'request'} (${countsText(counts)})`,
  );
  return counts;
}

/**
 * Counts each server `runs` times, the servers in turn and their order reversed every other
 * round (ABBA): what the clock drives comes oftener a request the busier the machine, so
 * each server meets the same minutes. Keeps each server's least count: work that lands in
 * one window and not another (a major GC) only adds.
 */
async function measure(name: Figure, list: Server[]): Promise<Counts[]> {
  const all = list.map(() => [] as Counts[]);
  for (let run = 1; run <= runs; run++) {
    const order = list.map((_, i) => i);
    if (run % 2 === 0) order.reverse();
    for (const i of order) all[i].push(await countOnce(name, list[i]));
  }
  return all.map((counts) => counts.reduce((least, c) => (own(c) < own(least) ? c : least)));
}

const roost = (name: Figure, label: string, tree?: string): Server => ({
  label,
  entry: 'bench/server.ts',
  options: (databaseUrl) => ({
    env: roostEnv(freshDb(), databaseUrl ? { DATABASE_URL: databaseUrl } : name === 'smtp' ? MANY_CLIENTS : {}),
    args: name === 'smtp' ? ['--smtp'] : [],
    nodeArgs: [...SERVE_NODE_FLAGS, ...(values['node-args'] ? values['node-args'].split(' ') : [])],
    tree,
  }),
  inboxes: (child) => createAddresses(child.url, name === 'smtp' ? SMTP.recipients : ADDRESSES),
});
/** The baselines' inboxes; for SMTP, recipients, which the sink and the limit take whatever they are. */
const bareInboxes = (name: Figure) => () =>
  Promise.resolve(
    name === 'smtp'
      ? baselineInboxes(SMTP.recipients).map((inbox, i) => ({ ...inbox, email: `r${i}@roost.test` }))
      : baselineInboxes(ADDRESSES),
  );
const TITLES: Record<Figure, string> = {
  ingest: `SQLite ingest: ${requests} requests counted after ${warmup}, ${connections} connections, ${ADDRESSES} inboxes`,
  postgres:
    "PostgreSQL ingest (the database's own processes not counted): " +
    `${requests} requests counted after ${warmup}, ${connections} connections, ${ADDRESSES} inboxes`,
  smtp:
    `SMTP ingest (SQLite): ${requests} messages counted after ${warmup}, ` +
    `${SMTP.connections} connections, ${SMTP.recipients} recipients`,
};

async function figure(name: Figure, revision: string | undefined, revisionTree: string | undefined): Promise<void> {
  console.log(TITLES[name]);
  const list: Array<[keyof typeof counted, Server]> = [];
  const counted: Partial<Record<'bare' | 'limit' | 'roost' | 'revision', Counts>> = {};
  if (name !== 'postgres' && servers.has('bare'))
    list.push([
      'bare',
      name === 'smtp'
        ? {
            label: 'the sink',
            entry: 'bench/baseline.ts',
            options: () => ({ args: ['--smtp'] }),
            inboxes: bareInboxes(name),
          }
        : { label: 'bare Fastify', entry: 'bench/baseline.ts', options: () => ({}), inboxes: bareInboxes(name) },
    ]);
  if (servers.has('limit'))
    list.push([
      'limit',
      {
        label: 'the limit of the design',
        entry: 'bench/baseline.ts',
        options: (databaseUrl) => ({
          args: [
            ...(name === 'smtp' ? ['--smtp'] : []),
            ...(databaseUrl ? ['--durable-postgres', databaseUrl] : ['--durable-sqlite', freshDb()]),
          ],
        }),
        inboxes: bareInboxes(name),
      },
    ]);
  if (servers.has('roost')) list.push(['roost', roost(name, 'Roost')]);
  if (revision) list.push(['revision', roost(name, `Roost at ${revision}`, revisionTree)]);
  const least = await measure(
    name,
    list.map(([, server]) => server),
  );
  list.forEach(([key], i) => (counted[key] = least[i]));
  const ratio = (a: Counts, b: Counts) => (own(a) / own(b)).toFixed(2);
  const lines: string[] = [];
  if (counted.roost && counted.limit)
    lines.push(`Roost ×${ratio(counted.roost, counted.limit)} the limit's instructions`);
  if (counted.limit && counted.bare)
    lines.push(`the limit ×${ratio(counted.limit, counted.bare)} ${name === 'smtp' ? "the sink's" : "bare Fastify's"}`);
  if (counted.roost && counted.revision)
    lines.push(`this tree ×${ratio(counted.roost, counted.revision)} ${revision}'s`);
  console.log(lines.length > 0 ? `  ${lines.join('; ')}\n` : '');
}

try {
  if (!compileServers()) throw new Error('the servers must compile to be counted');
  const revisionTree = values.against ? compileRevision(values.against) : undefined;
  for (const name of figures) await figure(name, values.against, revisionTree);
} finally {
  if (values.keep) console.log(`callgrind's files are in ${values.keep}: callgrind_annotate FILE`);
  else rmSync(work, { recursive: true, force: true });
}
