// Housekeeping on SQLite, on the writer thread's connection: expired addresses and events
// past retention go in bounded steps, each a short transaction, so that appends queued
// meanwhile run between steps (engine.ts calls purgeStep until it is done).
import type Database from 'better-sqlite3';
import { KEYS_PER_MS } from '../event-ids.js';
import type { PurgeResult } from '../storage.js';
import { KEY_OF_ID } from './migrations.js';

/** One step's outcome, with the queues whose events it removed (the appends' queue states go stale). */
export interface PurgeStep extends PurgeResult {
  done: boolean;
  /** By address id (the expired addresses it visited) and by address key (events past retention). */
  emptied: { ids: string[]; keys: number[] };
}

export class PurgeWrites {
  private readonly sql;

  constructor(private readonly db: Database.Database) {
    this.sql = {
      expired: db.prepare<[number], { id: string }>(
        'SELECT id FROM addresses WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT 100',
      ),
      deleteAddress: db.prepare('DELETE FROM addresses WHERE id = ?'),
      deleteSomeEventsOf: db.prepare(
        `DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE address_key = ${KEY_OF_ID} LIMIT ?)`,
      ),
      // Past retention: a range of keys (event-ids.ts), which holds the unplaced
      // events too (below LOW_KEYS): for those, created_at decides.
      old: db
        .prepare<[number, number, number], number>(
          'DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE rowid < ? AND created_at < ? LIMIT ?) RETURNING address_key',
        )
        .pluck(),
    };
  }

  /** A whole purge at once (tests and tools; the service purges in steps). */
  purge(now: number, retainAfter: number, onStep: (step: PurgeStep) => void): PurgeResult {
    const result: PurgeResult = { expiredAddressIds: [], eventsPurged: 0 };
    for (;;) {
      const step = this.step(now, retainAfter, 1000);
      onStep(step);
      result.expiredAddressIds.push(...step.expiredAddressIds);
      result.eventsPurged += step.eventsPurged;
      if (step.done) return result;
    }
  }

  /**
   * One bounded step of a purge: at most `budget` events removed, in one short transaction.
   * Expired addresses lose their events first, a slice at a time, then go themselves.
   */
  step(now: number, retainAfter: number, budget: number): PurgeStep {
    const expiredAddressIds: string[] = [];
    const emptied = { ids: [] as string[], keys: [] as number[] };
    let eventsPurged = 0;
    this.db.transaction(() => {
      for (const { id } of this.sql.expired.all(now)) {
        emptied.ids.push(id);
        const removed = this.sql.deleteSomeEventsOf.run(id, budget - eventsPurged).changes;
        eventsPurged += removed;
        if (eventsPurged >= budget) return; // maybe more left: the next step looks again
        this.sql.deleteAddress.run(id);
        expiredAddressIds.push(id);
      }
    })();
    if (eventsPurged >= budget) return { expiredAddressIds, eventsPurged, done: false, emptied };
    const slice = budget - eventsPurged;
    const old = this.sql.old.all(retainAfter * KEYS_PER_MS, retainAfter, slice);
    eventsPurged += old.length;
    emptied.keys = [...new Set(old)];
    return {
      expiredAddressIds,
      eventsPurged,
      done: old.length < slice && this.sql.expired.all(now).length === 0,
      emptied,
    };
  }
}
