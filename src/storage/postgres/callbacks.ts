// Callbacks on PostgreSQL (docs/api.md §3.6). Create takes the address row lock, so the
// count of waiting callbacks holds against concurrent creates, and finds an existing key by
// the unique index (INSERT … ON CONFLICT DO NOTHING, then the row that holds the key).
// Every change of status is one UPDATE conditional on `waiting`: a callback leaves it
// once, on any instance. A completion or cancellation is announced (NOTIFY) in the same
// statement, so that waits held on other instances wake.
import { callbackListQuery } from '../callback-query.js';
import { CALLBACKS, placeholders } from '../tables.js';
import type {
  CallbackRecord,
  CompleteCallbackParams,
  CreateCallbackParams,
  CreateCallbackResult,
  ListCallbacksParams,
} from '../storage.js';
import { nameBuiltStatement, namedStatements, type PgConnection } from './connection.js';
import { LIVE } from './addresses.js';
import { WAKE_CHANNEL } from './listener.js';

const SQL = namedStatements('callback', {
  lockLiveAddress: `SELECT id FROM addresses WHERE id = $1 AND ${LIVE} FOR UPDATE`,
  byKey: `SELECT ${CALLBACKS.list} FROM callbacks WHERE address_id = $1 AND key = $2`,
  countWaiting: "SELECT count(*)::int AS n FROM callbacks WHERE address_id = $1 AND status = 'waiting'",
  insert: `INSERT INTO callbacks (${CALLBACKS.list}) VALUES (${placeholders('postgres', CALLBACKS.names.length)})
    ON CONFLICT (address_id, key) DO NOTHING`,
  get: `SELECT ${CALLBACKS.list} FROM callbacks WHERE address_id = $1 AND id = $2`,
  count: 'UPDATE callbacks SET deliveries = deliveries + 1 WHERE address_id = $1 AND id = $2',
  complete: `
    WITH done AS (
      UPDATE callbacks SET status = 'completed', completed_at = $1, event_id = $2, event_sequence = $3, answer = $4
      WHERE address_id = $5 AND id = $6 AND status = 'waiting' AND expires_at > $1
      RETURNING ${CALLBACKS.list}
    )
    SELECT done.*, pg_notify('${WAKE_CHANNEL}', done.address_id) FROM done`,
  cancel: `
    WITH gone AS (
      UPDATE callbacks SET status = 'cancelled'
      WHERE address_id = $1 AND id = $2 AND status IN ('waiting', 'completed')
      RETURNING address_id
    )
    SELECT pg_notify('${WAKE_CHANNEL}', address_id) FROM gone`,
  due: `SELECT ${CALLBACKS.list} FROM callbacks WHERE status = 'waiting' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
  expire: `
    WITH gone AS (
      UPDATE callbacks SET status = 'expired' WHERE address_id = $1 AND id = $2 AND status = 'waiting'
      RETURNING address_id
    )
    SELECT pg_notify('${WAKE_CHANNEL}', address_id) FROM gone`,
  purge: "DELETE FROM callbacks WHERE status <> 'waiting' AND COALESCE(completed_at, expires_at) < $1",
});

export class PgCallbacks {
  constructor(private readonly db: PgConnection) {}

  create({ callback, maxWaiting, now }: CreateCallbackParams): Promise<CreateCallbackResult> {
    return this.db.transaction<CreateCallbackResult>(async (db) => {
      if ((await db.query(SQL.lockLiveAddress, [callback.addressId, now])).rowCount === 0)
        return { commit: { status: 'address_not_found' as const } };
      if (callback.key !== null) {
        const held = await db.query<object>(SQL.byKey, [callback.addressId, callback.key]);
        if (held.rows[0]) return { commit: { status: 'existing' as const, callback: CALLBACKS.fromRow(held.rows[0]) } };
      }
      const { rows } = await db.query<{ n: number }>(SQL.countWaiting, [callback.addressId]);
      if (rows[0].n >= maxWaiting) return { commit: { status: 'limit' as const } };
      await db.query(SQL.insert, CALLBACKS.values(callback, 'postgres'));
      return { commit: { status: 'created' as const, callback } };
    });
  }

  async get(addressId: string, id: string): Promise<CallbackRecord | null> {
    const { rows } = await this.db.query(SQL.get, [addressId, id]);
    return rows[0] ? CALLBACKS.fromRow(rows[0]) : null;
  }

  async list(params: ListCallbacksParams): Promise<CallbackRecord[]> {
    const { sql, values } = callbackListQuery('postgres', params);
    nameBuiltStatement('callback_list', sql);
    const { rows } = await this.db.query(sql, values);
    return rows.map((row) => CALLBACKS.fromRow(row));
  }

  async countDelivery(addressId: string, id: string): Promise<void> {
    await this.db.query(SQL.count, [addressId, id]);
  }

  async complete(p: CompleteCallbackParams): Promise<CallbackRecord | null> {
    const { rows } = await this.db.query(SQL.complete, [
      p.now,
      p.eventId,
      p.eventSequence,
      p.answerJson,
      p.addressId,
      p.id,
    ]);
    return rows[0] ? CALLBACKS.fromRow(rows[0]) : null;
  }

  async cancel(addressId: string, id: string): Promise<CallbackRecord | null> {
    await this.db.query(SQL.cancel, [addressId, id]);
    return this.get(addressId, id);
  }

  async due(now: number, limit: number): Promise<CallbackRecord[]> {
    const { rows } = await this.db.query(SQL.due, [now, limit]);
    return rows.map((row) => CALLBACKS.fromRow(row));
  }

  async expire(addressId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.query(SQL.expire, [addressId, id]);
    return (rowCount ?? 0) > 0;
  }

  async purge(before: number): Promise<number> {
    const { rowCount } = await this.db.query(SQL.purge, [before]);
    return rowCount ?? 0;
  }
}
