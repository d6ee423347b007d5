// `npm run bench:compare -- REV`: this tree's servers against those of another commit, on
// the figures that wait on a commit (SQLite ingest, PostgreSQL ingest, SMTP), run
// alternately in one process — REV, this tree, this tree, REV, … — so that both variants
// meet the same minutes of a machine whose speed drifts. What it prints is this tree's rate
// over REV's, pair by pair, and each variant's CPU a unit of work beside its rate
// (BENCHMARKS.md, "How it runs").
//
//   npm run bench:compare -- HEAD~1                    SQLite ingest, 4 pairs
//   npm run bench:compare -- main --figures ingest,postgres,smtp --pairs 6
//
// REV's src/ and bench/ are compiled with this tree's node_modules: a commit that changed
// dependencies is measured with today's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createAddresses, MANY_CLIENTS, roostEnv, type BenchAddress } from './fixtures.js';
import { measureIngest } from './ingest.js';
import { fmt } from './load.js';
import { describeMachine, loadAverage } from './machine.js';
import { postgresCpuMark, withBenchDatabase } from './postgres.js';
import {
  compileRevision,
  compileServers,
  cpuMark,
  cpuSince,
  startChild,
  threadsText,
  type BenchChild,
  type CpuPerUnit,
} from './processes.js';
import { measureSmtp } from './smtp.js';
import { SERVE_NODE_FLAGS } from '../src/node-flags.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    figures: { type: 'string', default: 'ingest' },
    pairs: { type: 'string', default: '4' },
    quick: { type: 'boolean', default: false },
  },
});
const revision = positionals[0];
const FIGURES = ['ingest', 'postgres', 'smtp'] as const;
type Figure = (typeof FIGURES)[number];
const figures = values.figures.split(',') as Figure[];
const pairs = Number(values.pairs);
if (!revision || figures.some((f) => !FIGURES.includes(f)) || !(pairs >= 1)) {
  console.error(`usage: npm run bench:compare -- REV [--figures ${FIGURES.join(',')}] [--pairs N] [--quick]`);
  process.exit(2);
}
const timing = values.quick ? { durationS: 3, warmupS: 1 } : { durationS: 10, warmupS: 3 };
const CONNECTIONS = { ingest: 50, postgres: 50, smtp: 10 };
const ADDRESSES = { ingest: 1000, postgres: 1000, smtp: 200 };

interface Variant {
  label: string;
  /** Compiled servers (processes.ts ChildOptions.tree). */
  tree?: string;
}

/** One measured run of one variant: its rate and what it cost a unit of work. */
interface Run {
  rate: number;
  p99: number;
  server: CpuPerUnit;
  /** The load generator's CPU a unit, in µs. */
  loadUs: number;
  /** On PostgreSQL, its processes' CPU a unit, in µs (postgres.ts postgresCpuMark). */
  postgresUs?: number;
}

const work = mkdtempSync(join(tmpdir(), 'roost-bench-compare-'));
let dbCount = 0;

/** Measures `variant` once on `figure`; on PostgreSQL in a database of its own, which it migrates as in production. */
async function measure(figure: Figure, variant: Variant): Promise<Run> {
  if (figure !== 'postgres') return measureOnce(figure, variant);
  const outcome = await withBenchDatabase((url) => measureOnce(figure, variant, url));
  if (!outcome.ok) throw new Error(`PostgreSQL: ${outcome.reason}`);
  return outcome.value;
}

