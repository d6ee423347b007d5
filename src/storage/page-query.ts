// The page query of listEvents, built once for both engines from its parameters: the
// cursor, the count and byte bounds, and each filter as one condition. A new filter is
// one entry in FILTERS (and its field in storage.ts EventFilter); an engine differs only
// by its PageDialect (how parameters are written, how events of an address are found,
// where the latest sequence comes from, how JSON is looked into), and in that SQLite reads
// a page without a filter on content in one range scan (pageCandidatesQuery) where
// PostgreSQL runs pageQuery's one statement.
import { EVENTS, PAGE_EVENT_NAMES, eventFromArray } from './tables.js';
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
  /** Whether the stored JSON text of `column` contains the JSON text `filter` (jsonb's `@>`). */
  jsonContains(column: 'data', filter: string): string;
  /** The same against data.body, or the JSON value its text holds (json-contains.ts bodyValue). */
  bodyContains(filter: string): string;
  /** The text of a top-level field of the metadata object, or NULL. */
  metadataField(name: 'callback_id' | 'callback_key'): string;
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
  [K in keyof EventFilter]-?: (value: NonNullable<EventFilter[K]>, bind: Bind, dialect: PageDialect) => string | null;
} = {
  // Filtered on the page's own index scan, which the address's capacity bounds: an index
  // of unacknowledged events would cost every append another write.
  unacked: (on) => (on ? 'acknowledged_at IS NULL' : null),
  // A prefix is compared by substr, not LIKE: SQLite's LIKE ignores case, and `_` and `%` would need escaping.
  types: (patterns, bind) =>
    `(${patterns
      .map((pattern) =>
        pattern.endsWith('*')
          ? `substr(type, 1, ${bind(pattern.length - 1)}) = ${bind(pattern.slice(0, -1))}`
          : `type = ${bind(pattern)}`,
      )
      .join(' OR ')})`,
  source: (source, bind) => `source = ${bind(source)}`,
  callback: (callback, bind, dialect) =>
    `(${dialect.metadataField('callback_id')} = ${bind(callback)} OR ${dialect.metadataField('callback_key')} = ${bind(callback)})`,
  dataContains: (json, bind, dialect) => dialect.jsonContains('data', bind(json)),
  bodyContains: (json, bind, dialect) => dialect.bodyContains(bind(json)),
};

/** The filters the page's scan applies itself; the others look into each event, within the scan bound. */
const SCAN_FILTERS = new Set<keyof EventFilter>(['unacked']);

/** Whether a filter looks into events' content (and so is bounded by a scan limit). */
export function filtersContent(filter: EventFilter | undefined): boolean {
  if (!filter) return false;
  return (Object.keys(FILTERS) as Array<keyof EventFilter>).some(
    (key) => !SCAN_FILTERS.has(key) && filter[key] !== undefined,
  );
}

