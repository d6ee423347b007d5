// The SQL of email parts on SQLite (migration 7): written by the writer thread, read on the
// event loop's connection. A part row points at its event by the event's key, which the
// event's id leads to through its millisecond's range or unplaced_event_ids (event-ids.ts).
import type Database from 'better-sqlite3';
import { firstKeyOf, KEYS_PER_MS, msOfId } from './event-ids.js';
import type { EmailPart } from './storage.js';

export class SqliteEmailPartWrites {
  private readonly sql;
  private readonly put: Database.Transaction<(eventId: string, parts: EmailPart[]) => boolean>;

  constructor(db: Database.Database) {
    this.sql = {
      keyInRange: db.prepare<[number, number, string], { key: number }>(
        'SELECT key FROM events WHERE key >= ? AND key < ? AND id = ?',
      ),
      keyUnplaced: db.prepare<[string], { key: number }>(
        'SELECT event_key AS key FROM unplaced_event_ids WHERE id = ?',
      ),
      insertBlob: db.prepare('INSERT OR IGNORE INTO email_blobs (sha256, bytes) VALUES (?, ?)'),
      insertPart: db.prepare(
        'INSERT OR IGNORE INTO email_parts (event_key, part, event_id, sha256, content_type, filename) VALUES (?, ?, ?, ?, ?, ?)',
      ),
    };
    this.put = db.transaction((eventId: string, parts: EmailPart[]) => {
      const ms = msOfId(eventId);
      const first = ms === null ? null : firstKeyOf(ms);
      const key =
        (first === null ? undefined : this.sql.keyInRange.get(first, first + KEYS_PER_MS, eventId)?.key) ??
        this.sql.keyUnplaced.get(eventId)?.key;
      if (key === undefined) return false;
      for (const part of parts) {
        this.sql.insertBlob.run(part.sha256, part.bytes);
        this.sql.insertPart.run(key, part.part, eventId, part.sha256, part.contentType, part.filename);
      }
      return true;
    });
  }

  putEmailParts(eventId: string, parts: EmailPart[]): boolean {
    return this.put.immediate(eventId, parts);
  }
}

export function prepareEmailPartRead(db: Database.Database) {
  const statement = db.prepare<[string, number, string], Omit<EmailPart, 'part'>>(
    `SELECT p.sha256, p.content_type AS contentType, p.filename, b.bytes
     FROM email_parts p JOIN events e ON e.key = p.event_key JOIN email_blobs b ON b.sha256 = p.sha256
     WHERE p.event_id = ? AND p.part = ? AND e.address_id = ?`,
  );
  return (addressId: string, eventId: string, part: number): EmailPart | null => {
    const row = statement.get(eventId, part, addressId);
    return row ? { part, ...row } : null;
  };
}
