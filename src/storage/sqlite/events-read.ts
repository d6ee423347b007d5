// Reading events on SQLite, on the event loop's connection: the page (page-query.ts; one
// prepared statement per combination of filters, prepared on first use) and whether a
// queue has room.
import type Database from 'better-sqlite3';
import {
  filtersContent,
  latestSequenceQuery,
  pageCandidatesQuery,
  pageCut,
  pageKeysQuery,
  pageQuery,
  pageRangeQuery,
  pageSizesQuery,
  smallEventBytes,
  scannedPageFromArrays,
  type PageDialect,
} from '../page-query.js';
import type { AckRecord, EventPageRecord, EventRecord, ListAcknowledgedParams, ListEventsParams } from '../storage.js';
import { pageEventFromArray, pageEventLeftUnread } from '../tables.js';
import { KEY_OF_ID } from './migrations.js';
import { RecentEvents } from './recent-events.js';

const DIALECT: PageDialect = {
  placeholder: () => '?',
  ofAddress: (id) => `address_key = (SELECT key FROM addresses WHERE id = ${id})`,
  // Its newest event's sequence, or the floor that remembers removed ones (migration 2),
  // whichever is higher.
  latestSequence: (id) =>
    `(SELECT max(last_sequence, coalesce((SELECT MAX(sequence) FROM events WHERE address_key = addresses.key), 0))
      FROM addresses WHERE id = ${id})`,
  count: (expression) => expression,
  jsonContains: (column, filter) => `roost_json_contains(${column}, ${filter})`,
  bodyContains: (filter) => `roost_body_contains(data, ${filter})`,
  metadataField: (name) => `roost_metadata_field(metadata, '${name}')`,
};

/** Prepared page statements kept, one per distinct text (a combination of filters). */
const PAGE_STATEMENTS = 64;
/** What the events read lately may hold (recent-events.ts), counted roughly in bytes. */
const RECENT_EVENT_BYTES = 8 * 1024 * 1024;

export class EventReads {
  private readonly sql;
  private readonly pages = new Map<string, Database.Statement<unknown[], unknown[]>>();
  /** readPage in a read transaction: its scans see one snapshot. */
  private readonly rangedPage: (params: ListEventsParams) => EventPageRecord;
  private readonly recent: RecentEvents;

  constructor(
    private readonly db: Database.Database,
    recentEventBytes = RECENT_EVENT_BYTES,
  ) {
    this.recent = new RecentEvents(recentEventBytes);
    const latest = latestSequenceQuery(DIALECT, '');
    this.sql = {
      // Each MIN/MAX is one seek in events_by_sequence; null for an empty queue, no row for no address.
      span: db
        .prepare<[string], number | null>(
          `SELECT (SELECT MAX(sequence) FROM events WHERE address_key = addresses.key)
                - (SELECT MIN(sequence) FROM events WHERE address_key = addresses.key) + 1
           FROM addresses WHERE id = ?`,
        )
        .pluck(),
      countEvents: db.prepare<[string], { n: number }>(
        `SELECT COUNT(*) AS n FROM events WHERE address_key = ${KEY_OF_ID}`,
      ),
      acknowledged: db.prepare<[string, number, number, number], AckRecord>(
        `SELECT id, sequence, acknowledged_at AS acknowledgedAt FROM events
         WHERE address_key = ${KEY_OF_ID} AND acknowledged_at >= ? AND sequence <= ? ORDER BY sequence LIMIT ?`,
      ),
      anyAcknowledged: db.prepare<[string], { one: number }>(
        `SELECT 1 AS one FROM events WHERE address_key = ${KEY_OF_ID} AND acknowledged_at IS NOT NULL LIMIT 1`,
      ),
      latest: db.prepare<[string], number | null>(latest.text).pluck(),
    };
    this.rangedPage = db.transaction((params: ListEventsParams) => this.readPage(params));
  }

  /**
   * Rows are read as arrays (raw mode), in the page query's column order: better-sqlite3
   * builds an array per row more cheaply than an object. A page without a filter on content
   * is read in one range scan (page-query.ts pageCandidatesQuery), or in two when it holds a
   * larger event, in one read transaction; of events read before, only what can change is
   * read again (recent-events.ts).
   */
  list(params: ListEventsParams): EventPageRecord {
    if (filtersContent(params.filter)) {
      const page = pageQuery(DIALECT, params);
      return scannedPageFromArrays(this.statement(page.text).all(...page.values), params);
    }
    return this.rangedPage(params);
  }

