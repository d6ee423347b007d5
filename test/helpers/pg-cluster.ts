// A throwaway PostgreSQL cluster of a test's own (initdb into a temp folder, ~1 s), for
// tests that stop, crash or pause the database under a running Roost — which the shared
// server must never suffer. The cluster runs as the `postgres` user (PostgreSQL refuses
// root), so these tests need the server binaries and root; elsewhere they skip with the
// reason, except under CI=true, where they run (and fail if they cannot).
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

/** pgbouncer.ts takes its port here too. */
export { freePort };

/** The PostgreSQL binaries of the machine, if a server package is installed. */
function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const version = readdirSync(root).sort().pop();
  const bin = version && join(root, version, 'bin');
  return bin && existsSync(join(bin, 'initdb')) ? bin : undefined;
}

const bin = postgresBin();

/** Why a throwaway cluster cannot run here, or undefined. */
export const clusterSkipReason: string | undefined = !bin
  ? 'no PostgreSQL server binaries (initdb) on this machine'
  : process.getuid?.() !== 0
    ? 'needs root to run a throwaway cluster as the postgres user'
    : undefined;

/** node:test's `skip` option: skip with the reason, except in CI, where the test must run. */
export const clusterSkip = clusterSkipReason && process.env.CI !== 'true' ? `skipped: ${clusterSkipReason}` : false;

const asPostgres = (command: string) => execFileSync('su', ['postgres', '-c', command], { stdio: 'pipe' });

export interface Cluster {
  port: number;
  /** The cluster's folder (the data directory is `data` inside it); readable by the postgres user. */
  dir: string;
  /** postgres://postgres@127.0.0.1:port/postgres */
  url: string;
  start(): void;
  /** `pg_ctl -m fast`: a clean shutdown. */
  stop(): void;
  /** `pg_ctl -m immediate`: what a crash looks like to clients (no goodbye, crash recovery at the next start). */
  crash(): void;
  /** SIGSTOP (or SIGCONT) to the postmaster and every backend: a server that hangs instead of refusing. */
  signalAll(signal: 'SIGSTOP' | 'SIGCONT'): void;
  /** Stops the cluster (immediate) and removes its folder. */
  destroy(): void;
}

/** `serverOptions`: more `-c name=value` settings for the server, e.g. TLS files. */
export async function createCluster(serverOptions = ''): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'roost-pg-'));
  chmodSync(dir, 0o777);
  const data = `${dir}/data`;
  const port = await freePort();
  asPostgres(`${bin}/initdb -D ${data} -U postgres --auth=trust >/dev/null`);
  let running = false;
  const cluster: Cluster = {
    port,
    dir,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start() {
      asPostgres(
        `${bin}/pg_ctl -D ${data} -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 ${serverOptions}" -w -l ${dir}/log start >/dev/null`,
      );
      running = true;
    },
    stop() {
      asPostgres(`${bin}/pg_ctl -D ${data} -m fast -w stop >/dev/null`);
      running = false;
    },
    crash() {
      asPostgres(`${bin}/pg_ctl -D ${data} -m immediate -w stop >/dev/null`);
      running = false;
    },
    signalAll(signal) {
      const postmaster = Number(readFileSync(`${data}/postmaster.pid`, 'utf8').split('\n')[0]);
      const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map(Number);
      // Children first on stop, the postmaster first on resume: none acts on a half-stopped server.
      const order = signal === 'SIGSTOP' ? [...children, postmaster] : [postmaster, ...children];
      for (const pid of order) {
        try {
          process.kill(pid, signal);
        } catch {
          /* a backend that ended meanwhile */
        }
      }
    },
    destroy() {
      if (running) {
        try {
          cluster.signalAll('SIGCONT');
          asPostgres(`${bin}/pg_ctl -D ${data} -m immediate stop >/dev/null`);
        } catch {
          /* already stopped */
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}
