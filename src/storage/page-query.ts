// The page query of listEvents, built once for both engines from its parameters: the
// cursor, the count and byte bounds, and each filter as one condition. A new filter is
// one entry in FILTERS (and its field in storage.ts EventFilter); an engine differs only
// by its PageDialect (how parameters are written, how events of an address are found,
// where the latest sequence comes from).
import { EVENTS } from './tables.js';
import type { EventFilter, EventPageRecord, ListEventsParams } from './storage.js';

export interface PageDialect {
  /** The placeholder of the n-th value bound (1-based). */
  placeholder(n: number): string;
  /** The condition that keeps the events of the address whose id is the placeholder `id`. */
  ofAddress(id: string): string;
  /** The highest sequence that address has given out, as a scalar subquery. */
  latestSequence(id: string): string;
  /** A count as the engine should return it (PostgreSQL's count is int8). */
  count(expression: string): string;
}

export interface BuiltQuery {
  text: string;
  values: unknown[];
}

/** Collects the values of a statement as its text is written. */
class Binder {
  readonly values: unknown[] = [];
  constructor(private readonly dialect: PageDialect) {}
  bind = (value: unknown): string => {
    this.values.push(value);
    return this.dialect.placeholder(this.values.length);
  };
}

type Bind = (value: unknown) => string;

/** Each filter as a condition on `events`, or null when it keeps every event. */
const FILTERS: {
  [K in keyof EventFilter]-?: (value: NonNullable<EventFilter[K]>, bind: Bind) => string | null;
} = {
  // Filtered on the page's own index scan, which the address's capacity bounds: an index
  // of unacknowledged events would cost every append another write.
  unacked: (on) => (on ? 'acknowledged_at IS NULL' : null),
};

function conditions(filter: EventFilter | undefined, bind: Bind): string {
  if (!filter) return '';
  let sql = '';
  for (const key of Object.keys(FILTERS) as Array<keyof EventFilter>) {
    const value = filter[key];
    if (value === undefined) continue;
    // Each entry takes its own field's type; the loop holds them as one.
    const condition = (FILTERS[key] as (value: unknown, bind: Bind) => string | null)(value, bind);
    if (condition !== null) sql += ` AND ${condition}`;
  }
  return sql;
}

/**
 * A page bounded by count and by bytes: `sized` numbers the candidates (limit + 1) and sums
 * their sizes (octet_length reads a stored value's size without loading it); only the
 * events kept are read — the first always, then each while the sum stays within maxBytes.
 * More candidates than events returned means hasMore. The latest sequence comes in the
 * same statement (one snapshot), so it is at least every sequence of the page. Columns:
 * EVENTS' in order, then `candidates`, then `latest`.
 */
export function pageQuery(dialect: PageDialect, params: ListEventsParams): BuiltQuery {
  const { bind, values } = new Binder(dialect);
  const id = bind(params.addressId);
  const text = `
    WITH sized AS (
      SELECT sequence, row_number() OVER w AS n,
             sum(octet_length(data) + coalesce(octet_length(metadata), 0)) OVER w AS running
      FROM events
      WHERE ${dialect.ofAddress(id)} AND sequence > ${bind(params.after)}${conditions(params.filter, bind)}
      WINDOW w AS (ORDER BY sequence ROWS UNBOUNDED PRECEDING)
      ORDER BY sequence LIMIT ${bind(params.limit + 1)}
    )
    SELECT ${EVENTS.list}, ${dialect.count('(SELECT count(*) FROM sized)')} AS candidates,
           ${dialect.latestSequence(bind(params.addressId))} AS latest
    FROM events
    WHERE ${dialect.ofAddress(bind(params.addressId))}
      AND sequence IN (SELECT sequence FROM sized
                       WHERE n <= ${bind(params.limit)} AND (n = 1 OR running <= ${bind(params.maxBytes ?? Number.MAX_SAFE_INTEGER)}))
    ORDER BY sequence`;
  return { text, values };
}

/** The latest sequence alone, for an empty page, which has no row to carry it. */
export function latestSequenceQuery(dialect: PageDialect, addressId: string): BuiltQuery {
  const { bind, values } = new Binder(dialect);
  return { text: `SELECT ${dialect.latestSequence(bind(addressId))} AS latest`, values };
}

/** Where the candidates and the latest sequence are in a page row read as an array. */
const CANDIDATES = EVENTS.names.length;
const LATEST = CANDIDATES + 1;

/** The page from its rows read as arrays (SQLite's raw mode); null when it is empty. */
export function pageFromArrays(rows: readonly unknown[][]): EventPageRecord | null {
  if (rows.length === 0) return null;
  return {
    events: rows.map((row) => EVENTS.fromArray(row)),
    hasMore: (rows[0][CANDIDATES] as number) > rows.length,
    latestSequence: rows[0][LATEST] as number,
  };
}

/** The page from its rows read by name (PostgreSQL); null when it is empty. */
export function pageFromRows(rows: ReadonlyArray<{ candidates: number; latest: number }>): EventPageRecord | null {
  if (rows.length === 0) return null;
  return {
    events: rows.map((row) => EVENTS.fromRow(row)),
    hasMore: rows[0].candidates > rows.length,
    latestSequence: rows[0].latest,
  };
}
