// Starts a real Roost server on a free port for a test: a fresh SQLite file in a temp
// folder, or a fresh PostgreSQL database that is dropped afterwards. The engine list comes
// from ROOST_TEST_ENGINES (default: both); PostgreSQL tests skip with a visible reason
// outside CI when no server is reachable, and fail in CI (see ./postgres.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config.js';
import type { Clock } from '../../src/core/service.js';
import { startRoost, type RunningRoost, type StartOptions } from '../../src/server.js';
import { POSTGRES_TEST_SECRET_KEY, createTestDatabase, postgresSkipReason } from './postgres.js';

export type Engine = 'sqlite' | 'postgres';

export const ENGINES: Engine[] = (process.env.ROOST_TEST_ENGINES ?? 'sqlite,postgres')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean) as Engine[];

/** Why tests of this engine cannot run here, or undefined when they can. */
export async function engineSkipReason(engine: Engine): Promise<string | undefined> {
  return engine === 'postgres' ? postgresSkipReason() : undefined;
}

export interface TestServer {
  /** The origin to send requests to. */
  url: string;
  roost: RunningRoost;
  config: Config;
  /** Everything the server logged, as text. */
  logs(): string;
  /** Stops the server and removes its database. */
  close(): Promise<void>;
  /** The SQLite file (sqlite engine only). */
  dbPath?: string;
  /** The database URL (postgres engine only). */
  databaseUrl?: string;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Reuse this database instead of making a new one (restart tests); not dropped by close(). */
  reuse?: { dbPath?: string; databaseUrl?: string };
  /** SMTP overrides, e.g. `{ port: 0 }` for SMTP on any free port (email tests). */
  smtp?: StartOptions['smtp'];
}

export async function startTestServer(engine: Engine = 'sqlite', options: TestServerOptions = {}): Promise<TestServer> {
  let dbPath: string | undefined;
  let databaseUrl: string | undefined;
  let cleanup: () => Promise<void> = async () => {};
  if (engine === 'sqlite') {
    if (options.reuse?.dbPath) dbPath = options.reuse.dbPath;
    else {
      const dir = mkdtempSync(join(tmpdir(), 'roost-test-'));
      dbPath = join(dir, 'roost.db');
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
  } else if (options.reuse?.databaseUrl) {
    databaseUrl = options.reuse.databaseUrl;
  } else {
    const db = await createTestDatabase();
    databaseUrl = db.url;
    cleanup = () => db.drop();
  }
  const config = loadConfig({
    // Instances sharing PostgreSQL share one server key, as docs/scale-out.md says to deploy
    // them; a SQLite server generates its own into its data directory.
    ...(databaseUrl ? { ROOST_SECRET_KEY: POSTGRES_TEST_SECRET_KEY } : {}),
    PORT: '0',
    ROOST_SMTP_PORT: '0',
    LOG_LEVEL: 'info',
    ROOST_CREATE_RATE: '100000/sec',
    ...(dbPath ? { ROOST_DB: dbPath } : {}),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...options.env,
  });
  let captured = '';
  const logDestination = new Writable({
    write(chunk, _enc, done) {
      captured += chunk.toString();
      done();
    },
  });
  const roost = await startRoost(config, { clock: options.clock, logDestination, smtp: options.smtp });
  let closed = false;
  return {
    url: roost.url,
    roost,
    config,
    dbPath,
    databaseUrl,
    logs: () => captured,
    async close() {
      if (closed) return;
      closed = true;
      await roost.close();
      await cleanup();
    },
  };
}
