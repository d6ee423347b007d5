// Retry pacing shared by the event iterator and the forwarder: exponential, capped and
// jittered, so that many clients coming back after an outage do not arrive in step.

export interface BackoffOptions {
  /** First delay, in milliseconds (default 250). */
  initialDelayMs?: number;
  /** Ceiling of any delay, in milliseconds (default 30 000). */
  maxDelayMs?: number;
}

/**
 * The delay before retry number `attempt` (0-based): base·2^attempt capped at the
 * maximum, then "equal jitter" — half fixed, half random — so a delay never collapses to
 * zero yet clients spread out. A server's Retry-After, when given, is a floor.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, retryAfterMs?: number): number {
  const initial = Math.max(1, options.initialDelayMs ?? 250);
  const max = Math.max(initial, options.maxDelayMs ?? 30_000);
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  const delay = ceiling / 2 + Math.random() * (ceiling / 2);
  return Math.round(Math.min(max, Math.max(delay, retryAfterMs ?? 0)));
}

/** Resolves after `ms`, or at once (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
