// The operations of the return-address service, written once. HTTP routes, the SMTP
// server and the MCP tools call these; none of them talks to storage directly. Errors
// are thrown as RoostError values and rendered by each transport.
import type { Config } from '../config.js';
import type {
  Address,
  CreateAddress,
  CreateAddressResponse,
  Event,
  EventDeliveryResponse,
  EventPage,
} from '../schemas.js';
import type { AddressRecord, EventRecord, Storage, TokenBucketResult } from '../storage/storage.js';
import {
  RoostError,
  addressNotFound,
  eventNotFound,
  inboxNotFound,
  invalidRequest,
  queueFull,
  unauthorized,
} from './errors.js';
import { EVENT_CAPACITY, IDEMPOTENCY_KEY_PATTERN, MAX_JSON_DEPTH, RETENTION_MS } from './limits.js';
import type { Metrics } from './metrics.js';
import {
  INGRESS_SECRET_PREFIX,
  READ_TOKEN_PREFIX,
  digestSecret,
  newAddressId,
  newIngressSecret,
  newReadToken,
  newSlug,
  secretMatches,
} from './secrets.js';
import { eventJson } from './event-json.js';
import { isoTime } from './iso-time.js';
import type { Waiters } from './waiters.js';

export type Clock = () => number;

export interface DeliveryInput {
  type?: string;
  source?: string;
  data?: unknown;
  metadata?: Record<string, string>;
  dedupe_key?: string;
}

export interface DeliveryResult {
  /** 202 for a newly queued event, 200 for an idempotent repeat (spec §3). */
  status: 200 | 202;
  body: EventDeliveryResponse;
}

export interface ListOptions {
  after: number;
  limit: number;
  /** Long-poll seconds (0–25). */
  wait: number;
}

/** Which transport a delivery came through, for metrics. */
export type Transport = 'http' | 'email' | 'mcp';

/** A reader of one address's queue as a stream (CONTRACT §4.1); see openStream. */
export interface EventStreamHandle {
  /** Milliseconds until the address expires by the service's clock, or null without a lifetime. */
  expiresInMs(): number | null;
  /** True once the service is shutting down: the stream should end. */
  readonly closing: boolean;
  /**
   * Events past `after` (at most `limit`) as stored, to be written with eventJson; or
   * 'gone' once the address is deleted or expired.
   */
  readAfter(after: number, limit: number): Promise<{ records: EventRecord[]; hasMore: boolean } | 'gone'>;
  /** Stops the wake-ups; call it once when the stream ends. */
  close(): void;
}

const CREDENTIALS_NOTE =
  'The read token is shown once, in this response only, and cannot be recovered: store it now. ' +
  'Read the events URL (and call the MCP URL) with the header "Authorization: Bearer <read_token>"; ' +
  'the inbox URL is a write-only secret for senders.';

export function toWireAddress(record: AddressRecord): Address {
  const address: Address = {
    id: record.id,
    slug: record.slug,
    name: record.name,
    email: record.email,
    createdAt: isoTime(record.createdAt),
  };
  if (record.taskId !== null) address.taskId = record.taskId;
  if (record.expiresAt !== null) address.expiresAt = isoTime(record.expiresAt);
  return address;
}

/**
 * An event as the API shows it, its keys in the schema's order. `data`, when the caller
 * holds it parsed already, saves parsing `dataJson` again. eventJson writes the same as text.
 */
export function toWireEvent(record: EventRecord, data: unknown = JSON.parse(record.dataJson)): Event {
  const event = {
    id: record.id,
    address_id: record.addressId,
    sequence: record.sequence,
    type: record.type,
    source: record.source,
    data,
  } as Event;
  if (record.metadataJson !== null) event.metadata = JSON.parse(record.metadataJson) as Event['metadata'];
  if (record.dedupeKey !== null) event.dedupe_key = record.dedupeKey;
  event.created_at = isoTime(record.createdAt);
  if (record.acknowledgedAt !== null) event.acknowledged_at = isoTime(record.acknowledgedAt);
  return event;
}

