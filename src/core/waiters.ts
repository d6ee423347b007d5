// Long-poll wake-ups (docs/api.md §4): a map from address id to the polls and streams held
// for it. A commit calls wake(addressId); the wake-up itself carries no data (so a lost or
// duplicated one costs latency, never correctness). What changed is read once per woken
// address, after the commit, and that one read is shared by all its polls and streams:
// a thousand readers of one address must not cost a thousand reads per delivery.
// Also here: the caps on held polls and streams per address and per client.
import type { AckRecord, AddressRecord, EventRecord } from '../storage/storage.js';

export type WaitOutcome = 'woken' | 'timeout' | 'aborted' | 'closing';

/** One read made for a wake-up, from the lowest cursor of the parties it woke. */
export interface SharedRead {
  /** The cursor read from. */
  after: number;
  /** The address as it is now, or null when it is gone (deleted or expired). */
  address: AddressRecord | null;
  records: EventRecord[];
  /** Stored bytes of each record (data and metadata), for cutting a page by bytes. */
  bytes: number[];
  hasMore: boolean;
  /** The highest sequence the address had given out when read (EventPageRecord.latestSequence). */
  latestSequence: number;
  /** When streams asked: the acknowledgements made at or after `ackSince` (Storage.listAcknowledged), read after the commit. */
  acks?: AckRecord[];
  ackSince?: number;
}

/** Makes the read shared by the parties of one wake-up; `ackSince`: read the acknowledgements since then too. */
export type SharedReader = (addressId: string, after: number, ackSince?: number) => Promise<SharedRead>;

/**
 * The part of a shared read that a party at `after` needs, cut by `limit` and `maxBytes`
 * as storage cuts a page (the first event always). Null when the read cannot tell: the
 * party is past its end and more exist, so it must read for itself.
 */
export function sliceShared(
  read: SharedRead,
  after: number,
  limit: number,
  maxBytes: number,
): { records: EventRecord[]; hasMore: boolean } | null {
  if (after < read.after) return null;
  const { records, bytes } = read;
  let start = 0;
  while (start < records.length && records[start].sequence <= after) start++;
  if (start === records.length) return read.hasMore ? null : { records: [], hasMore: false };
  let end = start;
  let total = 0;
  while (end < records.length && end - start < limit && (end === start || total + bytes[end] <= maxBytes)) {
    total += bytes[end];
    end++;
  }
  return { records: records.slice(start, end), hasMore: end < records.length || read.hasMore };
}

interface Ticket {
  after: number;
  settle(outcome: WaitOutcome, at?: number, read?: Promise<SharedRead>): void;
}

interface Listener {
  /** Undefined while it works through a backlog by itself: a shared read need not start low for it. */
  cursor(): number | undefined;
  /** From when it wants to hear of acknowledgements (a stream's `ack` messages), if at all. */
  ackSince?(): number | undefined;
  notify(read?: Promise<SharedRead>): void;
}

export interface WaitTicket {
  /** Resolves on the first wake-up after register(), or on timeout, abort or shutdown. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<WaitOutcome>;
  /** Withdraws the ticket without waiting. */
  cancel(): void;
  /** When wake() settled it (performance.now()), for the wake-latency metric. */
  readonly wokenAt: number | undefined;
  /** The read shared by the wake-up that settled it, when a reader is set. */
  readonly read: Promise<SharedRead> | undefined;
}

export interface WaiterCaps {
  /** Held polls plus streams per address; 0 means no limit. */
  perAddress: number;
  /** Held polls plus streams per client (IP); 0 means no limit. */
  perClient: number;
}

/**
 * One registered poll: an object with its methods on the prototype, its own abort listener
 * (handleEvent) and timer argument, so that a held poll costs one object, one promise and
 * one timer rather than a closure per callback (10,000 held polls are held in memory).
 */
class HeldTicket implements Ticket, WaitTicket {
  wokenAt: number | undefined = undefined;
  read: Promise<SharedRead> | undefined = undefined;
  private resolveWait: ((outcome: WaitOutcome) => void) | null = null;
  private timer: NodeJS.Timeout | undefined = undefined;
  private signal: AbortSignal | undefined = undefined;

