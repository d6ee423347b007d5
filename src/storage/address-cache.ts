// Address records kept in memory by id, for both engines: SQLite's exact cache (every change
// goes through its one process) and PostgreSQL's addresses read lately (whose appends check
// what admitted a delivery). Records are frozen: one object answers many requests.
import type { AddressRecord } from './storage.js';

/** Addresses kept at most (about 1 KiB each); the oldest read goes first. */
export const ADDRESS_CACHE_SIZE = 20_000;

/** Live at `now`, as the engines' SQL says it. */
export const isLive = (address: AddressRecord, now: number) => address.expiresAt === null || address.expiresAt > now;

export class AddressCache {
  private readonly kept = new Map<string, AddressRecord>();

  /** The kept address if live at `now`; null if it is kept but expired; undefined if not kept. */
  get(id: string, now: number): AddressRecord | null | undefined {
    const address = this.kept.get(id);
    return address && (isLive(address, now) ? address : null);
  }

  /** Keeps an address just read, as the newest; returns it frozen. */
  keep(found: AddressRecord): AddressRecord {
    const address = Object.freeze(found);
    this.kept.delete(address.id);
    if (this.kept.size >= ADDRESS_CACHE_SIZE) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(address.id, address);
    return address;
  }

  forget(id: string): void {
    this.kept.delete(id);
  }
}
