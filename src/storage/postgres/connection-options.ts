// How the PostgreSQL engine connects: a URL's TLS options read as libpq reads them, the
// session's settings sent after connecting (never as startup parameters, which PgBouncer
// refuses), and a client for transaction poolers that never names a statement.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';

/**
 * How connections reach PostgreSQL. `session`: directly, or through a pooler in session mode
 * (a client keeps its server connection: named prepared statements and session settings
 * hold). `transaction`: through a pooler in transaction mode (each transaction may run on
 * another server connection: statements go unnamed, settings are set per transaction).
 * `auto` is `session` on a direct connection and `transaction` behind a pooler.
 */
export type PoolMode = 'auto' | 'session' | 'transaction';

/** What the engine takes from the configuration: config.ts's Config extends it. */
export interface PostgresOptions {
  /** postgres://… — use PostgreSQL instead of SQLite (required by this engine). */
  databaseUrl?: string;
  /** Connections in this instance's PostgreSQL pool. */
  pgPoolSize: number;
  /** PostgreSQL statement_timeout for pool connections, in milliseconds; 0 means none. */
  pgStatementTimeoutMs: number;
  /** How long a request waits to open a PostgreSQL connection or get one from a full pool. */
  pgConnectTimeoutMs: number;
  /** A direct (or session-pooled) URL for the LISTEN connection, when DATABASE_URL goes through a transaction pooler; databaseUrl when unset. */
  pgListenUrl?: string;
  /** How connections reach PostgreSQL: auto (detects a pooler), session or transaction (docs/scale-out.md). */
  pgPoolMode: PoolMode;
  /** How long start waits for a database that refuses, is starting up or is full (start.ts). */
  pgStartTimeoutMs: number;
}
export const POOL_MODES: readonly PoolMode[] = ['auto', 'session', 'transaction'];

/** A connection setting that cannot work as written: the message names the setting and file. */
export class ConnectionSettingError extends Error {}

/** The URL parameters that are TLS options: read here, so that the driver does not read them its own way. */
const TLS_PARAMS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'uselibpqcompat'];

export interface ConnectionSettings {
  /** For pg.Client / pg.Pool: the URL without its TLS parameters, and the TLS options they mean. */
  config: pg.ClientConfig;
  /** The same failure with the setting (and certificate file) at fault named, when TLS is the cause. */
  explain(error: unknown): unknown;
}

function readPemFile(setting: string, param: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unreadable';
    throw new ConnectionSettingError(`${setting}: cannot read ${param}=${path} (${code})`, { cause: error });
  }
}

const VERIFY_FAILURES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Reads `url` (the value of `setting`, e.g. DATABASE_URL) as libpq would: `sslmode=disable`
 * no TLS; `require` encrypts without verifying the server (unless `sslrootcert` is given,
 * then as `verify-ca`); `verify-ca` checks the certificate against `sslrootcert`;
 * `verify-full` checks it and the host name, against `sslrootcert` or, without one (or
 * with `sslrootcert=system`), the system's trusted CAs. `prefer` and `allow` are refused:
 * they fall back to an unencrypted connection, which this driver cannot do.
 */
