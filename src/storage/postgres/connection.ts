// The PostgreSQL engine's plumbing, in one place: the pool and its options, a pooled
// connection, one statement, one transaction (with its retries and how a broken connection
// is let go), the migrations at start, and the named prepared statements every entity
// module's SQL runs as. Connection failures become 503 `unavailable`; the pool reconnects
// on its own, so a database restart is survived without restarting Roost.
import pg from 'pg';
import type { Logger } from 'pino';
import { PG_MIGRATIONS } from './migrations.js';
import { databaseUnavailable, isConnectionLost, isRetryable, storageError } from './errors.js';

/** What the engine takes from the configuration (the names are config.ts's, which supplies them). */
export interface PostgresOptions {
  /** postgres:// or postgresql:// URL; required. */
  databaseUrl?: string;
  pgPoolSize: number;
  /** statement_timeout in ms; 0 means none. */
  pgStatementTimeoutMs: number;
  pgConnectTimeoutMs: number;
}

/** Advisory locks are (namespace, key) pairs; the namespace is "Roos" in ASCII. */
export const ADVISORY_LOCKS = { namespace: 0x526f6f73, migration: 1, purge: 2 } as const;
const { namespace: LOCK_NAMESPACE, migration: MIGRATION_LOCK } = ADVISORY_LOCKS;

/**
 * How much longer than statement_timeout the client waits for an answer before it gives
 * the connection up. statement_timeout is enforced by the server, so a server that is
 * stalled (stopped, swapping, partitioned away) never sends it: this bound does.
 */
const ANSWER_GRACE_MS = 2_000;
/** Migrations may run longer than any request (their statement_timeout is 0). */
const NO_ANSWER_DEADLINE = { query_timeout: 2 ** 31 - 1 } as const;

const SQL = {
  migrationLock: 'SELECT pg_advisory_xact_lock($1, $2)',
  createMigrationsTable:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
  appliedMigrations: 'SELECT version FROM schema_migrations',
  recordMigration: 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)',
} as const;

/**
 * The engine's statements run as named prepared statements: each pooled connection parses
 * and plans one once instead of on every call. Migrations and other one-off SQL stay unnamed.
 */
const STATEMENT_NAMES = new Map<string, string>();

/** Names each statement of an entity module's SQL `roost_<prefix>_<key>`; returns the SQL as it is. */
export function namedStatements<T extends Record<string, string>>(prefix: string, sql: T): T {
  for (const [key, text] of Object.entries(sql)) STATEMENT_NAMES.set(text, `roost_${prefix}_${key}`);
  return sql;
}

/** Names a statement built at run time (the page query): one name per distinct text. */
export function nameBuiltStatement(prefix: string, text: string): void {
  if (!STATEMENT_NAMES.has(text)) STATEMENT_NAMES.set(text, `roost_${prefix}_${STATEMENT_NAMES.size}`);
}

export function statement(text: string, values?: unknown[]): pg.QueryConfig {
  const name = STATEMENT_NAMES.get(text);
  return name === undefined ? { text, values } : { name, text, values };
}

// node-postgres returns int8 as a string (it may exceed 2^53). Our bigints are
// milliseconds, sequences and counts, all far below 2^53: read them as numbers, for this
// engine's connections only (not by changing pg's global parsers).
const INT8_OID = 20;
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : (pg.types.getTypeParser(oid, format) as unknown)) as typeof pg.types.getTypeParser,
};

/** Redacts user and password: the description goes to logs and /readyz. */
function describe(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `postgres://${url.host}${url.pathname}`;
  } catch {
    return 'postgres';
  }
}

/** What a transaction's work decides: commit and return, or roll back and return. */
export type Outcome<T> = { commit: T } | { rollback: T };

export class PgConnection {
  readonly description: string;
  readonly pool: pg.Pool;
  /** How a connection outside the pool (the LISTEN one) connects. */
  readonly connection: pg.ClientConfig;

