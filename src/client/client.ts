// RoostClient: a fetch-based SDK for the REST interface (docs/api.md §0.1), typed from the wire
// schemas in src/contract/. It is what the `roost` CLI uses, and what an agent embeds to
// create a return address, deliver to an inbox and follow its queue.
import type {
  AckRunResponse,
  Address,
  AddressResponse,
  CreateAddress,
  CreateAddressResponse,
  CreateEvent,
  ErrorBody,
  Event,
  EventDeliveryResponse,
  EventPage,
  EventResponse,
} from '../contract/schemas.js';
import type {
  CreateViewToken,
  InboxSecretResponse,
  ReadTokenResponse,
  UpdateAddress,
  ViewToken,
  ViewTokenCreated,
  ViewTokenList,
} from '../contract/credential-schemas.js';
import type { PutSender, Sender, SenderResponse } from '../contract/sender-schemas.js';
import type { BackoffOptions } from './backoff.js';
import type { Callback, CallbackSelection, CreateCallback } from './callback-types.js';
import { parseCredentials } from './credentials.js';
import { RoostError, RoostNetworkError, describeNetworkFailure } from './errors.js';
import { retryTransient } from './retry.js';

export const CLIENT_VERSION = '0.1.0';

export interface RoostClientOptions {
  /** The service's base URL, e.g. http://localhost:3000 (no trailing slash needed). */
  baseUrl: string;
  /** addr_… — needed by every call but createAddress and deliver. */
  addressId?: string;
  /** roost_read_… — the bearer token from the creation response. */
  readToken?: string;
  /** Give up on a request that has not answered in this long (default 30 s; long polls get `wait` on top). */
  timeoutMs?: number;
  /** Pacing of the retries done by events() (default 250 ms doubling up to 30 s). */
  backoff?: BackoffOptions;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** Sent as User-Agent. */
  userAgent?: string;
}

/**
 * Filters of a read (docs/api.md §4.3): only matching events are returned, and a long poll
 * sleeps through the others. A filtered next_cursor moves past what was scanned, so it
 * belongs to that filter: to resume everything, use unacked or your unfiltered cursor.
 */
export interface EventFilterOptions {
  /** Types, each exact or ending in `*` for a prefix (`stripe.payment_intent.*`). */
  type?: string | string[];
  /** The exact source. */
  source?: string;
  /** A callback's id (cb_…) or key. */
  callback?: string;
  /** A JSON value `data` must contain (objects a subset of keys, arrays their elements, scalars equal). */
  dataContains?: unknown;
  /** The same against `data.body` (parsed as JSON when it is a text, as a raw capture holds it). */
  bodyContains?: unknown;
}

/** The filters as query parameters. */
function filterQuery(filter: EventFilterOptions): Record<string, string | undefined> {
  return {
    type: Array.isArray(filter.type) ? filter.type.join(',') : filter.type,
    source: filter.source,
    callback: filter.callback,
    data_contains: filter.dataContains === undefined ? undefined : JSON.stringify(filter.dataContains),
    body_contains: filter.bodyContains === undefined ? undefined : JSON.stringify(filter.bodyContains),
  };
}

export interface ListEventsOptions extends EventFilterOptions {
  /** Return events whose sequence is greater than this (default 0). */
  after?: number;
  /**
   * Page size, 1–100 (default 50). A page of large events holds fewer (the service bounds
   * a page by bytes too, but always sends at least one event); `has_more` says more wait.
   */
  limit?: number;
  /** Long-poll seconds, 0–25, when no event is past `after` (default 0). */
  wait?: number;
  /** Only events not yet acknowledged (past `after` as ever); a long poll waits for one. */
  unacked?: boolean;
  signal?: AbortSignal;
}

