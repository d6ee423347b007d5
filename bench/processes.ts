// Starts the processes under test — Roost (bench/server.ts) and the bare baselines
// (bench/baseline.ts) — as children, so that the load generator never shares their event
// loop, and talks to them over the IPC channel (ready, stats, stop).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

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
  /** Asks for a clean shutdown (so that a CPU profile is written), then waits for exit. */
  stop(): Promise<void>;
}

export interface ChildOptions {
  args?: string[];
  env?: Record<string, string>;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
}

export async function startChild(entry: string, options: ChildOptions = {}): Promise<BenchChild> {
  const child: ChildProcess = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', entry, ...(options.args ?? [])], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...options.env },
    // stdout (request logs at info) goes to /dev/null: the server pays for writing its
    // logs, nobody in this machine pays for reading them.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
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
    const timer = setTimeout(() => reject(new Error(`${entry} did not start within 30 s`)), 30_000);
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
export function serveIpc(handle: (message: { type: string; [key: string]: unknown }) => unknown | Promise<unknown>): void {
  process.on('message', async (message: { type: string; id?: number }) => {
    const answer = await handle(message);
    if (message.id !== undefined) process.send!({ id: message.id, answer });
  });
}
