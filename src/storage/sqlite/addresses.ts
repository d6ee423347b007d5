// Addresses on SQLite: read on the event loop's connection (AddressReads), written on the
// writer thread's (AddressWrites): insert, delete with its events, and the credentials and
// mutable fields of a live address, each in one transaction.
import type Database from 'better-sqlite3';
import { ADDRESSES, NEW_ADDRESS_COLUMNS, NEW_ADDRESS_FIELDS } from '../tables.js';
import type { AddressChanges, AddressRecord } from '../storage.js';
import { KEY_OF_ID } from './migrations.js';

const LIVE = '(expires_at IS NULL OR expires_at > @now)';

export class AddressReads {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      byId: db.prepare<{ id: string; now: number }, object>(
        `SELECT ${ADDRESSES.list} FROM addresses WHERE id = @id AND ${LIVE}`,
      ),
      bySlug: db.prepare<{ slug: string; now: number }, object>(
        `SELECT ${ADDRESSES.list} FROM addresses WHERE slug = @slug AND ${LIVE}`,
      ),
    };
  }

  byId(id: string, now: number): AddressRecord | null {
    const row = this.sql.byId.get({ id, now });
    return row ? ADDRESSES.fromRow(row) : null;
  }

  bySlug(slug: string, now: number): AddressRecord | null {
    const row = this.sql.bySlug.get({ slug, now });
    return row ? ADDRESSES.fromRow(row) : null;
  }
}

export class AddressWrites {
  private readonly sql;

  constructor(private readonly db: Database.Database) {
    this.sql = {
      insert: db.prepare(
        `INSERT INTO addresses (${NEW_ADDRESS_COLUMNS}) VALUES (${NEW_ADDRESS_FIELDS.map((field) => `@${field}`).join(', ')})`,
      ),
      deleteEventsOf: db.prepare(`DELETE FROM events WHERE address_key = ${KEY_OF_ID}`),
      delete: db.prepare('DELETE FROM addresses WHERE id = ?'),
      live: db.prepare<[string, number], object>(
        `SELECT ${ADDRESSES.list} FROM addresses WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`,
      ),
      update: db.prepare(
        'UPDATE addresses SET name = @name, task_id = @taskId, expires_at = @expiresAt WHERE id = @id',
      ),
      replaceReadToken: db.prepare('UPDATE addresses SET read_token_digest = ? WHERE id = ?'),
      deleteViewTokens: db.prepare('DELETE FROM view_tokens WHERE address_id = ?'),
      replaceIngressSecret: db.prepare(
        `UPDATE addresses SET previous_ingress_digest = CASE WHEN @until IS NULL THEN NULL ELSE ingress_secret_digest END,
                              previous_ingress_until = @until, ingress_secret_digest = @digest
         WHERE id = @id`,
      ),
    };
  }

  /** The live address, read in the caller's transaction. */
  live(id: string, now: number): AddressRecord | null {
    const row = this.sql.live.get(id, now);
    return row ? ADDRESSES.fromRow(row) : null;
  }

  insert(address: AddressRecord): 'ok' | 'slug_taken' {
    try {
      this.sql.insert.run(Object.fromEntries(NEW_ADDRESS_FIELDS.map((field) => [field, address[field]])));
      return 'ok';
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' && /slug/.test(String(error)))
        return 'slug_taken';
      throw error;
    }
  }

  delete(id: string): boolean {
    return this.db.transaction(() => {
      this.sql.deleteEventsOf.run(id);
      return this.sql.delete.run(id).changes > 0;
    })();
  }

  update(id: string, changes: AddressChanges, now: number): AddressRecord | null {
    return this.db.transaction(() => {
      const current = this.live(id, now);
      if (!current) return null;
      const next = {
        id,
        name: changes.name ?? current.name,
        taskId: changes.taskId === undefined ? current.taskId : changes.taskId,
        expiresAt: changes.expiresAt === undefined ? current.expiresAt : changes.expiresAt,
      };
      this.sql.update.run(next);
      return { ...current, ...next };
    })();
  }

  replaceReadToken(id: string, digest: string, now: number, revokeViewTokens: boolean): AddressRecord | null {
    return this.db.transaction(() => {
      if (!this.live(id, now)) return null;
      this.sql.replaceReadToken.run(digest, id);
      if (revokeViewTokens) this.sql.deleteViewTokens.run(id);
      return this.live(id, now);
    })();
  }

  replaceIngressSecret(id: string, digest: string, previousUntil: number | null, now: number): AddressRecord | null {
    return this.db.transaction(() => {
      if (!this.live(id, now)) return null;
      this.sql.replaceIngressSecret.run({ id, digest, until: previousUntil });
      return this.live(id, now);
    })();
  }
}
