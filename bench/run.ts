// `npm run bench`: measures Roost against the limits of this machine and prints each
// figure with its ratio to a baseline measured in the same run (absolute numbers on a
// shared machine drift; ratios much less). Every server runs in its own child process.
//
//   npm run bench                     the full run (a few minutes on 2 cores)
//   npm run bench -- --quick          a smoke run of a few seconds per figure
//   npm run bench -- --only ingest,wake,polls,reading,smtp,prefilled,postgres
//   npm run bench -- --profile DIR    also write CPU profiles of Roost in each measured phase
//   npm run bench -- --only polls --heap-snapshots DIR   heap snapshots idle and holding the polls
//   npm run bench -- --no-references  ingest without its reference runs (LOG_LEVEL=warn, no group commit, NORMAL)
//   npm run bench -- --node-args=--max-semi-space-size=64   Roost's servers with these node flags too
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createAddresses, fill, MANY_CLIENTS, roostEnv, type BenchAddress } from './fixtures.js';
import { baselineInboxes, measureIngest } from './ingest.js';
import { measureHeldPolls, type HeldPollsResult } from './held-polls.js';
import { fmt, meanLoad, percentile, type LoadResult } from './load.js';
import { measureFsync } from './disk.js';
import { describeMachine, loadAverage } from './machine.js';
import {
  compileServers,
  cpuMark,
  cpuSince,
  startChild,
  threadsText,
  type BenchChild,
  type CpuMark,
} from './processes.js';
import { MATCHING_FILTER, measureReading, pagePaths, PAGE_SIZE, UNMATCHED_FILTER } from './reading.js';
import { prefill } from './prefill.js';
import { postgresCpuMark, postgresVersion, withBenchDatabase } from './postgres.js';
import { interleave, type InterleavedRatio } from './interleaved.js';
import { meanSmtp, measureSmtp, type SmtpResult } from './smtp.js';
import { measureWake } from './wake.js';
import { SERVE_NODE_FLAGS } from '../src/node-flags.js';
import { pgbouncerSkipReason, startPgBouncer } from '../test/helpers/pgbouncer.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    profile: { type: 'string' },
    'heap-snapshots': { type: 'string' },
    'no-references': { type: 'boolean', default: false },
    connections: { type: 'string', default: '50' },
    // Node flags for Roost's server processes only, e.g. --node-args=--max-semi-space-size=16.
    'node-args': { type: 'string' },
  },
});
// Roost runs with the flags npm start gives it, then any given here (the later win).
const roostNodeArgs = [...SERVE_NODE_FLAGS, ...(values['node-args'] ? values['node-args'].split(' ') : [])];
const quick = values.quick;
const connections = Number(values.connections);
const ALL = ['ingest', 'wake', 'polls', 'reading', 'smtp', 'prefilled', 'postgres'];

const only = new Set(values.only ? values.only.split(',') : ALL);
const timing = quick ? { durationS: 3, warmupS: 1 } : { durationS: 10, warmupS: 3 };
const INGEST_ADDRESSES = quick ? 200 : 1000;
/** PostgreSQL's light-load reference: few enough connections that most batches hold one delivery. */
const LIGHT_CONNECTIONS = 4;
const WAKE_TRIALS = quick ? 50 : 400;
const POLL_ADDRESSES = quick ? 200 : 1000;
const POLLS_PER_ADDRESS = 10;
const QUEUE_CAPACITY = 1000;
const SMTP_ADDRESSES = 200;
const SMTP_CONNECTIONS = 10;
const PREFILL = quick ? { addresses: 10_000, events: 100_000 } : { addresses: 100_000, events: 1_000_000 };
/** The interleaved ratio's slices (bench/interleaved.ts): how many of Roost's, and how long each. */
const SLICES = quick ? 3 : 8;
const slice = { durationS: 2, warmupS: 0 };
/** One slice of ingest load on a warm server: its rate. */
const ingestSlice = (url: string, addresses: BenchAddress[]) => async () =>
  (await measureIngest(url, addresses, { connections, ...slice })).rps;

