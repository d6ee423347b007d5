// What an address with no events yet shows: how to send it a first one, over HTTP (a curl
// to the inbox URL, or to a placeholder and where to find the URL) and by email.
import { CopyButton } from './copy-button';
import { scrollable, shellQuote } from './format';
import type { Address } from './types';

const FIRST_EVENT = JSON.stringify({ type: 'hello', data: { message: 'my first event' } });

export function EmptyState({ address, inboxUrl }: { address?: Address; inboxUrl?: string }) {
  const curl = `curl -sS -X POST ${inboxUrl ? shellQuote(inboxUrl) : '"$INBOX_URL"'} \\\n  -H 'content-type: application/json' \\\n  --data-binary ${shellQuote(FIRST_EVENT)}`;
  return (
    <div class="empty-state" data-empty="true">
      <h2>No events yet</h2>
      <p>Send this address its first event. Over HTTP, from a terminal:</p>
      <pre class="mono" {...scrollable('A first event, as a curl command')}>
        {curl}
      </pre>
      <CopyButton text={curl} label="Copy the command" />
      {!inboxUrl && (
        <p class="muted">
          Set <code>INBOX_URL</code> first: it is <code>endpoints.inbox_url</code> in the response that created this
          address (the agent that created it has it, often in <code>roost.json</code>). It is a secret and this page was
          not given it; open the page with <code>#token=…&amp;inbox=…</code> or paste the whole creation response to see
          it here.
        </p>
      )}
      {address && (
        <p>
          Or send an email to <span class="mono wrap">{address.email}</span> <CopyButton text={address.email} />
        </p>
      )}
      <p class="muted">
        Each event appears here as it arrives, without a reload: newest first, with its type, source and time. Select
        one to see it in full.
      </p>
    </div>
  );
}
