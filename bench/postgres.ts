// A throwaway PostgreSQL database for the scale-out figure, on the server at
// ROOST_BENCH_DATABASE_URL (default: the local one the tests use), dropped afterwards.
// Without a reachable server the figure is skipped with the reason, not failed.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { statCpuMs } from './processes.js';

const ADMIN_URL = process.env.ROOST_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Runs `work` with the URL of a fresh database; returns why not when there is no server. */
export async function withBenchDatabase<T>(
  work: (url: string) => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; reason: string }> {
  const name = `roost_bench_${randomBytes(6).toString('hex')}`;
  try {
    await admin((client) => client.query(`CREATE DATABASE ${name}`));
  } catch (error) {
    return { ok: false, reason: `no PostgreSQL at ${new URL(ADMIN_URL).host} (${(error as Error).message})` };
  }
  try {
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    return { ok: true, value: await work(url.toString()) };
  } finally {
    await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

/** The server's version, for the report. */
export const postgresVersion = () =>
  admin(
    async (client) => (await client.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version,
  );

/**
 * CPU used so far by this machine's PostgreSQL processes (every process named postgres:
 * the backends, the WAL writer, the checkpointer), user and system, in ms; 0 when the
 * server runs elsewhere. Meaningful as a difference, over a run.
 */
function postgresCpuMs(): number {
  let ms = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.includes('(postgres)')) ms += statCpuMs(stat);
    } catch {
      // the process ended between the listing and the read
    }
  }
  return ms;
}

/** PostgreSQL's processes' CPU from now on: `usPerUnit(units)` gives it since, a unit of work, in µs. */
export function postgresCpuMark(): { usPerUnit(units: number): number } {
  const before = postgresCpuMs();
  return { usPerUnit: (units) => ((postgresCpuMs() - before) * 1000) / units };
}
