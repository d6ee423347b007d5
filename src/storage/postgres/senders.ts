// Senders on PostgreSQL: one row per address, its secrets sealed by the core. The
// address's has_sender flag changes in the same statement as the row, so an instance
// reading the address after the commit sees both (there is no address cache here).
import { SENDERS } from '../tables.js';
import type { SenderRecord } from '../storage.js';
import { namedStatements, type PgConnection } from './connection.js';
import { LIVE } from './addresses.js';

/** The sender's columns after address_id, as `excluded.` assignments of the upsert. */
const UPDATED = SENDERS.names
  .filter((column) => column !== 'address_id')
  .map((column) => `${column} = excluded.${column}`)
  .join(', ');
/** $3… for every column after address_id (the live address's id comes from `live`). */
const REST = SENDERS.names
  .slice(1)
  .map((_, i) => `$${i + 3}`)
  .join(', ');

const SQL = namedStatements('sender', {
  put: `
    WITH live AS (UPDATE addresses SET has_sender = true WHERE id = $1 AND ${LIVE} RETURNING id)
    INSERT INTO senders (${SENDERS.list})
    SELECT id, ${REST} FROM live
    ON CONFLICT (address_id) DO UPDATE SET ${UPDATED}
    RETURNING address_id`,
  get: `SELECT ${SENDERS.list} FROM senders WHERE address_id = $1`,
  delete: `
    WITH gone AS (DELETE FROM senders WHERE address_id = $1 RETURNING address_id)
    UPDATE addresses SET has_sender = false WHERE id IN (SELECT address_id FROM gone) RETURNING id`,
});

export class PgSenders {
  constructor(private readonly db: PgConnection) {}

  async put(sender: SenderRecord, now: number): Promise<boolean> {
    const [addressId, ...rest] = SENDERS.values(sender, 'postgres');
    const { rowCount } = await this.db.query(SQL.put, [addressId, now, ...rest]);
    return (rowCount ?? 0) > 0;
  }

  async get(addressId: string): Promise<SenderRecord | null> {
    const { rows } = await this.db.query(SQL.get, [addressId]);
    return rows[0] ? SENDERS.fromRow(rows[0]) : null;
  }

  async delete(addressId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(SQL.delete, [addressId]);
    return (rowCount ?? 0) > 0;
  }
}
