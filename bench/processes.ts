// Starts the processes under test — Roost (bench/server.ts) and the bare baselines
// (bench/baseline.ts) — as children, so that the load generator never shares their event
// loop, and talks to them over the IPC channel (ready, stats, stop).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The child entries and the workers a child starts, compiled together with src/ (and so everything they import). */
const ENTRIES = [
  'bench/server.ts',
  'bench/baseline.ts',
  'bench/durable-writer.ts',
  'bench/parse-worker.ts',
  'bench/smtp-sink.ts',
];
// Inside node_modules so that the compiled files resolve packages as src/ does.
const CACHE = join(ROOT, 'node_modules', '.cache');
const COMPILED = join(CACHE, 'roost-bench');
let compiled = false;

/**
 * Compiles the servers to JavaScript, as `npm start` runs them: under the tsx loader a
 * process carries ~30 MiB more and starts slower, which would blur the memory figures.
 * Returns false (the children then run through tsx) when the compiler is not there.
 */
export function compileServers(): boolean {
  const failure = compileTree(ROOT, COMPILED);
  compiled = failure === undefined;
  if (failure) process.stderr.write(`bench: could not compile the servers (running them through tsx):\n${failure}\n`);
  return compiled;
}

/**
 * The servers of another commit, compiled beside this tree's (bench/compare.ts): its src/
 * and bench/ as `git archive` gives them (and its package.json, which makes them modules),
 * with this tree's node_modules. Returns the
 * directory to start children from (ChildOptions.tree).
 */
export function compileRevision(revision: string): string {
  // Outside node_modules: TypeScript emits nothing for a file whose path goes through one.
  const source = join(tmpdir(), 'roost-bench-revision-src');
  const into = join(CACHE, 'roost-bench-revision');
  rmSync(source, { recursive: true, force: true });
  mkdirSync(source, { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(source, 'node_modules'));
  const archive = spawnSync('git', ['archive', '--format=tar', revision, 'package.json', 'src', 'bench'], {
    cwd: ROOT,
    maxBuffer: 1 << 30,
  });
  if (archive.status !== 0) throw new Error(`git archive ${revision}: ${archive.stderr.toString().trim()}`);
  const unpacked = spawnSync('tar', ['-x', '-C', source], { input: archive.stdout });
  if (unpacked.status !== 0) throw new Error(`unpacking ${revision}: ${unpacked.stderr.toString().trim()}`);
  const failure = compileTree(source, into);
  if (failure) throw new Error(`could not compile the servers of ${revision}:\n${failure}`);
  return into;
}

/** Compiles ENTRIES of the tree at `source` into `into`; the compiler's output when it fails. */
function compileTree(source: string, into: string): string | undefined {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) return 'no TypeScript compiler in node_modules';
  rmSync(into, { recursive: true, force: true });
  const result = spawnSync(
    process.execPath,
    [
      tsc,
      '--ignoreConfig', // TypeScript 6 refuses files on the command line beside a tsconfig.json otherwise
      '--outDir',
      into,
      '--rootDir',
      source,
      '--module',
      'NodeNext',
      '--moduleResolution',
      'NodeNext',
      '--target',
      'ES2022',
      '--esModuleInterop',
      '--skipLibCheck',
      '--types',
      'node',
      '--noCheck',
      // An older commit may lack an entry that came later (a limit's worker): its own are compiled.
      ...ENTRIES.filter((entry) => existsSync(join(source, entry))),
    ],
    { cwd: source, encoding: 'utf8' },
  );
  if (result.status !== 0 || !existsSync(join(into, 'bench', 'server.js'))) return result.stdout + result.stderr;
  // Node stops looking for the package scope at node_modules: say that these are modules.
  writeFileSync(join(into, 'package.json'), '{ "type": "module" }\n');
  return undefined;
}

export interface Ready {
  url: string;
  smtpPort: number | null;
}

export interface BenchChild extends Ready {
  pid: number;
  /** Sends a message and resolves with the child's answer to it. */
  ask<T = unknown>(message: Record<string, unknown>): Promise<T>;
  /** Resident set size now (VmRSS), in MiB. */
  rssMiB(): number;
  /** CPU time the process has used so far, user and system, in ms, by kind of thread: the event loop, Roost's named threads, other worker threads, V8's helpers (GC, compiler), the rest. */
  threadCpuMs(): ThreadCpu;
  /** Asks for a clean shutdown (so that a CPU profile is written), then waits for exit. */
  stop(): Promise<void>;
}

export interface ThreadCpu {
  eventLoop: number;
  /** The SQLite writer thread. */
  writer: number;
  /** The email workers (parsing, SPF/DKIM/DMARC). */
  email: number;
  /** Worker threads of no name Roost gives (the baselines have none). */
  workers: number;
  v8: number;
  other: number;
}

export interface CpuPerUnit {
  /** All the server's threads, in ms a unit of work (a request, a message). */
  serverCpuMs: number;
  serverThreadsMs: ThreadCpu;
}

/** The server's CPU between two readings, per unit of work. */
export function perUnit(before: ThreadCpu, after: ThreadCpu, units: number): CpuPerUnit {
  const kinds = Object.keys(before) as Array<keyof ThreadCpu>;
  const serverThreadsMs = Object.fromEntries(
    kinds.map((k) => [k, (after[k] - before[k]) / units]),
  ) as unknown as ThreadCpu;
  return { serverCpuMs: kinds.reduce((sum, k) => sum + serverThreadsMs[k], 0), serverThreadsMs };
}

