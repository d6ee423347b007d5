// The address at the top of the page: name, email, inbox URL (masked until revealed),
// expiry, the stream's state, the kind of token in use, and deleting (confirmed first).
import { useState } from 'preact/hooks';
import { CopyButton } from './copy-button';
import { formatTime, visible } from './format';
import type { StreamState } from './stream';
import type { Address } from './types';

const STATE_TEXT: Record<StreamState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  gone: 'Address gone',
  unauthorized: 'Not authorised',
};

interface Props {
  address: Address;
  inboxUrl?: string;
  readOnly: boolean;
  state: StreamState;
  onDelete: () => Promise<void>;
  onForget: () => void;
}

/** The inbox URL with its secret hidden: anyone who sees it can deliver. */
function maskInbox(url: string): string {
  return url.replace(/\/[^/]+$/, '/••••••••••••');
}

export function AddressHeader({ address, inboxUrl, readOnly, state, onDelete, onForget }: Props) {
  const [reveal, setReveal] = useState(false);
  const [confirming, setConfirming] = useState(false);
  return (
    <header class="address">
      <div class="title-row">
        <h1>{visible(address.name, 100)}</h1>
        <span class={`state state-${state}`} role="status" data-state={state}>
          {STATE_TEXT[state]}
        </span>
        <span class="badge mode" data-mode={readOnly ? 'view' : 'read'}>
          {readOnly ? 'read-only (view token)' : 'read token'}
        </span>
      </div>
      <dl class="fields">
        <dt>Email</dt>
        <dd>
          <span class="mono wrap">{address.email}</span> <CopyButton text={address.email} />
        </dd>
        <dt>Inbox URL</dt>
        <dd>
          {inboxUrl ? (
            <>
              <span class="mono wrap" data-inbox={reveal ? 'revealed' : 'masked'}>
                {reveal ? inboxUrl : maskInbox(inboxUrl)}
              </span>{' '}
              <button type="button" class="small" aria-pressed={reveal} onClick={() => setReveal(!reveal)}>
                {reveal ? 'Hide' : 'Reveal'}
              </button>{' '}
              <CopyButton text={inboxUrl} />
            </>
          ) : (
            <span class="muted">not given to this page (paste the creation response to show it)</span>
          )}
        </dd>
        <dt>Expires</dt>
        <dd>
          {address.expiresAt ? <time dateTime={address.expiresAt}>{formatTime(address.expiresAt)}</time> : 'never'}
        </dd>
        {address.taskId !== undefined && (
          <>
            <dt>Task</dt>
            <dd>{visible(address.taskId, 200)}</dd>
          </>
        )}
      </dl>
      <div class="actions">
        <button type="button" class="small" onClick={onForget}>
          Forget token
        </button>
        {!readOnly &&
          (confirming ? (
            <span class="confirm" role="group" aria-label="Confirm deletion">
              Delete this address and all its events now?{' '}
              <button type="button" class="danger" data-action="delete-confirm" onClick={() => void onDelete()}>
                Delete permanently
              </button>{' '}
              <button type="button" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </span>
          ) : (
            <button type="button" class="danger" data-action="delete" onClick={() => setConfirming(true)}>
              Delete address…
            </button>
          ))}
      </div>
    </header>
  );
}
