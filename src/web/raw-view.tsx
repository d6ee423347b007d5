// A raw capture (?raw=1): the request headers as a table, the body as read, and the exact
// bytes in hex, the ones a sender's HMAC signature covers.
import { useState } from 'preact/hooks';
import { decodeBase64, formatBytes, hexDump, visible, type RawCapture } from './format';
import { JsonView } from './json-view';

const HEX_FIRST_BYTES = 4096;

export function RawView({ raw }: { raw: RawCapture }) {
  const [allHex, setAllHex] = useState(false);
  const bytes = decodeBase64(raw.body_base64);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  return (
    <section class="raw" aria-label="Raw request">
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
      ) : (
        <pre class="text-body">{text}</pre>
      )}
      <h3>Exact bytes (hex)</h3>
      <pre class="hex">{hexDump(bytes, allHex ? bytes.length : HEX_FIRST_BYTES)}</pre>
      {!allHex && bytes.length > HEX_FIRST_BYTES && (
        <button type="button" class="small" onClick={() => setAllHex(true)}>
          Show all {bytes.length} bytes
        </button>
      )}
    </section>
  );
}
