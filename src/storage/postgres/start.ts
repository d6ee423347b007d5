// What the PostgreSQL engine does once, before it serves: wait for the database (a rolling
// restart or a container that starts first), learn whether a pooler stands between, and
// bring the schema to this build's version — or refuse, naming what is wrong. `roost
// migrate` runs the schema step alone, with a role allowed to change the schema, so that
// `roost serve` can run as a role that may only read and write rows.
import pg from 'pg';
import type { Logger } from 'pino';
import { connectionSettings, POOL_MODES, type PoolMode } from './connection-options.js';
import { PG_MIGRATIONS } from './migrations.js';

/** Advisory locks are (namespace, key) pairs; the namespace is "Roos" in ASCII. */
export const ADVISORY_LOCKS = { namespace: 0x526f6f73, migration: 1, purge: 2 } as const;

/** The schema version this build knows: the highest migration it carries. */
export const PG_SCHEMA_VERSION = Math.max(...PG_MIGRATIONS.map((m) => m.version));

/** Why the engine will not start: said once, as is, to the operator. */
export class DatabaseStartError extends Error {}

export interface DatabaseStartOptions {
  databaseUrl?: string;
  /** A direct (or session-pooled) URL for LISTEN; DATABASE_URL when unset. */
  pgListenUrl?: string;
  pgPoolMode: PoolMode;
  /** How long start waits for a database that refuses, is starting up or is full; 0 tries once. */
  pgStartTimeoutMs: number;
  pgConnectTimeoutMs: number;
}

/** Redacts user and password: the description goes to logs and /readyz. */
export function describeDatabase(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `postgres://${url.host}${url.pathname}`;
  } catch {
    return 'postgres';
  }
}

/** PostgreSQL, or PgBouncer in front of it, saying "not now": worth waiting for at start. */
const WAIT_CODES = new Set(['57P03', '53300', '53000', '57P01', '57P02', '08001', '08006', '08004']);
const WAIT_NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EPIPE',
]);
const WAIT_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|cannot connect to server|no more connections allowed|server login has been failing|the database system is (starting up|shutting down)/i;

export function worthWaitingFor(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (WAIT_CODES.has(code) || WAIT_NETWORK.has(code))) return true;
  return WAIT_MESSAGES.test(error instanceof Error ? error.message : String(error));
}

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5_000;

/**
 * A connected client, made by trying again while the database is not ready (refused,
 * starting up, too many clients) until `timeoutMs` has passed, each failed try logged.
 * A failure that waiting cannot mend (a wrong password, an unknown database, a certificate
 * that does not verify) ends the wait at once.
 */
