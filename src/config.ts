// Configuration: the environment (docs/api.md §10) and the CLI's flags, read once into one
// validated Config that is passed to every module. Nothing else reads process.env.
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { parseSecretKey } from './core/secret-box.js';
import type { PoolMode, PostgresOptions } from './storage/postgres/connection-options.js';

export const PRODUCT = 'roost';

export interface RateSpec {
  /** Bucket size: requests allowed in one period. */
  limit: number;
  /** The period over which the bucket refills completely, in milliseconds. */
  periodMs: number;
  /** The text the operator wrote, e.g. "20/min". */
  text: string;
}

/** The PostgreSQL settings are the engine's own options (PostgresOptions). */
export interface Config extends PostgresOptions {
  port: number;
  host: string;
  /** Public origin used in returned URLs, no trailing slash. */
  baseUrl: string;
  /** True when ROOST_BASE_URL was not given: the server derives it from the bound port. */
  baseUrlFromPort: boolean;
  /** SQLite file (the embedded default); ignored when databaseUrl is set. */
  dbPath: string;
  smtpPort: number;
  smtpHost: string;
  mailDomain: string;
  createRate: RateSpec;
  /**
   * Which X-Forwarded-For entries come from trusted proxies: none (false), the nearest N
   * hops (`true` is 1: the proxy in front), or those from a list of addresses/CIDRs.
   */
  trustProxy: false | number | string[];
  maxBodyBytes: number;
  maxEmailBytes: number;
  /** Bytes of events one address may hold (0: no limit); beyond it deliveries get 429. */
  maxBytesPerAddress: number;
  /** Glob patterns of header names raw capture drops (`!pattern` keeps); see raw-capture.ts. */
  rawDropHeaders: string[];
  /** Browser origins allowed to call /mcp besides the base URL's own (DNS rebinding, MCP transport spec). */
  mcpAllowedOrigins: string[];
  defaultTtlSeconds?: number;
  maxTtlSeconds?: number;
  /** Live view tokens one address may hold at once. */
  maxViewTokens: number;
  /** Waiting callbacks per address (ROOST_MAX_CALLBACKS; docs/api.md §3.6). */
  maxCallbacks: number;
  logLevel: string;
  /** How often expired addresses and old events are purged (docs/api.md §2: within a minute). */
  sweepIntervalMs: number;
  /** How long SIGTERM waits for in-flight requests before closing storage. */
  shutdownGraceMs: number;
  /** Held polls plus open streams allowed per address, and per client IP; 0 means no limit. */
  maxWaitersPerAddress: number;
  maxWaitersPerIp: number;
  /** Open HTTP connections allowed per peer address; 0 means no limit. */
  maxConnectionsPerIp: number;
  /** Time allowed to receive a whole request, and its headers; a response may take longer. */
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** A page of events stops before the event that would take its stored bytes past this (one event at least). */
  maxPageBytes: number;
  /** A filtered read looks at most this many events past its cursor per request (docs/api.md §4.3). */
  filterScanEvents: number;
  /** A stream or page whose reader takes nothing for this long (to twice as long) is dropped. */
  slowReaderTimeoutMs: number;
  /** Inbound email: bounds on what one sender and one message may cost (docs/email.md). */
  email: EmailLimits;
  /** ROOST_SECRET_KEY: seals sender secrets (docs/api.md §3.2); when unset, the key in secretKeyPath. */
  secretKey?: Buffer;
  /** Where the generated key lives: beside the SQLite file (the data directory). */
  secretKeyPath: string;
  /** Said at start: ROOST_* variables that no setting reads, with the closest known name. */
  warnings?: string[];
}

