// The operations of the return-address service, written once. HTTP routes, the SMTP
// server and the MCP tools call these; none of them talks to storage directly. Errors
// are thrown as ServiceError values (made from the catalogue in errors.ts) and rendered by
// each transport. What every operation stands on (authentication, waiter slots) is in
// service-base.ts; the shapes they take and give are in service-types.ts.
import type { Address, CreateAddress, CreateAddressResponse, Event } from '../contract/schemas.js';
import type {
  CreateViewToken,
  InboxSecretResponse,
  ReadTokenResponse,
  UpdateAddress,
  ViewTokenCreated,
  ViewTokenList,
} from '../contract/credential-schemas.js';
import {
  RAW_EMAIL_PART,
  type AddressChanges,
  type AddressRecord,
  type EmailPart,
  type EventFilter,
  type InboxCredentials,
  type TokenBucketResult,
  type ViewTokenRecord,
} from '../storage/storage.js';
import { newEventId } from '../storage/event-ids.js';
import { filtersContent } from '../storage/page-query.js';

export type { EmailPart };
import type { PutSender, SenderResponse } from '../contract/sender-schemas.js';
import type { SenderRequest } from './senders/provider.js';
import { planSenderRequest } from './senders/policy.js';
import { sealSender, toWireSender } from './senders/settings.js';
import { errors } from './errors.js';
import { EVENT_CAPACITY, MAX_JSON_DEPTH, RETENTION_MS } from './limits.js';
import {
  READ_TOKEN_PREFIX,
  digestSecret,
  newAddressId,
  newIngressSecret,
  newReadToken,
  newSlug,
  newViewToken,
  newViewTokenId,
  secretMatches,
} from './secrets.js';
import { effectiveIdempotencyKey, storedIdempotencyKey } from './idempotency-key.js';
import { jsonDepthExceeds } from './json-depth.js';
import { scanned, toDelivery, toWireAddress, toWireEvent, toWireViewToken, type RecordPage } from './wire.js';
import { namesNothing, refuseNul } from './storable-text.js';
import { sliceShared, type SharedRead } from './waiters.js';
import { ServiceBase } from './service-base.js';
import type {
  CaptureRequest,
  DeliveryInput,
  DeliveryResult,
  EventStreamHandle,
  ListOptions,
  SenderOutcome,
  Transport,
} from './service-types.js';

export type * from './service-types.js';

const CREDENTIALS_NOTE =
  'The read token is shown once, in this response only, and cannot be recovered: store it now. ' +
  'Read the events URL (and call the MCP URL) with the header "Authorization: Bearer <read_token>"; ' +
  'the inbox URL is a write-only secret for senders.';

export class RoostService extends ServiceBase {
  // --- provisioning -------------------------------------------------------------------

  /** One token of the per-client create bucket (docs/api.md §9); every create request takes one. */
  takeCreateToken(clientKey: string): Promise<TokenBucketResult> {
    const { limit, periodMs } = this.config.createRate;
    return this.storage.takeToken({ key: `create:${clientKey}`, limit, periodMs, now: this.now() });
  }

