// How the PostgreSQL engine tells a database that is away, stalled or overloaded (503
// `unavailable`, retry shortly) from a bug (500) or a client's mistake (400). Every path
// a query can fail by — refused, reset, terminated by an administrator, crashed server,
// statement or client-side timeout, a full pool — lands in one of these.
import { StorageError, StorageInvalidValueError, StorageUnavailableError } from '../errors.js';

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);

const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code;

/**
 * Whether the connection this failure happened on is unusable and must be destroyed, not
 * pooled or sent a ROLLBACK: the socket is gone, the server ended the session (57P01–57P03,
 * class 08), or the client gave up waiting for an answer (the server may be stalled, and
 * anything sent next would queue behind the unanswered query).
 */
export function isConnectionLost(error: unknown): boolean {
  const code = codeOf(error);
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || /^(08|57P0[1-3])/.test(code))) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection error|not queryable|Query read timeout|timeout exceeded when trying to connect/i.test(
    message,
  );
}

/**
 * Whether a failure is the database being away or overloaded rather than a bug: a lost
 * connection (above), class 53 (resources, e.g. too many connections), 57014
 * (statement_timeout), 58 (system), 40001/40P01/55P03 (serialization, deadlock, lock
 * timeout after their retries), or a pool that has been ended.
 */
export function isUnavailable(error: unknown): boolean {
  if (isConnectionLost(error)) return true;
  const code = codeOf(error);
  if (typeof code === 'string' && /^(53|57014|58|40001|40P01|55P03)/.test(code)) return true;
  return /Cannot use a pool after calling end/i.test(error instanceof Error ? error.message : '');
}

/** Serialization failure and deadlock: the transaction rolled back whole and can run again. */
export const isRetryable = (error: unknown) => ['40001', '40P01'].includes(String(codeOf(error)));

export const isUniqueViolation = (error: unknown, constraint: string) =>
  codeOf(error) === '23505' && (error as { constraint?: unknown }).constraint === constraint;

/** Whether a failure means the database is away or overloaded, before or after databaseUnavailable. */
export const isUnavailableFailure = (error: unknown) =>
  isUnavailable(error) || error instanceof StorageUnavailableError;

/** 503 `unavailable`, keeping the database's own error as `cause` for the log. */
export const databaseUnavailable = (cause: unknown) =>
  new StorageUnavailableError('The database is unavailable; retry shortly.', { cause });

/** The StorageError a database failure is (unavailable, or an invalid value for NUL), else itself. */
export function storageError(error: unknown): unknown {
  if (error instanceof StorageError) return error;
  if (isUnavailable(error)) return databaseUnavailable(error);
  // PostgreSQL text cannot hold U+0000 (SQLite can); `data` and `metadata` are escaped
  // JSON and never hit this, but `type`, `source`, `name` or `task_id` may.
  if (codeOf(error) === '22021' || codeOf(error) === '22P05') {
    return new StorageInvalidValueError(
      'A text field contains a NUL character (\\u0000), which cannot be stored; remove it.',
      { cause: error },
    );
  }
  return error;
}
