// Addresses on PostgreSQL: insert, look-ups (by id batched, every delivery asks), delete,
// and the credentials and mutable fields of a live address. Each change is announced
// (pg_notify), so that every instance re-checks what an old credential holds open. The
// addresses looked up lately are kept to admit inbox deliveries without a round trip; their
// appends check, under the row lock, that what admitted them still holds (docs/scale-out.md).
import { AddressCache, isLive } from '../address-cache.js';
import { Batches } from '../batches.js';
import { ADDRESSES, NEW_ADDRESS_COLUMNS, NEW_ADDRESS_FIELDS, placeholders } from '../tables.js';
import type { AddressChanges, AddressRecord, ReplaceReadTokenParams } from '../storage.js';
import { isUniqueViolation } from './errors.js';
import { namedStatements, type PgConnection } from './connection.js';
import { WAKE_CHANNEL } from './listener.js';

/** Live at the time bound as $2. */
export const LIVE = '(expires_at IS NULL OR expires_at > $2)';

/** Address look-ups (every delivery's inbox check), a few batches at a time. */
const LOOKUP_BATCHES = { inFlight: 2, maxItems: 500 } as const;

const SQL = namedStatements('address', {
  insert: `INSERT INTO addresses (${NEW_ADDRESS_COLUMNS}) VALUES (${placeholders('postgres', NEW_ADDRESS_FIELDS.length)})`,
  // Columns named, not *: a prepared statement whose result columns change (a later
  // migration run by another instance during a rolling deploy) fails until re-prepared.
  // `= ANY` rather than a join on unnest: the planner sizes unnest by the array it is
  // given, so each batch of another size was planned anew; this one keeps a generic plan.
  // Each look-up's expiry is checked against its own time by the caller (lookUp).
  byIds: `SELECT ${ADDRESSES.list} FROM addresses WHERE id = ANY($1::text[])`,
  bySlug: `SELECT ${ADDRESSES.list} FROM addresses WHERE slug = $1 AND ${LIVE}`,
  // Events go with it (ON DELETE CASCADE). The DELETE waits for the address row lock that
  // a racing append holds, so that append's event is deleted too; an append that comes
  // after finds no row. Either way no event outlives its address.
  delete: `
    WITH gone AS (DELETE FROM addresses WHERE id = $1 RETURNING id)
    SELECT pg_notify('${WAKE_CHANNEL}', id) FROM gone`,
  update: `
    WITH changed AS (
      UPDATE addresses SET name = COALESCE($3, name),
                           task_id = CASE WHEN $4::boolean THEN $5 ELSE task_id END,
                           expires_at = CASE WHEN $6::boolean THEN $7::bigint ELSE expires_at END
      WHERE id = $1 AND ${LIVE}
      RETURNING ${ADDRESSES.list}
    )
    SELECT changed.*, pg_notify('${WAKE_CHANNEL}', id) FROM changed`,
  replaceReadToken: `
    WITH changed AS (
      UPDATE addresses SET read_token_digest = $3 WHERE id = $1 AND ${LIVE} RETURNING ${ADDRESSES.list}
    ), revoked AS (
      DELETE FROM view_tokens WHERE $4::boolean AND address_id IN (SELECT id FROM changed)
    )
    SELECT changed.*, pg_notify('${WAKE_CHANNEL}', id) FROM changed`,
  replaceIngressSecret: `
    UPDATE addresses SET previous_ingress_digest = CASE WHEN $4::bigint IS NULL THEN NULL ELSE ingress_secret_digest END,
                         previous_ingress_until = $4::bigint, ingress_secret_digest = $3
    WHERE id = $1 AND ${LIVE}
    RETURNING ${ADDRESSES.list}`,
});

/** An address look-up waiting for its batch. */
interface QueuedLookup {
  id: string;
  now: number;
  resolve: (address: AddressRecord | null) => void;
  reject: (error: unknown) => void;
}

const first = (rows: object[]) => (rows[0] ? ADDRESSES.fromRow(rows[0]) : null);

export class PgAddresses {
  /** Look-ups that arrive together go as one statement. */
  private readonly lookups: Batches<QueuedLookup>;
  /** The addresses last read (storage.ts recentAddress). */
  private readonly recent = new AddressCache();

  constructor(
    private readonly db: PgConnection,
    waitLimits: { maxWaitMs: number; expire: (item: { reject: (error: unknown) => void }) => void },
  ) {
    this.lookups = new Batches<QueuedLookup>((batch) => this.lookUp(batch), { ...LOOKUP_BATCHES, ...waitLimits });
  }

  async insert(address: AddressRecord): Promise<'ok' | 'slug_taken'> {
    try {
      await this.db.query(
        SQL.insert,
        NEW_ADDRESS_FIELDS.map((field) => address[field]),
      );
      return 'ok';
    } catch (error) {
      if (isUniqueViolation(error, 'addresses_slug_key')) return 'slug_taken';
      throw error;
    }
  }

  get(id: string, now: number): Promise<AddressRecord | null> {
    return new Promise((resolve, reject) => this.lookups.add({ id, now, resolve, reject }));
  }

  /** The address as last read here, if live at `now`; its append re-checks what admits a delivery. */
  recentlyRead(id: string, now: number): AddressRecord | null {
    return this.recent.get(id, now) ?? null;
  }

  /** Drops what this instance is about to change, so that the next delivery reads it afresh. */
  forget(id: string): void {
    this.recent.forget(id);
  }

  private async lookUp(batch: QueuedLookup[]): Promise<void> {
    try {
      const ids = new Set(batch.map((l) => l.id));
      const { rows } = await this.db.query(SQL.byIds, [[...ids]]);
      const found = new Map<string, AddressRecord>();
      for (const row of rows) {
        const address = this.recent.keep(ADDRESSES.fromRow(row));
        found.set(address.id, address);
      }
      for (const id of ids) if (!found.has(id)) this.recent.forget(id);
      for (const lookup of batch) {
        const address = found.get(lookup.id);
        // Live at the look-up's own time, as LIVE says in SQL.
        lookup.resolve(address && isLive(address, lookup.now) ? address : null);
      }
    } catch (error) {
      for (const lookup of batch) lookup.reject(error);
    }
  }

  async bySlug(slug: string, now: number): Promise<AddressRecord | null> {
    return first((await this.db.query(SQL.bySlug, [slug, now])).rows);
  }

  async delete(id: string): Promise<boolean> {
    this.forget(id);
    const { rowCount } = await this.db.query(SQL.delete, [id]);
    return (rowCount ?? 0) > 0;
  }

  async update(id: string, changes: AddressChanges, now: number): Promise<AddressRecord | null> {
    this.forget(id);
    const { rows } = await this.db.query(SQL.update, [
      id,
      now,
      changes.name ?? null,
      changes.taskId !== undefined,
      changes.taskId ?? null,
      changes.expiresAt !== undefined,
      changes.expiresAt ?? null,
    ]);
    return first(rows);
  }

  async replaceReadToken({ id, digest, now, revokeViewTokens }: ReplaceReadTokenParams): Promise<AddressRecord | null> {
    this.forget(id);
    return first((await this.db.query(SQL.replaceReadToken, [id, now, digest, revokeViewTokens])).rows);
  }

  async replaceIngressSecret(
    id: string,
    digest: string,
    previousUntil: number | null,
    now: number,
  ): Promise<AddressRecord | null> {
    this.forget(id);
    return first((await this.db.query(SQL.replaceIngressSecret, [id, now, digest, previousUntil])).rows);
  }
}
