// How records become what the API shows (docs/api.md §2, §4, §5.2), and how a bearer
// credential is read from a header: shared by the HTTP routes and the MCP tools.
import type { Address, Event, EventPage } from '../contract/schemas.js';
import type { ViewToken } from '../contract/credential-schemas.js';
import {
  isSharedEventRecord,
  type AddressRecord,
  type EventPageRecord,
  type EventRecord,
  type ViewTokenRecord,
} from '../storage/storage.js';
import { eventJson, eventJsonParts, keepEventBytes, keptEventRuns } from './event-json.js';
import { isoTime } from './iso-time.js';
import type { DeliveryResult } from './service-types.js';

export function toWireViewToken(record: ViewTokenRecord): ViewToken {
  return {
    id: record.id,
    label: record.label,
    created_at: isoTime(record.createdAt),
    expires_at: record.expiresAt === null ? null : isoTime(record.expiresAt),
  };
}

export function toWireAddress(record: AddressRecord): Address {
  const address: Address = {
    id: record.id,
    slug: record.slug,
    name: record.name,
    email: record.email,
    createdAt: isoTime(record.createdAt),
  };
  if (record.taskId !== null) address.taskId = record.taskId;
  if (record.expiresAt !== null) address.expiresAt = isoTime(record.expiresAt);
  return address;
}

/**
 * An event as the API shows it, its keys in the schema's order. `data`, when the caller
 * holds it parsed already, saves parsing `dataJson` again. eventJson writes the same as text.
 */
export function toWireEvent(record: EventRecord, data: unknown = JSON.parse(record.dataJson)): Event {
  const event = {
    id: record.id,
    address_id: record.addressId,
    sequence: record.sequence,
    type: record.type,
    source: record.source,
    data,
  } as Event;
  if (record.metadataJson !== null) event.metadata = JSON.parse(record.metadataJson) as Event['metadata'];
  if (record.dedupeKey !== null) event.dedupe_key = record.dedupeKey;
  event.created_at = isoTime(record.createdAt);
  if (record.acknowledgedAt !== null) event.acknowledged_at = isoTime(record.acknowledgedAt);
  return event;
}

/**
 * A delivery's answer: 202 for a new event, 200 for a repeat (docs/api.md §3). `data` is the
 * value delivered, when there is one: the stored text is its JSON, read back it is the same.
 */
export function toDelivery(status: 200 | 202, record: EventRecord, data?: unknown): DeliveryResult {
  const event = data === undefined ? toWireEvent(record) : toWireEvent(record, data);
  return { status, body: { event, duplicate: status === 200 }, record };
}

/** A delivery's answer as JSON text, what serialising its body writes (test/event-json.test.ts). */
export function deliveryJson(result: DeliveryResult): string {
  return `{"event":${eventJson(result.record)},"duplicate":${result.body.duplicate}}`;
}

/** A page as read from storage, before a transport renders it (toPage, or pageJson for HTTP). */
export interface RecordPage {
  records: EventRecord[];
  hasMore: boolean;
  /** The cursor the page was asked from: next_cursor when the page is empty. */
  after: number;
  /** The highest sequence the address has given out, read no earlier than the page. */
  latestSequence: number;
  /** A filtered page that holds every match it scanned: the highest sequence scanned (next_cursor moves past it). */
  scannedTo?: number;
  /** A filtered page the scan bound stopped before the end of the queue. */
  scanLimited?: boolean;
}

const nextCursor = (page: RecordPage) =>
  Math.max(page.records.length > 0 ? page.records[page.records.length - 1].sequence : page.after, page.scannedTo ?? 0);

export function toPage(page: RecordPage): EventPage {
  return {
    events: page.records.map((record) => toWireEvent(record)),
    next_cursor: nextCursor(page),
    has_more: page.hasMore,
    latest_sequence: page.latestSequence,
    ...(page.scanLimited ? { scan_limited: true } : {}),
  };
}

const scanLimitedJson = (limited: boolean | undefined) => (limited ? ',"scan_limited":true' : '');

const pageTail = (page: RecordPage) =>
  `],"next_cursor":${nextCursor(page)},"has_more":${page.hasMore},"latest_sequence":${page.latestSequence}${scanLimitedJson(page.scanLimited)}}`;

/** The JSON text of toPage(page), with each event's stored data spliced in unparsed. */
export function pageJson(page: RecordPage): string {
  return `{"events":[${page.records.map(eventJson).join(',')}${pageTail(page)}`;
}

