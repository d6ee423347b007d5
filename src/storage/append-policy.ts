// The rule an append makes room by (docs/api.md §3 and §9.1), for both engines: an address
// holds at most `capacity` events and, with `maxBytes` > 0, at most that many bytes of them
// (storage.ts eventSize). When the new event would break either bound, the oldest
// acknowledged events go, oldest first, until both hold; an unacknowledged event never
// goes. If the acknowledged ones are not enough, the append is refused: `queue_full` when
// the count still does not fit, else `bytes_full`, and nothing is evicted. Pure, so that
// each engine applies the same rule to the state it reads (as token-bucket.ts is).

/** The queue of one address as an engine sees it before the append. */
export interface QueueState {
  /**
   * Events held. An engine may pass an upper bound instead of the count while that bound
   * is below capacity (the count cannot matter then).
   */
  held: number;
  /** Bytes its events hold (the sum of their sizes). */
  heldBytes: number;
}

export interface AppendBounds {
  capacity: number;
  /** 0: no byte bound. */
  maxBytes: number;
}

/** An acknowledged event that may make room: the engine's key for it and its size. */
export interface Evictable<K> {
  key: K;
  size: number;
}

export type RoomDecision<K> = { status: 'room'; evict: K[] } | { status: 'queue_full' } | { status: 'bytes_full' };

/** Whether an event of `size` bytes fits as the queue stands, evicting nothing. */
export function fitsAsIs(queue: QueueState, size: number, bounds: AppendBounds): boolean {
  return queue.held + 1 <= bounds.capacity && (bounds.maxBytes === 0 || queue.heldBytes + size <= bounds.maxBytes);
}

/**
 * fitsAsIs written as SQL over the given expressions, for a statement that decides many
 * appends at once (postgres/events-append.ts); test/storage/append-policy.test.ts checks
 * it against fitsAsIs.
 */
export function fitsAsIsSql(e: { held: string; heldBytes: string; size: string; capacity: string; maxBytes: string }) {
  return `(${e.held} + 1 <= ${e.capacity} AND (${e.maxBytes} = 0 OR ${e.heldBytes} + ${e.size} <= ${e.maxBytes}))`;
}

/**
 * Which acknowledged events an append of `size` bytes evicts, given them oldest first (read
 * lazily: only as many as are needed), or why it is refused. The queue's `held` must be
 * the exact count when it is not below capacity.
 */
export function makeRoom<K>(
  queue: QueueState,
  size: number,
  bounds: AppendBounds,
  acknowledgedOldestFirst: () => Iterable<Evictable<K>>,
): RoomDecision<K> {
  const evict: K[] = [];
  let held = queue.held;
  let heldBytes = queue.heldBytes;
  if (fitsAsIs({ held, heldBytes }, size, bounds)) return { status: 'room', evict };
  for (const event of acknowledgedOldestFirst()) {
    evict.push(event.key);
    held -= 1;
    heldBytes -= event.size;
    if (fitsAsIs({ held, heldBytes }, size, bounds)) return { status: 'room', evict };
  }
  return held + 1 > bounds.capacity ? { status: 'queue_full' } : { status: 'bytes_full' };
}
