// The inspector: asks for a credential when it has none, then shows the address and its
// events, live from the durable stream, with a detail view, filters and the actions that the
// token allows (none with a view token).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { AddressHeader } from './address-header';
import { CallbackPanel } from './callbacks';
import {
  ackEvent,
  ackUpTo as ackRun,
  ApiError,
  deleteAddress,
  getAddress,
  isFiltered,
  listEvents,
  type ReadFilter,
} from './api';
import { forgetCredentials, loadCredentials, saveCredentials, takeFragmentCredentials } from './credentials';
import { EventDetail } from './event-detail';
import { EventList } from './event-list';
import { EmptyState } from './empty-state';
import { plural } from './format';
import { followEvents, type Acknowledgement, type StreamState } from './stream';
import { TokenForm } from './token-form';
import { isViewToken, type Address, type Credentials, type RoostEvent } from './types';

export function App({ addressId }: { addressId: string }) {
  const [fragment] = useState(() => takeFragmentCredentials(addressId));
  const [credentials, setCredentials] = useState<Credentials | undefined>(() =>
    fragment && 'credentials' in fragment ? fragment.credentials : fragment ? undefined : loadCredentials(addressId),
  );
  const [problem, setProblem] = useState<string | undefined>(
    fragment && 'problem' in fragment ? fragment.problem : undefined,
  );
  const forget = (why?: string) => {
    forgetCredentials(addressId);
    setProblem(why);
    setCredentials(undefined);
  };
  if (!credentials) {
    return (
      <TokenForm
        addressId={addressId}
        problem={problem}
        onCredentials={(given) => {
          saveCredentials(addressId, given);
          setCredentials(given);
        }}
      />
    );
  }
  return <Inspector key={credentials.token} addressId={addressId} credentials={credentials} onForget={forget} />;
}

const searchText = new WeakMap<RoostEvent, string>();
interface ServerFilterProps {
  name: 'type' | 'source';
  label: string;
  placeholder: string;
  /** What is typed in the box. */
  text: string;
  /** The values the loaded events have, offered as the box is typed into. */
  offered: string[];
  onText: (text: string) => void;
  /** The filter the API applies, set on Enter or on leaving the box. */
  onApply: (value: string) => void;
}

/** One of the filters the API applies (docs/api.md §4.3), with the values seen offered. */
function ServerFilter({ name, label, placeholder, text, offered, onText, onApply }: ServerFilterProps) {
  const list = `filter-${name}s`;
  return (
    <>
      <label>
        {label}{' '}
        <input
          type="search"
          name={name}
          list={list}
          value={text}
          placeholder={placeholder}
          onInput={(event) => onText(event.currentTarget.value)}
          onChange={(event) => onApply(event.currentTarget.value.trim())}
        />
      </label>
      <datalist id={list}>
        {offered.map((value) => (
          <option key={value} value={value} />
        ))}
      </datalist>
    </>
  );
}

function matches(event: RoostEvent, needle: string): boolean {
  let text = searchText.get(event);
  if (text === undefined) {
    text = JSON.stringify(event).toLowerCase();
    searchText.set(event, text);
  }
  return text.includes(needle);
}

