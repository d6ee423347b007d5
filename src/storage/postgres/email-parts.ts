// An email's parts on PostgreSQL (migration 4): written in its append's transaction,
// read by event id. A blob already held is not sent again (a message to several
// addresses, a repeat); the parts of a repeat that its event has already are kept.
import type pg from 'pg';
import type { EmailPart } from '../storage.js';
import { namedStatements, statement, type PgConnection } from './connection.js';

const SQL = namedStatements('email', {
  // Held FOR KEY SHARE until the commit: the last other part of a blob may be going at this
  // moment, and its trigger (migration 7) waits for this transaction before it decides
  // whether the blob goes too.
  blobsHeld: 'SELECT sha256 FROM email_blobs WHERE sha256 = ANY($1::text[]) FOR KEY SHARE',
  insertBlob: 'INSERT INTO email_blobs (sha256, bytes) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING',
  insertParts: `
    INSERT INTO email_parts (event_id, part, sha256, content_type, filename)
    SELECT $1, t.part, t.sha256, t.content_type, t.filename
    FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[]) AS t(part, sha256, content_type, filename)
    ON CONFLICT (event_id, part) DO NOTHING`,
  part: `
    SELECT p.sha256, p.content_type AS "contentType", p.filename, b.bytes
    FROM email_parts p JOIN events e ON e.id = p.event_id JOIN email_blobs b ON b.sha256 = p.sha256
    WHERE p.event_id = $1 AND p.part = $2 AND e.address_id = $3`,
});

/** Stores an event's email parts in the caller's transaction, keeping any it has already. */
export async function insertParts(db: pg.PoolClient, eventId: string, parts: readonly EmailPart[]): Promise<void> {
  // In sha256 order: transactions that store the same blobs take their locks alike.
  const digests = [...new Set(parts.map((p) => p.sha256))].sort();
  const held = await db.query<{ sha256: string }>(statement(SQL.blobsHeld, [digests]));
  const present = new Set(held.rows.map((r) => r.sha256));
  for (const digest of digests) {
    if (present.has(digest)) continue;
    const { bytes } = parts.find((p) => p.sha256 === digest)!;
    await db.query(statement(SQL.insertBlob, [digest, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]));
  }
  await db.query(
    statement(SQL.insertParts, [
      eventId,
      parts.map((p) => p.part),
      parts.map((p) => p.sha256),
      parts.map((p) => p.contentType),
      parts.map((p) => p.filename),
    ]),
  );
}

export async function getEmailPart(
  db: PgConnection,
  addressId: string,
  eventId: string,
  part: number,
): Promise<EmailPart | null> {
  const { rows } = await db.query<{ sha256: string; contentType: string; filename: string | null; bytes: Buffer }>(
    SQL.part,
    [eventId, part, addressId],
  );
  return rows[0] ? { part, ...rows[0] } : null;
}
