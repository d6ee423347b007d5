// Where the page's credential comes from and where it is kept: the URL fragment (never sent
// to the server; removed from the address bar once read) or the form, kept in sessionStorage
// only, per address, so that it dies with the tab.
import type { Credentials } from './types';

const key = (addressId: string) => `roost-inspector:${addressId}`;

/** What a link's fragment gave: credentials, a reason it could not, or nothing at all. */
export type FragmentResult = { credentials: Credentials } | { problem: string } | undefined;

// The shape of the tokens this service issues: `{product}_read_…` or `{product}_view_…`.
const TOKEN_SHAPE = /^[a-z0-9]+_(?:read|view)_[A-Za-z0-9_-]{43,}$/;

/**
 * Reads `#token=…&inbox=…`, stores it, and wipes the fragment from the address bar and
 * history (a malformed one too: it may still hold a secret).
 */
export function takeFragmentCredentials(addressId: string): FragmentResult {
  if (location.hash.length < 2) return undefined;
  const params = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, '', location.pathname + location.search);
  const token = params.get('token')?.trim();
  if (token === undefined)
    return { problem: 'The link has a fragment but no token in it: it should end in #token=roost_read_… .' };
  if (token === '') return { problem: "The link's #token= is empty: paste the token below." };
  if (!TOKEN_SHAPE.test(token))
    return {
      problem:
        'The token in the link is malformed (cut short or changed on the way?): a token reads roost_read_… or roost_view_… followed by 43 characters.',
    };
  const inbox = params.get('inbox')?.trim();
  if (inbox && !/^https?:\/\/[^\s]+$/.test(inbox))
    return { problem: 'The inbox URL in the link is malformed: it should start with https://.' };
  const credentials: Credentials = { token, inboxUrl: inbox || undefined };
  saveCredentials(addressId, credentials);
  return { credentials };
}

export function loadCredentials(addressId: string): Credentials | undefined {
  try {
    const stored = JSON.parse(sessionStorage.getItem(key(addressId)) ?? 'null') as Credentials | null;
    return stored && typeof stored.token === 'string' ? stored : undefined;
  } catch {
    return undefined;
  }
}

export function saveCredentials(addressId: string, credentials: Credentials): void {
  sessionStorage.setItem(key(addressId), JSON.stringify(credentials));
}

export function forgetCredentials(addressId: string): void {
  sessionStorage.removeItem(key(addressId));
}

/**
 * What the form accepts: a bare token, or a whole creation response (which also brings the
 * inbox URL). Undefined when neither is recognisable.
 */
export function parseCredentialInput(addressId: string, input: string): Credentials | undefined {
  const text = input.trim();
  if (text.startsWith('{')) {
    try {
      const response = JSON.parse(text) as {
        address?: { id?: unknown };
        credentials?: { read_token?: unknown };
        endpoints?: { inbox_url?: unknown };
      };
      const token = response.credentials?.read_token;
      if (typeof token !== 'string' || (response.address?.id !== undefined && response.address.id !== addressId))
        return undefined;
      const inbox = response.endpoints?.inbox_url;
      return { token, inboxUrl: typeof inbox === 'string' ? inbox : undefined };
    } catch {
      return undefined;
    }
  }
  return /^[\x21-\x7e]+$/.test(text) ? { token: text } : undefined;
}
