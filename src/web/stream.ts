// Follows the durable queue over Server-Sent Events with fetch, because EventSource cannot
// send an Authorization header (and a token must not go into a URL). After a dropped
// connection it reconnects with backoff and resumes after the last sequence it saw.
import { createParser } from 'eventsource-parser';
import { addressPath, filterQuery, type ReadFilter } from './api';
import type { RoostEvent } from './types';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'gone' | 'unauthorized';

/** An `event: ack` message: an event was acknowledged, by this page or anyone else. */
export interface Acknowledgement {
  id: string;
  sequence: number;
  acknowledged_at: string;
}

export interface FollowOptions {
  addressId: string;
  token: string;
  onEvents: (events: RoostEvent[]) => void;
  onAcks: (acks: Acknowledgement[]) => void;
  onState: (state: StreamState) => void;
  /** Only the events this filter matches (the server applies it); none: every event. */
  filter?: ReadFilter;
  /** Start after this sequence (default 0: from the first event). */
  after?: number;
}

/** An ack message's data, or undefined when it is not one. */
export function parseAck(data: string): Acknowledgement | undefined {
  try {
    const ack = JSON.parse(data) as Partial<Acknowledgement> | null;
    if (
      ack &&
      typeof ack.id === 'string' &&
      Number.isSafeInteger(ack.sequence) &&
      typeof ack.acknowledged_at === 'string'
    )
      return ack as Acknowledgement;
  } catch {
    /* not JSON */
  }
  return undefined;
}

/** The server comments at least every 15 s (docs/api.md §4.1): silence past this is a dead link. */
const SILENCE_MS = 35_000;
const BACKOFF_MAX_MS = 10_000;

/** Starts following; the returned function stops it. */
export function followEvents(options: FollowOptions): () => void {
  const stop = new AbortController();
  void run(options, stop.signal);
  return () => stop.abort();
}

async function run(options: FollowOptions, stopped: AbortSignal): Promise<void> {
  let after = options.after ?? 0;
  const query = options.filter ? filterQuery(options.filter) : new URLSearchParams();
  let backoff = 500;
  // Events that arrive in one read (the replay: hundreds) are handed over together, one render.
  let pending: RoostEvent[] = [];
  let acks: Acknowledgement[] = [];
  const flush = () => {
    const batch = pending;
    const acked = acks;
    pending = [];
    acks = [];
    if (stopped.aborted) return;
    if (batch.length > 0) options.onEvents(batch);
    // After the events: an ack may be for an event of the same read.
    if (acked.length > 0) options.onAcks(acked);
  };

  options.onState('connecting');
  while (!stopped.aborted) {
    const attempt = new AbortController();
    const abortAttempt = () => attempt.abort();
    stopped.addEventListener('abort', abortAttempt);
    let silence = window.setTimeout(abortAttempt, SILENCE_MS);
    const heard = () => {
      window.clearTimeout(silence);
      silence = window.setTimeout(abortAttempt, SILENCE_MS);
    };
    let ended: 'gone' | 'unauthorized' | undefined;
    try {
      query.set('after', String(after));
      const response = await fetch(`${addressPath(options.addressId)}/events/stream?${query.toString()}`, {
        headers: { accept: 'text/event-stream', authorization: `Bearer ${options.token}` },
        cache: 'no-store',
        signal: attempt.signal,
      });
      if (response.status === 401 || response.status === 403) ended = 'unauthorized';
      else if (response.status === 404) ended = 'gone';
      else if (response.ok && response.body) {
        options.onState('live');
        backoff = 500;
        const parser = createParser({
          onEvent(message) {
            if (message.event === 'gone') {
              ended = 'gone';
              return;
            }
            if (message.event === 'revoked') {
              ended = 'unauthorized';
              return;
            }
            if (message.event === 'ack') {
              const ack = parseAck(message.data);
              if (ack) acks.push(ack);
              return;
            }
            // Kinds of message this page does not know are left alone.
            if (message.event !== undefined && message.event !== 'message') return;
            const event = JSON.parse(message.data) as RoostEvent;
            if (event.sequence <= after) return;
            after = event.sequence;
            pending.push(event);
          },
          onComment: heard,
        });
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          heard();
          parser.feed(value);
          flush();
        }
      }
    } catch {
      // Dropped, silent or refused: reconnect below.
    } finally {
      window.clearTimeout(silence);
      stopped.removeEventListener('abort', abortAttempt);
    }
    flush();
    if (stopped.aborted) return;
    if (ended) return options.onState(ended);
    options.onState('reconnecting');
    await new Promise((resolve) => window.setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
  }
}
