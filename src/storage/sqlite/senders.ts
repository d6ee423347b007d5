// Senders on SQLite: one row per address, its secrets sealed by the core; the address's
// has_sender flag changes in the same transaction as the row.
import type Database from 'better-sqlite3';
import { SENDERS, placeholders } from '../tables.js';
import type { SenderRecord } from '../storage.js';

/** The upsert's assignments: every column after address_id, from the row that lost. */
const UPDATED = SENDERS.names
  .filter((column) => column !== 'address_id')
  .map((column) => `${column} = excluded.${column}`)
  .join(', ');

export class SenderReads {
  private readonly statement;

  constructor(db: Database.Database) {
    this.statement = db.prepare<[string], object>(`SELECT ${SENDERS.list} FROM senders WHERE address_id = ?`);
  }

  get(addressId: string): SenderRecord | null {
    const row = this.statement.get(addressId);
    return row ? SENDERS.fromRow(row) : null;
  }
}

export class SenderWrites {
  private readonly sql;

  constructor(
    private readonly db: Database.Database,
    private readonly isLive: (addressId: string, now: number) => boolean,
  ) {
    this.sql = {
      put: db.prepare(
        `INSERT INTO senders (${SENDERS.list}) VALUES (${placeholders('sqlite', SENDERS.names.length)})
         ON CONFLICT (address_id) DO UPDATE SET ${UPDATED}`,
      ),
      delete: db.prepare('DELETE FROM senders WHERE address_id = ?'),
      mark: db.prepare('UPDATE addresses SET has_sender = ? WHERE id = ?'),
    };
  }

  put(sender: SenderRecord, now: number): boolean {
    return this.db.transaction(() => {
      if (!this.isLive(sender.addressId, now)) return false;
      this.sql.put.run(...SENDERS.values(sender, 'sqlite'));
      this.sql.mark.run(1, sender.addressId);
      return true;
    })();
  }

  delete(addressId: string): boolean {
    return this.db.transaction(() => {
      if (this.sql.delete.run(addressId).changes === 0) return false;
      this.sql.mark.run(0, addressId);
      return true;
    })();
  }
}
