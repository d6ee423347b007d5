// The one query that lists callbacks (Storage.listCallbacks), written once for both
// engines: each field of the parameters is one condition, every value a parameter.
import type { ListCallbacksParams } from './storage.js';
import { CALLBACKS, type Dialect } from './tables.js';

export function callbackListQuery(dialect: Dialect, params: ListCallbacksParams): { sql: string; values: unknown[] } {
  const values: unknown[] = [];
  const next = (value: unknown) => {
    values.push(value);
    return dialect === 'postgres' ? `$${values.length}` : '?';
  };
  const where = [`address_id = ${next(params.addressId)}`];
  if (params.ids !== undefined)
    where.push(
      dialect === 'postgres'
        ? `id = ANY(${next(params.ids)}::text[])`
        : `id IN (SELECT value FROM json_each(${next(JSON.stringify(params.ids))}))`,
    );
  if (params.key !== undefined) where.push(`key = ${next(params.key)}`);
  if (params.keyPrefix !== undefined) {
    // Compared as text, not by LIKE: a key's % and _ are its own characters.
    where.push(`substr(key, 1, length(${next(params.keyPrefix)})) = ${next(params.keyPrefix)}`);
  }
  if (params.status !== undefined) where.push(`status = ${next(params.status)}`);
  const sql = `SELECT ${CALLBACKS.list} FROM callbacks WHERE ${where.join(' AND ')} ORDER BY created_at, id LIMIT ${next(params.limit)}`;
  return { sql, values };
}
