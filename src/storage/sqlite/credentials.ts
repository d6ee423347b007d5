// View tokens on SQLite: read-only credentials of one address, at most `max` live ones
// each; read on the event loop's connection, written on the writer thread's.
import type Database from 'better-sqlite3';
import { VIEW_TOKENS, placeholders } from '../tables.js';
import type { ViewTokenRecord } from '../storage.js';

export class ViewTokenReads {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      list: db.prepare<[string, number], object>(
        `SELECT ${VIEW_TOKENS.list} FROM view_tokens
         WHERE address_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id`,
      ),
      find: db.prepare<[string, string, number], object>(
        `SELECT ${VIEW_TOKENS.list} FROM view_tokens
         WHERE address_id = ? AND token_digest = ? AND (expires_at IS NULL OR expires_at > ?)`,
      ),
    };
  }

  list(addressId: string, now: number): ViewTokenRecord[] {
    return this.sql.list.all(addressId, now).map((row) => VIEW_TOKENS.fromRow(row));
  }

  find(addressId: string, digest: string, now: number): ViewTokenRecord | null {
    const row = this.sql.find.get(addressId, digest, now);
    return row ? VIEW_TOKENS.fromRow(row) : null;
  }
}

export class ViewTokenWrites {
  private readonly sql;

  constructor(
    private readonly db: Database.Database,
    private readonly isLive: (addressId: string, now: number) => boolean,
  ) {
    this.sql = {
      forgetExpired: db.prepare(
        'DELETE FROM view_tokens WHERE address_id = ? AND expires_at IS NOT NULL AND expires_at <= ?',
      ),
      count: db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM view_tokens WHERE address_id = ?'),
      insert: db.prepare(
        `INSERT INTO view_tokens (${VIEW_TOKENS.list}) VALUES (${placeholders('sqlite', VIEW_TOKENS.names.length)})`,
      ),
      delete: db.prepare('DELETE FROM view_tokens WHERE address_id = ? AND id = ?'),
    };
  }

  insert(token: ViewTokenRecord, max: number, now: number): 'ok' | 'limit' | 'address_not_found' {
    return this.db.transaction(() => {
      if (!this.isLive(token.addressId, now)) return 'address_not_found';
      this.sql.forgetExpired.run(token.addressId, now);
      if (this.sql.count.get(token.addressId)!.n >= max) return 'limit';
      this.sql.insert.run(...VIEW_TOKENS.values(token, 'sqlite'));
      return 'ok';
    })();
  }

  delete(addressId: string, tokenId: string): boolean {
    return this.sql.delete.run(addressId, tokenId).changes > 0;
  }
}
