// Where the page's credential comes from and where it is kept: the URL fragment (never sent
// to the server; removed from the address bar once read) or the form, kept in sessionStorage
// only, per address, so that it dies with the tab.
import type { Credentials } from './types';

const key = (addressId: string) => `roost-inspector:${addressId}`;

/** Reads `#token=…&inbox=…`, stores it, and wipes the fragment from the address bar and history. */
export function takeFragmentCredentials(addressId: string): Credentials | undefined {
  if (location.hash.length < 2) return undefined;
  const params = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, '', location.pathname + location.search);
  const token = params.get('token')?.trim();
  if (!token) return undefined;
  const credentials: Credentials = { token, inboxUrl: params.get('inbox')?.trim() || undefined };
  saveCredentials(addressId, credentials);
  return credentials;
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