/** A page as read from storage, before a transport renders it (toPage, or pageJson for HTTP). */
export interface RecordPage {
  records: EventRecord[];
  hasMore: boolean;
  /** The cursor the page was asked from: next_cursor when the page is empty. */
  after: number;
}

const nextCursor = (page: RecordPage) =>
  page.records.length > 0 ? page.records[page.records.length - 1].sequence : page.after;

export function toPage(page: RecordPage): EventPage {
  return {
    events: page.records.map((record) => toWireEvent(record)),
    next_cursor: nextCursor(page),
    has_more: page.hasMore,
  };
}

/** The JSON text of toPage(page), with each event's stored data spliced in unparsed. */
export function pageJson(page: RecordPage): string {
  return `{"events":[${page.records.map(eventJson).join(',')}],"next_cursor":${nextCursor(page)},"has_more":${page.hasMore}}`;
}

/** Depth of a parsed JSON value, iteratively (a hostile payload must not blow the stack). */
export function jsonDepthExceeds(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** Parses "Bearer <token>" (scheme case-insensitive, CONTRACT §5). */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header ? /^\s*bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : undefined;
}

export class RoostService {
  private readonly now: Clock;

  constructor(
    private readonly storage: Storage,
    private readonly waiters: Waiters,
    private readonly config: Config,
    private readonly metrics: Metrics,
    clock: Clock = Date.now,
  ) {
    this.now = clock;
  }

  // --- provisioning -------------------------------------------------------------------

  /** One token of the per-client create bucket (CONTRACT §9); every create request takes one. */
  takeCreateToken(clientKey: string): Promise<TokenBucketResult> {
    const { limit, periodMs } = this.config.createRate;
    return this.storage.takeToken(`create:${clientKey}`, limit, periodMs, this.now());
  }

  async createAddress(input: CreateAddress = {}): Promise<CreateAddressResponse> {
    const ttl = input.expires_in_seconds ?? this.config.defaultTtlSeconds;
    const cap = this.config.maxTtlSeconds;
    if (input.expires_in_seconds !== undefined && cap !== undefined && input.expires_in_seconds > cap) {
      throw invalidRequest(
        `expires_in_seconds must be at most ${cap} on this service (its lifetime cap); got ${input.expires_in_seconds}.`,
      );
    }
    const readToken = newReadToken();
    const ingressSecret = newIngressSecret();
    const createdAt = this.now();
    const id = newAddressId();
    // A slug collision needs ~2^25 addresses sharing one name; draw again if it happens.
    for (let attempt = 0; attempt < 5; attempt++) {
      const slug = newSlug(input.name);
      const record: AddressRecord = {
        id,
        slug,
        name: input.name ?? 'Untitled',
        taskId: input.task_id ?? null,
        email: `${slug}@${this.config.mailDomain}`,
        createdAt,
        expiresAt: ttl === undefined ? null : createdAt + ttl * 1000,
        readTokenDigest: digestSecret(readToken),
        ingressSecretDigest: digestSecret(ingressSecret),
      };
      if ((await this.storage.insertAddress(record)) === 'slug_taken') continue;
      this.metrics.addressesCreated.inc();
      const base = this.config.baseUrl;
      return {
        address: toWireAddress(record),
        credentials: { read_token: readToken, note: CREDENTIALS_NOTE },
        endpoints: {
          inbox_url: `${base}/api/v1/inbox/${id}/${ingressSecret}`,
          events_url: `${base}/api/v1/addresses/${id}/events`,
          mcp_url: `${base}/mcp/${id}`,
          inspect_url: `${base}/inspect/${id}`,
        },
      };
    }
    throw new RoostError('internal_error', 500, 'Could not allocate a unique slug; retry.');
  }

  // --- bearer-protected operations -----------------------------------------------------

  /** CONTRACT §5: unknown or expired address → 404 first; then a bad token → 401. */
  async authenticate(addressId: string, token: string | undefined): Promise<AddressRecord> {
    const address = await this.storage.getAddress(addressId, this.now());
    if (!address) throw addressNotFound();
    if (token === undefined) throw unauthorized('Missing bearer token.');
    if (!token.startsWith(READ_TOKEN_PREFIX) || !secretMatches(token, address.readTokenDigest)) {
      throw unauthorized('The bearer token is not valid for this return address.');
    }
    return address;
  }

