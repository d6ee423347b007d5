// Reading and acknowledging events on PostgreSQL: the page (page-query.ts, one statement
// per combination of filters, each named on first use), whether a queue has room, acks.
import {
  filtersContent,
  latestSequenceQuery,
  pageFromRows,
  pageQuery,
  scannedPageFromRows,
  type PageDialect,
} from '../page-query.js';
import { EVENTS } from '../tables.js';
import type { AckRecord, EventPageRecord, EventRecord, ListAcknowledgedParams, ListEventsParams } from '../storage.js';
import { nameBuiltStatement, namedStatements, type PgConnection } from './connection.js';

const DIALECT: PageDialect = {
  placeholder: (n) => `$${n}`,
  ofAddress: (id) => `address_id = ${id}`,
  // last_sequence is bumped under the row lock by every append (events-append.ts).
  latestSequence: (id) => `(SELECT last_sequence FROM addresses WHERE id = ${id})`,
  count: (expression) => `${expression}::int`,
  // roost_jsonb (migration 11) is NULL where jsonb refuses the text (a \u0000 in it).
  jsonContains: (column, filter) => `roost_jsonb(${column}) @> ${filter}::jsonb`,
  bodyContains: (filter) =>
    `(CASE jsonb_typeof(roost_jsonb(data) -> 'body') WHEN 'string' THEN roost_jsonb(roost_jsonb(data) ->> 'body')
      ELSE roost_jsonb(data) -> 'body' END) @> ${filter}::jsonb`,
  metadataField: (name) => `(roost_jsonb(metadata) ->> '${name}')`,
};

const SQL = namedStatements('events', {
  // As the append decides: a queue holds at most as many events as its sequences span (two
  // seeks in events_by_sequence), so only a span that reaches capacity needs the count. The
  // answer holds whatever the order of evaluation; PostgreSQL runs a sub-select only when
  // the OR reaches it.
  hasRoom: `
    SELECT coalesce((SELECT max(sequence) FROM events WHERE address_id = $1)
                  - (SELECT min(sequence) FROM events WHERE address_id = $1) + 1, 0) < $2
        OR (SELECT count(*) FROM events WHERE address_id = $1) < $2
        OR EXISTS (SELECT 1 FROM events WHERE address_id = $1 AND acknowledged_at IS NOT NULL) AS room`,
  // COALESCE keeps the first acknowledged_at (docs/api.md §4: acknowledging again is a no-op).
  ack: `
    UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, $3)
    WHERE id = $2 AND address_id = $1
    RETURNING ${EVENTS.list}`,
  ackUpTo:
    'UPDATE events SET acknowledged_at = $3 WHERE address_id = $1 AND sequence <= $2 AND acknowledged_at IS NULL',
  acknowledged: `
    SELECT id, sequence, acknowledged_at AS "acknowledgedAt" FROM events
    WHERE address_id = $1 AND acknowledged_at >= $2 AND sequence <= $3 ORDER BY sequence LIMIT $4`,
});

export class PgEventReads {
  constructor(private readonly db: PgConnection) {}

  async list(params: ListEventsParams): Promise<EventPageRecord> {
    const page = pageQuery(DIALECT, params);
    nameBuiltStatement('page', page.text);
    if (filtersContent(params.filter)) {
      const scanned = await this.db.query<{
        id: string | null;
        candidates: number;
        latest: number;
        scanned: number;
        scanned_to: number | null;
      }>(page.text, page.values);
      return scannedPageFromRows(scanned.rows, params);
    }
    const { rows } = await this.db.query<{ candidates: number; latest: number }>(page.text, page.values);
    const found = pageFromRows(rows);
    if (found) return found;
    const latest = latestSequenceQuery(DIALECT, params.addressId);
    nameBuiltStatement('latest', latest.text);
    const result = await this.db.query<{ latest: number | null }>(latest.text, latest.values);
    return { events: [], hasMore: false, latestSequence: result.rows[0]?.latest ?? 0 };
  }

  async hasRoom(addressId: string, capacity: number): Promise<boolean> {
    const { rows } = await this.db.query<{ room: boolean }>(SQL.hasRoom, [addressId, capacity]);
    return rows[0].room;
  }

  async ack(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const { rows } = await this.db.query(SQL.ack, [addressId, eventId, now]);
    return rows[0] ? EVENTS.fromRow(rows[0]) : null;
  }

  async ackUpTo(addressId: string, upTo: number, now: number): Promise<number> {
    const { rowCount } = await this.db.query(SQL.ackUpTo, [addressId, upTo, now]);
    return rowCount ?? 0;
  }

  async acknowledged({ addressId, since, upTo, limit }: ListAcknowledgedParams): Promise<AckRecord[]> {
    const { rows } = await this.db.query<AckRecord>(SQL.acknowledged, [addressId, since, upTo, limit]);
    return rows;
  }
}