export interface DeliverOptions {
  /** Sent as Idempotency-Key: a retried delivery with the same key queues nothing new. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface EventsOptions extends EventFilterOptions {
  /** Start after this sequence (default 0: the whole queue). */
  after?: number;
  /** Only events not yet acknowledged when read (with after 0: whatever is not handled yet). */
  unacked?: boolean;
  /**
   * Acknowledge each event once the consumer has taken it: an event is acknowledged when
   * the next one is requested (the loop body finished without leaving the loop). An event
   * whose loop body ends with `break`, `return` or a throw is NOT acknowledged — the
   * iterator cannot tell success from failure then — so ack it yourself if it was handled.
   */
  ack?: boolean;
  /** Long-poll seconds per request, 1–25 (default 25). */
  wait?: number;
  /** Page size, 1–100 (default 100). */
  limit?: number;
  /** Aborting ends the iteration quietly, including a held poll or a backoff sleep. */
  signal?: AbortSignal;
  /** Called before each retry of a failed poll or ack, e.g. to show progress. */
  onRetry?: (error: RoostError, delayMs: number, attempt: number) => void;
}

interface RequestOptions {
  query?: Record<string, number | string | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  timeoutMs?: number;
  bearer?: boolean;
}

export class RoostClient {
  readonly baseUrl: string;
  readonly addressId?: string;
  /** Replaced by rotateReadToken, so that this client goes on working with the new token. */
  #readToken?: string;
  readonly #timeoutMs: number;
  readonly #backoff: BackoffOptions;
  readonly #fetch: typeof fetch;
  readonly #userAgent: string;

  constructor(options: RoostClientOptions) {
    if (!options?.baseUrl) throw new TypeError('RoostClient needs a baseUrl, e.g. http://localhost:3000');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.addressId = options.addressId;
    this.#readToken = options.readToken;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#backoff = options.backoff ?? {};
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#userAgent = options.userAgent ?? `roost-client/${CLIENT_VERSION}`;
  }

  /**
   * A client for the address of a saved creation response (the object, or its JSON text).
   * The base URL comes from its endpoints unless `options.baseUrl` overrides it.
   */
  static fromCredentials(
    saved: CreateAddressResponse | string,
    options: Partial<RoostClientOptions> = {},
  ): RoostClient {
    const credentials = parseCredentials(saved);
    return new RoostClient({
      ...options,
      baseUrl: options.baseUrl ?? credentials.baseUrl,
      addressId: credentials.addressId,
      readToken: credentials.readToken,
    });
  }