  constructor(
    private readonly waiters: Waiters,
    private readonly addressId: string,
    private readonly set: Set<Ticket>,
    readonly after: number,
    private woken: WaitOutcome | null,
  ) {}

  settle(outcome: WaitOutcome, at?: number, read?: Promise<SharedRead>): void {
    this.cancel();
    this.wokenAt ??= at;
    this.read ??= read;
    if (this.resolveWait) this.finish(outcome);
    else this.woken ??= outcome;
  }

  wait(timeoutMs: number, signal?: AbortSignal): Promise<WaitOutcome> {
    if (this.woken) return Promise.resolve(this.woken);
    if (signal?.aborted) {
      this.cancel();
      return Promise.resolve('aborted');
    }
    this.waiters.countHeld(1);
    return new Promise<WaitOutcome>((resolve) => {
      this.resolveWait = resolve;
      this.timer = setTimeout(timeOut, Math.max(0, timeoutMs), this);
      if (signal) {
        this.signal = signal;
        signal.addEventListener('abort', this, { once: true });
      }
    });
  }

  /** The abort listener (an EventListener object). */
  handleEvent(): void {
    this.settle('aborted');
  }

  cancel(): void {
    this.waiters.forget(this.addressId, this.set, this);
  }

  private finish(outcome: WaitOutcome): void {
    const resolve = this.resolveWait!;
    this.resolveWait = null;
    this.waiters.countHeld(-1);
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this);
    this.signal = undefined;
    resolve(outcome);
  }
}

function timeOut(ticket: HeldTicket): void {
  ticket.settle('timeout');
}

export class Waiters {
  private readonly tickets = new Map<string, Set<Ticket>>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly slotsByAddress = new Map<string, number>();
  /** The part of slotsByAddress held with view tokens. */
  private readonly viewSlotsByAddress = new Map<string, number>();
  private readonly slotsByClient = new Map<string, number>();
  private reader: SharedReader | undefined;
  private closing = false;
  private heldCount = 0;

  constructor(private readonly caps: WaiterCaps = { perAddress: 0, perClient: 0 }) {}

  /** Sets how a wake-up reads what changed (the service does, once). */
  useReader(reader: SharedReader): void {
    this.reader = reader;
  }

  /** Polls currently held (for /metrics). */
  get held(): number {
    return this.heldCount;
  }

  /** Streams currently subscribed, over all addresses (for tests and /metrics). */
  get subscribed(): number {
    let count = 0;
    for (const set of this.listeners.values()) count += set.size;
    return count;
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /**
   * Takes a slot for one held poll or open stream of `addressId` by `client`, within the
   * caps; returns its release (call it once), or which cap refused it. View tokens share
   * at most viewShare() of the address's slots, so that however many idle polls and
   * streams they open, the read token keeps the rest.
   */
  admit(
    addressId: string,
    client: string,
    access: 'full' | 'view' = 'full',
  ): (() => void) | 'address' | 'client' | 'view' {
    const { perAddress, perClient } = this.caps;
    const byAddress = this.slotsByAddress.get(addressId) ?? 0;
    const byClient = this.slotsByClient.get(client) ?? 0;
    const byViews = this.viewSlotsByAddress.get(addressId) ?? 0;
    if (access === 'view' && perAddress > 0 && byViews >= this.viewShare) return 'view';
    if (perAddress > 0 && byAddress >= perAddress) return 'address';
    if (perClient > 0 && byClient >= perClient) return 'client';
    this.slotsByAddress.set(addressId, byAddress + 1);
    this.slotsByClient.set(client, byClient + 1);
    if (access === 'view') this.viewSlotsByAddress.set(addressId, byViews + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.slotsByAddress, addressId);
      decrement(this.slotsByClient, client);
      if (access === 'view') decrement(this.viewSlotsByAddress, addressId);
    };
  }

