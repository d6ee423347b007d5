// Long-poll wake-ups (CONTRACT §4): a map from address id to the polls and streams held
// for it. A commit calls wake(addressId); the woken party re-reads storage, because a
// wake-up carries no data (so a lost or duplicated one costs latency, never correctness).
// Timers and listeners are freed as soon as the waiting party leaves.

export type WaitOutcome = 'woken' | 'timeout' | 'aborted' | 'closing';

interface Ticket {
  settle(outcome: WaitOutcome, at?: number): void;
}

export interface WaitTicket {
  /** Resolves on the first wake-up after register(), or on timeout, abort or shutdown. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<WaitOutcome>;
  /** Withdraws the ticket without waiting. */
  cancel(): void;
  /** When wake() settled it (performance.now()), for the wake-latency metric. */
  readonly wokenAt: number | undefined;
}

export class Waiters {
  private readonly tickets = new Map<string, Set<Ticket>>();
  private readonly listeners = new Map<string, Set<() => void>>();
  private closing = false;
  private heldCount = 0;

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
   * Registers interest before the caller's last read of storage, so that a commit landing
   * between that read and wait() still wakes it.
   */
  register(addressId: string): WaitTicket {
    let woken: WaitOutcome | null = this.closing ? 'closing' : null;
    let resolveWait: ((o: WaitOutcome) => void) | null = null;
    let wokenAt: number | undefined;
    const set = this.tickets.get(addressId) ?? new Set<Ticket>();
    this.tickets.set(addressId, set);
    const remove = () => {
      set.delete(ticket);
      if (set.size === 0 && this.tickets.get(addressId) === set) this.tickets.delete(addressId);
    };
    const ticket: Ticket = {
      settle: (outcome, at) => {
        remove();
        wokenAt ??= at;
        if (resolveWait) resolveWait(outcome);
        else woken ??= outcome;
      },
    };
    set.add(ticket);

    return {
      wait: (timeoutMs, signal) => {
        if (woken) return Promise.resolve(woken);
        if (signal?.aborted) {
          remove();
          return Promise.resolve('aborted');
        }
        this.heldCount++;
        return new Promise<WaitOutcome>((resolve) => {
          const timer = setTimeout(() => ticket.settle('timeout'), Math.max(0, timeoutMs));
          const onAbort = () => ticket.settle('aborted');
          signal?.addEventListener('abort', onAbort, { once: true });
          resolveWait = (outcome) => {
            resolveWait = null;
            this.heldCount--;
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            resolve(outcome);
          };
        });
      },
      cancel: remove,
      get wokenAt() {
        return wokenAt;
      },
    };
  }

  /** Subscribes a long-lived listener (a stream) to wake-ups of one address. */
  subscribe(addressId: string, listener: () => void): () => void {
    const set = this.listeners.get(addressId) ?? new Set<() => void>();
    this.listeners.set(addressId, set);
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(addressId) === set) this.listeners.delete(addressId);
    };
  }

  /** Wakes every poll and stream held for the address: something committed there. */
  wake(addressId: string): void {
    const set = this.tickets.get(addressId);
    if (set) {
      this.tickets.delete(addressId);
      const at = performance.now();
      for (const ticket of set) ticket.settle('woken', at);
    }
    const listeners = this.listeners.get(addressId);
    if (listeners) for (const listener of [...listeners]) listener();
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
    for (const [, set] of this.listeners) for (const listener of [...set]) listener();
  }
}
