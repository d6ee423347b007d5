// How records become what the API shows (docs/api.md §2, §4, §5.2), and how a bearer
// credential is read from a header: shared by the HTTP routes and the MCP tools.
import type { Address, Event, EventPage } from '../schemas.js';
import type { ViewToken } from '../credential-schemas.js';
import type { AddressRecord, EventRecord, ViewTokenRecord } from '../storage/storage.js';
import { eventJson, eventJsonParts } from './event-json.js';
import { isoTime } from './iso-time.js';

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

/** A page as read from storage, before a transport renders it (toPage, or pageJson for HTTP). */
export interface RecordPage {
  records: EventRecord[];
  hasMore: boolean;
  /** The cursor the page was asked from: next_cursor when the page is empty. */
  after: number;
  /** The highest sequence the address has given out, read no earlier than the page. */
  latestSequence: number;
}

const nextCursor = (page: RecordPage) =>
  page.records.length > 0 ? page.records[page.records.length - 1].sequence : page.after;

export function toPage(page: RecordPage): EventPage {
  return {
    events: page.records.map((record) => toWireEvent(record)),
    next_cursor: nextCursor(page),
    has_more: page.hasMore,
    latest_sequence: page.latestSequence,
  };
}

/** The JSON text of toPage(page), with each event's stored data spliced in unparsed. */
export function pageJson(page: RecordPage): string {
  return `{"events":[${page.records.map(eventJson).join(',')}],"next_cursor":${nextCursor(page)},"has_more":${page.hasMore},"latest_sequence":${page.latestSequence}}`;
}

/**
 * pageJson(page) in pieces, for a writer that sends them as the client reads: each event's
 * stored data text is one piece of its own, never copied into a string of the whole page.
 */
export function* pageJsonChunks(page: RecordPage): Generator<string> {
  yield '{"events":[';
  for (let i = 0; i < page.records.length; i++) {
    const [head, data, tail] = eventJsonParts(page.records[i]);
    yield i === 0 ? head : `,${head}`;
    yield data;
    yield tail;
  }
  yield `],"next_cursor":${nextCursor(page)},"has_more":${page.hasMore},"latest_sequence":${page.latestSequence}}`;
}

/** Parses "Bearer <token>" (scheme case-insensitive, docs/api.md §5). */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header ? /^\s*bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : undefined;
}