  async getAddress(addressId: string, token: string | undefined): Promise<{ address: Address }> {
    return { address: toWireAddress(await this.authenticate(addressId, token)) };
  }

  async deleteAddress(addressId: string, token: string | undefined): Promise<void> {
    await this.authenticate(addressId, token);
    if (!(await this.storage.deleteAddress(addressId))) throw addressNotFound();
    // Held polls and streams re-read, find the address gone and answer 404 / `gone`.
    this.waiters.wake(addressId);
  }

  /**
   * Reads a page; with wait > 0 and nothing past `after`, holds until a commit wakes it,
   * `wait` seconds pass, the address goes away, the client leaves (signal) or shutdown.
   */
  async listEvents(
    addressId: string,
    token: string | undefined,
    options: ListOptions,
    signal?: AbortSignal,
  ): Promise<RecordPage> {
    let address = await this.authenticate(addressId, token);
    const deadline = this.now() + options.wait * 1000;
    for (;;) {
      // Register before reading: a commit between the read and the wait still wakes us.
      const ticket = options.wait > 0 && !this.waiters.isClosing ? this.waiters.register(addressId) : null;
      const page = await this.storage.listEvents(addressId, options.after, options.limit);
      const until = address.expiresAt === null ? deadline : Math.min(deadline, address.expiresAt);
      if (!ticket || page.events.length > 0 || until <= this.now()) {
        ticket?.cancel();
        if (page.events.length === 0 && address.expiresAt !== null && address.expiresAt <= this.now())
          throw addressNotFound();
        return { records: page.events, hasMore: page.hasMore, after: options.after };
      }
      const outcome = await ticket.wait(until - this.now(), signal);
      if (outcome === 'aborted' || outcome === 'closing') return { records: [], hasMore: false, after: options.after };
      const current = await this.storage.getAddress(addressId, this.now());
      if (!current) throw addressNotFound();
      address = current;
      if (outcome === 'woken') {
        const next = await this.storage.listEvents(addressId, options.after, options.limit);
        if (next.events.length > 0) {
          // From the wake-up (the commit's) to the answer being ready, in real time.
          if (ticket.wokenAt !== undefined)
            this.metrics.wakeLatency.observe((performance.now() - ticket.wokenAt) / 1000);
          return { records: next.events, hasMore: next.hasMore, after: options.after };
        }
      }
    }
  }

  async ackEvent(addressId: string, token: string | undefined, eventId: string): Promise<{ event: Event }> {
    await this.authenticate(addressId, token);
    const record = await this.storage.ackEvent(addressId, eventId, this.now());
    if (!record) throw eventNotFound();
    return { event: toWireEvent(record) };
  }

  /** Acknowledges every event up to a sequence (MCP's ack of a run); returns the count. */
  async ackUpTo(
    addressId: string,
    token: string | undefined,
    upToSequence: number,
  ): Promise<{ acknowledged: number; up_to_sequence: number }> {
    await this.authenticate(addressId, token);
    const acknowledged = await this.storage.ackUpTo(addressId, upToSequence, this.now());
    return { acknowledged, up_to_sequence: upToSequence };
  }

  // --- deliveries ----------------------------------------------------------------------

  /** The inbox: the secret in the URL is the only credential; every miss is the same 404. */
  async authorizeInbox(addressId: string, secret: string): Promise<AddressRecord> {
    const address = await this.storage.getAddress(addressId, this.now());
    if (!address || !secret.startsWith(INGRESS_SECRET_PREFIX) || !secretMatches(secret, address.ingressSecretDigest)) {
      throw inboxNotFound();
    }
    return address;
  }

  /** The live address that owns an email local part (case-insensitive), or null. */
  findAddressBySlug(slug: string): Promise<AddressRecord | null> {
    return this.storage.getAddressBySlug(slug.toLowerCase(), this.now());
  }

  /** Whether the address can take one more event now (SMTP answers 452 at RCPT if not). */
  hasRoom(addressId: string): Promise<boolean> {
    return this.storage.hasRoom(addressId, EVENT_CAPACITY);
  }