export function connectionSettings(url: string, setting: string): ConnectionSettings {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConnectionSettingError(`${setting} is not a URL`);
  }
  const param = (name: string) => parsed.searchParams.get(name) ?? undefined;
  const sslmode = param('sslmode');
  const rootcert = param('sslrootcert');
  const certFile = param('sslcert');
  const keyFile = param('sslkey');
  for (const name of TLS_PARAMS) parsed.searchParams.delete(name);
  const config: pg.ClientConfig = { connectionString: parsed.toString() };
  const explainNothing = (error: unknown) => error;
  if (sslmode === undefined && rootcert === undefined) return { config, explain: explainNothing };

  if (sslmode === 'disable') return { config: { ...config, ssl: false }, explain: explainNothing };
  if (sslmode === 'prefer' || sslmode === 'allow')
    throw new ConnectionSettingError(
      `${setting}: sslmode=${sslmode} would fall back to an unencrypted connection, which Roost does not do; ` +
        'use sslmode=require (encrypt), verify-full (encrypt and verify the server) or disable',
    );
  // `no-verify` is node-postgres's own name for what libpq calls `require`.
  const mode = sslmode === 'no-verify' ? 'require' : (sslmode ?? 'verify-full');
  if (!['require', 'verify-ca', 'verify-full'].includes(mode))
    throw new ConnectionSettingError(
      `${setting}: sslmode=${mode} is not one of disable, require, verify-ca, verify-full`,
    );

  const systemStore = rootcert === undefined || rootcert === 'system';
  if (mode === 'verify-ca' && systemStore)
    throw new ConnectionSettingError(
      `${setting}: sslmode=verify-ca needs sslrootcert=<file> (the CA that signed the server's certificate)`,
    );
  const ssl: ConnectionOptions = {};
  if (!systemStore) ssl.ca = readPemFile(setting, 'sslrootcert', rootcert);
  if (certFile !== undefined) ssl.cert = readPemFile(setting, 'sslcert', certFile);
  if (keyFile !== undefined) ssl.key = readPemFile(setting, 'sslkey', keyFile);
  const verifies = mode !== 'require' || !systemStore;
  if (!verifies) ssl.rejectUnauthorized = false;
  // verify-ca (and require with a CA, as libpq does) checks the chain, not the host name.
  else if (mode !== 'verify-full') ssl.checkServerIdentity = () => undefined;

  const against = systemStore ? "the system's trusted CAs (no sslrootcert)" : `sslrootcert=${rootcert}`;
  const explain = (error: unknown) => {
    const code = (error as { code?: unknown } | null)?.code;
    const message = error instanceof Error ? error.message : String(error);
    if (typeof code === 'string' && VERIFY_FAILURES.has(code))
      return new ConnectionSettingError(
        `${setting} (sslmode=${mode}): the server's certificate was not accepted by ${against}: ${message}`,
        { cause: error },
      );
    if (/does not support SSL/i.test(message))
      return new ConnectionSettingError(`${setting} asks for TLS (sslmode=${mode}) but the server does not offer it`, {
        cause: error,
      });
    return error;
  };
  return { config: { ...config, ssl }, explain };
}

/**
 * The session's settings, as one simple query sent right after connecting: a pooler passes a
 * statement on where it refuses an unknown startup parameter (`statement_timeout`). Each
 * prepared statement keeps one generic plan: left to choose, PostgreSQL plans a statement
 * that takes a batch's arrays afresh at every call while batches stay small, and planning
 * can cost more than running (BENCHMARKS.md, "planned at every call"). The append batch's
 * function sets the same for itself (migration 13), since a pooler runs it on any session.
 */
export function sessionSettingsSql(statementTimeoutMs: number): string {
  return `SET statement_timeout = ${Math.trunc(statementTimeoutMs)}; SET plan_cache_mode = force_generic_plan`;
}

/**
 * The start of a transaction. Through a transaction pooler a session setting may stay on
 * another server connection, so the timeout is set inside each transaction (one round trip:
 * a simple query may carry both statements).
 */
export function beginSql(mode: 'session' | 'transaction', statementTimeoutMs: number): string {
  return mode === 'transaction' ? `BEGIN; SET LOCAL statement_timeout = ${Math.trunc(statementTimeoutMs)}` : 'BEGIN';
}

/**
 * A client whose statements are never named: a transaction pooler without prepared
 * statement support (PgBouncer before 1.21) would run a statement prepared on one server
 * connection against another, where it does not exist.
 */
export class UnnamedStatementClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    // One wrapper for pg.Client's overloads, which it passes on as they came.
    (this as { query: unknown }).query = (...args: unknown[]) => {
      const [first] = args;
      if (first !== null && typeof first === 'object' && (first as pg.QueryConfig).name !== undefined)
        args[0] = { ...first, name: undefined };
      return query(...args);
    };
  }
}