/** Runs `phase`, recording a CPU profile of the Roost child meanwhile when --profile is given. */
async function profiled<T>(child: BenchChild, name: string, phase: () => Promise<T>): Promise<T> {
  if (!values.profile) return phase();
  mkdirSync(values.profile, { recursive: true });
  await child.ask({ type: 'profile-start' });
  try {
    return await phase();
  } finally {
    const file = resolve(values.profile, `${name}.cpuprofile`);
    await child.ask({ type: 'profile-stop', file });
    console.log(`  (CPU profile of this phase: ${file}; summarise with bench/profile-summary.ts)`);
  }
}
const work = mkdtempSync(join(tmpdir(), 'roost-bench-'));
let dbCount = 0;
const freshDb = () => join(work, `roost-${++dbCount}.db`);
const children: BenchChild[] = [];

async function start(entry: string, options: Parameters<typeof startChild>[1] = {}): Promise<BenchChild> {
  const nodeArgs = entry === 'bench/server.ts' ? roostNodeArgs : [];
  const child = await startChild(entry, { ...options, nodeArgs: [...nodeArgs, ...(options.nodeArgs ?? [])] });
  children.push(child);
  return child;
}
async function stop(child: BenchChild): Promise<void> {
  await child.stop();
  children.splice(children.indexOf(child), 1);
}

const lines: string[] = [];
function report(line: string): void {
  lines.push(line);
  console.log(line);
}
/** "  machine 82% busy" for a load line, or nothing where the machine's CPU could not be read. */
const busyText = (share: number) => (Number.isNaN(share) ? '' : `  machine ${fmt(100 * share)}% busy`);
function loadLine(label: string, r: LoadResult, unit = 'req/s', baseline?: LoadResult): string {
  const ratio = baseline ? `  ×${(r.rps / baseline.rps).toFixed(2)} of baseline` : '';
  const cpu = r.cpu ? `\n${''.padEnd(44)} ${r.cpu}` : '';
  return `${label.padEnd(44)} ${fmt(r.rps).padStart(8)} ${unit}  p50 ${fmt(r.p50, 1)} ms  p99 ${fmt(r.p99, 1)} ms  errors ${r.errors + r.timeouts}  non-2xx ${r.non2xx}${busyText(r.machineBusy)}${ratio}${cpu}`;
}

/** The headline ratio again, taken slice by slice in turn with its baseline (bench/interleaved.ts). */
function interleavedLine(r: InterleavedRatio, unit: string): string {
  const label = `interleaved: ${r.ratios.length} slices of ${slice.durationS} s each`;
  return (
    `${label.padEnd(44)} Roost ×${r.median.toFixed(2)} of baseline, the median slice (middle half ×${r.low.toFixed(2)}–${r.high.toFixed(2)})\n` +
    `${''.padEnd(44)} each slice, in turn: ${r.ratios.map((ratio) => ratio.toFixed(2)).join(' ')}; ` +
    `the median slice's rate: Roost ${fmt(r.roostRate)}, baseline ${fmt(r.baselineRate)} ${unit}`
  );
}

/**
 * The baseline a headline ratio is taken against: the mean of a run just before the Roost
 * run and one just after, because the machine's speed drifts from one minute to the next.
 * How far apart the two were is printed with it: the margin of that ratio.
 */
async function bracketed<T>(
  before: T,
  again: () => Promise<T>,
  how: { line: (label: string, r: T) => string; mean: (a: T, b: T) => T; rate: (r: T) => number },
): Promise<T> {
  const after = await again();
  report(how.line('baseline again, after that Roost run', after));
  const [low, high] = [how.rate(before), how.rate(after)].sort((a, b) => a - b);
  const mean = how.mean(before, after);
  report(how.line(`baseline: the mean of both runs (${fmt((100 * (high - low)) / low)}% apart)`, mean));
  return mean;
}
const httpBracket = (unit: string) => ({
  line: (label: string, r: LoadResult) => loadLine(label, r, unit),
  mean: meanLoad,
  rate: (r: LoadResult) => r.rps,
});

function heldBaselineLine(label: string, held: HeldPollsResult): string {
  const perPoll = ((held.rssHoldingMiB - held.rssIdleMiB) * 1024) / held.polls;
  return `${label.padEnd(44)} RSS ${fmt(held.rssIdleMiB, 1)} → ${fmt(held.rssHoldingMiB, 1)} MiB (${fmt(perPoll, 1)} KiB per poll); all answered ${fmt(held.allWokenMs)} ms after the first send, wrong answers ${held.wrong}`;
}