export async function connectWhenReady(
  config: pg.ClientConfig,
  what: { description: string; timeoutMs: number; explain: (error: unknown) => unknown },
  logger?: Logger,
): Promise<pg.Client> {
  const deadline = Date.now() + what.timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const client = new pg.Client(config);
    client.on('error', () => {}); // a connection lost while it is being used fails that use
    try {
      await client.connect();
      if (attempt > 1) logger?.info({ attempts: attempt }, `PostgreSQL at ${what.description} is ready`);
      return client;
    } catch (failure) {
      await client.end().catch(() => {});
      const error = what.explain(failure);
      const reason = error instanceof Error ? error.message : String(error);
      const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** (attempt - 1));
      const delay = ceiling / 2 + Math.random() * (ceiling / 2);
      if (!worthWaitingFor(failure) || Date.now() + delay > deadline) {
        const waited = attempt > 1 ? ` (gave up after ${attempt} tries: ROOST_PG_START_TIMEOUT_MS)` : '';
        throw new DatabaseStartError(`Cannot connect to PostgreSQL at ${what.description}: ${reason}${waited}`, {
          cause: failure,
        });
      }
      logger?.warn(
        { attempt, retryInMs: Math.round(delay), reason },
        `PostgreSQL at ${what.description} is not ready (${reason}); trying again in ${(delay / 1000).toFixed(1)} s`,
      );
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * Whether the connection goes through a pooler: PgBouncer (and others) hand the client a
 * process id of their own at login, which is not the server process that answers.
 */
async function behindPooler(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const announced = (client as unknown as { processID?: number | null }).processID;
  return announced !== rows[0].pid;
}

/**
 * Whether the pooler shares server connections between clients from one transaction to the
 * next (transaction pooling): while a second client holds a transaction open, the first one's
 * next statement runs elsewhere, or the second got the first one's server connection. Under
 * session pooling neither can happen. Used to check ROOST_PG_POOL_MODE=session.
 */
async function sharesServerConnections(db: pg.Client, config: pg.ClientConfig): Promise<boolean> {
  const pid = async (client: pg.Client) =>
    (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const other = new pg.Client(config);
  other.on('error', () => {});
  await other.connect();
  try {
    const first = await pid(db);
    await other.query('BEGIN');
    const others = await pid(other);
    const again = await pid(db);
    await other.query('COMMIT');
    return others === first || again !== first;
  } finally {
    await other.end().catch(() => {});
  }
}

interface SchemaState {
  /** The highest version applied (0: none). */
  current: number;
  applied: Set<number>;
}

async function schemaState(db: pg.Client): Promise<SchemaState> {
  const { rows } = await db.query<{ present: boolean }>(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS present",
  );
  if (!rows[0].present) return { current: 0, applied: new Set() };
  const versions = (await db.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
    (r) => r.version,
  );
  return { current: Math.max(0, ...versions), applied: new Set(versions) };
}

function refuseNewer(current: number): void {
  if (current > PG_SCHEMA_VERSION)
    throw new DatabaseStartError(
      `The database schema is at version ${current}, newer than this build of Roost knows (version ${PG_SCHEMA_VERSION}): ` +
        'a newer Roost has migrated it. Run that newer Roost, or restore the backup taken before its `roost migrate` (docs/scale-out.md § Deploying).',
    );
}

const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * Applies the migrations this database lacks, in one transaction, under an advisory lock:
 * instances starting together queue here and each later one finds the work done.
 * Returns the versions applied.
 */
async function applyMigrations(db: pg.Client): Promise<number[]> {
  const done: number[] = [];
  await db.query('BEGIN; SET LOCAL statement_timeout = 0'); // a migration may take longer than a request
  try {
    await db.query('SELECT pg_advisory_xact_lock($1, $2)', [ADVISORY_LOCKS.namespace, ADVISORY_LOCKS.migration]);
    await db.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
    );
    const { applied, current } = await schemaState(db);
    refuseNewer(current);
    for (const migration of PG_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await db.query(migration.sql);
      await db.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        Date.now(),
      ]);
      done.push(migration.version);
    }
    await db.query('COMMIT');
    return done;
  } catch (error) {
    await db.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

export interface PreparedDatabase {
  /** The pool mode in force (auto resolved). */
  mode: 'session' | 'transaction';
  /** Whether a pooler was detected between Roost and PostgreSQL. */
  pooled: boolean;
  /** The schema version before, and after, this start. */
  schemaVersion: { before: number; after: number };
}

/**
 * Everything before serving: the database answers (waiting for it), the pool mode is known,
 * and the schema is this build's — migrated here when it is behind and the role may,
 * refused when it is ahead, or behind and the role may not. With `migrateOnly`, the schema
 * step is all (`roost migrate`).
 */
export async function prepareDatabase(
  options: DatabaseStartOptions,
  logger?: Logger,
  { migrateOnly = false } = {},
): Promise<PreparedDatabase> {
  if (!options.databaseUrl) throw new DatabaseStartError('DATABASE_URL is not set');
  if (!POOL_MODES.includes(options.pgPoolMode))
    throw new DatabaseStartError(`ROOST_PG_POOL_MODE must be one of ${POOL_MODES.join(', ')}`);
  const description = describeDatabase(options.databaseUrl);
  const settings = connectionSettings(options.databaseUrl, 'DATABASE_URL');
  if (options.pgListenUrl) connectionSettings(options.pgListenUrl, 'ROOST_PG_LISTEN_URL'); // its errors, now
  const clientConfig = {
    ...settings.config,
    application_name: 'roost',
    connectionTimeoutMillis: options.pgConnectTimeoutMs,
  };
  const db = await connectWhenReady(
    clientConfig,
    { description, timeoutMs: options.pgStartTimeoutMs, explain: (error) => settings.explain(error) },
    logger,
  );
  try {
    const pooled = await behindPooler(db);
    const mode = options.pgPoolMode === 'auto' ? (pooled ? 'transaction' : 'session') : options.pgPoolMode;
    // Named statements and session settings through a transaction pooler would fail later,
    // request by request: refused now instead.
    if (pooled && mode === 'session' && !migrateOnly && (await sharesServerConnections(db, clientConfig)))
      throw new DatabaseStartError(
        'ROOST_PG_POOL_MODE=session, but DATABASE_URL goes through a pooler in transaction mode (server connections ' +
          'change hands between transactions). Set ROOST_PG_POOL_MODE=transaction (or auto), with ROOST_PG_LISTEN_URL.',
      );
    if (pooled && !migrateOnly)
      logger?.info(
        { poolMode: mode },
        `DATABASE_URL goes through a connection pooler: ${mode} pooling (ROOST_PG_POOL_MODE=${options.pgPoolMode})`,
      );
    // Declared so: refused now. Detected (auto): the listener's first probe finds out
    // whether LISTEN hears through this pooler (a session pooler), and refuses if not.
    if (options.pgPoolMode === 'transaction' && !options.pgListenUrl && !migrateOnly)
      throw new DatabaseStartError(
        'DATABASE_URL goes through a transaction pooler, where LISTEN does not hold: wake-ups from other instances ' +
          'would be lost. Set ROOST_PG_LISTEN_URL to a direct or session-pooled URL of the same database ' +
          '(or ROOST_PG_POOL_MODE=session if the pooler is in session mode).',
      );
    const before = await schemaState(db);
    refuseNewer(before.current);
    const pending = PG_MIGRATIONS.filter((m) => !before.applied.has(m.version)).map((m) => m.version);
    if (pending.length === 0) return { mode, pooled, schemaVersion: { before: before.current, after: before.current } };
    try {
      const applied = await applyMigrations(db);
      if (applied.length > 0)
        logger?.info({ applied }, `PostgreSQL schema migrated from version ${before.current} to ${PG_SCHEMA_VERSION}`);
    } catch (error) {
      if ((error as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw error;
      const role = (await db.query<{ role: string }>('SELECT current_user AS role').catch(() => undefined))?.rows[0]
        ?.role;
      throw new DatabaseStartError(
        `The database schema is at version ${before.current}; this build of Roost needs version ${PG_SCHEMA_VERSION}, ` +
          `and the role ${role ?? 'in DATABASE_URL'} may not change the schema (${(error as Error).message}). ` +
          'Run `roost migrate` with DATABASE_URL set to a role that owns the schema, then start again (docs/scale-out.md § Deploying).',
        { cause: error },
      );
    }
    return { mode, pooled, schemaVersion: { before: before.current, after: PG_SCHEMA_VERSION } };
  } finally {
    await db.end().catch(() => {});
  }
}
