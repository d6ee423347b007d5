// Running one call until it succeeds or fails for good: failures the service may get over
// (no answer, 408, 429, 5xx) are retried with backoff; anything else is thrown at once.
import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import { RoostError, isAbortError } from './errors.js';

export interface RetryOptions {
  /** Aborting stops retrying; the call then resolves to undefined. */
  signal?: AbortSignal;
  backoff?: BackoffOptions;
  onRetry?: (error: RoostError, delayMs: number, attempt: number) => void;
}

/** The operation's result, or undefined when `signal` aborted first. */
export async function retryTransient<T>(
  operation: () => Promise<T>,
  options: RetryOptions = {},
): Promise<T | undefined> {
  const { signal } = options;
  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted) return undefined;
    try {
      return await operation();
    } catch (error) {
      if (signal?.aborted || isAbortError(error)) return undefined;
      if (!(error instanceof RoostError) || !error.retryable) throw error;
      const delay = backoffDelay(attempt, options.backoff, error.retryAfterMs);
      options.onRetry?.(error, delay, attempt + 1);
      await sleep(delay, signal);
    }
  }
}
