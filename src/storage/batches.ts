// Calls that arrive together go to the database together: each call joins a queue, and the
// queue is handed over as one batch whenever fewer than `inFlight` batches are under way —
// at the end of the event loop's turn, so that everything that turn parsed goes in it.
// While the batches run, arriving calls wait and share the next one (group commit).

export interface BatchLimits<T> {
  /** Batches running at once. */
  inFlight: number;
  /** Items in one batch at most. */
  maxItems: number;
  /** With `weight`: the total weight of one batch at most (its first item always goes). */
  maxWeight?: number;
  weight?: (item: T) => number;
  /**
   * How long an item may wait for a batch to take it; then `expire` settles it. While the
   * running batches hang (a stalled database), the queue behind them must not wait for
   * as long as they do, on top of its own batch's wait.
   */
  maxWaitMs: number;
  expire: (item: T) => void;
}

export class Batches<T> {
  private queue: T[] = [];
  /** When each queued item arrived (performance.now()), in queue order. */
  private queuedAt: number[] = [];
  private queuedWeight = 0;
  private expiry: NodeJS.Timeout | undefined;
  private running = 0;
  private scheduled = false;

  /** `run` settles every item of its batch itself; it is not expected to reject. */
  constructor(
    private readonly run: (batch: T[]) => Promise<void>,
    private readonly limits: BatchLimits<T>,
  ) {}

  add(item: T): void {
    this.queue.push(item);
    this.queuedAt.push(performance.now());
    if (this.limits.weight) this.queuedWeight += this.limits.weight(item);
    this.schedule();
    this.expiry ??= setTimeout(() => this.expireWaiting(), this.limits.maxWaitMs).unref();
  }

  /** One timer for the whole queue: settles what waited too long, then waits for the next. */
  private expireWaiting(): void {
    this.expiry = undefined;
    const now = performance.now();
    let count = 0;
    while (count < this.queue.length && now - this.queuedAt[count] >= this.limits.maxWaitMs) count++;
    const expired = this.queue.splice(0, count);
    this.queuedAt.splice(0, count);
    for (const item of expired) {
      if (this.limits.weight) this.queuedWeight -= this.limits.weight(item);
      this.limits.expire(item);
    }
    if (this.queue.length > 0)
      this.expiry = setTimeout(() => this.expireWaiting(), this.queuedAt[0] + this.limits.maxWaitMs - now).unref();
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.limits.inFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.running >= this.limits.inFlight || this.queue.length === 0) return;
      const batch = this.take();
      this.running++;
      void this.run(batch).finally(() => {
        this.running--;
        this.schedule();
      });
      this.schedule();
    });
  }

  /** The oldest queued items, within the limits. */
  private take(): T[] {
    const { maxItems, maxWeight = Infinity, weight } = this.limits;
    if (this.queue.length <= maxItems && this.queuedWeight <= maxWeight) {
      const all = this.queue;
      this.queue = [];
      this.queuedAt = [];
      this.queuedWeight = 0;
      return all;
    }
    let count = 0;
    let taken = 0;
    while (count < this.queue.length && count < maxItems) {
      const next = weight ? weight(this.queue[count]) : 0;
      if (count > 0 && taken + next > maxWeight) break;
      taken += next;
      count++;
    }
    this.queuedWeight -= taken;
    this.queuedAt.splice(0, count);
    return this.queue.splice(0, count);
  }
}
