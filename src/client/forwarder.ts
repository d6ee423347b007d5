// Local forwarding (what `roost listen --forward URL` runs): follows a queue and POSTs each
// event, in order, to a URL — typically a webhook handler on a developer's machine. Unlike
// a relay that pushes and forgets, the queue is durable: an event is retried until the
// target answers 2xx, the next one waits for it (no reordering), and only then is the
// cursor saved and the event acknowledged. Delivery is at least once: a crash between the
// target's 2xx and the cursor save sends that one event again on restart.
import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import type { RoostClient } from './client.js';
import { RoostError, describeNetworkFailure, isAbortError } from './errors.js';
import { retryTransient } from './retry.js';
import type { Event } from '../schemas.js';

export interface ForwardOptions {
  client: RoostClient;
  /** Where each event is POSTed as JSON. */
  target: string;
  /** Start after this sequence (the saved cursor). */
  after: number;
  /** Aborting stops at once (a held poll, a retry sleep or a POST in flight); then it resolves. */
  signal: AbortSignal;
  /** Called after each event the target accepted, before it is acknowledged. */
  saveCursor(after: number): Promise<void>;
  /** Forward events already acknowledged too (default: skip them, they were handled). */
  includeAcknowledged?: boolean;
  /** Pacing of retries (default 500 ms doubling up to 30 s). */
  backoff?: BackoffOptions;
  /** Per-POST timeout (default 30 s). */
  timeoutMs?: number;
  onForwarded?(event: Event, status: number, attempts: number): void;
  onSkipped?(event: Event): void;
  /** A failed attempt; `event` is undefined when reading the queue failed. */
  onRetry?(event: Event | undefined, reason: string, delayMs: number, attempt: number): void;
}

export async function forwardEvents(options: ForwardOptions): Promise<void> {
  const { client, signal } = options;
  const backoff = { initialDelayMs: 500, ...options.backoff };
  const events = client.events({
    after: options.after,
    signal,
    onRetry: (error, delay, attempt) => options.onRetry?.(undefined, error.message, delay, attempt),
  });
  for await (const event of events) {
    if (event.acknowledged_at && !options.includeAcknowledged) {
      await options.saveCursor(event.sequence);
      options.onSkipped?.(event);
      continue;
    }
    const delivered = await postUntilAccepted(event, options, backoff);
    if (delivered === undefined) return; // aborted: the cursor stays before this event
    await options.saveCursor(event.sequence);
    const acked = await ackWithRetry(event, options, backoff);
    options.onForwarded?.(event, delivered.status, delivered.attempts);
    if (!acked) return;
  }
}

async function postUntilAccepted(event: Event, options: ForwardOptions, backoff: BackoffOptions) {
  const { signal } = options;
  for (let attempt = 0; ; attempt++) {
    if (signal.aborted) return undefined;
    let reason: string;
    try {
      const response = await fetch(options.target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'roost-listen',
          'x-roost-event-id': event.id,
          'x-roost-sequence': String(event.sequence),
          'x-roost-event-type': event.type,
          'x-roost-address-id': event.address_id,
        },
        body: JSON.stringify(event),
        signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs ?? 30_000)]),
      });
      await response.arrayBuffer().catch(() => undefined); // free the connection
      if (response.ok) return { status: response.status, attempts: attempt + 1 };
      reason = `${options.target} answered ${response.status}`;
    } catch (error) {
      if (signal.aborted) return undefined;
      reason =
        isAbortError(error) || (error as Error).name === 'TimeoutError'
          ? `${options.target} did not answer in time`
          : `cannot reach ${options.target}: ${describeNetworkFailure(error)}`;
    }
    const delay = backoffDelay(attempt, backoff);
    options.onRetry?.(event, reason, delay, attempt + 1);
    await sleep(delay, signal);
  }
}

/** True once acknowledged (or purged meanwhile); false when aborted first. */
async function ackWithRetry(event: Event, options: ForwardOptions, backoff: BackoffOptions): Promise<boolean> {
  const acked = await retryTransient(
    async () => {
      try {
        await options.client.ack(event.id, { signal: options.signal });
      } catch (error) {
        if (!(error instanceof RoostError && error.code === 'event_not_found')) throw error;
      }
      return true;
    },
    {
      signal: options.signal,
      backoff,
      onRetry: (error, delay, attempt) => options.onRetry?.(event, `acknowledging: ${error.message}`, delay, attempt),
    },
  );
  return acked === true;
}
