// Event ids and the row keys of SQLite events, which are made for each other.
//
// An id is `evt_`, a millisecond (12 hex digits since the epoch), then 128 random bits. The
// engine mints it when it stores the event, from the event's created_at: PostgreSQL's id
// index then grows at its end instead of at a random leaf (a random id cost every append one
// more page written), and SQLite finds the row among the keys of that millisecond. The time
// is no secret; the 128 random bits are what docs/api.md §1 asks of an id.
//
// SQLite (migration 4) stores an event created in millisecond `ms` under a key
// (`events.key`, the INTEGER PRIMARY KEY, i.e. the rowid) in [ms × 1,024, (ms + 1) × 1,024).
// So the table's own B-tree, where every append lands at its end, answers the two questions
// that each needed an index of their own, with a leaf of each written by every append:
// which row has this id (among one millisecond's keys) and which events are past retention
// (a range of keys): two B-trees fewer for every commit to write.
//
// An event that has no room in its millisecond's range — more than 1,024 in one
// millisecond, a created_at before 1970-01-01T01:10Z (test clocks), or an event from before
// migration 4 whose id does not carry its created_at — is stored under a key below
// LOW_KEYS instead, and unplaced_event_ids finds it by id.
import { randomBytes } from 'node:crypto';

// The random bits come from a pool of CSPRNG bytes refilled 4 KiB at a time: one call into
// the CSPRNG per 256 ids instead of one per id, on the path of every delivery.
let idPool = Buffer.alloc(0);
let idPoolOffset = 0;

/** A new event id for an event created at `ms` (see above). */
export function newEventId(ms: number): string {
  if (idPoolOffset + 16 > idPool.length) {
    idPool = randomBytes(4096);
    idPoolOffset = 0;
  }
  idPoolOffset += 16;
  return `evt_${ms.toString(16).padStart(12, '0')}${idPool.toString('base64url', idPoolOffset - 16, idPoolOffset)}`;
}

/** Keys per millisecond. ms × 1,024 is an exact JavaScript number until the year 2248. */
export const KEYS_PER_MS = 1024;

/** Keys below this (2^32) are the unplaced events' (see above); no millisecond's range starts below it. */
export const LOW_KEYS = 2 ** 32;

/** `evt_`, 12 hex digits of a millisecond, 22 characters of base64url (newEventId). */
const TIME_LED_ID = /^evt_[0-9a-f]{12}[A-Za-z0-9_-]{22}$/;

/** The first key of millisecond `ms`'s range, or null when that range would start below LOW_KEYS. */
export function firstKeyOf(ms: number): number | null {
  const first = ms * KEYS_PER_MS;
  return first >= LOW_KEYS && Number.isSafeInteger(first + KEYS_PER_MS) ? first : null;
}

/** The millisecond a time-led id carries, or null for an id of another form. */
export function msOfId(id: string): number | null {
  return TIME_LED_ID.test(id) ? parseInt(id.slice(4, 16), 16) : null;
}
