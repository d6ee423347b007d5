// Local forwarding (what `roost listen --forward URL` runs): follows a queue and POSTs each
// event, in order, to a URL — typically a webhook handler on a developer's machine. Unlike
// a relay that pushes and forgets, the queue is durable: an event is retried until the
// target answers 2xx, the next one waits for it (no reordering), and only then is the
// cursor saved and the event acknowledged. Delivery is at least once: a crash between the
// target's 2xx and the cursor save sends that one event again on restart. A failure that
// retrying cannot fix (the target refuses the content, or the request cannot be built) is
// permanent: the event is parked, skipped or stops the forwarder (`onFail`), so that one
// bad event never blocks the queue behind it.
import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import type { EventFilterOptions, RoostClient } from './client.js';
import { RoostError, describeNetworkFailure, isAbortError } from './errors.js';
import { retryTransient } from './retry.js';
import type { Event } from '../contract/schemas.js';

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
  /** Forward only the events these filters match (docs/api.md §4.3); the saved cursor then belongs to them. */
  filter?: EventFilterOptions;
  /** Forward events already acknowledged too (default: skip them, they were handled). */
  includeAcknowledged?: boolean;
  /** Pacing of retries (default 500 ms doubling up to 30 s). */
  backoff?: BackoffOptions;
  /** Per-POST timeout (default 30 s). */
  timeoutMs?: number;
  onForwarded?(event: Event, status: number, attempts: number): void;
  onSkipped?(event: Event): void;
  /**
   * What a permanent failure does: `park` hands the event to `park` (a dead-letter file),
   * then acknowledges it and goes on; `skip` acknowledges it and goes on; `stop` resolves
   * with the failure, the cursor still before the event. Default `park`.
   */
  onFail?: 'park' | 'skip' | 'stop';
  park?(event: Event, reason: string): Promise<void>;
  /** A permanent failure, after `onFail` was applied (unless it is `stop`). */
  onPermanentFailure?(event: Event, reason: string): void;
  /** A failed attempt; `event` is undefined when reading the queue failed. */
  onRetry?(event: Event | undefined, reason: string, delayMs: number, attempt: number): void;
}

/** Why forwarding stopped early under `onFail: 'stop'`, or undefined when it was aborted. */
export interface ForwardStop {
  event: Event;
  reason: string;
}

export async function forwardEvents(options: ForwardOptions): Promise<ForwardStop | undefined> {
  const { client, signal } = options;
  const backoff = { initialDelayMs: 500, ...options.backoff };
  const onFail = options.onFail ?? 'park';
  const events = client.events({
    ...options.filter,
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
    const delivered = await postUntilSettled(event, options, backoff);
    if (delivered === undefined) return undefined; // aborted: the cursor stays before this event
    if ('permanent' in delivered) {
      if (onFail === 'stop') return { event, reason: delivered.permanent };
      if (onFail === 'park') {
        if (!options.park) throw new Error('forwardEvents: onFail "park" needs a park function');
        await options.park(event, delivered.permanent);
      }
      await options.saveCursor(event.sequence);
      options.onPermanentFailure?.(event, delivered.permanent);
      if (!(await ackWithRetry(event, options, backoff))) return undefined;
      continue;
    }
    await options.saveCursor(event.sequence);
    const acked = await ackWithRetry(event, options, backoff);
    options.onForwarded?.(event, delivered.status, delivered.attempts);
    if (!acked) return undefined;
  }
  return undefined;
}

/**
 * A header value that any HTTP stack accepts: visible ASCII and spaces as they are, every
 * other character (and `%`) percent-encoded as UTF-8. Event types come from senders.
 */
export function headerValue(text: string): string {
  return text.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) =>
    [...Buffer.from(c, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** Answers that say the target will never take this content, however often it is sent. */
const PERMANENT_STATUSES = new Set([400, 413, 415, 422]);

type Settled = { status: number; attempts: number } | { permanent: string };

async function postUntilSettled(
  event: Event,
  options: ForwardOptions,
  backoff: BackoffOptions,
): Promise<Settled | undefined> {
  const { signal } = options;
  let request: RequestInit;
  try {
    const body = JSON.stringify(event);
    const headers = new Headers({
      'content-type': 'application/json',
      'user-agent': 'roost-listen',
      'x-roost-event-id': headerValue(event.id),
      'x-roost-sequence': String(event.sequence),
      'x-roost-event-type': headerValue(event.type),
      'x-roost-address-id': headerValue(event.address_id),
    });
    request = { method: 'POST', headers, body };
  } catch (error) {
    return { permanent: `the request cannot be built: ${(error as Error).message}` };
  }
  for (let attempt = 0; ; attempt++) {
    if (signal.aborted) return undefined;
    let reason: string;
    try {
      const response = await fetch(options.target, {
        ...request,
        signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs ?? 30_000)]),
      });
      await response.arrayBuffer().catch(() => undefined); // free the connection
      if (response.ok) return { status: response.status, attempts: attempt + 1 };
      reason = `${options.target} answered ${response.status}`;
      if (PERMANENT_STATUSES.has(response.status)) return { permanent: reason };
    } catch (error) {
      if (signal.aborted) return undefined;
      if (isAbortError(error) || (error as Error).name === 'TimeoutError')
        reason = `${options.target} did not answer in time`;
      // fetch throws a TypeError with a cause for network failures; without one, it refused
      // the request itself, and it would refuse it again.
      else if (error instanceof TypeError && (error as Error & { cause?: unknown }).cause === undefined)
        return { permanent: `the request cannot be sent: ${error.message}` };
      else reason = `cannot reach ${options.target}: ${describeNetworkFailure(error)}`;
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