  async createAddress(input: CreateAddress = {}): Promise<CreateAddressResponse> {
    refuseNul('name', input.name);
    refuseNul('task_id', input.task_id);
    const ttl = input.expires_in_seconds ?? this.config.defaultTtlSeconds;
    if (input.expires_in_seconds !== undefined) this.checkLifetimeCap(input.expires_in_seconds);
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
        previousIngressDigest: null,
        previousIngressUntil: null,
        hasSender: false,
      };
      if ((await this.storage.insertAddress(record)) === 'slug_taken') continue;
      this.metrics.addressesCreated.inc();
      const base = this.config.baseUrl;
      return {
        address: toWireAddress(record),
        credentials: { read_token: readToken, note: CREDENTIALS_NOTE },
        endpoints: {
          inbox_url: `${base}/api/v1/inbox/${id}/${ingressSecret}`,
          // The URL for a third-party sender: its own payload is stored as sent (docs/api.md §3.1).
          webhook_url: `${base}/api/v1/inbox/${id}/${ingressSecret}?raw=1`,
          events_url: `${base}/api/v1/addresses/${id}/events`,
          mcp_url: `${base}/mcp/${id}`,
          inspect_url: `${base}/inspect/${id}`,
        },
      };
    }
    throw errors.slugExhausted();
  }

  // --- bearer-protected operations -----------------------------------------------------

  async getAddress(addressId: string, token: string | undefined): Promise<{ address: Address }> {
    return { address: toWireAddress(await this.authenticate(addressId, token)) };
  }

  async deleteAddress(addressId: string, token: string | undefined): Promise<void> {
    await this.authenticate(addressId, token, 'delete it');
    if (!(await this.storage.deleteAddress(addressId))) throw errors.addressNotFound();
    // Held polls and streams re-read, find the address gone and answer 404 / `gone`.
    this.waiters.wake(addressId);
  }

  /**
   * Reads a page; with wait > 0 and nothing past `after`, holds until a commit wakes it,
   * `wait` seconds pass, the address goes away, the client leaves (signal) or shutdown.
   * A held poll takes one of the waiter slots of its address and of `client`.
   * `unacked`: only events without acknowledged_at; a woken poll of that kind reads for
   * itself (the shared read holds acknowledged events too, and may stop short of the
   * first unacknowledged one).
   */
  async listEvents(
    addressId: string,
    token: string | undefined,
    options: ListOptions,
    signal?: AbortSignal,
    client = '',
  ): Promise<RecordPage> {
    let address = await this.authenticate(addressId, token);
    const deadline = this.now() + options.wait * 1000;
    const { after, limit } = options;
    const unacked = options.unacked === true;
    const filter: EventFilter = { ...options.filter, unacked };
    // A filtered read reads for itself (the shared read is unfiltered) and is scanned in
    // bounded steps: a poll sleeps past what it scanned without a match.
    const filtered = filtersContent(filter);
    const scanLimit = filtered ? this.config.filterScanEvents : undefined;
    const maxBytes = Math.min(options.partBytes ?? Infinity, this.config.maxPageBytes);
    let release: (() => void) | undefined;
    // From the last page read: what a poll answered without a page of its own reports.
    let latestSequence: number;
    let scanFrom = after;
    try {
      for (;;) {
        // Register before reading: a commit between the read and the wait still wakes us.
        const ticket = options.wait > 0 && !this.waiters.isClosing ? this.waiters.register(addressId, scanFrom) : null;
        const page = await this.storage.listEvents({ addressId, after: scanFrom, limit, maxBytes, filter, scanLimit });
        latestSequence = page.latestSequence;
        if (page.events.length === 0 && page.scannedTo !== undefined) scanFrom = page.scannedTo;
        const until = address.expiresAt === null ? deadline : Math.min(deadline, address.expiresAt);
        if (!ticket || page.events.length > 0 || page.scanLimited || until <= this.now()) {
          ticket?.cancel();
          if (page.events.length === 0 && address.expiresAt !== null && address.expiresAt <= this.now())
            throw errors.addressNotFound();
          return { records: page.events, hasMore: page.hasMore, after, latestSequence, ...scanned(page, scanFrom) };
        }
        if (!release) {
          try {
            release = this.admitWaiter(addressId, client, token);
          } catch (error) {
            ticket.cancel();
            throw error;
          }
        }
        const outcome = await ticket.wait(until - this.now(), signal);
        if (outcome === 'aborted' || outcome === 'closing')
          return { records: [], hasMore: false, after, latestSequence, ...scanned({ events: [] }, scanFrom) };
        const shared = outcome === 'woken' ? await ticket.read : undefined;
        if (shared) {
          if (!shared.address) throw errors.addressNotFound();
          address = shared.address;
          await this.stillOpens(address, token);
          const slice = unacked || filtered ? null : sliceShared(shared, after, limit, maxBytes);
          if (slice && slice.records.length > 0) {
            // From the wake-up (the commit's) to the answer being ready, in real time.
            if (ticket.wokenAt !== undefined)
              this.metrics.wakeLatency.observe((performance.now() - ticket.wokenAt) / 1000);
            return { ...slice, after, latestSequence: Math.max(latestSequence, shared.latestSequence) };
          }
        } else {
          const current = await this.storage.getAddress(addressId, this.now());
          if (!current) throw errors.addressNotFound();
          address = current;
          await this.stillOpens(address, token);
        }
      }
    } finally {
      release?.();
    }
  }

  /**
   * A further part of a page whose first part listEvents read (and authorised): the
   * events past `after`, at most `limit` and `maxBytes` of stored data, one at least.
   */
  async readPagePart(
    addressId: string,
    after: number,
    limit: number,
    maxBytes: number,
    unacked = false,
    filter?: EventFilter,
  ): Promise<RecordPage> {
    const full: EventFilter = { ...filter, unacked };
    const scanLimit = filtersContent(full) ? this.config.filterScanEvents : undefined;
    const page = await this.storage.listEvents({ addressId, after, limit, maxBytes, filter: full, scanLimit });
    const { events: records, hasMore, latestSequence } = page;
    return { records, hasMore, after, latestSequence, ...scanned(page, after) };
  }

  async ackEvent(addressId: string, token: string | undefined, eventId: string): Promise<{ event: Event }> {
    await this.authenticate(addressId, token, 'acknowledge events');
    const now = this.now();
    const record = namesNothing(eventId) ? null : await this.storage.ackEvent(addressId, eventId, now);
    if (!record) throw errors.eventNotFound();
    // Streams tell their readers (an `ack` message, docs/api.md §4.1); a repeat changes nothing.
    if (record.acknowledgedAt === now) this.waiters.wake(addressId);
    return { event: toWireEvent(record) };
  }

  /** Acknowledges every event up to a sequence (MCP's ack of a run); returns the count. */
  async ackUpTo(
    addressId: string,
    token: string | undefined,
    upToSequence: number,
  ): Promise<{ acknowledged: number; up_to_sequence: number }> {
    await this.authenticate(addressId, token, 'acknowledge events');
    const acknowledged = await this.storage.ackUpTo(addressId, upToSequence, this.now());
    if (acknowledged > 0) this.waiters.wake(addressId);
    return { acknowledged, up_to_sequence: upToSequence };
  }

  // --- credentials and updates (rotation, view tokens, PATCH) ------------------------------
  // Each change wakes the address's held polls and streams, which re-check their credential
  // (listEvents, openStream); PostgreSQL announces it to the other instances as well.

  /** `revokeViewTokens`: every view token of the address goes in the same transaction. */
  async rotateReadToken(
    addressId: string,
    token: string | undefined,
    revokeViewTokens = false,
  ): Promise<ReadTokenResponse> {
    await this.authenticate(addressId, token, 'rotate credentials');
    const readToken = newReadToken();
    const digest = digestSecret(readToken);
    if (!(await this.storage.replaceReadToken({ id: addressId, digest, now: this.now(), revokeViewTokens })))
      throw errors.addressNotFound();
    this.waiters.wake(addressId);
    return { credentials: { read_token: readToken, note: CREDENTIALS_NOTE } };
  }

  async rotateInboxSecret(
    addressId: string,
    token: string | undefined,
    graceSeconds = 0,
  ): Promise<InboxSecretResponse> {
    await this.authenticate(addressId, token, 'rotate credentials');
    const secret = newIngressSecret();
    const now = this.now();
    const previousUntil = graceSeconds > 0 ? now + graceSeconds * 1000 : null;
    if (!(await this.storage.replaceIngressSecret({ id: addressId, digest: digestSecret(secret), previousUntil, now })))
      throw errors.addressNotFound();
    return { endpoints: { inbox_url: `${this.config.baseUrl}/api/v1/inbox/${addressId}/${secret}` } };
  }

  async createViewToken(
    addressId: string,
    token: string | undefined,
    input: CreateViewToken = {},
  ): Promise<ViewTokenCreated> {
    await this.authenticate(addressId, token, 'manage view tokens');
    refuseNul('label', input.label);
    const viewToken = newViewToken();
    const now = this.now();
    const record: ViewTokenRecord = {
      id: newViewTokenId(),
      addressId,
      tokenDigest: digestSecret(viewToken),
      label: input.label ?? null,
      createdAt: now,
      expiresAt: input.expires_in_seconds === undefined ? null : now + input.expires_in_seconds * 1000,
    };
    const max = this.config.maxViewTokens;
    switch (await this.storage.insertViewToken(record, max, now)) {
      case 'address_not_found':
        throw errors.addressNotFound();
      case 'limit':
        throw errors.viewTokenLimit({ max });
      case 'ok':
        return { view_token: { ...toWireViewToken(record), token: viewToken } };
    }
  }

  async listViewTokens(addressId: string, token: string | undefined): Promise<ViewTokenList> {
    await this.authenticate(addressId, token, 'manage view tokens');
    const records = await this.storage.listViewTokens(addressId, this.now());
    return { view_tokens: records.map(toWireViewToken) };
  }

  async revokeViewToken(addressId: string, token: string | undefined, tokenId: string): Promise<void> {
    await this.authenticate(addressId, token, 'manage view tokens');
    if (namesNothing(tokenId) || !(await this.storage.deleteViewToken(addressId, tokenId))) {
      throw errors.viewTokenNotFound();
    }
    this.waiters.wake(addressId);
  }

  async updateAddress(
    addressId: string,
    token: string | undefined,
    input: UpdateAddress,
  ): Promise<{ address: Address }> {
    await this.authenticate(addressId, token, 'change it');
    if (input.name === undefined && input.task_id === undefined && input.expires_in_seconds === undefined)
      throw errors.invalidRequest({ message: 'Give at least one of name, task_id and expires_in_seconds.' });
    refuseNul('name', input.name);
    refuseNul('task_id', input.task_id);
    const now = this.now();
    const changes: AddressChanges = {};
    if (input.name !== undefined) changes.name = input.name;
    if (input.task_id !== undefined) changes.taskId = input.task_id;
    if (input.expires_in_seconds === null) {
      if (this.config.maxTtlSeconds !== undefined) {
        throw errors.invalidRequest({
          message: `expires_in_seconds cannot be null on this service: every address has a lifetime of at most ${this.config.maxTtlSeconds} s.`,
        });
      }
      changes.expiresAt = null;
    } else if (input.expires_in_seconds !== undefined) {
      this.checkLifetimeCap(input.expires_in_seconds);
      changes.expiresAt = now + input.expires_in_seconds * 1000;
    }
    const updated = await this.storage.updateAddress(addressId, changes, now);
    if (!updated) throw errors.addressNotFound();
    this.waiters.wake(addressId); // held polls and streams take the new expiry
    return { address: toWireAddress(updated) };
  }

  // --- senders (docs/api.md §3.2) --------------------------------------------------------

  async putSender(addressId: string, token: string | undefined, input: PutSender): Promise<SenderResponse> {
    await this.authenticate(addressId, token, 'manage its sender');
    const now = this.now();
    const record = sealSender(addressId, input, this.box(), now);
    if (!(await this.storage.putSender(record, now))) throw errors.addressNotFound();
    return { sender: toWireSender(record) };
  }

  async getSender(addressId: string, token: string | undefined): Promise<SenderResponse> {
    await this.authenticate(addressId, token, 'manage its sender');
    const record = await this.storage.getSender(addressId);
    if (!record) throw errors.senderNotFound();
    return { sender: toWireSender(record) };
  }

  async clearSender(addressId: string, token: string | undefined): Promise<void> {
    await this.authenticate(addressId, token, 'manage its sender');
    if (!(await this.storage.deleteSender(addressId))) throw errors.senderNotFound();
  }

  /**
   * One request to the inbox of an address with a sender (docs/api.md §3.2), carried out as
   * the sender policy (senders/policy.ts) plans it: answered exactly once, stored at most
   * once. `capture` makes the event of a request as sent, from the bytes to keep.
   */
  async receiveFromSender(
    address: AddressRecord,
    request: SenderRequest,
    capture: CaptureRequest,
  ): Promise<SenderOutcome> {
    const sender = address.hasSender ? await this.loadSender(address) : null;
    if (sender === null) return { kind: 'no_sender' };
    if (sender === 'key_mismatch') {
      this.metrics.senderDeliveries.inc({ provider: 'unknown', outcome: 'unavailable' });
      return { kind: 'refused', error: errors.senderKeyMismatch(), keyMismatch: true };
    }
    const provider = sender.provider.name;
    const verdict = sender.provider.verify(request, sender.settings, this.now());
    const plan = planSenderRequest({ provider, enforce: sender.enforce }, request, verdict);
    this.metrics.senderDeliveries.inc({ provider, outcome: plan.outcome });
    switch (plan.kind) {
      case 'handshake':
        return { kind: 'handshake', status: plan.status, contentType: plan.contentType, body: plan.body };
      case 'refused':
        return { kind: 'refused', error: plan.error, keyMismatch: false };
      case 'store': {
        const input = capture(plan.type, plan.body);
        const data = { ...(input.data as Record<string, unknown>), verification: plan.verification };
        const result = await this.deliver(address, { ...input, data }, plan.key, 'http');
        return { kind: 'delivered', ...result };
      }
    }
  }

  // --- deliveries ----------------------------------------------------------------------

  /** The live address that owns an email local part (case-insensitive), or null. */
  async findAddressBySlug(slug: string): Promise<AddressRecord | null> {
    return namesNothing(slug) ? null : this.storage.getAddressBySlug(slug.toLowerCase(), this.now());
  }

  /** Whether the address can take one more event now (SMTP answers 452 at RCPT if not). */
  hasRoom(addressId: string): Promise<boolean> {
    return this.storage.hasRoom(addressId, EVENT_CAPACITY);
  }

  /**
   * Queues one event for an already-authorised address. The one `deliver` path: the
   * inbox route, raw capture, email and MCP all end here, so every delivery wakes polls.
   * `idempotencyKey` is the header form; `input.dedupe_key` the body form (docs/api.md §3).
   */
  async deliver(
    address: AddressRecord,
    input: DeliveryInput,
    idempotencyKey: string | undefined,
    transport: Transport,
    /**
     * The delivery that settles a waiting callback (its completion or its expiry event):
     * never refused for capacity. Each waiting callback settles once, so the room it may
     * take beyond the queue's bounds is one event per waiting callback (docs/api.md §3.6).
     */
    settlesCallback = false,
    /** From admitToInbox, for an address read lately: 'address_changed' answers as a miss. */
    admittedBy?: InboxCredentials,
  ): Promise<DeliveryResult> {
    const key = effectiveIdempotencyKey(idempotencyKey, input.dedupe_key);
    // The inbox also takes any body as it is (raw capture), with a type of its own.
    const alternative = transport === 'http' ? 'or deliver it with ?raw=1, which stores any body as sent' : undefined;
    refuseNul('type', input.type, alternative);
    refuseNul('source', input.source, alternative);
    const createdAt = this.now();
    const id = input.dataFor ? newEventId(createdAt) : undefined;
    const data = id && input.dataFor ? input.dataFor(id) : input.data;
    const parts = id && input.partsFor ? input.partsFor(id) : input.parts;
    if (parts) for (const part of parts) refuseNul(`The filename of attachment ${part.part}`, part.filename);
    if (jsonDepthExceeds(data, MAX_JSON_DEPTH)) {
      throw errors.invalidRequest({ message: `data is nested more than ${MAX_JSON_DEPTH} levels deep.` });
    }
    const result = await this.storage.appendEvent({
      event: {
        id,
        addressId: address.id,
        type: input.type ?? 'message.received',
        source: input.source ?? 'https',
        dataJson: JSON.stringify(data ?? null),
        metadataJson: input.metadata === undefined ? null : JSON.stringify(input.metadata),
        dedupeKey: key === undefined ? null : storedIdempotencyKey(key),
        // docs/api.md §3: an HTTP delivery's key never finds an email, nor an email's an HTTP delivery.
        keyScope: transport === 'email' ? 'email' : 'http',
        createdAt,
        parts,
      },
      capacity: settlesCallback ? EVENT_CAPACITY + this.config.maxCallbacks : EVENT_CAPACITY,
      maxBytes: settlesCallback ? 0 : this.config.maxBytesPerAddress,
      admittedBy,
    });
    // Not an outcome: the inbox asks afresh, and counts what that delivery comes to.
    if (result.status === 'address_changed') throw errors.inboxNotFound();
    this.metrics.deliveries.inc({ transport, outcome: result.status });
    switch (result.status) {
      case 'created':
        this.waiters.wake(address.id);
        // The stored text is JSON.stringify(input.data): serialised again, the value gives it back.
        return toDelivery(202, result.event, data ?? null);
      case 'duplicate':
        this.metrics.duplicates.inc();
        return toDelivery(200, result.event);
      case 'queue_full':
        throw errors.queueFull({ retryAfterSeconds: 60 });
      case 'bytes_full':
        // The same code as a full count (the queue is full, by bytes); the metric tells them apart.
        throw errors.addressBytesFull({ maxBytes: this.config.maxBytesPerAddress, retryAfterSeconds: 60 });
      case 'address_not_found':
        // Deleted or expired between authorisation and the append.
        throw transport === 'http' ? errors.inboxNotFound() : errors.addressNotFound();
    }
  }

  /** A stored part of an email event (its raw message is part -1), bearer-protected as the events URL. */
  async getEmailPart(
    addressId: string,
    token: string | undefined,
    eventId: string,
    part: number | 'raw',
  ): Promise<EmailPart> {
    await this.authenticate(addressId, token);
    const found = namesNothing(eventId)
      ? null
      : await this.storage.getEmailPart(addressId, eventId, part === 'raw' ? RAW_EMAIL_PART : part);
    if (!found) throw errors.emailPartNotFound();
    return found;
  }

  // --- streaming (docs/api.md §4.1) -------------------------------------------------------

  /**
   * Opens a stream of the queue: authenticates as the events URL does (404, then 401),
   * then subscribes `onChange` to the address's wake-ups — the long-poll's Waiters, not a
   * second mechanism — before the caller's first read, so a commit during the replay still
   * calls it. `onChange` also runs on shutdown (then `closing` is true). A wake-up hands
   * over the read it shares with the address's other readers (fromShared); the caller
   * reads for itself past it, one read at a time. An open stream takes one of the waiter
   * slots of its address and of `client` until it is closed.
   */
  async openStream(
    addressId: string,
    token: string | undefined,
    cursor: () => number | undefined,
    onChange: (read?: Promise<SharedRead>) => void,
    client = '',
    ackSince?: () => number | undefined,
    filter?: EventFilter,
  ): Promise<EventStreamHandle> {
    let { expiresAt } = await this.authenticate(addressId, token);
    const release = this.admitWaiter(addressId, client, token);
    const unsubscribe = this.waiters.subscribe(addressId, cursor, onChange, ackSince);
    const waiters = this.waiters;
    const maxBytes = this.config.maxPageBytes;
    return {
      expiresInMs: () => (expiresAt === null ? null : expiresAt - this.now()),
      get closing() {
        return waiters.isClosing;
      },
      readAfter: async (after, limit, bytes = maxBytes) => {
        // Deleted or expired: the stream ends with `gone` (docs/api.md §2: behaves as deleted).
        const current = await this.storage.getAddress(addressId, this.now());
        if (!current) return 'gone';
        if ((await this.accessOf(current, token!)) === null) return 'revoked';
        expiresAt = current.expiresAt; // a PATCH may have changed it
        const page = await this.storage.listEvents({
          addressId,
          after,
          limit,
          maxBytes: Math.min(bytes, maxBytes),
          filter,
          scanLimit: filter ? this.config.filterScanEvents : undefined,
        });
        return { records: page.events, hasMore: page.hasMore, scannedTo: page.scannedTo };
      },
      fromShared: (read, after, limit, bytes = maxBytes) => {
        if (!read.address) return 'gone';
        // A read token is re-checked here against the address just read; a view token needs
        // a look-up, which readAfter makes.
        // A filtered stream reads for itself: the shared read is unfiltered.
        if (!token?.startsWith(READ_TOKEN_PREFIX) || filter) return null;
        if (!secretMatches(token, read.address.readTokenDigest)) return 'revoked';
        expiresAt = read.address.expiresAt;
        return sliceShared(read, after, limit, Math.min(bytes, maxBytes));
      },
      acksSince: (since, upTo) => this.storage.listAcknowledged({ addressId, since, upTo, limit: EVENT_CAPACITY }),
      close: () => {
        unsubscribe();
        release();
      },
    };
  }

  // --- housekeeping --------------------------------------------------------------------

  /** Retention and expiry (docs/api.md §9.1, docs/api.md §2); run by the sweeper. */
  async purge(): Promise<void> {
    const now = this.now();
    const result = await this.storage.purge(now, now - RETENTION_MS);
    this.metrics.eventsPurged.inc(result.eventsPurged);
    for (const id of result.expiredAddressIds) this.waiters.wake(id);
  }
}