export interface EmailLimits {
  /** PEM files for STARTTLS; both or neither. Re-read when they change. */
  tlsCertPath?: string;
  tlsKeyPath?: string;
  /** Simultaneous SMTP connections from one IP address; the next is told 421. */
  maxConnectionsPerIp: number;
  /** Messages (MAIL FROM) per IP address: a token bucket; past it, 451 at MAIL. */
  messageRate: RateSpec;
  /** An SMTP connection that says nothing for this long is closed. */
  idleTimeoutMs: number;
  /** Parsing and authenticating one message may take this long; then its worker is stopped. */
  processingDeadlineMs: number;
  /** The longest `text` and `html` an event holds (UTF-8 bytes); the rest stays in the raw message. */
  maxTextBytes: number;
  maxHtmlBytes: number;
  /** The name the SMTP greeting, EHLO and Received lines give for this host. */
  hostname: string;
  /**
   * Where mail to postmaster@ and abuse@ goes: a return address (its email), or, when none
   * is named, .eml files in this directory (docs/email.md "postmaster and abuse").
   */
  postmasterAddress?: string;
  postmasterDir: string;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** The recognised variables, so that `roost serve --help` and the README agree. */
export const ENV_VARS = [
  'PORT',
  'HOST',
  'ROOST_BASE_URL',
  'ROOST_DB',
  'DATABASE_URL',
  'ROOST_PG_POOL_SIZE',
  'ROOST_PG_STATEMENT_TIMEOUT_MS',
  'ROOST_PG_CONNECT_TIMEOUT_MS',
  'ROOST_PG_LISTEN_URL',
  'ROOST_PG_POOL_MODE',
  'ROOST_PG_START_TIMEOUT_MS',
  'ROOST_SMTP_PORT',
  'ROOST_SMTP_HOST',
  'ROOST_MAIL_DOMAIN',
  'ROOST_CREATE_RATE',
  'ROOST_TRUST_PROXY',
  'ROOST_MAX_BODY_BYTES',
  'ROOST_MAX_EMAIL_BYTES',
  'ROOST_MAX_BYTES_PER_ADDRESS',
  'ROOST_RAW_DROP_HEADERS',
  'ROOST_MCP_ALLOWED_ORIGINS',
  'ROOST_DEFAULT_TTL_SECONDS',
  'ROOST_MAX_TTL_SECONDS',
  'ROOST_MAX_VIEW_TOKENS',
  'ROOST_MAX_CALLBACKS',
  'LOG_LEVEL',
  'ROOST_SWEEP_INTERVAL_MS',
  'ROOST_MAX_WAITERS_PER_ADDRESS',
  'ROOST_MAX_WAITERS_PER_IP',
  'ROOST_MAX_CONNECTIONS_PER_IP',
  'ROOST_REQUEST_TIMEOUT_MS',
  'ROOST_HEADERS_TIMEOUT_MS',
  'ROOST_KEEP_ALIVE_TIMEOUT_MS',
  'ROOST_MAX_PAGE_BYTES',
  'ROOST_FILTER_SCAN_EVENTS',
  'ROOST_SLOW_READER_TIMEOUT_MS',
  'ROOST_SMTP_TLS_CERT',
  'ROOST_SMTP_TLS_KEY',
  'ROOST_SMTP_MAX_CONNECTIONS_PER_IP',
  'ROOST_SMTP_MESSAGE_RATE',
  'ROOST_SMTP_IDLE_TIMEOUT_SECONDS',
  'ROOST_EMAIL_DEADLINE_MS',
  'ROOST_EMAIL_MAX_TEXT_BYTES',
  'ROOST_EMAIL_MAX_HTML_BYTES',
  'ROOST_SMTP_HOSTNAME',
  'ROOST_POSTMASTER_ADDRESS',
  'ROOST_SECRET_KEY',
] as const;

/** Variables of the `roost` client commands and the test suite: known, though serve reads none. */
const OTHER_KNOWN_VARS = [
  'ROOST_URL',
  'ROOST_CREDENTIALS',
  'ROOST_ADDRESS_ID',
  'ROOST_READ_TOKEN',
  'ROOST_SENDER_SECRETS',
  'ROOST_SENDER_VERIFY_TOKEN',
];

/** Edit distance (insertions, deletions, substitutions, adjacent swaps) between two names. */
function distance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1);
    }
  }
  return rows[a.length][b.length];
}

/**
 * One sentence per ROOST_* variable that nothing reads (a misspelt ROOST_SMPT_PORT would
 * otherwise be ignored without a word), naming the closest known variable. The test suite's
 * own ROOST_TEST_* and ROOST_BENCH_* variables are not Roost's settings.
 */
export function unknownVariableWarnings(env: Env): string[] {
  const known: string[] = [...ENV_VARS, ...OTHER_KNOWN_VARS];
  return Object.keys(env)
    .filter((name) => name.startsWith('ROOST_') && !/^ROOST_(TEST|BENCH)_/.test(name) && !known.includes(name))
    .sort()
    .map((name) => {
      const closest = known.reduce((best, candidate) =>
        distance(name, candidate) < distance(name, best) ? candidate : best,
      );
      return `${name} is not a Roost setting and is ignored; did you mean ${closest}? (README.md § Configuration)`;
    });
}

