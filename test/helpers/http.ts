// Plain fetch wrappers for tests: they check the wire exactly, so they do not use the SDK.
import assert from 'node:assert/strict';
export interface WireResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (string/Buffer) instead of JSON. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  token?: string;
  signal?: AbortSignal;
}

export async function request<T = any>(
  base: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<WireResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const response = await fetch(path.startsWith('http') ? path : `${base}${path}`, {
    method,
    headers,
    body,
    signal: options.signal,
  });
  const text = await response.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

/** The pieces of a creation response that tests need. */
export interface CreatedAddress {
  id: string;
  token: string;
  inbox: string;
  email: string;
  response: any;
}

export async function createAddress(
  base: string,
  body: unknown = {},
  headers: Record<string, string> = {},
): Promise<CreatedAddress> {
  const res = await request(base, 'POST', '/api/v1/addresses', { body, headers });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return {
    id: res.body.address.id,
    token: res.body.credentials.read_token,
    // Returned URLs carry the public base URL; tests reach the server at `base`.
    inbox: `${base}${new URL(res.body.endpoints.inbox_url).pathname}`,
    email: res.body.address.email,
    response: res.body,
  };
}

export function deliver(inbox: string, body: unknown, headers: Record<string, string> = {}) {
  return request(inbox, 'POST', inbox, { body, headers });
}

export function listEvents(base: string, address: CreatedAddress, query = '') {
  return request(base, 'GET', `/api/v1/addresses/${address.id}/events${query ? `?${query}` : ''}`, {
    token: address.token,
  });
}

/** The Error shape (docs/api.md §6): only `error`, holding exactly `code` and a sentence of `message`. */
export function assertErrorBody(body: any, code: string): void {
  assert.deepEqual(Object.keys(body ?? {}), ['error']);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message']);
  assert.equal(body.error.code, code);
  assert.ok(typeof body.error.message === 'string' && body.error.message.length > 10, 'the message is a sentence');
}

/** A refusal: its status and its Error body. */
export function assertError(res: { status: number; body: any; text?: string }, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assertErrorBody(res.body, code);
}
