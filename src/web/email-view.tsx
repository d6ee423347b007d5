// An email.received event: who, to whom, what, the sender's authentication verdict, the
// text, the HTML in a sandboxed frame, and the attachments (listed, never opened).
import { useMemo } from 'preact/hooks';
import { formatBytes, scrollable, visible } from './format';
import { sanitizeEmailHtml } from './sanitize-html';

interface MailAddress {
  address?: string;
  name?: string;
}

export interface EmailData {
  from?: MailAddress | null;
  to?: MailAddress[];
  cc?: MailAddress[];
  subject?: string | null;
  date?: string | null;
  text?: string | null;
  html?: string | null;
  authentication?: { verdict?: string; note?: string };
  attachments?: Array<{ filename?: string | null; content_type?: string; size?: number; sha256?: string }>;
}

export function asEmail(data: unknown, source: string): EmailData | undefined {
  if (source !== 'email' || !data || typeof data !== 'object') return undefined;
  return data;
}

/**
 * The HTML reaches the frame sanitized (sanitize-html.ts: nothing that loads or navigates);
 * the frame runs no script, submits no form, opens nothing and has an origin of its own
 * (sandbox with no allowances); this policy, and the page's that it inherits, load nothing
 * from elsewhere should anything get through.
 */
const FRAME_POLICY =
  '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; style-src \'unsafe-inline\'">';

function person(who: MailAddress | null | undefined): string {
  if (!who) return '';
  const name = typeof who.name === 'string' ? who.name : '';
  const address = typeof who.address === 'string' ? who.address : '';
  return visible(name && address ? `${name} <${address}>` : name || address);
}

const people = (list: MailAddress[] | undefined) => (Array.isArray(list) ? list.map(person).join(', ') : '');

export function EmailView({ mail }: { mail: EmailData }) {
  const verdict = typeof mail.authentication?.verdict === 'string' ? mail.authentication.verdict : 'unknown';
  const attachments = Array.isArray(mail.attachments) ? mail.attachments : [];
  const html = useMemo(
    () => (typeof mail.html === 'string' && mail.html !== '' ? sanitizeEmailHtml(mail.html) : undefined),
    [mail.html],
  );
  return (
    <section class="email" aria-label="Email">
      <dl class="fields">
        <dt>From</dt>
        <dd>
          {person(mail.from)}{' '}
          <span class={`badge verdict-${verdict === 'pass' || verdict === 'fail' ? verdict : 'none'}`}>
            sender {visible(verdict, 20)}
          </span>
        </dd>
        <dt>To</dt>
        <dd>{people(mail.to)}</dd>
        {Array.isArray(mail.cc) && mail.cc.length > 0 && (
          <>
            <dt>Cc</dt>
            <dd>{people(mail.cc)}</dd>
          </>
        )}
        <dt>Subject</dt>
        <dd class="subject">{visible(String(mail.subject ?? ''), 1000)}</dd>
        {mail.date && (
          <>
            <dt>Date</dt>
            <dd>{visible(String(mail.date))}</dd>
          </>
        )}
      </dl>
      {typeof mail.authentication?.note === 'string' && <p class="muted">{mail.authentication.note}</p>}
      {html !== undefined && (
        <>
          <h3>HTML (sanitized and sandboxed: no scripts, no forms, no remote content, links as text)</h3>
          <iframe
            class="email-html"
            title="The message's HTML, sandboxed"
            sandbox=""
            referrerpolicy="no-referrer"
            srcdoc={FRAME_POLICY + html}
          />
        </>
      )}
      {typeof mail.text === 'string' && mail.text !== '' && (
        <>
          <h3>Text</h3>
          <pre class="text-body" {...scrollable("The message's text")}>
            {mail.text}
          </pre>
        </>
      )}
      <h3>Attachments ({attachments.length})</h3>
      {attachments.length > 0 && (
        <table class="attachments">
          <thead>
            <tr>
              <th>Name</th>
              <th>Type</th>
              <th>Size</th>
              <th>SHA-256</th>
            </tr>
          </thead>
          <tbody>
            {attachments.map((file, index) => (
              <tr key={index}>
                <td>{visible(String(file.filename ?? '(unnamed)'))}</td>
                <td>{visible(String(file.content_type ?? ''))}</td>
                <td>{typeof file.size === 'number' ? formatBytes(file.size) : ''}</td>
                <td class="mono wrap">{String(file.sha256 ?? '')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