const PAGE_OPEN = Buffer.from('{"events":[');

/**
 * pageJson as the body of an answer, in UTF-8 bytes copied from those each record keeps
 * (written on its first page) when storage shares every record of the page
 * (storage.ts SharedEventRecord), else as text.
 */
export function pageBody(page: RecordPage): string | Buffer {
  const shared = page.records;
  if (!shared.every(isSharedEventRecord)) return pageJson(page);
  keepEventBytes(shared);
  return Buffer.concat([PAGE_OPEN, ...keptEventRuns(shared), Buffer.from(pageTail(page))]);
}

/**
 * `text` in slices of at most `size` characters, never cut between the two halves of a
 * surrogate pair (each slice is encoded to UTF-8 on its own).
 */
export function* textSlices(text: string, size: number): Generator<string> {
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield text.slice(start, end);
    start = end;
  }
}

/** What a record counts against a page's byte bound: its stored data and metadata, in UTF-8 bytes. */
export function storedBytes(record: EventRecord): number {
  return (
    Buffer.byteLength(record.dataJson) + (record.metadataJson === null ? 0 : Buffer.byteLength(record.metadataJson))
  );
}

/**
 * Whether a page ends with this part, `count` events in: no more to read, the scan bound
 * reached, nothing found, or `limit` taken (the page's byte bound aside).
 */
export function isLastPart(part: RecordPage, count: number, limit: number): boolean {
  return !part.hasMore || part.scanLimited === true || part.records.length === 0 || count >= limit;
}

/**
 * pageJson of a page read in parts, in pieces, for a writer that asks for each piece once
 * the client has taken the last: a part is read only when the writer gets to it, and each
 * event's stored data is a piece of its own, never copied into a string of the whole page.
 * `first` is the first part; `readPart(after, limit, maxBytes)` reads the next. The page
 * is the one a single read would give: at most `limit` events, and it stops before the
 * event that would take its stored bytes past `pageBytes` (one event at least).
 */
export async function* pageJsonInParts(
  first: RecordPage,
  limit: number,
  pageBytes: number,
  partBytes: number,
  readPart: (after: number, limit: number, maxBytes: number) => Promise<RecordPage>,
  sliceSize: number,
): AsyncGenerator<string> {
  yield '{"events":[';
  let part = first;
  let count = 0;
  let bytes = 0;
  let cursor = first.after;
  let latest = first.latestSequence;
  let hasMore: boolean;
  let scanLimited = false;
  for (;;) {
    for (const record of part.records) {
      const [head, data, tail] = eventJsonParts(record);
      yield count === 0 ? head : `,${head}`;
      yield* textSlices(data, sliceSize);
      yield tail;
      count++;
      bytes += storedBytes(record);
      cursor = record.sequence;
    }
    hasMore = part.hasMore;
    latest = Math.max(latest, part.latestSequence);
    // A filtered part that took every match it scanned moves the cursor past its scan.
    if (part.scannedTo !== undefined) cursor = Math.max(cursor, part.scannedTo);
    if (part.scanLimited) scanLimited = true;
    if (isLastPart(part, count, limit) || bytes >= pageBytes) break;
    const next = await readPart(cursor, limit - count, Math.min(partBytes, pageBytes - bytes));
    // A part holds one event whatever its size; the page only if it fits what is left.
    if (next.records.length > 0 && storedBytes(next.records[0]) > pageBytes - bytes) {
      latest = Math.max(latest, next.latestSequence);
      break;
    }
    part = next;
  }
  yield `],"next_cursor":${cursor},"has_more":${hasMore},"latest_sequence":${latest}${scanLimitedJson(scanLimited)}}`;
}

/** Parses "Bearer <token>" (scheme case-insensitive, docs/api.md §5). */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header ? /^\s*bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : undefined;
}

/**
 * How far a filtered read scanned, for its next_cursor (wire.ts): the page's own scan, or,
 * for an empty page, where earlier reads of a poll got to (`from`); and whether the scan
 * bound stopped it.
 */
export function scanned(
  page: Pick<EventPageRecord, 'events' | 'scannedTo' | 'scanLimited'>,
  from: number,
): Pick<RecordPage, 'scannedTo' | 'scanLimited'> {
  const scannedTo = page.scannedTo ?? (page.events.length === 0 ? from : undefined);
  return {
    ...(scannedTo !== undefined ? { scannedTo } : {}),
    ...(page.scanLimited ? { scanLimited: true } : {}),
  };
}
