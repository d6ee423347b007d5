// Housekeeping on PostgreSQL: expired addresses and events past retention go in bounded
// batches, each a transaction of its own, on one instance at a time: each batch first tries
// a transaction-scoped advisory lock, which holds through a transaction pooler, and an
// instance that does not get it stops this sweep (another is doing the work).
import type { PurgeResult } from '../storage.js';
import type pg from 'pg';
import { ADVISORY_LOCKS, namedStatements, statement, type PgConnection } from './connection.js';
import { WAKE_CHANNEL } from './listener.js';

/**
 * Rows removed per statement, so that no sweep holds many locks, or the disk, for long:
 * expired addresses are emptied a slice of events at a time before they go.
 */
const PURGE_BATCH_ADDRESSES = 500;
const PURGE_BATCH_EVENTS = 1000;

const SQL = namedStatements('purge', {
  // Held until its batch's transaction ends, on whichever server connection that is.
  tryLock: 'SELECT pg_try_advisory_xact_lock($1, $2) AS locked',
  // SKIP LOCKED: an address locked by a racing delete is left for the next sweep rather
  // than waited for. The events go by cascade; the count reads them before it runs.
  expiredAddresses: `
    WITH expired AS (
      SELECT id FROM addresses WHERE expires_at IS NOT NULL AND expires_at <= $1
      ORDER BY expires_at LIMIT ${PURGE_BATCH_ADDRESSES}
      FOR UPDATE SKIP LOCKED
    ),
    gone AS (DELETE FROM addresses WHERE id IN (SELECT id FROM expired) RETURNING id)
    SELECT id,
           (SELECT count(*) FROM events WHERE address_id IN (SELECT id FROM expired)) AS events,
           pg_notify('${WAKE_CHANNEL}', id) AS notified
    FROM gone`,
  eventsOfExpired: `
    DELETE FROM events WHERE id IN (
      SELECT id FROM events WHERE address_id IN (
        SELECT id FROM addresses WHERE expires_at IS NOT NULL AND expires_at <= $1 LIMIT ${PURGE_BATCH_ADDRESSES}
      )
      LIMIT ${PURGE_BATCH_EVENTS}
      FOR UPDATE SKIP LOCKED
    )`,
  // The bytes they held come off their addresses' totals in the same statement.
  oldEvents: `
    WITH gone AS (
      DELETE FROM events WHERE id IN (
        SELECT id FROM events WHERE created_at < $1
        ORDER BY created_at LIMIT ${PURGE_BATCH_EVENTS}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING address_id, size_bytes
    ),
    freed AS (
      UPDATE addresses SET stored_bytes = stored_bytes - per.bytes
      FROM (SELECT address_id, sum(size_bytes) AS bytes FROM gone GROUP BY address_id) AS per
      WHERE addresses.id = per.address_id
    )
    SELECT count(*)::int AS purged FROM gone`,
});

export async function purge(connection: PgConnection, now: number, retainAfter: number): Promise<PurgeResult> {
  const { namespace, purge: key } = ADVISORY_LOCKS;
  const result: PurgeResult = { expiredAddressIds: [], eventsPurged: 0 };
  const batch = <R extends pg.QueryResultRow>(text: string, values: unknown[]) =>
    connection.transaction<pg.QueryResult<R> | undefined>(async (db) => {
      const { rows } = await db.query<{ locked: boolean }>(statement(SQL.tryLock, [namespace, key]));
      if (!rows[0].locked) return { rollback: undefined };
      return { commit: await db.query<R>(statement(text, values)) };
    });
  for (;;) {
    const emptied = await batch(SQL.eventsOfExpired, [now]);
    if (!emptied) return result;
    if (!emptied.rowCount) break;
    result.eventsPurged += emptied.rowCount;
  }
  for (;;) {
    const expired = await batch<{ id: string; events: number }>(SQL.expiredAddresses, [now]);
    if (!expired) return result;
    if (expired.rows.length === 0) break;
    result.expiredAddressIds.push(...expired.rows.map((r) => r.id));
    result.eventsPurged += expired.rows[0].events;
  }
  for (;;) {
    const old = await batch<{ purged: number }>(SQL.oldEvents, [retainAfter]);
    if (!old) return result;
    if (!old.rows[0].purged) break;
    result.eventsPurged += old.rows[0].purged;
  }
  return result;
}
