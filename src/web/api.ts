// The REST calls the page makes, with the token in the Authorization header (never in a URL).
// Failures come back as ApiError carrying the server's Error shape.
import type { Address, RoostEvent } from './types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function addressPath(addressId: string): string {
  return `/api/v1/addresses/${encodeURIComponent(addressId)}`;
}

export async function apiCall<T>(path: string, token: string, init: RequestInit = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      ...init,
      cache: 'no-store',
      headers: {
        accept: 'application/json',
        authorization: `Bearer ${token}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The service cannot be reached.');
  }
  if (response.status === 204) return undefined as T;
  const body = (await response.json().catch(() => undefined)) as
    (T & { error?: { code?: string; message?: string } }) | undefined;
  if (!response.ok) {
    const error = body?.error;
    throw new ApiError(
      response.status,
      typeof error?.code === 'string' ? error.code : 'http_error',
      typeof error?.message === 'string' ? error.message : `The service answered ${response.status}.`,
    );
  }
  return body as T;
}

export async function getAddress(addressId: string, token: string): Promise<Address> {
  return (await apiCall<{ address: Address }>(addressPath(addressId), token)).address;
}

export async function ackEvent(addressId: string, eventId: string, token: string): Promise<RoostEvent> {
  const path = `${addressPath(addressId)}/events/${encodeURIComponent(eventId)}/ack`;
  return (await apiCall<{ event: RoostEvent }>(path, token, { method: 'POST' })).event;
}

/** Acknowledges every event up to a sequence, loaded or not (docs/api.md §4.2); how many were new. */
export async function ackUpTo(addressId: string, upToSequence: number, token: string): Promise<number> {
  const path = `${addressPath(addressId)}/events/ack`;
  const body = JSON.stringify({ up_to_sequence: upToSequence });
  return (await apiCall<{ acknowledged: number }>(path, token, { method: 'POST', body })).acknowledged;
}

export async function deleteAddress(addressId: string, token: string): Promise<void> {
  await apiCall<void>(addressPath(addressId), token, { method: 'DELETE' });
}

/** The filters the API applies (docs/api.md §4.3); an empty one is not sent. */
export interface ReadFilter {
  type: string;
  source: string;
  callback: string;
}

export const isFiltered = (filter: ReadFilter) => filter.type !== '' || filter.source !== '' || filter.callback !== '';

/** The filter as query parameters, the same for a page and for the stream. */
export function filterQuery(filter: ReadFilter): URLSearchParams {
  const query = new URLSearchParams();
  for (const name of ['type', 'source', 'callback'] as const) if (filter[name] !== '') query.set(name, filter[name]);
  return query;
}

export interface EventPage {
  events: RoostEvent[];
  next_cursor: number;
  has_more: boolean;
  latest_sequence: number;
  scan_limited?: true;
}

export async function listEvents(
  addressId: string,
  token: string,
  after: number,
  filter: ReadFilter,
): Promise<EventPage> {
  const query = filterQuery(filter);
  query.set('after', String(after));
  query.set('limit', '100');
  return apiCall<EventPage>(`${addressPath(addressId)}/events?${query.toString()}`, token);
}