  /** The slots of one address that its view tokens may hold together: half its cap, rounded down. */
  get viewShare(): number {
    return Math.floor(this.caps.perAddress / 2);
  }

  /**
   * Takes a slot of `client` alone, within its cap (an answer being written, which holds
   * memory until the client reads it); returns its release (call it once), or null.
   */
  admitClient(client: string): (() => void) | null {
    const { perClient } = this.caps;
    const byClient = this.slotsByClient.get(client) ?? 0;
    if (perClient > 0 && byClient >= perClient) return null;
    this.slotsByClient.set(client, byClient + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.slotsByClient, client);
    };
  }

  /**
   * Registers interest before the caller's last read of storage (from `after`), so that a
   * commit landing between that read and wait() still wakes it.
   */
  register(addressId: string, after: number): WaitTicket {
    const set = this.tickets.get(addressId) ?? new Set<Ticket>();
    this.tickets.set(addressId, set);
    const ticket = new HeldTicket(this, addressId, set, after, this.closing ? 'closing' : null);
    set.add(ticket);
    return ticket;
  }

  /** Drops a ticket from its address's set (and the set once empty). */
  forget(addressId: string, set: Set<Ticket>, ticket: Ticket): void {
    set.delete(ticket);
    if (set.size === 0 && this.tickets.get(addressId) === set) this.tickets.delete(addressId);
  }

  /** Counts a poll in (+1) or out (-1) of the held ones. */
  countHeld(change: 1 | -1): void {
    this.heldCount += change;
  }

  /**
   * Subscribes a long-lived listener (a stream) to wake-ups of one address. `cursor` is
   * where it has read up to, so that a shared read starts low enough for it; `notify`
   * gets that read (none on shutdown or without a reader).
   */
  subscribe(
    addressId: string,
    cursor: () => number | undefined,
    notify: (read?: Promise<SharedRead>) => void,
    ackSince?: () => number | undefined,
  ): () => void {
    const set = this.listeners.get(addressId) ?? new Set<Listener>();
    this.listeners.set(addressId, set);
    const listener: Listener = { cursor, notify, ackSince };
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(addressId) === set) this.listeners.delete(addressId);
    };
  }

  /** Wakes every poll and stream held for the address with one shared read: something committed there. */
  wake(addressId: string): void {
    const tickets = this.tickets.get(addressId);
    const listeners = this.listeners.get(addressId);
    if (!tickets && !listeners) return;
    let after = Infinity;
    if (tickets) for (const ticket of tickets) after = Math.min(after, ticket.after);
    const parties = listeners ? [...listeners] : [];
    let ackSince: number | undefined;
    for (const listener of parties) {
      after = Math.min(after, listener.cursor() ?? Infinity);
      const since = listener.ackSince?.();
      if (since !== undefined) ackSince = Math.min(ackSince ?? Infinity, since);
    }
    // Only streams working through a backlog: no shared read; each reads on once done.
    const read = after === Infinity ? undefined : this.reader?.(addressId, after, ackSince);
    // Each party awaits it; a failed read must not also surface as an unhandled rejection.
    read?.catch(() => undefined);
    if (tickets) {
      this.tickets.delete(addressId);
      const at = performance.now();
      for (const ticket of tickets) ticket.settle('woken', at, read);
    }
    for (const listener of parties) listener.notify(read);
  }

  /** Wakes everything held here, once: wake-ups may have been missed (a lost LISTEN connection). */
  wakeAll(): void {
    for (const addressId of new Set([...this.tickets.keys(), ...this.listeners.keys()])) this.wake(addressId);
  }

  /** Shutdown: every held poll answers with what it has; streams are told to end. */
  closeAll(): void {
    this.closing = true;
    for (const [, set] of this.tickets) for (const ticket of [...set]) ticket.settle('closing');
    this.tickets.clear();
    for (const [, set] of this.listeners) for (const listener of [...set]) listener.notify();
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left <= 0) counts.delete(key);
  else counts.set(key, left);
}