/** The events as JSON lines, one event a line, in the order shown. */
function exportJsonLines(events: RoostEvent[], addressId: string): void {
  const blob = new Blob(
    events.map((event) => `${JSON.stringify(event)}\n`),
    { type: 'application/x-ndjson' },
  );
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `${addressId}-events.jsonl`;
  link.click();
  window.setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

/** Narrow screens show the detail as a sheet over the list (styles.css, the same width). */
const narrow = () => window.matchMedia('(max-width: 760px)').matches;

interface InspectorProps {
  addressId: string;
  credentials: Credentials;
  onForget: (why?: string) => void;
}

function Inspector({ addressId, credentials, onForget }: InspectorProps) {
  const { token, inboxUrl } = credentials;
  const readOnly = isViewToken(token);
  const [address, setAddress] = useState<Address | undefined>();
  const [ended, setEnded] = useState<string | undefined>();
  const [state, setState] = useState<StreamState>('connecting');
  const [events, setEvents] = useState<ReadonlyMap<number, RoostEvent>>(new Map());
  const [selected, setSelected] = useState<number | undefined>();
  const [typeFilter, setTypeFilter] = useState('');
  const [sourceFilter, setSourceFilter] = useState('');
  // What is typed in the type and source boxes, applied on Enter (or leaving the box): a
  // render while typing (events arriving) must not put back the applied value.
  const [typeText, setTypeText] = useState('');
  const [sourceText, setSourceText] = useState('');
  const [search, setSearch] = useState('');
  const [callbackFilter, setCallbackFilter] = useState('');
  // Where a filtered read stopped before the end (the server's bounded scan, docs/api.md §4.3).
  const [more, setMore] = useState<{ cursor: number; upTo: number } | undefined>();
  const [loadingMore, setLoadingMore] = useState(false);
  // Counts the lists read: a "load more" answered after the filter changed is dropped.
  const generation = useRef(0);
  // Types and sources seen under any filter, offered in the filter boxes.
  const [seen, setSeen] = useState<{ types: Set<string>; sources: Set<string> }>(() => ({
    types: new Set(),
    sources: new Set(),
  }));
  const [notice, setNotice] = useState<string | undefined>();
  // The row to give focus back to when the detail closes.
  const returnTo = useRef<number | undefined>(undefined);

  const put = (changed: RoostEvent[]) => {
    setEvents((previous) => {
      const next = new Map(previous);
      for (const event of changed) next.set(event.sequence, event);
      return next;
    });
    setSeen((previous) =>
      changed.every((event) => previous.types.has(event.type) && previous.sources.has(event.source))
        ? previous
        : {
            types: new Set([...previous.types, ...changed.map((event) => event.type)]),
            sources: new Set([...previous.sources, ...changed.map((event) => event.source)]),
          },
    );
  };
  const acknowledged = (acks: Acknowledgement[]) =>
    setEvents((previous) => {
      let next: Map<number, RoostEvent> | undefined;
      for (const ack of acks) {
        const event = previous.get(ack.sequence);
        if (!event || event.id !== ack.id || event.acknowledged_at) continue;
        next ??= new Map(previous);
        next.set(ack.sequence, { ...event, acknowledged_at: ack.acknowledged_at });
      }
      return next ?? previous;
    });

  const refusedBy = (active: () => boolean) => (error: unknown) => {
    if (!active() || !(error instanceof ApiError)) return;
    if (error.status === 401) onForget('That token is not valid for this address.');
    else if (error.status === 404) setEnded('This return address does not exist: it was deleted or has expired.');
    else setNotice(error.message);
  };

  useEffect(() => {
    let active = true;
    getAddress(addressId, token).then(
      (found) => active && setAddress(found),
      refusedBy(() => active),
    );
    return () => {
      active = false;
    };
  }, [addressId, token]);

  // Type, source and callback are the API's filters: the server finds matching events that
  // this page never loaded. A filter's events replace the list, and the stream follows it.
  const filter: ReadFilter = { type: typeFilter, source: sourceFilter, callback: callbackFilter };
  const serverFiltered = isFiltered(filter);
  const filterKey = JSON.stringify(filter);
  const follow = (after: number, active: () => boolean) =>
    followEvents({
      addressId,
      token,
      filter: serverFiltered ? filter : undefined,
      after,
      onEvents: (arrived) => active() && put(arrived),
      onAcks: (acks) => active() && acknowledged(acks),
      onState(next) {
        if (!active()) return;
        setState(next);
        if (next === 'unauthorized') onForget('That token may not read this address (revoked, or not for it).');
        if (next === 'gone') setEnded((said) => said ?? 'This return address is gone: it was deleted or has expired.');
      },
    });

  /** Reads filtered pages from `after` until `upTo`, or until the server's scan stops. */
  const readFiltered = async (after: number, upTo: number, active: () => boolean) => {
    for (;;) {
      const page = await listEvents(addressId, token, after, filter);
      if (!active()) return;
      put(page.events);
      after = page.next_cursor;
      if (!page.has_more || after >= upTo) return setMore(undefined);
      if (page.scan_limited) return setMore({ cursor: after, upTo });
    }
  };

  useEffect(() => {
    const mine = ++generation.current;
    const active = () => generation.current === mine;
    let stop: (() => void) | undefined;
    setEvents(new Map());
    setMore(undefined);
    setSelected(undefined);
    if (!serverFiltered) stop = follow(0, active);
    else {
      setState('connecting');
      // The first page says how far the queue goes: pages read up to there, the stream after it.
      listEvents(addressId, token, 0, filter).then((first) => {
        if (!active()) return;
        put(first.events);
        stop = follow(first.latest_sequence, active);
        const upTo = first.latest_sequence;
        if (!first.has_more || first.next_cursor >= upTo) setMore(undefined);
        else if (first.scan_limited) setMore({ cursor: first.next_cursor, upTo });
        else readFiltered(first.next_cursor, upTo, active).catch(refusedBy(active));
      }, refusedBy(active));
    }
    return () => {
      generation.current++;
      stop?.();
    };
  }, [addressId, token, filterKey]);

  const loadMore = () => {
    if (!more || loadingMore) return;
    const mine = generation.current;
    const active = () => generation.current === mine;
    setLoadingMore(true);
    readFiltered(more.cursor, more.upTo, active)
      .catch(refusedBy(active))
      .finally(() => setLoadingMore(false));
  };

  const open = (sequence: number) => {
    returnTo.current = sequence;
    setSelected(sequence);
  };
  const close = () => setSelected(undefined);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') close();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  // On a phone the detail is a sheet over the page: what it covers leaves the tab order and
  // stops scrolling. Closing gives focus back to the row that opened the detail (and so
  // scrolls it into view).
  useEffect(() => {
    const sheet = selected !== undefined && narrow();
    document.documentElement.classList.toggle('sheet-open', sheet);
    for (const covered of document.querySelectorAll('main.inspector > header, .list-pane'))
      covered.toggleAttribute('inert', sheet);
    if (selected !== undefined || returnTo.current === undefined) return;
    document.querySelector<HTMLButtonElement>(`[data-sequence="${returnTo.current}"] button`)?.focus();
    returnTo.current = undefined;
  }, [selected]);

  const newestFirst = useMemo(() => [...events.values()].sort((a, b) => b.sequence - a.sequence), [events]);
  const types = useMemo(() => [...seen.types].sort(), [seen]);
  const sources = useMemo(() => [...seen.sources].sort(), [seen]);
  const needle = search.trim().toLowerCase();
  const filtered = serverFiltered || needle !== '';
  // Callback events are counted so that the callbacks are read again when one arrives.
  const callbackEvents = useMemo(
    () => newestFirst.filter((event) => event.source === 'callback').length,
    [newestFirst],
  );
  const shown = newestFirst.filter((event) => needle === '' || matches(event, needle));
  const current = selected === undefined ? undefined : events.get(selected);

  const report = (error: unknown) => setNotice(error instanceof Error ? error.message : String(error));
  const ack = async (event: RoostEvent) => {
    try {
      put([await ackEvent(addressId, event.id, token)]);
    } catch (error) {
      report(error);
    }
  };
  // One call for the whole run, the events a filter hides included; the rows turn
  // acknowledged from the stream's ack messages.
  const ackUpTo = async (last: RoostEvent) => {
    try {
      const count = await ackRun(addressId, last.sequence, token);
      setNotice(`Acknowledged ${plural(count, 'event')} up to #${last.sequence}.`);
    } catch (error) {
      report(error);
    }
  };
  const remove = async () => {
    try {
      await deleteAddress(addressId, token);
      forgetCredentials(addressId);
      setEnded('Deleted: the address, its events and its credentials are gone.');
    } catch (error) {
      report(error);
    }
  };

  if (ended) {
    return (
      <main class="ended">
        <h1>Roost inspector</h1>
        <p role="alert">{ended}</p>
      </main>
    );
  }
  return (
    <main class={`inspector${current ? ' has-detail' : ''}`} data-mode={readOnly ? 'view' : 'read'}>
      {address ? (
        <AddressHeader
          address={address}
          inboxUrl={inboxUrl}
          readOnly={readOnly}
          state={state}
          onDelete={remove}
          onForget={() => onForget()}
        />
      ) : (
        <p class="muted">Loading the address…</p>
      )}
      {notice && (
        <p class="notice" role="status">
          {notice}{' '}
          <button type="button" class="small" onClick={() => setNotice(undefined)}>
            Dismiss
          </button>
        </p>
      )}
      <div class="panes">
        <section class="list-pane" aria-label="Events">
          <CallbackPanel
            addressId={addressId}
            token={token}
            revision={callbackEvents}
            filter={callbackFilter}
            onFilter={setCallbackFilter}
          />
          {/* Kept while a changed filter's list is read again, so that the boxes stay as typed. */}
          {(events.size > 0 || serverFiltered || seen.types.size > 0) && (
            <div class="filters" role="search" aria-label="Filter the events">
              <ServerFilter
                name="type"
                label="Type"
                placeholder="all types (order.*)"
                text={typeText}
                offered={types}
                onText={setTypeText}
                onApply={setTypeFilter}
              />
              <ServerFilter
                name="source"
                label="Source"
                placeholder="all sources"
                text={sourceText}
                offered={sources}
                onText={setSourceText}
                onApply={setSourceFilter}
              />
              <label>
                Text{' '}
                <input
                  type="search"
                  name="text"
                  value={search}
                  placeholder="in the loaded events"
                  onInput={(event) => setSearch(event.currentTarget.value)}
                />
              </label>
              <span class="muted count" role="status">
                {shown.length} of {plural(events.size, serverFiltered ? 'matching event' : 'event')}
                {more ? ' so far' : ''}
              </span>
              <button
                type="button"
                class="small"
                data-action="export"
                disabled={shown.length === 0}
                onClick={() => exportJsonLines(shown, addressId)}
              >
                Export shown (JSON lines)
              </button>
            </div>
          )}
          {events.size === 0 && !serverFiltered ? (
            state === 'connecting' ? (
              <p class="muted">Loading the events…</p>
            ) : (
              <EmptyState address={address} inboxUrl={inboxUrl} />
            )
          ) : shown.length === 0 && filtered ? (
            <p class="empty muted">
              {serverFiltered && events.size === 0
                ? more
                  ? 'No event matches these filters in the part of the queue searched so far.'
                  : 'No event matches these filters.'
                : `None of the ${plural(events.size, 'loaded event')} matches these filters.`}
            </p>
          ) : (
            <EventList events={shown} selected={selected} onSelect={open} />
          )}
          {more && (
            <p class="scan-limited muted" role="status">
              The server stopped searching at #{more.cursor} of #{more.upTo} (it looks at a bounded number of events per
              request).{' '}
              <button type="button" class="small" data-action="load-more" disabled={loadingMore} onClick={loadMore}>
                {loadingMore ? 'Searching…' : 'Load more'}
              </button>
            </p>
          )}
        </section>
        <section class="detail-pane" aria-label="Event detail">
          {current ? (
            <EventDetail
              key={current.sequence}
              event={current}
              readOnly={readOnly}
              inboxUrl={inboxUrl}
              onAck={ack}
              onAckUpTo={ackUpTo}
              onClose={close}
            />
          ) : (
            <p class="muted placeholder">Choose an event to see it in full.</p>
          )}
        </section>
      </div>
    </main>
  );
}
