// The address's callbacks (docs/api.md §3.6): status, key, label, a person's question and
// answer, each with a button that narrows the event list to its deliveries. Read again
// whenever a callback event arrives or a waiting one settles; hidden while there are none.
import { useEffect, useState } from 'preact/hooks';
import { addressPath, apiCall } from './api';
import { visible } from './format';

export interface CallbackSummary {
  id: string;
  key: string | null;
  label: string | null;
  status: string;
  deliveries: number;
  human: { question: string; answer: string | null; comment: string | null } | null;
}

/** Waiting callbacks the page holds a wait on at once. */
const MAX_WATCHED = 50;

interface Props {
  addressId: string;
  token: string;
  /** Changes when a callback event arrives: the list is read again. */
  revision: number;
  filter: string;
  onFilter: (callbackId: string) => void;
}

export function CallbackPanel({ addressId, token, revision, filter, onFilter }: Props) {
  const [callbacks, setCallbacks] = useState<CallbackSummary[]>([]);
  useEffect(() => {
    const stop = new AbortController();
    const path = `${addressPath(addressId)}/callbacks`;
    const list = (query = '') =>
      apiCall<{ callbacks: CallbackSummary[] }>(`${path}${query}`, token, { signal: stop.signal });
    // Read them all, then hold a wait on the waiting ones (the first 50: a URL stays short)
    // until one of them settles, and read again: a completion lands just after its event.
    void (async () => {
      for (;;) {
        const found = (await list()).callbacks;
        if (stop.signal.aborted) return;
        setCallbacks(found);
        const waiting = found.filter((callback) => callback.status === 'waiting').slice(0, MAX_WATCHED);
        if (waiting.length === 0) return;
        await list(`?ids=${waiting.map((callback) => encodeURIComponent(callback.id)).join(',')}&wait=25&mode=any`);
      }
    })().catch(() => undefined); // the event list says what is wrong with the token or the address
    return () => stop.abort();
  }, [addressId, token, revision]);
  if (callbacks.length === 0) return null;
  return (
    <details class="callbacks" open>
      <summary>Callbacks ({callbacks.length})</summary>
      <ul>
        {callbacks.map((callback) => (
          <li key={callback.id} data-callback={callback.id}>
            <span class={`status status-${callback.status}`}>{callback.status}</span>{' '}
            <strong>{visible(callback.key ?? callback.id, 80)}</strong>
            {callback.label && <span class="muted"> {visible(callback.label, 100)}</span>}
            {callback.human && (
              <span class="question">
                {' '}
                — {visible(callback.human.question, 200)}
                {callback.human.answer !== null && (
                  <>
                    {' '}
                    → <strong class="answer">{visible(callback.human.answer, 100)}</strong>
                    {callback.human.comment && <span class="muted"> ({visible(callback.human.comment, 200)})</span>}
                  </>
                )}
              </span>
            )}{' '}
            <button
              type="button"
              class="small"
              aria-pressed={filter === callback.id}
              onClick={() => onFilter(filter === callback.id ? '' : callback.id)}
            >
              {filter === callback.id ? 'Show all events' : `Its events (${callback.deliveries})`}
            </button>
          </li>
        ))}
      </ul>
    </details>
  );
}
