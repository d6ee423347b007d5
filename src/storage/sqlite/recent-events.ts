// Events read lately, and those committed since to the same addresses, kept on the event
// loop so that reading them (again) takes from SQLite only what can change: which events a
// page holds and their acknowledged_at. The rest of an event never changes once committed,
// and (address id, sequence) never names another event: address ids are random and never
// reused, sequences never go back (migration 2). So an entry needs no invalidation; one
// whose event is gone is simply never asked for again.
import { shareEventRecord, type EventRecord, type SharedEventRecord } from '../storage.js';

/** What an entry is counted as beyond its strings: the record, its Map slot, the strings' headers. */
const ENTRY_OVERHEAD = 160;
/** The largest share of the budget one event may take; a larger one is read whole each time. */
const LARGEST_SHARE = 64;

interface HeldAddress {
  events: Map<number, SharedEventRecord>;
  bytes: number;
}

export class RecentEvents {
  /** By address, least recently read first. */
  private readonly addresses = new Map<string, HeldAddress>();
  private bytes = 0;

  constructor(private readonly budget: number) {}

  /** The events held of an address, by sequence (that address becomes the most recently read). */
  of(addressId: string): Map<number, SharedEventRecord> | undefined {
    const held = this.addresses.get(addressId);
    if (held === undefined) return undefined;
    this.addresses.delete(addressId);
    this.addresses.set(addressId, held);
    return held.events;
  }

  /** Whether events of this address are held (without making it the most recently read). */
  holds(addressId: string): boolean {
    return this.addresses.has(addressId);
  }

  /**
   * Keeps a committed event (a record the caller just made and hands over) and returns it as
   * the record every later read shares. Replaces the entry of the same sequence: only
   * acknowledged_at differs between the two.
   */
  keep(record: EventRecord): SharedEventRecord {
    const kept = shareEventRecord(record);
    const size = sizeOf(record);
    if (size > this.budget / LARGEST_SHARE) return kept;
    let held = this.addresses.get(record.addressId);
    if (held === undefined) {
      held = { events: new Map(), bytes: 0 };
      this.addresses.set(record.addressId, held);
    }
    const previous = held.events.get(record.sequence);
    if (previous !== undefined) this.count(held, -sizeOf(previous));
    held.events.set(record.sequence, kept);
    this.count(held, size);
    // The least recently read addresses go first, whole (this one last of all).
    for (const [addressId, oldest] of this.addresses) {
      if (this.bytes <= this.budget) break;
      this.addresses.delete(addressId);
      this.bytes -= oldest.bytes;
    }
    return kept;
  }

  forget(addressId: string): void {
    const held = this.addresses.get(addressId);
    if (held === undefined) return;
    this.addresses.delete(addressId);
    this.bytes -= held.bytes;
  }

  private count(held: HeldAddress, bytes: number): void {
    held.bytes += bytes;
    this.bytes += bytes;
  }
}

/** An entry's strings, counted twice: what is written of it (storage.ts WRITTEN) is about as long again. */
const sizeOf = (record: EventRecord): number =>
  ENTRY_OVERHEAD +
  2 *
    (record.id.length +
      record.type.length +
      record.source.length +
      record.dataJson.length +
      (record.metadataJson?.length ?? 0) +
      (record.dedupeKey?.length ?? 0));
