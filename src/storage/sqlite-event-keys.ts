// The row keys of SQLite events (migration 4). An event created in millisecond `ms` is
// stored under a key (`events.key`, the INTEGER PRIMARY KEY, i.e. the rowid) in
// [ms × 1,024, (ms + 1) × 1,024), and its id (newEventId) carries the same millisecond. So the table's own B-tree, where every append lands at its end, answers
// the two questions that each needed an index of their own, with a leaf of each written by
// every append: which row has this id (among one millisecond's keys) and which events are
// past retention (a range of keys). Without those two indexes a commit of 22 appends took
// ~0.39 ms instead of ~0.45 (the writer alone, BENCHMARKS.md).
//
// An event that has no room in its millisecond's range — more than 1,024 in one
// millisecond, a created_at before 1970-01-01T01:10Z (test clocks), or an event from before
// migration 4 whose id does not carry its created_at — is stored under a key below
// LOW_KEYS instead, and unplaced_event_ids finds it by id.

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