interface CommitStats {
  commits: number;
  appends: number;
  largestBatch: number;
  busyMs: number;
}
const commitsOf = async (child: BenchChild) => (await child.ask<{ commits: CommitStats }>({ type: 'stats' })).commits;
function batchLine(before: CommitStats, after: CommitStats, wallMs: number, cpu: string): string {
  const commits = after.commits - before.commits;
  const appends = after.appends - before.appends;
  const busy = after.busyMs - before.busyMs;
  // CPU a request, the server's by kind of thread and the load generator's: what each asks
  // of the two cores they share, whatever rate the cores allowed.
  return (
    `${''.padEnd(44)} ${fmt(appends / commits, 1)} appends per commit (largest ${after.largestBatch}); ` +
    `each commit ${fmt(busy / commits, 2)} ms; the writer thread in commits ${fmt((100 * busy) / wallMs)}% of the time\n` +
    `${''.padEnd(44)} ${cpu}`
  );
}

/** CPU a request since `mark`: the server's by kind of thread, and this process's (the load generator). */
function cpuLine(child: BenchChild, mark: CpuMark, requests: number): string {
  const { server, loadUs } = cpuSince(child, mark, requests);
  return `CPU a request: server ${fmt(server.serverCpuMs * 1000)} µs (${threadsText(server)}); load generator ${fmt(loadUs)} µs`;
}

/** `baseline` is asked for after the measurement (so that it may measure the baseline again). */
async function roostIngest(
  label: string,
  args: string[],
  baseline: () => Promise<LoadResult | undefined>,
  options: { profile?: string; env?: Record<string, string>; interleaveWith?: () => Promise<number> } = {},
): Promise<LoadResult> {
  const roost = await start('bench/server.ts', { env: roostEnv(freshDb(), options.env), args });
  try {
    const addresses = await createAddresses(roost.url, INGEST_ADDRESSES);
    let before: CommitStats | undefined;
    let startedAt = 0;
    let mark: CpuMark | undefined;
    const measure = () =>
      measureIngest(roost.url, addresses, { connections, ...timing }, async () => {
        before = await commitsOf(roost);
        startedAt = Date.now();
        mark = cpuMark(roost);
      });
    const result = options.profile ? await profiled(roost, options.profile, measure) : await measure();
    const cpu = cpuLine(roost, mark!, result.total);
    const after = await commitsOf(roost);
    const batch = batchLine(before!, after, Date.now() - startedAt, cpu);
    const base = await baseline();
    const inTurn =
      options.interleaveWith && (await interleave(SLICES, options.interleaveWith, ingestSlice(roost.url, addresses)));
    await stop(roost);
    report(loadLine(label, result, 'req/s', base));
    report(batch);
    if (inTurn) report(interleavedLine(inTurn, 'req/s'));
    return result;
  } finally {
    if (children.includes(roost)) await stop(roost);
  }
}

/**
 * The limit of Roost's design on this machine: bare Fastify answering 202 once each
 * delivery is committed the way Roost's engine commits, and nothing else (bench/durable.ts),
 * and Roost's rate against it — what Roost's own work costs beyond the database's wait.
 */
async function durableLimit(
  label: string,
  args: string[],
  roost: LoadResult,
  bare: LoadResult,
  postgres = false,
): Promise<void> {
  const limit = await start('bench/baseline.ts', { args });
  try {
    let mark: CpuMark | undefined;
    let postgresMark: ReturnType<typeof postgresCpuMark> | undefined;
    const result = await measureIngest(
      limit.url,
      baselineInboxes(INGEST_ADDRESSES),
      { connections, ...timing },
      async () => {
        mark = cpuMark(limit);
        if (postgres) postgresMark = postgresCpuMark();
      },
    );
    const postgresUs = postgresMark ? `; PostgreSQL's processes ${fmt(postgresMark.usPerUnit(result.total))} µs` : '';
    report(loadLine(label, { ...result, cpu: cpuLine(limit, mark!, result.total) + postgresUs }, 'req/s', bare));
    report(`${''.padEnd(44)} Roost ×${(roost.rps / result.rps).toFixed(2)} of this limit`);
  } finally {
    await stop(limit);
  }
}

/**
 * Roost on the database of `url` through PgBouncer in transaction pooling, as many instances
 * share one database (docs/scale-out.md, PgBouncer): every statement unnamed, every lone one
 * in a transaction of its own; LISTEN goes direct. Why not, when PgBouncer is not here.
 */