  private readPage(params: ListEventsParams): EventPageRecord {
    const small = smallEventBytes(params);
    const events: EventRecord[] = [];
    const held = this.recent.of(params.addressId);
    if (held !== undefined) {
      const keys = pageKeysQuery(DIALECT, params);
      const rows = this.statement(keys.text).all(...keys.values) as [number, number | null, number][];
      const kept = Math.min(rows.length, params.limit);
      for (let i = 0; i < kept; i++) {
        const [sequence, acknowledgedAt, size] = rows[i];
        if (size > small) return this.readPageBySize(params);
        let record = held.get(sequence);
        if (record === undefined) break;
        if (record.acknowledgedAt !== acknowledgedAt) record = this.recent.keep({ ...record, acknowledgedAt });
        events.push(record);
      }
      if (events.length === kept)
        return { events, hasMore: rows.length > kept, latestSequence: this.latest(params.addressId) };
    }
    // The rest of the page (all of it, or past the events held) with its text, kept for next time.
    const after = events.length > 0 ? events[events.length - 1].sequence : params.after;
    const rest = { ...params, after, limit: params.limit - events.length };
    const scan = pageCandidatesQuery(DIALECT, rest, small);
    const candidates = this.statement(scan.text).all(...scan.values);
    const kept = Math.min(candidates.length, rest.limit);
    for (let i = 0; i < kept; i++) {
      if (pageEventLeftUnread(candidates[i])) return this.readPageBySize(params);
      events.push(this.recent.keep(pageEventFromArray(candidates[i], params.addressId)));
    }
    return { events, hasMore: candidates.length > kept, latestSequence: this.latest(params.addressId) };
  }

  /**
   * An event just committed: kept when its address's events are (a reader follows it), so
   * that the read a delivery wakes takes it from memory. Returns the record to answer with.
   */
  appended(record: EventRecord): EventRecord {
    return this.recent.holds(record.addressId) ? this.recent.keep(record) : record;
  }

  /** Drops what is held of an address (it is gone). */
  forget(addressId: string): void {
    this.recent.forget(addressId);
  }

  /** The page in two range scans: the sizes of the candidates, then the events pageCut kept. */
  private readPageBySize(params: ListEventsParams): EventPageRecord {
    const sizes = pageSizesQuery(DIALECT, params);
    const candidates = this.statement(sizes.text).all(...sizes.values);
    const kept = pageCut(candidates, params);
    let events: EventRecord[] = [];
    if (kept > 0) {
      const range = pageRangeQuery(DIALECT, params, candidates[kept - 1][0] as number);
      const { addressId } = params;
      events = this.statement(range.text)
        .all(...range.values)
        .map((row) => pageEventFromArray(row, addressId));
    }
    return { events, hasMore: candidates.length > kept, latestSequence: this.latest(params.addressId) };
  }

  private latest(addressId: string): number {
    return this.sql.latest.get(addressId) ?? 0;
  }

  /** The prepared statement of a page query's text (one per combination of filters). */
  private statement(text: string): Database.Statement<unknown[], unknown[]> {
    let statement = this.pages.get(text);
    if (!statement) {
      if (this.pages.size >= PAGE_STATEMENTS) this.pages.delete(this.pages.keys().next().value!);
      statement = this.db.prepare<unknown[], unknown[]>(text).raw(true);
      this.pages.set(text, statement);
    }
    return statement;
  }

  /** The acknowledgements a stream tells its readers (docs/api.md §4.1). */
  acknowledged({ addressId, since, upTo, limit }: ListAcknowledgedParams): AckRecord[] {
    return this.sql.acknowledged.all(addressId, since, upTo, limit);
  }

  /** Whether one more event could be accepted now (not full of unacknowledged events). */
  hasRoom(addressId: string, capacity: number): boolean {
    // As the writer decides (events-append.ts): a queue holds at most as many events as its
    // sequences span, so only a span that reaches capacity needs the count.
    const span = this.sql.span.get(addressId);
    if (span === null || span === undefined || span < capacity) return true;
    return this.sql.countEvents.get(addressId)!.n < capacity || this.sql.anyAcknowledged.get(addressId) !== undefined;
  }
}