/** Type-only import above: the client commands read this file and must not load the driver. */
const POOL_MODES: readonly PoolMode[] = ['auto', 'session', 'transaction'];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function integer(env: Env, name: string, fallback: number, min: number, max: number): number;
function integer(env: Env, name: string, fallback: undefined, min: number, max: number): number | undefined;
function integer(env: Env, name: string, fallback: number | undefined, min: number, max: number) {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

const PERIODS: Record<string, number> = {
  sec: 1_000,
  second: 1_000,
  s: 1_000,
  min: 60_000,
  minute: 60_000,
  m: 60_000,
  hour: 3_600_000,
  h: 3_600_000,
};

export function parseRate(text: string, name = 'ROOST_CREATE_RATE'): RateSpec {
  const match = /^\s*(\d+)\s*\/\s*([a-z]+)\s*$/i.exec(text);
  const periodMs = match ? PERIODS[match[2].toLowerCase()] : undefined;
  if (!match || periodMs === undefined || Number(match[1]) < 1) {
    throw new ConfigError(`${name} must look like "20/min" (N/sec, N/min or N/hour, N ≥ 1), got "${text}"`);
  }
  return { limit: Number(match[1]), periodMs, text: text.trim() };
}

function parseTrustProxy(raw: string | undefined): Config['trustProxy'] {
  if (raw === undefined || raw === '' || /^(0|false|off|no)$/i.test(raw)) return false;
  // `true` trusts the one proxy in front, not every hop: the client writes the leftmost
  // entries itself, so only the one that proxy appended names the client.
  if (/^(true|on|yes)$/i.test(raw)) return 1;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function parseSize(env: Env, name: string, fallback: number, { zeroMeansNone = false } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const match = /^\s*(\d+)\s*(b|kb|kib|k|mb|mib|m|gb|gib|g)?\s*$/i.exec(raw);
  if (!match) throw new ConfigError(`${name} must be a byte count such as 262144, 256KiB or 10MiB, got "${raw}"`);
  const unit = (match[2] ?? 'b').toLowerCase();
  const factor = unit.startsWith('k') ? 1024 : unit.startsWith('m') ? 1024 ** 2 : unit.startsWith('g') ? 1024 ** 3 : 1;
  const value = Number(match[1]) * factor;
  if (zeroMeansNone && value === 0) return 0;
  if (value < 1024) throw new ConfigError(`${name} must be at least 1 KiB${zeroMeansNone ? ' (or 0: no limit)' : ''}`);
  return value;
}

/**
 * The default of ROOST_RAW_DROP_HEADERS: names that carry a sender's credentials (API
 * keys, shared tokens, session ids). `!name` keeps a header a pattern would drop. Signature
 * headers (x-hub-signature-256, stripe-signature, svix-signature…) match none of these:
 * a signature proves the body without granting anything, and readers need it.
 */
export const DEFAULT_RAW_DROP_HEADERS = [
  'proxy-authorization',
  'set-cookie',
  '*-key',
  '*-token',
  '*-secret',
  '*-password',
  '*-credential',
  '*-credentials',
  '*-session',
  '*-session-id',
  'x-auth*',
  'api-key',
  'apikey',
  '!idempotency-key',
];

function parseHeaderPatterns(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return DEFAULT_RAW_DROP_HEADERS;
  if (/^\s*none\s*$/i.test(raw)) return [];
  const patterns = raw
    .split(',')
    .map((p) => p.trim().toLowerCase())
    .filter(Boolean);
  for (const pattern of patterns) {
    if (!/^!?[a-z0-9*_-]+$/.test(pattern))
      throw new ConfigError(
        `ROOST_RAW_DROP_HEADERS: "${pattern}" is not a header name pattern (letters, digits, -, _ and *)`,
      );
  }
  return patterns;
}

function parseOrigins(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((origin) => {
      try {
        const url = new URL(origin);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
        return url.origin;
      } catch {
        throw new ConfigError(
          `ROOST_MCP_ALLOWED_ORIGINS: "${origin}" is not an http(s) origin such as https://app.example`,
        );
      }
    });
}

/** The machine's name when it is a full one, else the host of ROOST_BASE_URL, else the machine's name. */
function defaultSmtpHostname(baseUrl: string | undefined): string {
  const machine = hostname();
  if (machine.includes('.') || !baseUrl) return machine;
  try {
    const host = new URL(baseUrl).hostname;
    return /^[a-z0-9.-]+$/i.test(host) && /[a-z]/i.test(host) ? host : machine;
  } catch {
    return machine;
  }
}

export function loadConfig(env: Env = {}): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const rawBase = env.ROOST_BASE_URL || `http://localhost:${port}`;
  let baseUrl: string;
  try {
    const url = new URL(rawBase);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
    baseUrl = rawBase.replace(/\/+$/, '');
  } catch {
    throw new ConfigError(`ROOST_BASE_URL must be an http(s) URL, got "${rawBase}"`);
  }
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  }
  const pgListenUrl = env.ROOST_PG_LISTEN_URL || undefined;
  if (pgListenUrl && !/^postgres(ql)?:\/\//.test(pgListenUrl)) {
    throw new ConfigError('ROOST_PG_LISTEN_URL must be a postgres:// URL');
  }
  const pgPoolMode = (env.ROOST_PG_POOL_MODE || 'auto').toLowerCase() as PoolMode;
  if (!POOL_MODES.includes(pgPoolMode))
    throw new ConfigError(
      `ROOST_PG_POOL_MODE must be one of ${POOL_MODES.join(', ')}, got "${env.ROOST_PG_POOL_MODE}"`,
    );
  const defaultTtlSeconds = integer(env, 'ROOST_DEFAULT_TTL_SECONDS', undefined, 60, 31_536_000);
  const maxTtlSeconds = integer(env, 'ROOST_MAX_TTL_SECONDS', undefined, 60, 31_536_000);
  if (defaultTtlSeconds !== undefined && maxTtlSeconds !== undefined && defaultTtlSeconds > maxTtlSeconds) {
    throw new ConfigError('ROOST_DEFAULT_TTL_SECONDS cannot exceed ROOST_MAX_TTL_SECONDS');
  }
  const logLevel = (env.LOG_LEVEL || 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const requestTimeoutMs = integer(env, 'ROOST_REQUEST_TIMEOUT_MS', 30_000, 1_000, 3_600_000);
  const headersTimeoutMs = integer(env, 'ROOST_HEADERS_TIMEOUT_MS', 10_000, 1_000, 3_600_000);
  // Node's rule: the headers are part of the request, so their limit cannot be the longer one.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('ROOST_HEADERS_TIMEOUT_MS cannot exceed ROOST_REQUEST_TIMEOUT_MS');
  }
  const mailDomain = (env.ROOST_MAIL_DOMAIN || 'localhost').toLowerCase();
  if (!/^[a-z0-9.-]+$/.test(mailDomain))
    throw new ConfigError(`ROOST_MAIL_DOMAIN is not a domain name: "${mailDomain}"`);
  const tlsCertPath = env.ROOST_SMTP_TLS_CERT || undefined;
  const tlsKeyPath = env.ROOST_SMTP_TLS_KEY || undefined;
  if ((tlsCertPath === undefined) !== (tlsKeyPath === undefined))
    throw new ConfigError('ROOST_SMTP_TLS_CERT and ROOST_SMTP_TLS_KEY go together: set both or neither');

  const secretKeyText = env.ROOST_SECRET_KEY || undefined;
  const secretKey = secretKeyText === undefined ? undefined : parseSecretKey(secretKeyText);
  if (secretKeyText !== undefined && !secretKey)
    throw new ConfigError('ROOST_SECRET_KEY must be 32 bytes in base64 (openssl rand -base64 32) or 64 hex digits');
  const dbPath = env.ROOST_DB || './data/roost.db';
  // A URL would be taken as a relative path: a file under a directory named "postgres:".
  // The URL itself is not repeated: it may carry a password.
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(dbPath)?.[1].toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql')
    throw new ConfigError('ROOST_DB is the SQLite file; a postgres:// URL goes in DATABASE_URL');
  if (scheme !== undefined) throw new ConfigError(`ROOST_DB must be a file path, not a ${scheme}:// URL`);
  const isHostname = (name: string) => /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(name) && name.length <= 253;
  const machineName = defaultSmtpHostname(env.ROOST_BASE_URL).toLowerCase();
  const smtpHostname = env.ROOST_SMTP_HOSTNAME?.toLowerCase() || (isHostname(machineName) ? machineName : 'localhost');
  if (!isHostname(smtpHostname)) throw new ConfigError(`ROOST_SMTP_HOSTNAME is not a host name: "${smtpHostname}"`);
  const postmasterAddress = env.ROOST_POSTMASTER_ADDRESS?.trim().toLowerCase() || undefined;
  if (postmasterAddress !== undefined && !/^[a-z0-9]+(-[a-z0-9]+)*@[a-z0-9.-]+$/.test(postmasterAddress))
    throw new ConfigError(`ROOST_POSTMASTER_ADDRESS must be the email of a return address, got "${postmasterAddress}"`);

  return {
    port,
    host,
    baseUrl,
    baseUrlFromPort: !env.ROOST_BASE_URL,
    dbPath,
    databaseUrl,
    pgPoolSize: integer(env, 'ROOST_PG_POOL_SIZE', 10, 1, 1000),
    pgStatementTimeoutMs: integer(env, 'ROOST_PG_STATEMENT_TIMEOUT_MS', 10_000, 0, 3_600_000),
    pgConnectTimeoutMs: integer(env, 'ROOST_PG_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
    pgListenUrl,
    pgPoolMode,
    pgStartTimeoutMs: integer(env, 'ROOST_PG_START_TIMEOUT_MS', 30_000, 0, 3_600_000),
    smtpPort: integer(env, 'ROOST_SMTP_PORT', 2525, 0, 65535),
    smtpHost: env.ROOST_SMTP_HOST || host,
    mailDomain,
    createRate: parseRate(env.ROOST_CREATE_RATE || '20/min'),
    trustProxy: parseTrustProxy(env.ROOST_TRUST_PROXY),
    maxBodyBytes: parseSize(env, 'ROOST_MAX_BODY_BYTES', 256 * 1024),
    maxEmailBytes: parseSize(env, 'ROOST_MAX_EMAIL_BYTES', 10 * 1024 * 1024),
    maxBytesPerAddress: parseSize(env, 'ROOST_MAX_BYTES_PER_ADDRESS', 64 * 1024 * 1024, { zeroMeansNone: true }),
    rawDropHeaders: parseHeaderPatterns(env.ROOST_RAW_DROP_HEADERS),
    mcpAllowedOrigins: parseOrigins(env.ROOST_MCP_ALLOWED_ORIGINS),
    defaultTtlSeconds,
    maxTtlSeconds,
    maxViewTokens: integer(env, 'ROOST_MAX_VIEW_TOKENS', 20, 1, 1000),
    maxCallbacks: integer(env, 'ROOST_MAX_CALLBACKS', 1000, 1, 100_000),
    logLevel,
    sweepIntervalMs: integer(env, 'ROOST_SWEEP_INTERVAL_MS', 30_000, 50, 3_600_000),
    shutdownGraceMs: 10_000,
    maxWaitersPerAddress: integer(env, 'ROOST_MAX_WAITERS_PER_ADDRESS', 32, 0, 1_000_000),
    maxWaitersPerIp: integer(env, 'ROOST_MAX_WAITERS_PER_IP', 1024, 0, 1_000_000),
    maxConnectionsPerIp: integer(env, 'ROOST_MAX_CONNECTIONS_PER_IP', 2048, 0, 1_000_000),
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: integer(env, 'ROOST_KEEP_ALIVE_TIMEOUT_MS', 5_000, 1, 3_600_000),
    maxPageBytes: parseSize(env, 'ROOST_MAX_PAGE_BYTES', 4 * 1024 * 1024),
    filterScanEvents: integer(env, 'ROOST_FILTER_SCAN_EVENTS', 500, 1, 100_000),
    slowReaderTimeoutMs: integer(env, 'ROOST_SLOW_READER_TIMEOUT_MS', 15_000, 100, 3_600_000),
    email: {
      tlsCertPath,
      tlsKeyPath,
      maxConnectionsPerIp: integer(env, 'ROOST_SMTP_MAX_CONNECTIONS_PER_IP', 10, 1, 10_000),
      messageRate: parseRate(env.ROOST_SMTP_MESSAGE_RATE || '30/min', 'ROOST_SMTP_MESSAGE_RATE'),
      idleTimeoutMs: integer(env, 'ROOST_SMTP_IDLE_TIMEOUT_SECONDS', 60, 1, 3600) * 1000,
      processingDeadlineMs: integer(env, 'ROOST_EMAIL_DEADLINE_MS', 5_000, 100, 600_000),
      maxTextBytes: parseSize(env, 'ROOST_EMAIL_MAX_TEXT_BYTES', 256 * 1024),
      maxHtmlBytes: parseSize(env, 'ROOST_EMAIL_MAX_HTML_BYTES', 256 * 1024),
      hostname: smtpHostname,
      postmasterAddress,
      postmasterDir: join(dirname(dbPath), 'postmaster'),
    },
    secretKey,
    secretKeyPath: join(dirname(dbPath), 'secret.key'),
    warnings: unknownVariableWarnings(env),
  };
}