  /** POST /api/v1/addresses. Persist the whole answer: its read token is shown once. */
  async createAddress(
    request: CreateAddress = {},
    options: { signal?: AbortSignal } = {},
  ): Promise<CreateAddressResponse> {
    return (
      await this.#request<CreateAddressResponse>('POST', '/api/v1/addresses', {
        body: request,
        signal: options.signal,
        bearer: false,
      })
    ).body;
  }

  async getAddress(options: { signal?: AbortSignal } = {}): Promise<Address> {
    return (await this.#request<AddressResponse>('GET', this.#addressPath(), { signal: options.signal })).body.address;
  }

  /** Deletes the address and its events; its token and inbox URL stop working at once. */
  async deleteAddress(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.#request('DELETE', this.#addressPath(), { signal: options.signal });
  }

  /** PATCH: any of name, task_id (null removes it), expires_in_seconds (from now; null removes the lifetime). */
  async updateAddress(changes: UpdateAddress, options: { signal?: AbortSignal } = {}): Promise<Address> {
    const res = await this.#request<AddressResponse>('PATCH', this.#addressPath(), {
      body: changes,
      signal: options.signal,
    });
    return res.body.address;
  }

  /**
   * Replaces the read token; the old one stops at once. This client uses the new one from
   * now on; persist `read_token` (shown once) wherever the old one was saved.
   */
  async rotateReadToken(options: { signal?: AbortSignal } = {}): Promise<ReadTokenResponse['credentials']> {
    const path = `${this.#addressPath()}/read-token`;
    const { credentials } = (await this.#request<ReadTokenResponse>('POST', path, { signal: options.signal })).body;
    this.#readToken = credentials.read_token;
    return credentials;
  }

  /** Replaces the inbox secret; returns the new inbox URL. The old one works for `graceSeconds` more. */
  async rotateInboxSecret(options: { graceSeconds?: number; signal?: AbortSignal } = {}): Promise<string> {
    const path = `${this.#addressPath()}/inbox-secret`;
    const body = options.graceSeconds === undefined ? {} : { grace_seconds: options.graceSeconds };
    const res = await this.#request<InboxSecretResponse>('POST', path, { body, signal: options.signal });
    return res.body.endpoints.inbox_url;
  }

  /** A read-only bearer token to share (shown once, in `token`). */
  async createViewToken(
    request: CreateViewToken = {},
    options: { signal?: AbortSignal } = {},
  ): Promise<ViewTokenCreated['view_token']> {
    const path = `${this.#addressPath()}/view-tokens`;
    return (await this.#request<ViewTokenCreated>('POST', path, { body: request, signal: options.signal })).body
      .view_token;
  }

  async listViewTokens(options: { signal?: AbortSignal } = {}): Promise<ViewToken[]> {
    const path = `${this.#addressPath()}/view-tokens`;
    return (await this.#request<ViewTokenList>('GET', path, { signal: options.signal })).body.view_tokens;
  }

  async revokeViewToken(tokenId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    const path = `${this.#addressPath()}/view-tokens/${encodeURIComponent(tokenId)}`;
    await this.#request('DELETE', path, { signal: options.signal });
  }

  /**
   * PUT …/sender (docs/api.md §3.2): the inbox verifies every delivery with this provider's
   * scheme from now on. The secrets are stored encrypted and never returned.
   */
  async setSender(sender: PutSender, options: { signal?: AbortSignal } = {}): Promise<Sender> {
    const path = `${this.#addressPath()}/sender`;
    return (await this.#request<SenderResponse>('PUT', path, { body: sender, signal: options.signal })).body.sender;
  }

  /** The sender without its secrets (their count), or null when none is set. */
  async getSender(options: { signal?: AbortSignal } = {}): Promise<Sender | null> {
    try {
      const path = `${this.#addressPath()}/sender`;
      return (await this.#request<SenderResponse>('GET', path, { signal: options.signal })).body.sender;
    } catch (error) {
      if (error instanceof RoostError && error.code === 'sender_not_found') return null;
      throw error;
    }
  }

  /** Removes the sender: the inbox stores deliveries unverified again. False when none was set. */
  async clearSender(options: { signal?: AbortSignal } = {}): Promise<boolean> {
    try {
      await this.#request('DELETE', `${this.#addressPath()}/sender`, { signal: options.signal });
      return true;
    } catch (error) {
      if (error instanceof RoostError && error.code === 'sender_not_found') return false;
      throw error;
    }
  }

  /**
   * One page of the queue: events with sequence > after, ascending (with `unacked`, only
   * those not yet acknowledged). `latest_sequence` is the highest sequence given out: an
   * `after` above it is a wrong cursor.
   */
  async listEvents(options: ListEventsOptions = {}): Promise<EventPage> {
    const { after, limit, wait, unacked, signal } = options;
    const timeoutMs = this.#timeoutMs + (wait ?? 0) * 1000;
    return (
      await this.#request<EventPage>('GET', `${this.#addressPath()}/events`, {
        query: { after, limit, wait, unacked: unacked ? 1 : undefined, ...filterQuery(options) },
        signal,
        timeoutMs,
      })
    ).body;
  }

  /** Acknowledges one event; acknowledging again returns its first acknowledged_at. */
  async ack(eventId: string, options: { signal?: AbortSignal } = {}): Promise<Event> {
    const path = `${this.#addressPath()}/events/${encodeURIComponent(eventId)}/ack`;
    return (await this.#request<EventResponse>('POST', path, { signal: options.signal })).body.event;
  }

  /**
   * Acknowledges every event whose sequence is at most `upToSequence` (e.g. the next_cursor
   * of the page handled); returns how many this call newly acknowledged.
   */
  async ackUpTo(upToSequence: number, options: { signal?: AbortSignal } = {}): Promise<number> {
    const path = `${this.#addressPath()}/events/ack`;
    const answer = await this.#request<AckRunResponse>('POST', path, {
      body: { up_to_sequence: upToSequence },
      signal: options.signal,
    });
    return answer.body.acknowledged;
  }

  /**
   * Delivers an event to an inbox URL (the secret in it is the only credential; no read
   * token needed). `duplicate` is true when the idempotency key matched an earlier event,
   * which is then returned unchanged.
   */
  async deliver(
    inboxUrl: string,
    event: CreateEvent = {},
    options: DeliverOptions = {},
  ): Promise<EventDeliveryResponse> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    return (
      await this.#request<EventDeliveryResponse>('POST', inboxUrl, {
        body: event,
        headers,
        signal: options.signal,
        bearer: false,
      })
    ).body;
  }

  /**
   * Follows the queue forever: long-polls, follows next_cursor, and yields every event
   * exactly once in strictly increasing sequence. Network failures, 408, 429 and 5xx
   * (a restarting or overloaded service) are retried with capped, jittered exponential
   * backoff; other errors (401, 404 — e.g. the address was deleted) end it by throwing.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<Event, void, undefined> {
    const { signal, onRetry } = options;
    const wait = options.wait ?? 25;
    const limit = options.limit ?? 100;
    let cursor = options.after ?? 0;
    let more = false;
    const retry = { signal, backoff: this.#backoff, onRetry };

    while (!signal?.aborted) {
      // A page cut short (by count or by bytes) is followed at once, without asking to wait.
      const asked: ListEventsOptions = {
        after: cursor,
        limit,
        wait: more ? 0 : wait,
        unacked: options.unacked,
        type: options.type,
        source: options.source,
        callback: options.callback,
        dataContains: options.dataContains,
        bodyContains: options.bodyContains,
        signal,
      };
      const page = await retryTransient(() => this.listEvents(asked), retry);
      if (!page) return;
      more = page.has_more;
      for (const event of page.events) {
        // Never repeat: whatever a page holds, only a sequence past the cursor is new.
        if (event.sequence <= cursor) continue;
        cursor = event.sequence;
        yield event;
        // Resumed: the consumer asked for the next event, so it has taken this one.
        if (options.ack) {
          const acked = await retryTransient(() => this.#ackUnlessGone(event.id, signal), retry);
          if (acked === undefined) return;
        }
      }
      // A filtered page's cursor moves past the events it scanned without a match.
      if (page.next_cursor > cursor) cursor = page.next_cursor;
    }
  }

  /** Acknowledges, treating an event already purged (retention, capacity) as done. */
  async #ackUnlessGone(eventId: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.ack(eventId, { signal });
    } catch (error) {
      if (!(error instanceof RoostError && error.code === 'event_not_found')) throw error;
    }
    return true;
  }

  #addressPath(): string {
    if (!this.addressId || !this.#readToken) {
      throw new RoostError(
        'missing_credentials',
        0,
        'This call needs an address id and its read token (give addressId and readToken, or use RoostClient.fromCredentials).',
      );
    }
    return `/api/v1/addresses/${encodeURIComponent(this.addressId)}`;
  }

  /** POST …/callbacks: a one-shot callback URL; with a `key` already used, that callback (docs/api.md §3.6). */
  async createCallback(
    request: CreateCallback = {},
    options: { signal?: AbortSignal } = {},
  ): Promise<{ callback: Callback; created: boolean }> {
    const res = await this.#request<{ callback: Callback }>('POST', `${this.#addressPath()}/callbacks`, {
      body: request,
      signal: options.signal,
    });
    return { callback: res.body.callback, created: res.status === 201 };
  }

  /**
   * GET …/callbacks/{id}: the callback and, once completed, the completing delivery's body.
   * With `wait` (≤ 25 s), held until it leaves `waiting`.
   */
  async getCallback(
    callbackId: string,
    options: { wait?: number; includeEvent?: boolean; signal?: AbortSignal } = {},
  ): Promise<{ callback: Callback; body: unknown; event?: Event | null }> {
    const path = `${this.#addressPath()}/callbacks/${encodeURIComponent(callbackId)}`;
    return (
      await this.#request<{ callback: Callback; body: unknown; event?: Event | null }>('GET', path, {
        query: { wait: options.wait, include: options.includeEvent ? 'event' : undefined },
        signal: options.signal,
        timeoutMs: this.#timeoutMs + (options.wait ?? 0) * 1000,
      })
    ).body;
  }

  /**
   * GET …/callbacks: those the selection names, oldest first. With `wait` (≤ 25 s), held
   * until any (mode any) or all (mode all) of them have left `waiting`.
   */
  async listCallbacks(
    selection: CallbackSelection = {},
    options: { wait?: number; mode?: 'any' | 'all'; signal?: AbortSignal } = {},
  ): Promise<Callback[]> {
    const res = await this.#request<{ callbacks: Callback[] }>('GET', `${this.#addressPath()}/callbacks`, {
      query: {
        ids: selection.ids?.join(','),
        key: selection.key,
        key_prefix: selection.keyPrefix,
        status: selection.status,
        wait: options.wait,
        mode: options.mode,
      },
      signal: options.signal,
      timeoutMs: this.#timeoutMs + (options.wait ?? 0) * 1000,
    });
    return res.body.callbacks;
  }

  /**
   * Waits, in held requests of at most 25 s each, until any (or all) of the selected
   * callbacks have left `waiting` or `timeoutMs` has passed; returns them as they then are.
   */
  async waitForCallbacks(
    selection: CallbackSelection,
    options: { mode?: 'any' | 'all'; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<Callback[]> {
    const mode = options.mode ?? 'any';
    const deadline = Date.now() + (options.timeoutMs ?? 25_000);
    for (;;) {
      const left = Math.max(0, Math.min(25, Math.ceil((deadline - Date.now()) / 1000)));
      const callbacks = await this.listCallbacks(selection, { wait: left, mode, signal: options.signal });
      const settled = callbacks.filter((callback) => callback.status !== 'waiting').length;
      const done = mode === 'any' ? settled > 0 || callbacks.length === 0 : settled === callbacks.length;
      if (done || left === 0 || Date.now() >= deadline) return callbacks;
    }
  }

  /** DELETE …/callbacks/{id}: its URL answers 410 from now on. */
  async cancelCallback(callbackId: string, options: { signal?: AbortSignal } = {}): Promise<Callback> {
    const path = `${this.#addressPath()}/callbacks/${encodeURIComponent(callbackId)}`;
    return (await this.#request<{ callback: Callback }>('DELETE', path, { signal: options.signal })).body.callback;
  }

  async #request<T>(
    method: string,
    pathOrUrl: string,
    options: RequestOptions = {},
  ): Promise<{ status: number; body: T }> {
    const url = new URL(/^https?:\/\//i.test(pathOrUrl) ? pathOrUrl : `${this.baseUrl}${pathOrUrl}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.#userAgent,
      ...options.headers,
    };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    if (options.bearer !== false && this.#readToken) headers.authorization = `Bearer ${this.#readToken}`;

    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.#timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, { method, headers, body, signal });
      text = await response.text();
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      if (timeout.aborted) {
        throw new RoostNetworkError(
          'timeout',
          `${method} ${url.origin}${url.pathname}: no answer within ${options.timeoutMs ?? this.#timeoutMs} ms`,
          error,
        );
      }
      throw new RoostNetworkError(
        'network_error',
        `cannot reach ${url.origin}: ${describeNetworkFailure(error)}`,
        error,
      );
    }

    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!response.ok) throw errorFromResponse(response, parsed, text);
    if (response.status !== 204 && parsed === undefined) {
      throw new RoostError(
        'invalid_response',
        response.status,
        `${method} ${url.pathname} answered ${response.status} without a JSON body`,
      );
    }
    return { status: response.status, body: parsed as T };
  }
}

function errorFromResponse(response: Response, parsed: unknown, text: string): RoostError {
  const retryAfter = response.headers.get('retry-after');
  const retryAfterMs = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : undefined;
  const error = (parsed as Partial<ErrorBody> | undefined)?.error;
  if (error && typeof error.code === 'string' && typeof error.message === 'string') {
    return new RoostError(error.code, response.status, error.message, { retryAfterMs });
  }
  // Not Roost's Error shape: a proxy or another server answered.
  const snippet = text.trim().slice(0, 200) || response.statusText;
  return new RoostError(`http_${response.status}`, response.status, `HTTP ${response.status}: ${snippet}`, {
    retryAfterMs,
  });
}
