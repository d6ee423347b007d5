// Acknowledging events on SQLite, on the writer thread's connection. An event is found by
// id among the keys of the millisecond its id carries (event-ids.ts), or, when it is not
// there, through unplaced_event_ids (almost always empty).
import type Database from 'better-sqlite3';
import { firstKeyOf, KEYS_PER_MS, msOfId } from '../event-ids.js';
import { EVENTS } from '../tables.js';
import type { EventRecord } from '../storage.js';
import { KEY_OF_ID } from './migrations.js';

export class AckWrites {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      // COALESCE keeps the first acknowledged_at (docs/api.md §4: acknowledging again is a no-op).
      inRange: db.prepare<[number, number, number, string, string], object>(
        `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, ?)
         WHERE rowid >= ? AND rowid < ? AND id = ? AND address_id = ? RETURNING ${EVENTS.list}`,
      ),
      unplaced: db.prepare<[number, string, string, string], object>(
        `UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, ?)
         WHERE rowid = (SELECT event_key FROM unplaced_event_ids WHERE id = ?) AND id = ? AND address_id = ?
         RETURNING ${EVENTS.list}`,
      ),
      upTo: db.prepare(
        `UPDATE events SET acknowledged_at = ? WHERE address_key = ${KEY_OF_ID} AND sequence <= ? AND acknowledged_at IS NULL`,
      ),
    };
  }

  ack(addressId: string, eventId: string, now: number): EventRecord | null {
    const ms = msOfId(eventId);
    const first = ms === null ? null : firstKeyOf(ms);
    const row =
      (first === null ? undefined : this.sql.inRange.get(now, first, first + KEYS_PER_MS, eventId, addressId)) ??
      this.sql.unplaced.get(now, eventId, eventId, addressId);
    return row ? EVENTS.fromRow(row) : null;
  }

  ackUpTo(addressId: string, upTo: number, now: number): number {
    return this.sql.upTo.run(now, addressId, upTo).changes;
  }
}
