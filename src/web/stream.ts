// Follows the durable queue over Server-Sent Events with fetch, because EventSource cannot
// send an Authorization header (and a token must not go into a URL). After a dropped
// connection it reconnects with backoff and resumes after the last sequence it saw.
import { createParser } from 'eventsource-parser';
import { addressPath } from './api';
import type { RoostEvent } from './types';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'gone' | 'unauthorized';

export interface FollowOptions {
  addressId: string;
  token: string;
  onEvents: (events: RoostEvent[]) => void;
  onState: (state: StreamState) => void;
}

/** The server comments at least every 15 s (CONTRACT §4.1): silence past this is a dead link. */
const SILENCE_MS = 35_000;
const BACKOFF_MAX_MS = 10_000;

/** Starts following; the returned function stops it. */
export function followEvents(options: FollowOptions): () => void {
  const stop = new AbortController();
  void run(options, stop.signal);
  return () => stop.abort();
}

async function run(options: FollowOptions, stopped: AbortSignal): Promise<void> {
  let after = 0;
  let backoff = 500;
  // Events that arrive in one read (the replay: hundreds) are handed over together, one render.
  let pending: RoostEvent[] = [];
  const flush = () => {
    const batch = pending;
    pending = [];
    if (batch.length > 0 && !stopped.aborted) options.onEvents(batch);
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
      const response = await fetch(`${addressPath(options.addressId)}/events/stream?after=${after}`, {
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
