// The inspector: asks for a credential when it has none, then shows the address and its
// events, live from the durable stream, with a detail view, filters and the actions that the
// token allows (none with a view token).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { AddressHeader } from './address-header';
import { ackEvent, ApiError, deleteAddress, getAddress } from './api';
import { forgetCredentials, loadCredentials, saveCredentials, takeFragmentCredentials } from './credentials';
import { EventDetail } from './event-detail';
import { EventList } from './event-list';
import { visible } from './format';
import { followEvents, type StreamState } from './stream';
import { TokenForm } from './token-form';
import { isViewToken, type Address, type Credentials, type RoostEvent } from './types';

export function App({ addressId }: { addressId: string }) {
  const [credentials, setCredentials] = useState<Credentials | undefined>(
    () => takeFragmentCredentials(addressId) ?? loadCredentials(addressId),
  );
  const [problem, setProblem] = useState<string | undefined>();
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
function matches(event: RoostEvent, needle: string): boolean {
  let text = searchText.get(event);
  if (text === undefined) {
    text = JSON.stringify(event).toLowerCase();
    searchText.set(event, text);
  }
  return text.includes(needle);
}

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
  const [search, setSearch] = useState('');
  const [notice, setNotice] = useState<string | undefined>();

  const put = (changed: RoostEvent[]) =>
    setEvents((previous) => {
      const next = new Map(previous);
      for (const event of changed) next.set(event.sequence, event);
      return next;
    });

  useEffect(() => {
    let active = true;
    const refused = (error: unknown) => {
      if (!active || !(error instanceof ApiError)) return;
      if (error.status === 401) onForget('That token is not valid for this address.');
      else if (error.status === 404) setEnded('This return address does not exist: it was deleted or has expired.');
      else setNotice(error.message);
    };
    getAddress(addressId, token).then((found) => active && setAddress(found), refused);
    const stop = followEvents({
      addressId,
      token,
      onEvents: put,
      onState(next) {
        setState(next);
        if (next === 'unauthorized') onForget('That token may not read this address.');
        if (next === 'gone') setEnded((said) => said ?? 'This return address is gone: it was deleted or has expired.');
      },
    });
    return () => {
      active = false;
      stop();
    };
  }, [addressId, token]);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') setSelected(undefined);
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  const newestFirst = useMemo(() => [...events.values()].sort((a, b) => b.sequence - a.sequence), [events]);
  const types = useMemo(() => [...new Set(newestFirst.map((event) => event.type))].sort(), [newestFirst]);
  const needle = search.trim().toLowerCase();
  const shown = newestFirst.filter(
    (event) => (typeFilter === '' || event.type === typeFilter) && (needle === '' || matches(event, needle)),
  );
  const current = selected === undefined ? undefined : events.get(selected);

  const report = (error: unknown) => setNotice(error instanceof Error ? error.message : String(error));
  const ack = async (event: RoostEvent) => {
    try {
      put([await ackEvent(addressId, event.id, token)]);
    } catch (error) {
      report(error);
    }
  };
  const ackUpTo = async (last: RoostEvent) => {
    const pending = [...events.values()]
      .filter((event) => event.sequence <= last.sequence && !event.acknowledged_at)
      .sort((a, b) => a.sequence - b.sequence);
    try {
      for (const event of pending) put([await ackEvent(addressId, event.id, token)]);
      setNotice(`Acknowledged ${pending.length} event${pending.length === 1 ? '' : 's'} up to #${last.sequence}.`);
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
          <div class="filters">
            <label>
              Type{' '}
              <select value={typeFilter} onChange={(event) => setTypeFilter(event.currentTarget.value)}>
                <option value="">all types</option>
                {types.map((type) => (
                  <option key={type} value={type}>
                    {visible(type, 60)}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Search{' '}
              <input
                type="search"
                value={search}
                placeholder="in loaded events"
                onInput={(event) => setSearch(event.currentTarget.value)}
              />
            </label>
            <span class="muted count">
              {shown.length} of {events.size}
            </span>
          </div>
          <EventList events={shown} selected={selected} onSelect={setSelected} />
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
              onClose={() => setSelected(undefined)}
            />
          ) : (
            <p class="muted placeholder">Choose an event to see it in full.</p>
          )}
        </section>
      </div>
    </main>
  );
}
