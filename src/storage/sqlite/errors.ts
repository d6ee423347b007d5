// How the SQLite engine's failures reach the edge: a full disk or an I/O error while the
// service runs is 503 `unavailable` (the file is fine, the write was not made, a retry may
// succeed once space returns), and a file that cannot be opened at start is one clear
// sentence for the operator rather than SQLite's terse code.
import { StorageError, StorageUnavailableError } from '../errors.js';

const codeOf = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
};

/** SQLite's result codes for a disk or lock that may come right without a restart. */
const TRANSIENT = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|NOMEM|CANTOPEN|PROTOCOL)/;

/** The StorageError a failure of a running engine is (unavailable when transient), else itself. */
export function sqliteError(error: unknown): unknown {
  if (error instanceof StorageError) return error;
  const code = codeOf(error);
  if (code === 'SQLITE_FULL')
    return new StorageUnavailableError(
      'The disk holding the database is full; nothing was written. Retry once space is freed.',
      { cause: error },
    );
  if (TRANSIENT.test(code)) return new StorageUnavailableError(undefined, { cause: error });
  return error;
}

/** Why the database at `path` cannot be opened, in words an operator can act on. */
export function cannotOpen(path: string, error: unknown): Error {
  const code = codeOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  const why =
    code === 'SQLITE_NOTADB'
      ? 'it is not a SQLite database (or it is damaged)'
      : code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED'
        ? 'another program holds a lock on it; stop that program or point ROOST_DB elsewhere'
        : code === 'SQLITE_CANTOPEN' || code === 'EACCES' || code === 'EISDIR' || code === 'ENOTDIR'
          ? 'it cannot be opened (is it a directory, or is its folder not writable?)'
          : code === 'SQLITE_READONLY' || code === 'EROFS'
            ? 'it is read-only; Roost needs to write it'
            : code === 'SQLITE_CORRUPT'
              ? 'it is damaged'
              : code === 'SQLITE_FULL' || code === 'ENOSPC'
                ? 'the disk is full'
                : 'it failed to open';
  return new Error(`Cannot open the SQLite database ${path}: ${why} (${detail})`, { cause: error });
}