async function throughPooler(
  url: string,
  measure: (server: BenchChild) => Promise<LoadResult>,
): Promise<LoadResult | string> {
  if (pgbouncerSkipReason) return pgbouncerSkipReason;
  const bouncer = await startPgBouncer('transaction', url);
  try {
    const env = { DATABASE_URL: bouncer.through(url), ROOST_PG_LISTEN_URL: url };
    const roost = await start('bench/server.ts', { env: roostEnv(freshDb(), env) });
    try {
      return await measure(roost);
    } finally {
      await stop(roost);
    }
  } finally {
    await bouncer.stop();
  }
}

/** The reading figure on a Roost that keeps no event from one read to the next. */
async function readCold(): Promise<LoadResult> {
  const roost = await start('bench/server.ts', {
    env: roostEnv(freshDb(), MANY_CLIENTS),
    args: ['--recent-event-bytes', '0'],
  });
  try {
    const [address] = await createAddresses(roost.url, 1);
    await fill(roost.url, address, QUEUE_CAPACITY);
    return await profiled(roost, 'reading-cold', () =>
      measureReading(roost.url, address, pagePaths(address, QUEUE_CAPACITY), { connections, ...timing }),
    );
  } finally {
    await stop(roost);
  }
}

async function main(): Promise<void> {
  const js = compileServers();
  report(`Roost benchmarks — ${describeMachine()}`);
  report(
    `servers run as ${js ? 'compiled JavaScript (as npm start)' : 'TypeScript through tsx (compiling failed)'}, each in its own process${roostNodeArgs.length ? `; Roost with node ${roostNodeArgs.join(' ')}` : ''}`,
  );
  report(
    `load average at start: ${loadAverage()}; ${connections} connections; ${timing.durationS} s per figure after ${timing.warmupS} s warm-up${quick ? ' (quick run)' : ''}`,
  );
  const fsync = measureFsync(work);
  report(
    `disk: 4 KiB append + fdatasync p50 ${fmt(fsync.p50, 2)} ms, p99 ${fmt(fsync.p99, 2)} ms (at most ~${fmt(1000 / fsync.p50)} durable commits/s)`,
  );
  report('');
  const baseline = await start('bench/baseline.ts', { args: only.has('smtp') ? ['--smtp'] : [] });

  let bare: LoadResult | undefined;
  // With its CPU a request, to set beside Roost's: unlike the rate, it leaves out what a
  // request waits for.
  const measureBare = async (clients = connections): Promise<LoadResult> => {
    let mark: CpuMark | undefined;
    const result = await measureIngest(
      baseline.url,
      baselineInboxes(INGEST_ADDRESSES),
      { connections: clients, ...timing },
      async () => void (mark = cpuMark(baseline)),
    );
    return { ...result, cpu: cpuLine(baseline, mark!, result.total) };
  };
  const bareSlice = ingestSlice(baseline.url, baselineInboxes(INGEST_ADDRESSES));
  if (only.has('ingest') || only.has('prefilled')) {
    report(`Ingest: small JSON deliveries rotating across ${INGEST_ADDRESSES} inbox URLs`);
    bare = await measureBare();
    report(loadLine('baseline: bare Fastify, parse + 202', bare));
  }
  const bareSoFar = async () => bare;
  if (only.has('ingest')) {
    // The bare baseline, CPU-bound with the load generator on the same cores, varied by up
    // to ±10% from one run to the next here, where Roost's figure varied by ±4%.
    const roostFull = await roostIngest(
      'Roost, synchronous=FULL, group commit',
      [],
      async () => (bare = await bracketed(bare!, measureBare, httpBracket('req/s'))),
      { profile: 'ingest', interleaveWith: bareSlice },
    );
    await durableLimit('limit: bare Fastify + group commit, FULL', ['--durable-sqlite', freshDb()], roostFull, bare!);
    if (!values['no-references'])
      await roostIngest('reference: the same at LOG_LEVEL=warn', [], bareSoFar, { env: { LOG_LEVEL: 'warn' } });
    if (!values['no-references'])
      await roostIngest('reference: FULL, one commit per request', ['--group-commit', 'off'], bareSoFar);
    if (!values['no-references'])
      await roostIngest('reference: synchronous=NORMAL, group commit', ['--synchronous', 'NORMAL'], bareSoFar);
    report('');
  }

  if (only.has('prefilled')) {
    const path = freshDb();
    const filled = await prefill(path, PREFILL.addresses, PREFILL.events, INGEST_ADDRESSES);
    report(
      `Ingest into a large database: ${fmt(PREFILL.addresses)} addresses, ${fmt(PREFILL.events)} events (${fmt(filled.fileMiB)} MiB, written in ${fmt(filled.seconds)} s)`,
    );
    const roost = await start('bench/server.ts', { env: roostEnv(path) });
    try {
      let before: CommitStats | undefined;
      let startedAt = 0;
      let mark: CpuMark | undefined;
      const result = await measureIngest(roost.url, filled.sample, { connections, ...timing }, async () => {
        before = await commitsOf(roost);
        startedAt = Date.now();
        mark = cpuMark(roost);
      });
      const cpu = cpuLine(roost, mark!, result.total);
      report(loadLine(`Roost, FULL, ${filled.sample.length} of its addresses`, result, 'req/s', bare));
      report(batchLine(before!, await commitsOf(roost), Date.now() - startedAt, cpu));
    } finally {
      await stop(roost);
    }
    report('');
  }

  if (only.has('postgres')) {
    // The scale-out engine on this machine: the appends of each moment in one statement (the
    // addresses' rows locked), the wake-ups announced after its commit (BENCHMARKS.md).
    report(`PostgreSQL: small JSON deliveries rotating across ${INGEST_ADDRESSES} inbox URLs, one instance`);
    const outcome = await withBenchDatabase(async (url) => {
      const roost = await start('bench/server.ts', { env: roostEnv(freshDb(), { DATABASE_URL: url }) });
      try {
        const addresses = await createAddresses(roost.url, INGEST_ADDRESSES);
        /** Roost's ingest at `clients` connections, with its CPU and PostgreSQL's processes' a request. */
        const measure = async (clients: number, server = roost): Promise<LoadResult> => {
          let mark: CpuMark | undefined;
          let postgresMark: ReturnType<typeof postgresCpuMark> | undefined;
          const result = await measureIngest(server.url, addresses, { connections: clients, ...timing }, async () => {
            mark = cpuMark(server);
            postgresMark = postgresCpuMark();
          });
          const postgresUs = postgresMark!.usPerUnit(result.total);
          return {
            ...result,
            cpu: `${cpuLine(server, mark!, result.total)}; PostgreSQL's processes ${fmt(postgresUs)} µs`,
          };
        };
        // First a light load, as a service starts, where a batch holds one or two deliveries:
        // what each costs the database when batches do not share it, and whether the
        // connections that served it still plan well under the load that follows
        // (BENCHMARKS.md, "planned at every call").
        const light = await measure(LIGHT_CONNECTIONS);
        const lightBase = await measureBare(LIGHT_CONNECTIONS);
        const before = await measureBare();
        report(loadLine('baseline: bare Fastify, parse + 202', before));
        const result = await profiled(roost, 'postgres', () => measure(connections));
        const base = await bracketed(before, measureBare, httpBracket('req/s'));
        const inTurn = await interleave(SLICES, bareSlice, ingestSlice(roost.url, addresses));
        await stop(roost);
        const pooled = await throughPooler(url, (server) => measure(connections, server));
        return { result, inTurn, base, light, lightBase, pooled };
      } finally {
        if (children.includes(roost)) await stop(roost);
      }
    });
    if (outcome.ok) {
      const { result, inTurn, base, light, lightBase, pooled } = outcome.value;
      const version = (await postgresVersion()).split(' ')[0];
      report(loadLine(`Roost on PostgreSQL ${version}, same machine`, result, 'req/s', base));
      report(interleavedLine(inTurn, 'req/s'));
      report(loadLine(`reference: ${LIGHT_CONNECTIONS} connections`, light, 'req/s', lightBase));
      report(`${''.padEnd(44)} bare Fastify at ${LIGHT_CONNECTIONS} connections: ${fmt(lightBase.rps)} req/s`);
      if (typeof pooled === 'string') report(`reference: via PgBouncer: skipped, ${pooled}`);
      else report(loadLine('reference: via PgBouncer, transaction mode', pooled, 'req/s', base));
      await withBenchDatabase((url) =>
        durableLimit('limit: bare Fastify + batched INSERTs', ['--durable-postgres', url], result, base, true),
      );
    } else report(`Roost on PostgreSQL: skipped, ${outcome.reason}`);
    report('');
  }

  const needsRoost = ['wake', 'polls', 'reading'].some((s) => only.has(s));
  if (needsRoost) {
    const roost = await start('bench/server.ts', { env: roostEnv(freshDb(), MANY_CLIENTS) });
    try {
      if (only.has('wake')) {
        const [address] = await createAddresses(roost.url, 1);
        const wake = await profiled(roost, 'wake', () => measureWake(roost, address, WAKE_TRIALS));
        report(`Wake latency, ${WAKE_TRIALS} sequential trials (poll held with wait=25, then one delivery)`);
        report(
          `${'from the 202 to the poll answer'.padEnd(44)} p50 ${fmt(percentile(wake.fromAccepted, 50), 2)} ms  p99 ${fmt(percentile(wake.fromAccepted, 99), 2)} ms  max ${fmt(Math.max(...wake.fromAccepted), 2)} ms`,
        );
        report(
          `${'from sending the delivery to the poll answer'.padEnd(44)} p50 ${fmt(percentile(wake.fromSent, 50), 2)} ms  p99 ${fmt(percentile(wake.fromSent, 99), 2)} ms  (contract: well under 50 ms)`,
        );
        report('');
        // The same with a filter: each trial's first delivery does not match, and the poll sleeps through it.
        const [filteredAddress] = await createAddresses(roost.url, 1);
        const filtered = await profiled(roost, 'wake-filtered', () =>
          measureWake(roost, filteredAddress, WAKE_TRIALS, {
            query: `type=bench.match&data_contains=${encodeURIComponent('{"ok":true}')}`,
            noise: JSON.stringify({ type: 'bench.noise', data: { ok: true } }),
            event: JSON.stringify({ type: 'bench.match', data: { ok: true, job: 'build-1234' } }),
          }),
        );
        report(`Filtered wake latency, ${WAKE_TRIALS} trials (type + data_contains; one unmatched delivery first)`);
        report(
          `${'from the 202 to the poll answer'.padEnd(44)} p50 ${fmt(percentile(filtered.fromAccepted, 50), 2)} ms  p99 ${fmt(percentile(filtered.fromAccepted, 99), 2)} ms  max ${fmt(Math.max(...filtered.fromAccepted), 2)} ms`,
        );
        report('');
      }
      if (only.has('polls')) {
        const addresses = await createAddresses(roost.url, POLL_ADDRESSES);
        const snapshotDir = values['heap-snapshots'];
        if (snapshotDir) mkdirSync(snapshotDir, { recursive: true });
        const held = await measureHeldPolls(
          roost,
          addresses,
          POLLS_PER_ADDRESS,
          (phase) => profiled(roost, 'wake-all', phase),
          snapshotDir
            ? { idle: resolve(snapshotDir, 'idle.heapsnapshot'), holding: resolve(snapshotDir, 'holding.heapsnapshot') }
            : undefined,
        );
        if (snapshotDir)
          report(
            `  (heap snapshots in ${snapshotDir}: node --import tsx bench/heap-summary.ts holding.heapsnapshot idle.heapsnapshot --per ${POLL_ADDRESSES * POLLS_PER_ADDRESS})`,
          );
        report(`Held long-polls: ${fmt(held.polls)} at once across ${POLL_ADDRESSES} addresses (one socket each)`);
        // The same polls held by bare Fastify in memory (no storage, logger or checks): what
        // a socket, a request and a promise cost on this Node, and how fast it answers them.
        const bareHeld = await measureHeldPolls(baseline, baselineInboxes(POLL_ADDRESSES), POLLS_PER_ADDRESS);
        report(heldBaselineLine('baseline: bare Fastify holding them', bareHeld));
        // Node's HTTP server alone, no framework: the floor of any server built on node:http.
        const nodeHttp = await start('bench/baseline.ts', { args: ['--node-http'] });
        try {
          const floor = await measureHeldPolls(nodeHttp, baselineInboxes(POLL_ADDRESSES), POLLS_PER_ADDRESS);
          report(heldBaselineLine('floor: bare node:http holding them', floor));
        } finally {
          await stop(nodeHttp);
        }
        report(`${'opened and registered in'.padEnd(44)} ${fmt(held.openS, 2)} s`);
        report(
          `${'server RSS idle → holding'.padEnd(44)} ${fmt(held.rssIdleMiB, 1)} MiB → ${fmt(held.rssHoldingMiB, 1)} MiB (${fmt(((held.rssHoldingMiB - held.rssIdleMiB) * 1024) / held.polls, 1)} KiB per poll)`,
        );
        const grew = (pick: (m: typeof held.memoryIdle) => number) =>
          fmt((pick(held.memoryHolding) - pick(held.memoryIdle)) / held.polls / 1024, 1);
        const spaces = Object.keys(held.memoryHolding.spaces)
          .map((name) => ({ name, kib: grew((m) => m.spaces[name]?.size ?? 0) }))
          .filter((s) => s.kib !== '0.0');
        report(
          `${'  of which, per poll'.padEnd(44)} V8 heap committed ${grew((m) => m.heapTotal)} KiB (live ${grew((m) => m.heapUsed)} KiB; ${spaces.map((s) => `${s.name} ${s.kib}`).join(', ')}), external ${grew((m) => m.external)} KiB, the rest (native: sockets, parsers, allocator) ${fmt(((held.rssHoldingMiB - held.rssIdleMiB) * 1024) / held.polls - (held.memoryHolding.heapTotal - held.memoryIdle.heapTotal + held.memoryHolding.external - held.memoryIdle.external) / held.polls / 1024, 1)} KiB`,
        );
        report(
          `${'one delivery per address: all polls answered'.padEnd(44)} ${fmt(held.allWokenMs)} ms after the first send (deliveries took ${fmt(held.deliveriesMs)} ms)`,
        );
        report(
          `${'per poll, from its delivery’s 202'.padEnd(44)} p50 ${fmt(held.p50Ms, 1)} ms  p99 ${fmt(held.p99Ms, 1)} ms  max ${fmt(held.maxMs, 1)} ms  wrong answers ${held.wrong}`,
        );
        report('');
      }
      if (only.has('reading')) {
        const [address] = await createAddresses(roost.url, 1);
        await fill(roost.url, address, QUEUE_CAPACITY);
        const paths = pagePaths(address, QUEUE_CAPACITY);
        const page = await fetch(roost.url + paths[0], {
          headers: { authorization: `Bearer ${address.readToken}` },
        }).then((r) => r.json());
        await baseline.ask({ type: 'page', page });
        report(`Reading: pages of ${PAGE_SIZE} events (GET …/events?after=…&limit=${PAGE_SIZE}) from a full queue`);
        const bareBefore = await measureReading(baseline.url, address, paths, { connections, ...timing });
        report(loadLine('baseline: bare Fastify, same page from memory', bareBefore, 'pages/s'));
        const read = await profiled(roost, 'reading', () =>
          measureReading(roost.url, address, paths, { connections, ...timing }),
        );
        const bare = await bracketed(
          bareBefore,
          () => measureReading(baseline.url, address, paths, { connections, ...timing }),
          httpBracket('pages/s'),
        );
        const readingSlice = (url: string) => async () =>
          (await measureReading(url, address, paths, { connections, ...slice })).rps;
        const inTurn = await interleave(SLICES, readingSlice(baseline.url), readingSlice(roost.url));
        report(loadLine('Roost', read, 'pages/s', bare));
        report(`${''.padEnd(44)} = ${fmt(read.rps * PAGE_SIZE)} events/s`);
        report(interleavedLine(inTurn, 'pages/s'));
        // The pages above are read again and again, so their events' text is kept from the
        // first read (src/storage/sqlite/recent-events.ts); here nothing is kept, as for a
        // reader going through events no one has read lately.
        const cold = await readCold();
        report(loadLine('Roost, nothing kept from earlier reads', cold, 'pages/s', bare));
        report('');
        // Filtered: every event matches (the same pages, each event tested), then none does
        // (each request scans ROOST_FILTER_SCAN_EVENTS events and answers an empty page).
        const matching = await profiled(roost, 'reading-filtered', () =>
          measureReading(roost.url, address, pagePaths(address, QUEUE_CAPACITY, MATCHING_FILTER), {
            connections,
            ...timing,
          }),
        );
        report(`Filtered reading (${decodeURIComponent(MATCHING_FILTER)}), ratios to Roost unfiltered`);
        report(loadLine('Roost, every event matching', matching, 'pages/s', read));
        const unmatched = await measureReading(
          roost.url,
          address,
          pagePaths(address, QUEUE_CAPACITY, UNMATCHED_FILTER),
          {
            connections,
            ...timing,
          },
        );
        report(loadLine('Roost, none matching (a bounded scan each)', unmatched, 'pages/s', read));
        report('');
      }
    } finally {
      await stop(roost);
    }
  }

  if (only.has('smtp')) {
    const roost = await start('bench/server.ts', { env: roostEnv(freshDb(), MANY_CLIENTS), args: ['--smtp'] });
    try {
      if (roost.smtpPort === null || baseline.smtpPort === null) throw new Error('an SMTP server did not start');
      const addresses = await createAddresses(roost.url, SMTP_ADDRESSES);
      const recipients = addresses.map((a) => a.email);
      // CPU a message beside the rate: with the load generator on the same two cores, the
      // rate is what the cores allow, and CPU a message is what each server asks of them.
      const smtpLine = (label: string, r: SmtpResult, base?: SmtpResult) =>
        `${label.padEnd(44)} ${fmt(r.rate).padStart(8)} msg/s  p50 ${fmt(r.p50, 1)} ms  p99 ${fmt(r.p99, 1)} ms  failed ${r.failed}` +
        busyText(r.machineBusy) +
        (base ? `  ×${(r.rate / base.rate).toFixed(2)} of baseline` : '') +
        `\n${''.padEnd(44)} CPU a message: server ${fmt(r.serverCpuMs, 2)} ms (${threadsText(r)}), load generator ${fmt(r.loadCpuMs, 2)} ms`;
      report(
        `SMTP ingest: small text messages over ${SMTP_CONNECTIONS} pooled connections to ${SMTP_ADDRESSES} recipients`,
      );
      const bare = await measureSmtp(baseline.smtpPort, recipients, { connections: SMTP_CONNECTIONS, ...timing }, () =>
        baseline.threadCpuMs(),
      );
      report(smtpLine('baseline: smtp-server + mailparser, dropped', bare));
      const mail = await profiled(roost, 'smtp', () =>
        measureSmtp(roost.smtpPort!, recipients, { connections: SMTP_CONNECTIONS, ...timing }, () =>
          roost.threadCpuMs(),
        ),
      );
      const smtpSlice = (server: BenchChild) => async () =>
        (
          await measureSmtp(server.smtpPort!, recipients, { connections: SMTP_CONNECTIONS, ...slice }, () =>
            server.threadCpuMs(),
          )
        ).rate;
      const sink = await bracketed(
        bare,
        () =>
          measureSmtp(baseline.smtpPort!, recipients, { connections: SMTP_CONNECTIONS, ...timing }, () =>
            baseline.threadCpuMs(),
          ),
        { line: (label, r) => smtpLine(label, r), mean: meanSmtp, rate: (r) => r.rate },
      );
      const inTurn = await interleave(SLICES, smtpSlice(baseline), smtpSlice(roost));
      report(smtpLine('Roost (stored durably before 250)', mail, sink));
      report(interleavedLine(inTurn, 'msg/s'));
      // The limit of the design (bench/smtp-sink.ts): parsed off the event loop, committed before 250.
      const limit = await start('bench/baseline.ts', { args: ['--smtp', '--durable-sqlite', freshDb()] });
      try {
        const bound = await measureSmtp(limit.smtpPort!, recipients, { connections: SMTP_CONNECTIONS, ...timing }, () =>
          limit.threadCpuMs(),
        );
        report(smtpLine('limit: the sink, parsing in 2 threads, commit', bound, sink));
        report(`${''.padEnd(44)} Roost ×${(mail.rate / bound.rate).toFixed(2)} of this limit`);
      } finally {
        await stop(limit);
      }
      // The 250s were real: the messages are in the queues as email events.
      const page = await fetch(`${roost.url}${addresses[0].eventsPath}?limit=1`, {
        headers: { authorization: `Bearer ${addresses[0].readToken}` },
      }).then((r) => r.json() as Promise<{ events?: Array<{ type: string }> }>);
      if (page.events?.[0]?.type !== 'email.received')
        throw new Error(`no email event stored: ${JSON.stringify(page).slice(0, 300)}`);
      report('');
    } finally {
      await stop(roost);
    }
  }

  report(`load average at end: ${loadAverage()}`);
}

try {
  await main();
} finally {
  for (const child of [...children]) await child.stop().catch(() => {});
  rmSync(work, { recursive: true, force: true });
}
