// A raw capture (?raw=1): the request line (method, the inbox path with its secret hidden,
// the query), the headers as a table, the body as read, and the exact bytes in hex, the
// ones a sender's HMAC signature covers. Bytes that are not text are shown only in hex.
import { useState } from 'preact/hooks';
import { decodeBase64, formatBytes, hexDump, scrollable, visible, type RawCapture } from './format';
import { JsonView } from './json-view';

const HEX_FIRST_BYTES = 4096;

export function RawView({ raw, addressId }: { raw: RawCapture; addressId: string }) {
  const [allHex, setAllHex] = useState(false);
  const bytes = decodeBase64(raw.body_base64);
  const method = typeof raw.method === 'string' ? raw.method : undefined;
  const query = typeof raw.query === 'string' ? raw.query : undefined;
  return (
    <section class="raw" aria-label="Raw request">
      <h3>Request</h3>
      {method === undefined ? (
        <p class="muted">The method and query of this capture were not recorded.</p>
      ) : (
        <p class="mono wrap request-line" data-request-line="">
          <strong>{visible(method, 20)}</strong> /api/v1/inbox/{visible(addressId, 60)}/••••••••
          {query ? `?${visible(query, 2000)}` : ''}
        </p>
      )}
      <h3>Headers</h3>
      <table class="headers">
        <tbody>
          {Object.entries(raw.headers).map(([name, value]) => (
            <tr key={name}>
              <th scope="row">{visible(name, 200)}</th>
              <td>{visible(String(value), 2000)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Body ({formatBytes(bytes.length)})</h3>
      {raw.body !== null && typeof raw.body === 'object' ? (
        <JsonView value={raw.body} />
      ) : typeof raw.body === 'string' ? (
        <pre class="text-body" {...scrollable('The body as text')}>
          {raw.body}
        </pre>
      ) : bytes.length === 0 ? (
        <p class="muted">Empty.</p>
      ) : (
        <p class="binary-body" data-binary="">
          Binary: {bytes.length.toLocaleString('en')} bytes that are not text
          {raw.content_type ? ` (${visible(raw.content_type, 100)})` : ''}, shown in hex below.
        </p>
      )}
      <h3>Exact bytes (hex)</h3>
      <pre class="hex" {...scrollable('The exact bytes in hex')}>
        {hexDump(bytes, allHex ? bytes.length : HEX_FIRST_BYTES)}
      </pre>
      {!allHex && bytes.length > HEX_FIRST_BYTES && (
        <button type="button" class="small" onClick={() => setAllHex(true)}>
          Show all {bytes.length.toLocaleString('en')} bytes
        </button>
      )}
    </section>
  );
}
