// Reading a saved creation response back into what a client needs. The spec (§1) tells the
// caller to persist the whole creation response; this turns it into base URL, address id
// and read token, so that a later run needs nothing else.
import type { CreateAddressResponse } from '../contract/schemas.js';
import { RoostError } from './errors.js';

export interface SavedCredentials {
  baseUrl: string;
  addressId: string;
  readToken: string;
  inboxUrl?: string;
}

// endpoints.events_url = {base_url}/api/v1/addresses/{id}/events (docs/api.md §2); the base
// may carry a path prefix behind a proxy, so cut the known suffix rather than keep the origin.
const EVENTS_SUFFIX = /\/api\/v1\/addresses\/[^/]+\/events\/?$/;

/** Base URL, address id and read token from a creation response (object or JSON text). */
export function parseCredentials(saved: CreateAddressResponse | string): SavedCredentials {
  let value: unknown = saved;
  if (typeof saved === 'string') {
    try {
      value = JSON.parse(saved);
    } catch {
      throw new RoostError(
        'invalid_credentials',
        0,
        'The saved credentials are not JSON; expected the creation response of POST /api/v1/addresses.',
      );
    }
  }
  const response = value as Partial<CreateAddressResponse> | null;
  const addressId = response?.address?.id;
  const readToken = response?.credentials?.read_token;
  const eventsUrl = response?.endpoints?.events_url;
  if (typeof addressId !== 'string' || typeof readToken !== 'string' || typeof eventsUrl !== 'string') {
    throw new RoostError(
      'invalid_credentials',
      0,
      'The saved credentials lack address.id, credentials.read_token or endpoints.events_url; expected the whole creation response.',
    );
  }
  return {
    baseUrl: eventsUrl.replace(EVENTS_SUFFIX, ''),
    addressId,
    readToken,
    inboxUrl: response?.endpoints?.inbox_url,
  };
}
