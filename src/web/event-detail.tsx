// One event in full: its fields, metadata and dedupe key; the email, raw request or JSON it
// carries; "copy as curl"; and, with a read token, acknowledging it or everything up to it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { CopyButton } from './copy-button';
import { asEmail, EmailView } from './email-view';
import { asRawCapture, curlCommand, eventSize, formatBytes, formatTime, scrollable, visible } from './format';
import { JsonView } from './json-view';
import { RawView } from './raw-view';
import type { RoostEvent } from './types';

interface Props {
  event: RoostEvent;
  readOnly: boolean;
  inboxUrl?: string;
  onAck: (event: RoostEvent) => Promise<void>;
  onAckUpTo: (event: RoostEvent) => Promise<void>;
  onClose: () => void;
}

export function EventDetail({ event, readOnly, inboxUrl, onAck, onAckUpTo, onClose }: Props) {
  const [busy, setBusy] = useState(false);
  const [showCurl, setShowCurl] = useState(false);
  const mail = asEmail(event.data, event.source);
  const raw = mail ? undefined : asRawCapture(event);
  const act = async (action: (event: RoostEvent) => Promise<void>) => {
    setBusy(true);
    try {
      await action(event);
    } finally {
      setBusy(false);
    }
  };
  const curl = mail ? undefined : curlCommand(event, inboxUrl);
  // Opening an event takes the keyboard (and a screen reader) to it; the app keys this
  // component by sequence, so this runs once per event opened.
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <article class="detail" aria-labelledby="detail-heading" data-detail-sequence={event.sequence}>
      <header class="detail-head">
        <h2 id="detail-heading" tabIndex={-1} ref={heading}>
          #{event.sequence} <span class="type">{visible(event.type, 80)}</span>
        </h2>
        <button type="button" class="small" onClick={onClose} aria-label="Close the event">
          Close
        </button>
      </header>
      <div class="actions">
        {!readOnly && (
          <>
            <button
              type="button"
              data-action="ack"
              disabled={busy || !!event.acknowledged_at}
              onClick={() => void act(onAck)}
            >
              {event.acknowledged_at ? 'Acknowledged' : 'Acknowledge'}
            </button>
            <button type="button" data-action="ack-up-to" disabled={busy} onClick={() => void act(onAckUpTo)}>
              Acknowledge everything up to #{event.sequence}
            </button>
          </>
        )}
        {curl && (
          <button type="button" data-action="curl" aria-expanded={showCurl} onClick={() => setShowCurl(!showCurl)}>
            Copy as curl
          </button>
        )}
      </div>
      {curl && showCurl && (
        <div class="curl">
          <pre class="mono" {...scrollable('The curl command')}>
            {curl}
          </pre>
          <CopyButton text={curl} />
          {!inboxUrl && <p class="muted">Set INBOX_URL to the inbox URL first (this page was not given it).</p>}
        </div>
      )}
      <dl class="fields">
        <dt>Id</dt>
        <dd class="mono">{event.id}</dd>
        <dt>Type</dt>
        <dd class="wrap">{visible(event.type, 500)}</dd>
        <dt>Source</dt>
        <dd>{visible(event.source, 500)}</dd>
        <dt>Received</dt>
        <dd>
          <time dateTime={event.created_at}>{formatTime(event.created_at)}</time>
        </dd>
        <dt>Acknowledged</dt>
        <dd>{event.acknowledged_at ? formatTime(event.acknowledged_at) : 'not yet'}</dd>
        <dt>Size</dt>
        <dd>{formatBytes(eventSize(event))}</dd>
        <dt>Dedupe key</dt>
        <dd class="mono wrap">{event.dedupe_key ? visible(event.dedupe_key, 300) : '—'}</dd>
      </dl>
      {event.metadata && Object.keys(event.metadata).length > 0 && (
        <>
          <h3>Metadata</h3>
          <table class="headers">
            <tbody>
              {Object.entries(event.metadata).map(([key, value]) => (
                <tr key={key}>
                  <th scope="row">{visible(key, 200)}</th>
                  <td>{visible(String(value), 2000)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      {mail && <EmailView mail={mail} />}
      {raw && <RawView raw={raw} addressId={event.address_id} />}
      <details class="data" open={!mail && !raw}>
        <summary>
          <h3>Data (JSON)</h3>
        </summary>
        <JsonView value={event.data} />
        <CopyButton text={JSON.stringify(event.data, null, 2)} label="Copy JSON" />
      </details>
    </article>
  );
}
