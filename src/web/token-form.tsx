// Asks for a credential when the page has none: a token, or the whole creation response.
import { useState } from 'preact/hooks';
import { parseCredentialInput } from './credentials';
import type { Credentials } from './types';

interface Props {
  addressId: string;
  problem?: string;
  onCredentials: (credentials: Credentials) => void;
}

export function TokenForm({ addressId, problem, onCredentials }: Props) {
  const [input, setInput] = useState('');
  const [error, setError] = useState<string | undefined>(problem);
  const submit = (event: Event) => {
    event.preventDefault();
    const credentials = parseCredentialInput(addressId, input);
    if (credentials) onCredentials(credentials);
    else setError('Paste a token (roost_read_… or roost_view_…) or the creation response of this address.');
  };
  return (
    <main>
      <form class="token-form" onSubmit={submit}>
        <h1>Roost inspector</h1>
        <p>
          Address <span class="mono">{addressId}</span>. Paste its read token, a view token, or the whole creation
          response. It stays in this tab only.
        </p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <label for="credential">Token or creation response</label>
        <textarea
          id="credential"
          name="credential"
          rows={4}
          autocomplete="off"
          spellcheck={false}
          value={input}
          onInput={(event) => setInput(event.currentTarget.value)}
        />
        <button type="submit">Open</button>
      </form>
    </main>
  );
}
