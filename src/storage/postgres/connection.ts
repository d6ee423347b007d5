// The PostgreSQL engine's plumbing, in one place: the pool and its options, a pooled
// connection, one statement, one transaction (with its retries and how a broken connection
// is let go), and the named prepared statements every entity module's SQL runs as (unnamed
// through a transaction pooler). Waiting for the database and migrating it: start.ts. Connection failures become 503 `unavailable`; the pool reconnects
// on its own, so a database restart is survived without restarting Roost.
import pg from 'pg';
import type { Logger } from 'pino';
import {
  beginSql,
  connectionSettings,
  sessionSettingsSql,
  UnnamedStatementClient,
  type PostgresOptions,
} from './connection-options.js';
import { describeDatabase } from './start.js';
import { databaseUnavailable, isConnectionLost, isRetryable, storageError } from './errors.js';

export type { PostgresOptions } from './connection-options.js';
export { ADVISORY_LOCKS } from './start.js';

/**
 * How much longer than statement_timeout the client waits for an answer before it gives
 * the connection up. statement_timeout is enforced by the server, so a server that is
 * stalled (stopped, swapping, partitioned away) never sends it: this bound does.
 */
const ANSWER_GRACE_MS = 2_000;

/**
 * The engine's statements run as named prepared statements: each pooled connection parses
 * and plans one once instead of on every call. Migrations and other one-off SQL stay unnamed,
 * and so does everything through a transaction pooler (UnnamedStatementClient drops the names).
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

/** What a transaction's work decides: commit and return, or roll back and return. */
export type Outcome<T> = { commit: T } | { rollback: T };

export class PgConnection {
  readonly description: string;
  readonly pool: pg.Pool;
  /** How the LISTEN connection, outside the pool, connects (ROOST_PG_LISTEN_URL, else DATABASE_URL). */
  readonly listenConnection: pg.ClientConfig;
  /** The setting the LISTEN connection's URL comes from, named in its errors. */
  readonly listenSetting: string;
  /** What opens a transaction: BEGIN, with the statement timeout when it cannot be per session. */
  private readonly begin: string;
  /** Through a transaction pooler, a lone statement also runs in a transaction, which carries the timeout. */
  private readonly timeoutPerTransaction: boolean;

  constructor(
    config: PostgresOptions,
    /** Whether statements are named and settings per session, or unnamed and per transaction. */
    readonly poolMode: 'session' | 'transaction',
    private readonly logger?: Logger,
  ) {
    if (!config.databaseUrl) throw new Error('PostgresStorage needs DATABASE_URL');
    this.description = describeDatabase(config.databaseUrl);
    const common: pg.ClientConfig = {
      application_name: 'roost',
      // Bounds both opening a connection and waiting for a free one in a full pool.
      connectionTimeoutMillis: config.pgConnectTimeoutMs,
      keepAlive: true,
      types: TYPES,
    };
    const timeout = config.pgStatementTimeoutMs;
    this.begin = beginSql(poolMode, timeout);
    this.timeoutPerTransaction = poolMode === 'transaction' && timeout > 0;
    const answerTimeout = timeout > 0 ? timeout + ANSWER_GRACE_MS : undefined;
    this.pool = new pg.Pool({
      ...connectionSettings(config.databaseUrl, 'DATABASE_URL').config,
      ...common,
      max: config.pgPoolSize,
      query_timeout: answerTimeout,
      // The statement timeout is set by a statement, never as a startup parameter (which a
      // pooler refuses); through a transaction pooler, inside each transaction instead.
      // pg-pool waits for the promise onConnect returns before handing the client out; its types say void.
      // eslint-disable-next-line @typescript-eslint/no-misused-promises
      onConnect: poolMode === 'session' ? (client) => client.query(sessionSettingsSql(timeout)) : undefined,
      Client: poolMode === 'transaction' ? UnnamedStatementClient : undefined,
    });
    this.listenSetting = config.pgListenUrl ? 'ROOST_PG_LISTEN_URL' : 'DATABASE_URL';
    this.listenConnection = {
      ...connectionSettings(config.pgListenUrl ?? config.databaseUrl, this.listenSetting).config,
      ...common,
      query_timeout: config.pgConnectTimeoutMs,
    };
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
        const query = statement(text, values);
        const result = this.timeoutPerTransaction
          ? await this.inOwnTransaction<R>(db, query)
          : await db.query<R>(query);
        db.release();
        return result;
      } catch (error) {
        // A connection-level failure destroys the connection rather than pooling it again;
        // so does one left inside a transaction that it cannot roll back.
        const broken =
          isConnectionLost(error) ||
          (this.timeoutPerTransaction &&
            (await db.query('ROLLBACK').then(
              () => false,
              () => true,
            )));
        db.release(broken ? (error as Error) : undefined);
        if (attempt < 3 && isRetryable(error)) continue;
        throw error;
      }
    }
  }

  private async inOwnTransaction<R extends pg.QueryResultRow>(
    db: pg.PoolClient,
    query: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    await db.query(this.begin);
    const result = await db.query<R>(query);
    await db.query('COMMIT');
    return result;
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
        await db.query(this.begin);
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

  end(): Promise<void> {
    return this.pool.end();
  }
}