  /**
   * Queues one event for an already-authorised address. The one `deliver` path: the
   * inbox route, raw capture, email and MCP all end here, so every delivery wakes polls.
   * `idempotencyKey` is the header form; `input.dedupe_key` the body form (CONTRACT §3).
   */
  async deliver(
    address: AddressRecord,
    input: DeliveryInput,
    idempotencyKey: string | undefined,
    transport: Transport,
  ): Promise<DeliveryResult> {
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey)) {
      throw invalidRequest('The Idempotency-Key header must be 1–255 visible ASCII characters (0x21–0x7E).');
    }
    if (input.dedupe_key !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(input.dedupe_key)) {
      throw invalidRequest('dedupe_key must be 1–255 visible ASCII characters (0x21–0x7E).');
    }
    if (idempotencyKey !== undefined && input.dedupe_key !== undefined && idempotencyKey !== input.dedupe_key) {
      throw new RoostError(
        'idempotency_key_mismatch',
        400,
        'The Idempotency-Key header and the body field dedupe_key differ; send one, or the same value in both.',
      );
    }
    if (jsonDepthExceeds(input.data, MAX_JSON_DEPTH)) {
      throw invalidRequest(`data is nested more than ${MAX_JSON_DEPTH} levels deep.`);
    }
    const result = await this.storage.appendEvent(
      {
        addressId: address.id,
        type: input.type ?? 'message.received',
        source: input.source ?? 'https',
        dataJson: JSON.stringify(input.data ?? null),
        metadataJson: input.metadata === undefined ? null : JSON.stringify(input.metadata),
        dedupeKey: idempotencyKey ?? input.dedupe_key ?? null,
        createdAt: this.now(),
      },
      EVENT_CAPACITY,
    );
    this.metrics.deliveries.inc({ transport, outcome: result.status });
    switch (result.status) {
      case 'created':
        this.waiters.wake(address.id);
        // The stored text is JSON.stringify(input.data): serialised again, the value gives it back.
        return { status: 202, body: { event: toWireEvent(result.event, input.data ?? null), duplicate: false } };
      case 'duplicate':
        this.metrics.duplicates.inc();
        return { status: 200, body: { event: toWireEvent(result.event), duplicate: true } };
      case 'queue_full':
        throw queueFull(60);
      case 'address_not_found':
        // Deleted or expired between authorisation and the append.
        throw transport === 'http' ? inboxNotFound() : addressNotFound();
    }
  }

  // --- streaming (CONTRACT §4.1) -------------------------------------------------------

  /**
   * Opens a stream of the queue: authenticates as the events URL does (404, then 401),
   * then subscribes `onChange` to the address's wake-ups — the long-poll's Waiters, not a
   * second mechanism — before the caller's first read, so a commit during the replay still
   * calls it. `onChange` also runs on shutdown (then `closing` is true). Wake-ups carry no
   * data: the caller re-reads after its cursor, one read at a time.
   */
  async openStream(addressId: string, token: string | undefined, onChange: () => void): Promise<EventStreamHandle> {
    const { expiresAt } = await this.authenticate(addressId, token);
    const unsubscribe = this.waiters.subscribe(addressId, onChange);
    const waiters = this.waiters;
    return {
      expiresInMs: () => (expiresAt === null ? null : expiresAt - this.now()),
      get closing() {
        return waiters.isClosing;
      },
      readAfter: async (after, limit) => {
        // Deleted or expired: the stream ends with `gone` (CONTRACT §2: behaves as deleted).
        if (!(await this.storage.getAddress(addressId, this.now()))) return 'gone';
        const page = await this.storage.listEvents(addressId, after, limit);
        return { records: page.events, hasMore: page.hasMore };
      },
      close: unsubscribe,
    };
  }

  // --- housekeeping --------------------------------------------------------------------

  /** Retention and expiry (spec §8, CONTRACT §2); run by the sweeper. */
  async purge(): Promise<void> {
    const now = this.now();
    const result = await this.storage.purge(now, now - RETENTION_MS);
    this.metrics.eventsPurged.inc(result.eventsPurged);
    for (const id of result.expiredAddressIds) this.waiters.wake(id);
  }
}
