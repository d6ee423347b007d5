// Callbacks on SQLite (docs/api.md §3.6): read on the event loop's connection, written on
// the writer thread's. Create finds an existing key by the unique index (INSERT … ON
// CONFLICT DO NOTHING, then the row that holds the key); every change of status is
// conditional on `waiting`, so a callback leaves it once.
import type Database from 'better-sqlite3';
import { callbackListQuery } from '../callback-query.js';
import { CALLBACKS, placeholders } from '../tables.js';
import type { CallbackRecord, CompleteCallbackParams, CreateCallbackResult, ListCallbacksParams } from '../storage.js';

export class CallbackReads {
  private readonly sql;
  private readonly lists = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.sql = {
      get: db.prepare<[string, string], object>(
        `SELECT ${CALLBACKS.list} FROM callbacks WHERE address_id = ? AND id = ?`,
      ),
      due: db.prepare<[number, number], object>(
        `SELECT ${CALLBACKS.list} FROM callbacks WHERE status = 'waiting' AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
      ),
    };
  }

  get(addressId: string, id: string): CallbackRecord | null {
    const row = this.sql.get.get(addressId, id);
    return row ? CALLBACKS.fromRow(row) : null;
  }

  list(params: ListCallbacksParams): CallbackRecord[] {
    const { sql, values } = callbackListQuery('sqlite', params);
    let statement = this.lists.get(sql);
    if (!statement) this.lists.set(sql, (statement = this.db.prepare(sql)));
    return (statement.all(...values) as object[]).map((row) => CALLBACKS.fromRow(row));
  }

  due(now: number, limit: number): CallbackRecord[] {
    return this.sql.due.all(now, limit).map((row) => CALLBACKS.fromRow(row));
  }
}

export class CallbackWrites {
  private readonly sql;

  constructor(
    private readonly db: Database.Database,
    private readonly isLive: (addressId: string, now: number) => boolean,
  ) {
    this.sql = {
      countWaiting: db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM callbacks WHERE address_id = ? AND status = 'waiting'",
      ),
      byKey: db.prepare<[string, string], object>(
        `SELECT ${CALLBACKS.list} FROM callbacks WHERE address_id = ? AND key = ?`,
      ),
      insert: db.prepare(
        `INSERT INTO callbacks (${CALLBACKS.list}) VALUES (${placeholders('sqlite', CALLBACKS.names.length)})
         ON CONFLICT (address_id, key) DO NOTHING`,
      ),
      count: db.prepare('UPDATE callbacks SET deliveries = deliveries + 1 WHERE address_id = ? AND id = ?'),
      complete: db.prepare<[number, string, number, string | null, string, string, number], object>(
        `UPDATE callbacks SET status = 'completed', completed_at = ?, event_id = ?, event_sequence = ?, answer = ?
         WHERE address_id = ? AND id = ? AND status = 'waiting' AND expires_at > ? RETURNING ${CALLBACKS.list}`,
      ),
      cancel: db.prepare(
        "UPDATE callbacks SET status = 'cancelled' WHERE address_id = ? AND id = ? AND status IN ('waiting', 'completed')",
      ),
      get: db.prepare<[string, string], object>(
        `SELECT ${CALLBACKS.list} FROM callbacks WHERE address_id = ? AND id = ?`,
      ),
      expire: db.prepare(
        "UPDATE callbacks SET status = 'expired' WHERE address_id = ? AND id = ? AND status = 'waiting'",
      ),
      purge: db.prepare("DELETE FROM callbacks WHERE status <> 'waiting' AND COALESCE(completed_at, expires_at) < ?"),
    };
  }

  create(callback: CallbackRecord, maxWaiting: number, now: number): CreateCallbackResult {
    return this.db.transaction((): CreateCallbackResult => {
      if (!this.isLive(callback.addressId, now)) return { status: 'address_not_found' };
      if (callback.key !== null) {
        const held = this.sql.byKey.get(callback.addressId, callback.key);
        if (held) return { status: 'existing', callback: CALLBACKS.fromRow(held) };
      }
      if (this.sql.countWaiting.get(callback.addressId)!.n >= maxWaiting) return { status: 'limit' };
      this.sql.insert.run(...CALLBACKS.values(callback, 'sqlite'));
      return { status: 'created', callback };
    })();
  }

  countDelivery(addressId: string, id: string): void {
    this.sql.count.run(addressId, id);
  }

  complete(p: CompleteCallbackParams): CallbackRecord | null {
    const row = this.sql.complete.get(p.now, p.eventId, p.eventSequence, p.answerJson, p.addressId, p.id, p.now);
    return row ? CALLBACKS.fromRow(row) : null;
  }

  cancel(addressId: string, id: string): CallbackRecord | null {
    return this.db.transaction(() => {
      this.sql.cancel.run(addressId, id);
      const row = this.sql.get.get(addressId, id);
      return row ? CALLBACKS.fromRow(row) : null;
    })();
  }

  expire(addressId: string, id: string): boolean {
    return this.sql.expire.run(addressId, id).changes > 0;
  }

  purge(before: number): number {
    return this.sql.purge.run(before).changes;
  }
}
