// The client's errors: one class for every failure the SDK reports, so callers branch on
// `code` (the REST error.code of docs/api.md §6) and `status` instead of parsing messages.
// Failures without an HTTP answer (refused connection, reset, timeout) are a subclass, so a
// caller can tell "the service said no" from "the service was not reached".

/** Constructed like the server's own errors: (code, status, message). */
export class RoostError extends Error {
  /** HTTP status of the answer; 0 when there was no answer (see RoostNetworkError). */
  readonly status: number;
  /** The REST error.code (`unauthorized`, `address_not_found`, …) or a client-side code. */
  readonly code: string;
  /** Milliseconds the service asked us to wait (Retry-After), when it said so. */
  readonly retryAfterMs?: number;

  constructor(code: string, status: number, message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RoostError';
    this.status = status;
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** True when the same request may succeed later: no answer, 408, 429 or a 5xx. */
  get retryable(): boolean {
    return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

/** The service was not reached or did not answer: `code` is `network_error` or `timeout`. */
export class RoostNetworkError extends RoostError {
  constructor(code: 'network_error' | 'timeout', message: string, cause?: unknown) {
    super(code, 0, message, { cause });
    this.name = 'RoostNetworkError';
  }

  override get retryable(): boolean {
    return true;
  }
}

/** True for the error fetch (and our own sleeps) throw when the caller's signal aborts. */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

/** The most useful words in a fetch failure: undici hides the reason in `cause`. */
export function describeNetworkFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause?.message) return cause.message;
  if (cause?.code) return cause.code;
  return error instanceof Error ? error.message : String(error);
}
