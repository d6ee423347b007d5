// PostgreSQL's text cannot hold U+0000 and SQLite's can: so that both engines answer alike,
// a NUL in a field stored as text is refused before storage, on every path that writes one
// (docs/api.md §6). `data` and `metadata` are stored as JSON text, where JSON.stringify
// escapes a NUL: they may hold it.
import { errors } from './errors.js';

/** Throws 400 when `value` holds a NUL; `alternative` says what else the sender may do. */
export function refuseNul(field: string, value: string | null | undefined, alternative?: string): void {
  if (value === null || value === undefined || !value.includes('\u0000')) return;
  throw errors.invalidRequest({
    message: `${field} contains a NUL character (\\u0000), which cannot be stored; remove it${alternative ? `, ${alternative}` : ''}.`,
  });
}

/**
 * Whether an id or slug from a request holds a NUL: then it names nothing stored (none is
 * ever given one), and the caller answers "not found" without asking the engine, as both
 * engines would if PostgreSQL could take it as a parameter.
 */
export const namesNothing = (key: string) => key.includes('\u0000');