function conditions(
  filter: EventFilter | undefined,
  bind: Bind,
  dialect: PageDialect,
  which: (key: keyof EventFilter) => boolean,
): string {
  if (!filter) return '';
  let sql = '';
  for (const key of Object.keys(FILTERS) as Array<keyof EventFilter>) {
    const value = filter[key];
    if (value === undefined || !which(key)) continue;
    // Each entry takes its own field's type; the loop holds them as one.
    const condition = (FILTERS[key] as (value: unknown, bind: Bind, dialect: PageDialect) => string | null)(
      value,
      bind,
      dialect,
    );
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
  if (filtersContent(params.filter)) return scanningPageQuery(dialect, params);
  const { bind, values } = new Binder(dialect);
  const id = bind(params.addressId);
  const text = `
    WITH sized AS (
      SELECT sequence, row_number() OVER w AS n,
             sum(octet_length(data) + coalesce(octet_length(metadata), 0)) OVER w AS running
      FROM events
      WHERE ${dialect.ofAddress(id)} AND sequence > ${bind(params.after)}${conditions(params.filter, bind, dialect, () => true)}
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

/**
 * The `limit + 1` events past the cursor that the page's filters keep, in order: the one
 * range scan that SQLite's page queries below share, each with its own columns (`select`
 * binds its values first, as they come first in the text).
 */
function candidatesQuery(dialect: PageDialect, params: ListEventsParams, select: (bind: Bind) => string): BuiltQuery {
  const { bind, values } = new Binder(dialect);
  const columns = select(bind);
  const text = `
    SELECT ${columns}
    FROM events
    WHERE ${dialect.ofAddress(bind(params.addressId))} AND sequence > ${bind(params.after)}${conditions(params.filter, bind, dialect, () => true)}
    ORDER BY sequence LIMIT ${bind(params.limit + 1)}`;
  return { text, values };
}

/**
 * The page of pageQuery in one range scan, for an engine where a statement is a call rather
 * than a round trip (SQLite, whose plan for pageQuery's window and IN costs several times a
 * range scan): the candidates, each with its stored text only when its size (size_bytes,
 * storage.ts eventSize, at least the bytes a page counts) is at most `small`
 * (smallEventBytes unless told). When every one of the first `limit` came with its text, no
 * byte bound can cut the page, and the scan held at most about maxBytes of text; otherwise
 * the page is read in two steps (pageSizesQuery). Columns: PAGE_EVENT_NAMES, data and
 * metadata NULL when left unread.
 */
export const pageCandidatesQuery = (
  dialect: PageDialect,
  params: ListEventsParams,
  small = smallEventBytes(params),
): BuiltQuery =>
  candidatesQuery(dialect, params, (bind) =>
    PAGE_EVENT_NAMES.map((name) =>
      name === 'data' || name === 'metadata' ? `CASE WHEN size_bytes <= ${bind(small)} THEN ${name} END` : name,
    ).join(', '),
  );

/**
 * pageCandidatesQuery for a reader that holds the events' text already (sqlite/recent-events.ts):
 * the same candidates, only what can change of them. Columns: sequence, acknowledged_at,
 * size_bytes.
 */
export const pageKeysQuery = (dialect: PageDialect, params: ListEventsParams): BuiltQuery =>
  candidatesQuery(dialect, params, () => 'sequence, acknowledged_at, size_bytes');

/** maxBytes / limit: no page of events each at most this size can be cut by bytes. */
export const smallEventBytes = (params: ListEventsParams): number =>
  Math.floor((params.maxBytes ?? Number.MAX_SAFE_INTEGER) / params.limit);

/**
 * The page of pageQuery in two steps, when pageCandidatesQuery left an event unread: the
 * sizes of the candidates, then, once pageCut has chosen, the events kept as one range.
 * Read in one transaction, they are one snapshot. Columns: sequence, size.
 */
export const pageSizesQuery = (dialect: PageDialect, params: ListEventsParams): BuiltQuery =>
  candidatesQuery(dialect, params, () => 'sequence, octet_length(data) + coalesce(octet_length(metadata), 0) AS size');

/** How many of the candidates pageSizesQuery read a page keeps: `limit` at most, the first always, then each within maxBytes. */
export function pageCut(sizes: ReadonlyArray<readonly unknown[]>, params: ListEventsParams): number {
  const maxBytes = params.maxBytes ?? Number.MAX_SAFE_INTEGER;
  const most = Math.min(sizes.length, params.limit);
  let bytes = 0;
  for (let n = 0; n < most; n++) {
    bytes += sizes[n][1] as number;
    if (n > 0 && bytes > maxBytes) return n;
  }
  return most;
}

/** The events of the page pageCut chose: those past the cursor up to its last sequence. Columns: PAGE_EVENT_NAMES. */
export function pageRangeQuery(dialect: PageDialect, params: ListEventsParams, lastSequence: number): BuiltQuery {
  const { bind, values } = new Binder(dialect);
  const text = `
    SELECT ${PAGE_EVENT_NAMES.join(', ')} FROM events
    WHERE ${dialect.ofAddress(bind(params.addressId))} AND sequence > ${bind(params.after)}
      AND sequence <= ${bind(lastSequence)}${conditions(params.filter, bind, dialect, () => true)}
    ORDER BY sequence`;
  return { text, values };
}

/** How many events past the cursor a filter on content looks at, unless told. */
export const DEFAULT_SCAN_LIMIT = 1000;

/**
 * The page of a filter on content: `scanned` takes at most scanLimit events past the
 * cursor (those the scan filters keep), `sized` the matches among them, bounded as
 * pageQuery bounds its candidates. The summary row comes first and the events are joined
 * to it, so an empty page still carries what was scanned (one snapshot: a later commit
 * cannot slip under the scanned sequence). Columns: EVENTS' in order (NULL when no event),
 * then `candidates`, `latest`, `scanned` and `scanned_to`.
 */
function scanningPageQuery(dialect: PageDialect, params: ListEventsParams): BuiltQuery {
  const { bind, values } = new Binder(dialect);
  const scanOnly = (key: keyof EventFilter) => SCAN_FILTERS.has(key);
  const text = `
    WITH scanned AS (
      SELECT sequence, type, source, data, metadata
      FROM events
      WHERE ${dialect.ofAddress(bind(params.addressId))} AND sequence > ${bind(params.after)}${conditions(params.filter, bind, dialect, scanOnly)}
      ORDER BY sequence LIMIT ${bind(params.scanLimit ?? DEFAULT_SCAN_LIMIT)}
    ), sized AS (
      SELECT sequence, row_number() OVER w AS n,
             sum(octet_length(data) + coalesce(octet_length(metadata), 0)) OVER w AS running
      FROM scanned
      WHERE 1 = 1${conditions(params.filter, bind, dialect, (key) => !scanOnly(key))}
      WINDOW w AS (ORDER BY sequence ROWS UNBOUNDED PRECEDING)
      ORDER BY sequence LIMIT ${bind(params.limit + 1)}
    ), summary AS (
      SELECT ${dialect.count('(SELECT count(*) FROM sized)')} AS candidates,
             ${dialect.latestSequence(bind(params.addressId))} AS latest,
             ${dialect.count('(SELECT count(*) FROM scanned)')} AS scanned,
             (SELECT max(sequence) FROM scanned) AS scanned_to
    )
    SELECT ${EVENTS.listOf('e')}, summary.candidates, summary.latest, summary.scanned, summary.scanned_to
    FROM summary LEFT JOIN events e
      ON ${dialect.ofAddress(bind(params.addressId))}
      AND e.sequence IN (SELECT sequence FROM sized
                         WHERE n <= ${bind(params.limit)} AND (n = 1 OR running <= ${bind(params.maxBytes ?? Number.MAX_SAFE_INTEGER)}))
    ORDER BY e.sequence`;
  return { text, values };
}

/** The page of scanningPageQuery from its summary and its events, found by column. */
function scannedPage(
  events: EventPageRecord['events'],
  summary: { candidates: number; latest: number; scanned: number; scanned_to: number | null },
  scanLimit: number,
): EventPageRecord {
  const leftOver = summary.candidates > events.length;
  const scanLimited =
    !leftOver && summary.scanned >= scanLimit && summary.scanned_to !== null && summary.scanned_to < summary.latest;
  return {
    events,
    hasMore: leftOver || scanLimited,
    latestSequence: summary.latest ?? 0,
    scannedTo: leftOver || summary.scanned_to === null ? undefined : summary.scanned_to,
    ...(scanLimited ? { scanLimited } : {}),
  };
}

/** The page of a filter on content from its rows read as arrays (SQLite's raw mode). */
export function scannedPageFromArrays(rows: readonly unknown[][], params: ListEventsParams): EventPageRecord {
  const at = EVENTS.names.length;
  const row = rows[0];
  return scannedPage(
    rows.filter((r) => r[0] !== null).map(eventFromArray),
    {
      candidates: row[at] as number,
      latest: row[at + 1] as number,
      scanned: row[at + 2] as number,
      scanned_to: row[at + 3] as number | null,
    },
    params.scanLimit ?? DEFAULT_SCAN_LIMIT,
  );
}

/** The page of a filter on content from its rows read by name (PostgreSQL). */
export function scannedPageFromRows(
  rows: ReadonlyArray<{
    id: string | null;
    candidates: number;
    latest: number;
    scanned: number;
    scanned_to: number | null;
  }>,
  params: ListEventsParams,
): EventPageRecord {
  return scannedPage(
    rows.filter((r) => r.id !== null).map((r) => EVENTS.fromRow(r)),
    rows[0],
    params.scanLimit ?? DEFAULT_SCAN_LIMIT,
  );
}

/** The latest sequence alone: for an empty page, which has no row to carry it, and for SQLite's two-scan pages. */
export function latestSequenceQuery(dialect: PageDialect, addressId: string): BuiltQuery {
  const { bind, values } = new Binder(dialect);
  return { text: `SELECT ${dialect.latestSequence(bind(addressId))} AS latest`, values };
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
