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
}

export class Batches<T> {
  private queue: T[] = [];
  private queuedWeight = 0;
  private running = 0;
  private scheduled = false;

  /** `run` settles every item of its batch itself; it is not expected to reject. */
  constructor(
    private readonly run: (batch: T[]) => Promise<void>,
    private readonly limits: BatchLimits<T>,
  ) {}

  add(item: T): void {
    this.queue.push(item);
    if (this.limits.weight) this.queuedWeight += this.limits.weight(item);
    this.schedule();
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
    return this.queue.splice(0, count);
  }
}
