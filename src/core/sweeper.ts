// Runs retention and expiry purges on a timer (docs/api.md §9.1, docs/api.md §2: expired addresses'
// events are gone within a minute). With PostgreSQL, the engine's purge takes an advisory
// lock so that one instance sweeps at a time.
import type { Logger } from 'pino';
import type { CallbackService } from './callbacks.js';
import type { RoostService } from './service.js';

export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly service: RoostService,
    private readonly intervalMs: number,
    private readonly logger: Logger,
    /** Callbacks expire and are purged on the same timer (docs/api.md §3.6). */
    private readonly callbacks?: CallbackService,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  /** One sweep; overlapping calls share the one in progress. */
  sweep(): Promise<void> {
    this.running ??= this.service
      .purge()
      .then(() => this.callbacks?.sweep())
      .catch((err) => this.logger.warn({ err }, 'sweep failed; will retry'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
