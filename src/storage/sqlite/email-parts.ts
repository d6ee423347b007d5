// The SQL of email parts on SQLite (migration 7): written by the writer thread inside the
// transaction that appends their event (events-append.ts), read on the event
// loop's connection. A part row points at its event by the event's key.
import type Database from 'better-sqlite3';
import type { EmailPart } from '../storage.js';

export class SqliteEmailPartWrites {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      insertBlob: db.prepare('INSERT OR IGNORE INTO email_blobs (sha256, bytes) VALUES (?, ?)'),
      insertPart: db.prepare(
        'INSERT OR IGNORE INTO email_parts (event_key, part, event_id, sha256, content_type, filename) VALUES (?, ?, ?, ?, ?, ?)',
      ),
    };
  }

  /**
   * Stores the parts of the event with this key, keeping those it has already (a repeat).
   * Runs inside the caller's transaction, which undoes them with the event on a failure.
   */
  insert(eventKey: number, eventId: string, parts: readonly EmailPart[]): void {
    for (const part of parts) {
      this.sql.insertBlob.run(part.sha256, part.bytes);
      this.sql.insertPart.run(eventKey, part.part, eventId, part.sha256, part.contentType, part.filename);
    }
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