/** Where a child's and this process's (the load generator's) CPU stood when a measured run began. */
export interface CpuMark {
  threads: ThreadCpu;
  load: NodeJS.CpuUsage;
}
export const cpuMark = (child: BenchChild): CpuMark => ({ threads: child.threadCpuMs(), load: process.cpuUsage() });

/** CPU a unit of work since `mark`: the child's by kind of thread, and the load generator's in µs. */
export function cpuSince(child: BenchChild, mark: CpuMark, units: number): { server: CpuPerUnit; loadUs: number } {
  const load = process.cpuUsage(mark.load);
  return { server: perUnit(mark.threads, child.threadCpuMs(), units), loadUs: (load.user + load.system) / units };
}

/** "event loop 52 µs, SQLite writer 24 µs, V8's helpers 9 µs" of a CpuPerUnit: the kinds that used any. */
export const threadsText = ({ serverThreadsMs }: CpuPerUnit): string =>
  kindsText(serverThreadsMs, (ms) => `${Math.round(ms * 1000)} µs`);

/** A figure by kind of thread (CPU, instructions) as text, `format` writing each: the kinds that have any. */
export function kindsText(t: ThreadCpu, format: (n: number) => string): string {
  const kinds: Array<[string, number]> = [
    ['event loop', t.eventLoop],
    ['SQLite writer', t.writer],
    ['email workers', t.email],
    ['other worker threads', t.workers],
    ["V8's helpers", t.v8],
    ['other', t.other],
  ];
  return kinds
    .filter(([name, n]) => n > 0 || name === 'event loop')
    .map(([name, n]) => `${name} ${format(n)}`)
    .join(', ');
}

/** utime + stime of a /proc …/stat line (its 14th and 15th fields), in ms at 100 clock ticks a second. */
export function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** What Node names its threads (/proc …/comm): MainThread, WorkerThread, V8Worker, DelayedTaskSche…; Roost's workers by their names. */
const THREAD_KINDS: Record<string, keyof ThreadCpu> = {
  MainThread: 'eventLoop',
  'roost-writer': 'writer',
  'roost-email': 'email',
  WorkerThread: 'workers',
  V8Worker: 'v8',
  DelayedTaskSche: 'v8',
};

export interface ChildOptions {
  args?: string[];
  env?: Record<string, string>;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** Compiled servers to start the entry from (compileRevision); this tree's by default. */
  tree?: string;
  /** A command that runs node (valgrind and its options, bench/instructions.ts); none by default. */
  wrapper?: string[];
  /** How long the child may take to say it is ready; 30 s by default. */
  readyTimeoutMs?: number;
}

export async function startChild(entry: string, options: ChildOptions = {}): Promise<BenchChild> {
  const tree = options.tree ?? (compiled ? COMPILED : undefined);
  const program = tree ? [join(tree, entry.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', entry];
  const [command, ...wrapperArgs] = [...(options.wrapper ?? []), process.execPath];
  const child: ChildProcess = spawn(
    command,
    [...wrapperArgs, ...(options.nodeArgs ?? []), ...program, ...(options.args ?? [])],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...options.env },
      // stdout (request logs at info) goes to /dev/null: the server pays for writing its
      // logs, nobody in this machine pays for reading them.
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    },
  );
  let nextId = 1;
  const waiting = new Map<number, (value: unknown) => void>();
  child.on('message', (message: { id?: number; answer?: unknown }) => {
    const resolve = message.id !== undefined ? waiting.get(message.id) : undefined;
    if (resolve) {
      waiting.delete(message.id!);
      resolve(message.answer);
    }
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timeoutMs = options.readyTimeoutMs ?? 30_000;
    const timer = setTimeout(() => reject(new Error(`${entry} did not start within ${timeoutMs / 1000} s`)), timeoutMs);
    child.once('message', (message: Ready & { type: string }) => {
      clearTimeout(timer);
      resolve(message);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited with ${code} before it was ready`));
    });
  });
  const pid = child.pid!;
  return {
    ...ready,
    pid,
    ask<T>(message: Record<string, unknown>) {
      const id = nextId++;
      return new Promise<T>((resolve) => {
        waiting.set(id, resolve as (value: unknown) => void);
        child.send({ ...message, id });
      });
    },
    rssMiB() {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
      return kib / 1024;
    },
    threadCpuMs() {
      const cpu: ThreadCpu = { eventLoop: 0, writer: 0, email: 0, workers: 0, v8: 0, other: 0 };
      for (const task of readdirSync(`/proc/${pid}/task`)) {
        try {
          const name = readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim();
          cpu[THREAD_KINDS[name] ?? 'other'] += statCpuMs(readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8'));
        } catch {
          // the thread ended between the listing and the read
        }
      }
      return cpu;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Answers the parent's IPC requests in a child: `handle` maps a message to its answer. */
export function serveIpc(handle: (message: { type: string; [key: string]: unknown }) => unknown): void {
  process.on('message', (message: { type: string; id?: number }) => {
    void Promise.resolve(handle(message)).then((answer) => {
      if (message.id !== undefined) process.send!({ id: message.id, answer });
    });
  });
}
