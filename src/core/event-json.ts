// Events as JSON text, written from their stored form. A stored event's `data` and
// `metadata` are already JSON text (written by JSON.stringify when it was delivered), so
// an answer carries them as they are rather than parsing them only to serialise them again.
// The text is what JSON.stringify makes of toWireEvent's object (core/wire.ts), key for key
// (test/event-json.test.ts holds the two together).
import { WRITTEN, type EventRecord, type SharedEventRecord } from '../storage/storage.js';
import { isoTime } from './iso-time.js';

/** Printable ASCII but `"` and `\`: text that JSON writes as it is, between quotes. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** JSON.stringify of a string: ids, types and sources are mostly plain, and testing for that costs less than a stringify. */
const text = (value: string): string => (PLAIN.test(value) ? `"${value}"` : JSON.stringify(value));

const COMMA = Buffer.from(',');

export function eventJson(record: EventRecord): string {
  return eventHead(record) + record.dataJson + eventTail(record);
}

/**
 * Keeps with each record storage shares between reads (it never changes) its eventJson in
 * UTF-8, where it has none yet, so that a page read again is put together by copying bytes.
 * Those of one call share one buffer, a comma between one and the next: one allocation a
 * page rather than one an event, a page's records are kept and dropped together
 * (sqlite/recent-events.ts), and events written one after another are one slice of it
 * (pageBody, core/wire.ts).
 */
export function keepEventBytes(records: readonly SharedEventRecord[]): void {
  const texts: string[] = [];
  let total = 0;
  for (const record of records) {
    if (record[WRITTEN] !== undefined) continue;
    const text = eventJson(record);
    texts.push(text);
    total += Buffer.byteLength(text);
  }
  if (texts.length === 0) return;
  const bytes = Buffer.allocUnsafeSlow(total + texts.length - 1);
  let at = 0;
  let next = 0;
  for (const record of records) {
    if (record[WRITTEN] !== undefined) continue;
    if (next > 0) bytes[at++] = COMMA[0];
    const length = bytes.write(texts[next++], at);
    record[WRITTEN] = bytes.subarray(at, at + length);
    at += length;
  }
}

/**
 * The kept bytes of `records` (each with its WRITTEN) as a JSON array's elements, comma
 * separated: records kept one after another by one keepEventBytes call go as one slice of
 * its buffer, commas included, rather than one part each.
 */
export function keptEventRuns(records: readonly SharedEventRecord[]): Uint8Array[] {
  const runs: Uint8Array[] = [];
  let buffer: ArrayBufferLike | undefined;
  let start = 0;
  let end = 0;
  for (const record of records) {
    const bytes = record[WRITTEN]!;
    // The next in the same buffer, one byte on: that byte is the comma keepEventBytes wrote.
    if (bytes.buffer === buffer && bytes.byteOffset === end + 1) {
      end += 1 + bytes.length;
      continue;
    }
    if (buffer !== undefined) runs.push(new Uint8Array(buffer, start, end - start), COMMA);
    buffer = bytes.buffer;
    start = bytes.byteOffset;
    end = start + bytes.length;
  }
  if (buffer !== undefined) runs.push(new Uint8Array(buffer, start, end - start));
  return runs;
}

/**
 * eventJson in three parts: what comes before `data`, the stored data text itself, and the
 * rest; a writer can send the (possibly large) stored text without copying it into one string.
 */
export function eventJsonParts(record: EventRecord): [string, string, string] {
  return [eventHead(record), record.dataJson, eventTail(record)];
}

const eventHead = (record: EventRecord) =>
  `{"id":${text(record.id)},"address_id":${text(record.addressId)},"sequence":${record.sequence},"type":${text(record.type)},"source":${text(record.source)},"data":`;

function eventTail(record: EventRecord): string {
  let tail = '';
  if (record.metadataJson !== null) tail += `,"metadata":${record.metadataJson}`;
  if (record.dedupeKey !== null) tail += `,"dedupe_key":${text(record.dedupeKey)}`;
  tail += `,"created_at":"${isoTime(record.createdAt)}"`;
  if (record.acknowledgedAt !== null) tail += `,"acknowledged_at":"${isoTime(record.acknowledgedAt)}"`;
  return `${tail}}`;
}