/** Starts `variant`'s Roost for `figure`, measures it once, stops it. */
async function measureOnce(figure: Figure, variant: Variant, databaseUrl?: string): Promise<Run> {
  const env = roostEnv(join(work, `roost-${++dbCount}.db`), {
    ...(figure === 'smtp' ? MANY_CLIENTS : {}),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  const roost = await startChild('bench/server.ts', {
    env,
    args: figure === 'smtp' ? ['--smtp'] : [],
    nodeArgs: [...SERVE_NODE_FLAGS],
    tree: variant.tree,
  });
  try {
    const addresses = await createAddresses(roost.url, ADDRESSES[figure]);
    return figure === 'smtp' ? await measureMail(roost, addresses) : await measureHttp(roost, addresses, figure);
  } finally {
    await roost.stop();
  }
}

async function measureHttp(roost: BenchChild, addresses: BenchAddress[], figure: Figure): Promise<Run> {
  let mark = cpuMark(roost);
  let postgresMark: ReturnType<typeof postgresCpuMark> | undefined;
  const result = await measureIngest(
    roost.url,
    addresses,
    { connections: CONNECTIONS[figure], ...timing },
    async () => {
      mark = cpuMark(roost);
      if (figure === 'postgres') postgresMark = postgresCpuMark();
    },
  );
  const postgresUs = postgresMark?.usPerUnit(result.total);
  return { rate: result.rps, p99: result.p99, ...cpuSince(roost, mark, result.total), postgresUs };
}

async function measureMail(roost: BenchChild, addresses: BenchAddress[]): Promise<Run> {
  const recipients = addresses.map((a) => a.email);
  const mail = await measureSmtp(roost.smtpPort!, recipients, { connections: CONNECTIONS.smtp, ...timing }, () =>
    roost.threadCpuMs(),
  );
  if (mail.failed > 0) throw new Error(`${mail.failed} messages failed`);
  return { rate: mail.rate, p99: mail.p99, server: mail, loadUs: mail.loadCpuMs * 1000 };
}

const unit = (figure: Figure) => (figure === 'smtp' ? 'msg/s' : 'req/s');
const runLine = (figure: Figure, label: string, run: Run) =>
  `  ${label.padEnd(14)} ${fmt(run.rate).padStart(7)} ${unit(figure)}  p99 ${fmt(run.p99, 1)} ms  ` +
  `CPU a ${figure === 'smtp' ? 'message' : 'request'}: server ${fmt(run.server.serverCpuMs * 1000)} µs (${threadsText(run.server)}); load generator ${fmt(run.loadUs)} µs` +
  (run.postgresUs === undefined ? '' : `; PostgreSQL's processes ${fmt(run.postgresUs)} µs`);
const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
const range = (xs: number[], digits: number) =>
  `${fmt(mean(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;

async function compare(figure: Figure, variants: [Variant, Variant]): Promise<void> {
  const [before, after] = variants;
  console.log(
    `${figure}: ${pairs} pair${pairs === 1 ? '' : 's'}, ${CONNECTIONS[figure]} connections, ${timing.durationS} s a run`,
  );
  const runs = new Map<Variant, Run[]>([
    [before, []],
    [after, []],
  ]);
  for (let pair = 1; pair <= pairs; pair++) {
    // ABBA: neither variant always runs first, on a machine that warms or cools.
    const order = pair % 2 === 1 ? [before, after] : [after, before];
    for (const variant of order) {
      const run = await measure(figure, variant);
      runs.get(variant)!.push(run);
      console.log(runLine(figure, `${pair} ${variant.label}`, run));
    }
  }
  const a = runs.get(before)!;
  const b = runs.get(after)!;
  const ratios = b.map((run, i) => run.rate / a[i].rate);
  const faster = ratios.filter((r) => r > 1).length;
  console.log(
    `  ${after.label} / ${before.label}, pair by pair: ${ratios.map((r) => r.toFixed(2)).join(' ')}; ` +
      `mean ×${range(ratios, 2)}; faster in ${faster} of ${pairs} pairs` +
      // A sign test: with no difference, every pair falls the same way with odds 2 in 2^pairs.
      (faster === 0 || faster === pairs ? '' : ' (pairs on both sides of 1: no difference measured)'),
  );
  for (const [variant, list] of runs) {
    const us = (pick: (run: Run) => number) =>
      range(
        list.map((run) => pick(run) * 1000),
        0,
      );
    console.log(
      `  ${variant.label.padEnd(14)} ${range(
        list.map((run) => run.rate),
        0,
      )} ${unit(figure)}; CPU a unit: server ${us((run) => run.server.serverCpuMs)} µs, ` +
        `event loop ${us((run) => run.server.serverThreadsMs.eventLoop)} µs` +
        (figure === 'postgres'
          ? `, PostgreSQL's processes ${range(
              list.map((run) => run.postgresUs ?? 0),
              0,
            )} µs`
          : ''),
    );
  }
  console.log('');
}

try {
  if (!compileServers()) throw new Error('this tree could not be compiled');
  const variants: [Variant, Variant] = [{ label: revision, tree: compileRevision(revision) }, { label: 'this tree' }];
  console.log(`Roost, this tree against ${revision} — ${describeMachine()}`);
  console.log(`load average at start: ${loadAverage()}`);
  console.log('');
  for (const figure of figures) await compare(figure, variants);
  console.log(`load average at end: ${loadAverage()}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