  constructor(
    config: PostgresOptions,
    private readonly logger?: Logger,
  ) {
    if (!config.databaseUrl) throw new Error('PostgresStorage needs DATABASE_URL');
    this.description = describe(config.databaseUrl);
    const connection: pg.ClientConfig = {
      connectionString: config.databaseUrl,
      application_name: 'roost',
      // Bounds both opening a connection and waiting for a free one in a full pool.
      connectionTimeoutMillis: config.pgConnectTimeoutMs,
      keepAlive: true,
      types: TYPES,
    };
    this.connection = connection;
    const answerTimeout = config.pgStatementTimeoutMs > 0 ? config.pgStatementTimeoutMs + ANSWER_GRACE_MS : undefined;
    this.pool = new pg.Pool({
      ...connection,
      max: config.pgPoolSize,
      // 0 means no limit in PostgreSQL too.
      statement_timeout: config.pgStatementTimeoutMs,
      query_timeout: answerTimeout,
    });
    // pg-pool listens for 'error' on a client only while it is idle, and a pg client emits
    // 'error' when its connection dies; a checked-out client with no listener of its own
    // would take the process down (an unhandled 'error' event). This listener stays for
    // the client's life; the query in flight fails on its own and the request answers 503.
    this.pool.on('connect', (client) => {
      client.on('error', (error) =>
        this.logger?.warn({ err: error }, 'PostgreSQL connection lost; replaced on demand'),
      );
    });
    // An idle client's error also reaches the pool, which drops that client.
    this.pool.on('error', () => {});
  }

  /**
   * A pooled connection. Failing to get one is always "unavailable" (503), whatever the
   * cause: refused, timed out, the database not accepting connections, too many clients.
   */
  async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (error) {
      throw databaseUnavailable(error);
    }
  }

  /** One statement on its own (autocommit). */
  async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await this.queryAsIs<R>(text, values);
    } catch (error) {
      throw storageError(error);
    }
  }

  /** As query, with the database's error as it came (a failed connect is already 503). */
  async queryAsIs<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      const db = await this.connect();
      try {
        const result = await db.query<R>(statement(text, values));
        db.release();
        return result;
      } catch (error) {
        // A connection-level failure destroys the connection rather than pooling it again.
        db.release(isConnectionLost(error) ? (error as Error) : undefined);
        if (attempt < 3 && isRetryable(error)) continue;
        throw error;
      }
    }
  }

  /**
   * Runs `work` in one transaction on one pooled connection. A deadlock or serialization
   * failure runs it again (nothing of the failed try was committed). A connection that
   * fails mid-way is destroyed rather than returned to the pool, without a ROLLBACK when it
   * is lost (the server rolls back a session that ends; a stalled one would not answer).
   * A COMMIT whose answer never came has an unknown outcome: it answers 503 like any
   * other failure, and the sender's retry with its idempotency key settles it.
   */
  async transaction<T>(work: (db: pg.PoolClient) => Promise<Outcome<T>>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const db = await this.connect();
      try {
        await db.query('BEGIN');
        const outcome = await work(db);
        await db.query('commit' in outcome ? 'COMMIT' : 'ROLLBACK');
        db.release();
        return 'commit' in outcome ? outcome.commit : outcome.rollback;
      } catch (error) {
        const broken =
          isConnectionLost(error) ||
          (await db.query('ROLLBACK').then(
            () => false,
            () => true,
          ));
        db.release(broken ? (error instanceof Error ? error : true) : undefined);
        if (attempt < 3 && isRetryable(error)) continue;
        throw storageError(error);
      }
    }
  }

  async migrate(): Promise<void> {
    await this.transaction(async (db) => {
      // A migration may take longer than a request may; it runs once, at start.
      await db.query('SET LOCAL statement_timeout = 0');
      const run = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
        db.query<R>({ text, values, ...NO_ANSWER_DEADLINE });
      // Instances starting together queue here; each later one then finds the work done.
      await run(SQL.migrationLock, [LOCK_NAMESPACE, MIGRATION_LOCK]);
      await run(SQL.createMigrationsTable);
      const applied = new Set((await run<{ version: number }>(SQL.appliedMigrations)).rows.map((r) => r.version));
      for (const migration of PG_MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        await run(migration.sql);
        await run(SQL.recordMigration, [migration.version, migration.name, Date.now()]);
      }
      return { commit: undefined };
    });
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
