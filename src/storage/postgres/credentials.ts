// View tokens on PostgreSQL: read-only credentials of one address, at most `max` live
// ones each. Deleting one is announced, so that a stream it holds open anywhere ends.
import { VIEW_TOKENS, placeholders } from '../tables.js';
import type { ViewTokenRecord } from '../storage.js';
import { namedStatements, type PgConnection } from './connection.js';
import { LIVE } from './addresses.js';
import { WAKE_CHANNEL } from './listener.js';

const SQL = namedStatements('view_token', {
  // The address row lock orders concurrent inserts of one address, so the count holds.
  lockLiveAddress: `SELECT id FROM addresses WHERE id = $1 AND ${LIVE} FOR UPDATE`,
  forgetExpired: 'DELETE FROM view_tokens WHERE address_id = $1 AND expires_at <= $2',
  count: 'SELECT count(*) AS n FROM view_tokens WHERE address_id = $1',
  insert: `INSERT INTO view_tokens (${VIEW_TOKENS.list}) VALUES (${placeholders('postgres', VIEW_TOKENS.names.length)})`,
  list: `
    SELECT ${VIEW_TOKENS.list} FROM view_tokens
    WHERE address_id = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY created_at, id`,
  find: `
    SELECT ${VIEW_TOKENS.list} FROM view_tokens
    WHERE address_id = $1 AND token_digest = $2 AND (expires_at IS NULL OR expires_at > $3)`,
  delete: `
    WITH gone AS (DELETE FROM view_tokens WHERE address_id = $1 AND id = $2 RETURNING address_id)
    SELECT pg_notify('${WAKE_CHANNEL}', address_id) FROM gone`,
});

export class PgViewTokens {
  constructor(private readonly db: PgConnection) {}

  insert(token: ViewTokenRecord, max: number, now: number): Promise<'ok' | 'limit' | 'address_not_found'> {
    return this.db.transaction(async (db) => {
      if ((await db.query(SQL.lockLiveAddress, [token.addressId, now])).rowCount === 0)
        return { commit: 'address_not_found' as const };
      await db.query(SQL.forgetExpired, [token.addressId, now]);
      const { rows } = await db.query<{ n: number }>(SQL.count, [token.addressId]);
      if (rows[0].n >= max) return { commit: 'limit' as const };
      await db.query(SQL.insert, VIEW_TOKENS.values(token, 'postgres'));
      return { commit: 'ok' as const };
    });
  }

  async list(addressId: string, now: number): Promise<ViewTokenRecord[]> {
    const { rows } = await this.db.query(SQL.list, [addressId, now]);
    return rows.map((row) => VIEW_TOKENS.fromRow(row));
  }

  async find(addressId: string, digest: string, now: number): Promise<ViewTokenRecord | null> {
    const { rows } = await this.db.query(SQL.find, [addressId, digest, now]);
    return rows[0] ? VIEW_TOKENS.fromRow(rows[0]) : null;
  }

  async delete(addressId: string, tokenId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(SQL.delete, [addressId, tokenId]);
    return (rowCount ?? 0) > 0;
  }
}
