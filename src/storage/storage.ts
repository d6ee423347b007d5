// The storage interface: the domain operations Roost needs, with no SQL above this line.
// Two engines implement it: sqlite/ (embedded, one process) and postgres/ (shared by
// many instances). Every rule that concurrency could break — gapless sequences, one winner
// per idempotency key, capacity and eviction — is enforced inside the engine's transaction.
// An operation that takes more than three values, or may gain more (filters), takes one
// parameter object; test/storage/ runs every operation on both engines.

/** All times are milliseconds since the epoch (UTC). */
export interface AddressRecord {
  id: string;
  slug: string;
  name: string;
  taskId: string | null;
  email: string;
  createdAt: number;
  expiresAt: number | null;
  /** Hex SHA-256 of the read token; the token itself is never stored. */
  readTokenDigest: string;
  /** Hex SHA-256 of the inbox secret; the secret itself is never stored. */
  ingressSecretDigest: string;
  /** The inbox secret a rotation replaced, still accepted until previousIngressUntil; else null. */
  previousIngressDigest: string | null;
  previousIngressUntil: number | null;
  /** Whether a sender is set (getSender): read with the address, so an inbox without one needs no look-up. */
  hasSender: boolean;
}

/**
 * The sender of an address (docs/api.md §3.2). Its secrets arrive sealed by the core with
 * the server key: storage never holds or sees one in clear.
 */
export interface SenderRecord {
  addressId: string;
  provider: string;
  enforce: boolean;
  toleranceSeconds: number;
  /** How many secrets sealedSecrets holds (shown by GET; the secrets never are). */
  secretCount: number;
  sealedSecrets: string;
  /** Meta's verify token, sealed; else null. */
  sealedVerifyToken: string | null;
  /** Settings that are no secret (hmac_sha256: header, encoding, prefix) as JSON text, or null. */
  optionsJson: string | null;
  updatedAt: number;
}

/** An acknowledgement: which event, and when (milliseconds). */
export interface AckRecord {
  id: string;
  sequence: number;
  acknowledgedAt: number;
}

/** A read-only credential of one address (GET the address and its events, nothing else). */
export interface ViewTokenRecord {
  id: string;
  addressId: string;
  /** Hex SHA-256 of the token; the token itself is never stored. */
  tokenDigest: string;
  label: string | null;
  createdAt: number;
  expiresAt: number | null;
}

/** What PATCH may change; a field left out stays as it is. */
export interface AddressChanges {
  name?: string;
  taskId?: string | null;
  expiresAt?: number | null;
}

export interface EventRecord {
  id: string;
  addressId: string;
  sequence: number;
  type: string;
  source: string;
  /** The delivered `data` as JSON text, exactly as serialised at delivery (key order kept). */
  dataJson: string;
  /** `metadata` as JSON text, or null when none was given. */
  metadataJson: string | null;
  dedupeKey: string | null;
  createdAt: number;
  acknowledgedAt: number | null;
}

/**
 * Where a transport may keep what it writes of a record an engine shares between reads
 * (sqlite/recent-events.ts): such a record never changes. Not enumerable, so the record
 * still equals, copies and serialises as the plain record it is.
 */
export const WRITTEN = Symbol('written');

export type SharedEventRecord = EventRecord & { [WRITTEN]: Uint8Array | undefined };

/** Makes `record` (a record the caller just made and hands over) one that reads may share. */
export function shareEventRecord(record: EventRecord): SharedEventRecord {
  return Object.defineProperty(record, WRITTEN, { value: undefined, writable: true }) as SharedEventRecord;
}

export const isSharedEventRecord = (record: EventRecord): record is SharedEventRecord => WRITTEN in record;

/**
 * Which deliveries an idempotency key is matched among (docs/api.md §3): those that came
 * over HTTP (the inbox, raw capture, MCP) or those that came by email. A key never finds an
 * event of the other scope, so an inbox URL cannot read an email by its Message-ID.
 */
export type KeyScope = 'http' | 'email';

/** A new event as the service hands it over; the engine gives it its id (newEventId). */
export interface AppendInput {
  addressId: string;
  type: string;
  source: string;
  dataJson: string;
  metadataJson: string | null;
  dedupeKey: string | null;
  /** Where dedupeKey is unique: a repeat is only found among events of the same scope. */
  keyScope: KeyScope;
  /** Also the "now" against which the address's expiry is checked. */
  createdAt: number;
  /** An id minted by newEventId(createdAt) beforehand, for data that names its own event; else the engine mints one. */
  id?: string;
  /**
   * An email's parts, stored in the event's own transaction: a reader that sees the event
   * can read them, and an append that fails or is refused stores none. A duplicate stores
   * those its held event lacks (one stored by a version that wrote them apart).
   */
  parts?: EmailPart[];
}

/** The part number of an email event's raw message; its attachments are 0…. */
export const RAW_EMAIL_PART = -1;

/**
 * A stored part of an email event (migration "email parts"): the raw message (part -1) or
 * an attachment (0…). The bytes are kept once per sha256 and go with the last event naming them.
 */
export interface EmailPart {
  part: number;
  sha256: string;
  contentType: string;
  filename: string | null;
  bytes: Uint8Array;
}

/** What replaceReadToken takes. */
export interface ReplaceReadTokenParams {
  id: string;
  /** The new token's digest. */
  digest: string;
  now: number;
  /** The address's view tokens are deleted in the same transaction. */
  revokeViewTokens: boolean;
}

/** What listAcknowledged takes. */
export interface ListAcknowledgedParams {
  addressId: string;
  /** Acknowledged at or after this time (milliseconds). */
  since: number;
  /** Of events with sequence ≤ upTo. */
  upTo: number;
  limit: number;
}

/** What replaceIngressSecret takes. */
export interface ReplaceIngressSecretParams {
  id: string;
  /** The new secret's digest. */
  digest: string;
  /** Until when the current secret stays accepted as the previous one; null: not at all. */
  previousUntil: number | null;
  now: number;
}

/** What takeToken takes. */
export interface TakeTokenParams {
  key: string;
  limit: number;
  periodMs: number;
  now: number;
}

/** The inbox credentials an address admitted a delivery with (AppendParams.admittedBy). */
export type InboxCredentials = Pick<
  AddressRecord,
  'ingressSecretDigest' | 'previousIngressDigest' | 'previousIngressUntil'
>;

/** What appendEvent takes: the event and the bounds of its address's queue. */
export interface AppendParams {
  event: AppendInput;
  /**
   * Set when the delivery was admitted on recentAddress (so never on SQLite, whose
   * recentAddress answers null): the append goes in only while the address, under its row
   * lock, still has these credentials and no sender; otherwise it answers 'address_changed'
   * and writes nothing.
   */
  admittedBy?: InboxCredentials;
  /** Events the address may hold (docs/api.md §3). */
  capacity: number;
  /** Bytes its events may hold (eventSize; parts do not count); 0 or omitted: no bound. */
  maxBytes?: number;
}

/**
 * Which events a page holds, beyond its cursor. Each field is one condition of the page
 * query (page-query.ts), written once for both engines.
 */
export interface EventFilter {
  /** Only events without acknowledged_at. */
  unacked?: boolean;
  /** Types: each exact, or a prefix where it ends in `*` (one of them matches). */
  types?: readonly string[];
  /** The exact source. */
  source?: string;
  /** A callback's id or key: metadata.callback_id or metadata.callback_key equals it. */
  callback?: string;
  /** A JSON text that `data` contains, as PostgreSQL's jsonb `@>` decides (json-contains.ts). */
  dataContains?: string;
  /** The same against data.body, or the JSON its text holds when it is a string. */
  bodyContains?: string;
}

/** What listEvents takes. */
export interface ListEventsParams {
  addressId: string;
  /** The cursor: only sequences above it. */
  after: number;
  limit: number;
  /** Stored bytes of data and metadata a page holds at most (its first event always goes). */
  maxBytes?: number;
  filter?: EventFilter;
  /**
   * With a filter on content (any but unacked): at most this many events past `after` are
   * looked at; where it stops a page, scanLimited says so.
   */
  scanLimit?: number;
}

export type AppendResult =
  | { status: 'created'; event: EventRecord }
  /** The key matched an event still held: that event, unchanged. */
  | { status: 'duplicate'; event: EventRecord }
  /** 1000 events held and none acknowledged: nothing was written. */
  | { status: 'queue_full' }
  /** The event would take the address past its byte cap, even without its acknowledged events: nothing was written. */
  | { status: 'bytes_full' }
  /** Unknown, deleted or expired. */
  | { status: 'address_not_found' }
  /** Its inbox credentials or its sender changed since it admitted the delivery (AppendParams.admittedBy). */
  | { status: 'address_changed' };

export interface EventPageRecord {
  events: EventRecord[];
  /** Whether events with a higher sequence exist beyond the page (unacknowledged ones, for such a page). */
  hasMore: boolean;
  /**
   * The highest sequence the address has given out (0 before its first event), read no
   * earlier than the page: at least the sequence of every event in it.
   */
  latestSequence: number;
  /**
   * With a filter on content, when the page holds every match the scan found: the highest
   * sequence scanned (the next read starts past it). Undefined when a match was left over.
   */
  scannedTo?: number;
  /** The scan bound stopped the page before the end of the queue (hasMore is then true). */
  scanLimited?: boolean;
}

export interface TokenBucketResult {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Milliseconds until the bucket is full again. */
  resetMs: number;
  /** Milliseconds until the next token, when refused. */
  retryAfterMs: number;
}

export interface PurgeResult {
  /** Ids of the expired addresses removed (with their events). */
  expiredAddressIds: string[];
  /** Events removed because they outlived retention. */
  eventsPurged: number;
}

/** Where a callback stands (docs/api.md §3.6): it leaves `waiting` once, and never comes back. */
export type CallbackStatus = 'waiting' | 'completed' | 'expired' | 'cancelled';

/** A one-shot callback URL of an address (docs/api.md §3.6). */
export interface CallbackRecord {
  id: string;
  addressId: string;
  /** The caller's own key, unique in the address, or null. */
  key: string | null;
  label: string | null;
  /** Hex SHA-256 of the URL's secret; the secret itself is never stored. */
  secretDigest: string;
  status: CallbackStatus;
  createdAt: number;
  expiresAt: number;
  completedAt: number | null;
  /** The completing delivery: its event id and sequence. */
  eventId: string | null;
  eventSequence: number | null;
  /** Deliveries stored for it (duplicates not counted). */
  deliveries: number;
  /** `complete_when` as JSON text, or null (the first delivery completes). */
  completeWhenJson: string | null;
  /** `human` (question, options, allow_comment) as JSON text, or null. */
  humanJson: string | null;
  /** A person's answer (answer, comment, answered_at) as JSON text, once answered. */
  answerJson: string | null;
}

/** What createCallback takes. */
export interface CreateCallbackParams {
  callback: CallbackRecord;
  /** Waiting callbacks the address may hold (ROOST_MAX_CALLBACKS). */
  maxWaiting: number;
  now: number;
}

export type CreateCallbackResult =
  | { status: 'created'; callback: CallbackRecord }
  /** A callback with this key exists: it, unchanged (create is idempotent on key). */
  | { status: 'existing'; callback: CallbackRecord }
  | { status: 'limit' }
  | { status: 'address_not_found' };

/** What listCallbacks takes: every field given narrows the list. */
export interface ListCallbacksParams {
  addressId: string;
  ids?: string[];
  key?: string;
  keyPrefix?: string;
  status?: CallbackStatus;
  limit: number;
}

/** What completeCallback takes. */
export interface CompleteCallbackParams {
  addressId: string;
  id: string;
  eventId: string;
  eventSequence: number;
  answerJson: string | null;
  now: number;
}

/** Reported by onExternalChange when any address may have changed unseen (not an id: ids begin with addr_). */
export const ANY_ADDRESS = '*';

export interface Storage {
  /** Which engine, for the start-up line and /readyz: "sqlite" or "postgres". */
  readonly engine: 'sqlite' | 'postgres';
  /** A human description without secrets, e.g. the file path or the database host. */
  readonly description: string;

  /** Inserts a new address; 'slug_taken' lets the caller draw another slug. */
  insertAddress(address: AddressRecord): Promise<'ok' | 'slug_taken'>;
  /** The live address with this id, or null when unknown, deleted or expired at `now`. */
  getAddress(id: string, now: number): Promise<AddressRecord | null>;
  /**
   * The address as this process read it lately, live at `now`, without asking the database,
   * or null: only an engine whose rows other processes change keeps them (PostgreSQL; SQLite's
   * getAddress is already exact and in memory). Trusted only to admit an inbox delivery whose
   * append carries the credentials it was admitted with (AppendParams.admittedBy).
   */
  recentAddress(id: string, now: number): AddressRecord | null;
  /** The live address with this slug (the email local part, lower case), or null. */
  getAddressBySlug(slug: string, now: number): Promise<AddressRecord | null>;
  /** Removes the address, its events and its secrets at once. False when it did not exist. */
  deleteAddress(id: string): Promise<boolean>;

  /**
   * Credentials and mutable fields. Each changes the live address at `now` in one transaction
   * and returns it as it now is, or null when it is unknown, deleted or expired. Engines
   * shared by several processes report the change (onExternalChange), so that what an old
   * credential holds open anywhere is re-checked.
   */
  updateAddress(id: string, changes: AddressChanges, now: number): Promise<AddressRecord | null>;
  replaceReadToken(params: ReplaceReadTokenParams): Promise<AddressRecord | null>;
  /** The current secret becomes the previous one, accepted until `previousUntil` (null: not at all). */
  replaceIngressSecret(params: ReplaceIngressSecretParams): Promise<AddressRecord | null>;

  /** Sets (or replaces) the sender of the live address at `now`; false when it is unknown, deleted or expired. */
  putSender(sender: SenderRecord, now: number): Promise<boolean>;
  /** The sender of an address, or null when none is set. */
  getSender(addressId: string): Promise<SenderRecord | null>;
  /** Removes the sender of an address; false when none was set. */
  deleteSender(addressId: string): Promise<boolean>;

  /** Stores a view token unless the address holds `max` live ones already. */
  insertViewToken(token: ViewTokenRecord, max: number, now: number): Promise<'ok' | 'limit' | 'address_not_found'>;
  /** The address's view tokens that have not expired at `now`, oldest first. */
  listViewTokens(addressId: string, now: number): Promise<ViewTokenRecord[]>;
  /** The unexpired view token of this address with this digest, or null. */
  findViewToken(addressId: string, digest: string, now: number): Promise<ViewTokenRecord | null>;
  /** False when the address has no such token. */
  deleteViewToken(addressId: string, tokenId: string): Promise<boolean>;

  /**
   * Appends one event in one transaction: checks the address is live, returns the held
   * event for a repeated dedupe key, makes room by the append policy (append-policy.ts:
   * capacity and byte cap, evicting the oldest acknowledged events only), allocates
   * sequence = previous maximum + 1 (never reused), stores its email parts. Resolves only
   * once durable.
   */
  appendEvent(params: AppendParams): Promise<AppendResult>;
  /** Whether one more event could be accepted now (not full of unacknowledged events). */
  hasRoom(addressId: string, capacity: number): Promise<boolean>;
  /**
   * Events with sequence > after that pass the filter, ascending, at most `limit`, and no
   * more than fit in `maxBytes` of stored data and metadata (no bound when omitted) — but
   * always the first one, whatever its size.
   */
  listEvents(params: ListEventsParams): Promise<EventPageRecord>;
  /** Sets acknowledged_at if unset; returns the event (first acknowledged_at kept), or null. */
  ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null>;
  /** Acknowledges every unacknowledged event with sequence ≤ upTo; returns how many. */
  ackUpTo(addressId: string, upTo: number, now: number): Promise<number>;
  /**
   * The acknowledged events with sequence ≤ upTo whose acknowledged_at is at or after
   * `since`, by sequence, at most `limit` (what a stream tells its readers, docs/api.md §4.1).
   * Acknowledging wakes the address's waiters; engines shared by several processes announce it.
   */
  listAcknowledged(params: ListAcknowledgedParams): Promise<AckRecord[]>;

  /** One part of an event of this address, or null. */
  getEmailPart(addressId: string, eventId: string, part: number): Promise<EmailPart | null>;

  /** Removes expired addresses (with their events) and events created before `retainAfter`. */
  purge(now: number, retainAfter: number): Promise<PurgeResult>;

  /**
   * Callbacks (docs/api.md §3.6). Create is idempotent on (address, key) by the unique
   * index; completion is one conditional UPDATE of a waiting callback, so it happens at most
   * once whatever races it; expiry and cancellation are the same from `waiting`.
   */
  createCallback(params: CreateCallbackParams): Promise<CreateCallbackResult>;
  /** The callback of this address with this id (any status), or null. */
  getCallback(addressId: string, id: string): Promise<CallbackRecord | null>;
  /** The address's callbacks that match, oldest first, at most `limit`. */
  listCallbacks(params: ListCallbacksParams): Promise<CallbackRecord[]>;
  /** Counts one stored delivery. */
  countCallbackDelivery(addressId: string, id: string): Promise<void>;
  /** Completes a waiting, unexpired callback; null when it was not waiting (someone else won). */
  completeCallback(params: CompleteCallbackParams): Promise<CallbackRecord | null>;
  /** Closes a waiting or completed callback's URL; the record as it now is, or null when unknown. */
  cancelCallback(addressId: string, id: string): Promise<CallbackRecord | null>;
  /** Waiting callbacks whose expiry has passed at `now`, at most `limit`, soonest first. */
  dueCallbacks(now: number, limit: number): Promise<CallbackRecord[]>;
  /** Marks a waiting callback expired; false when it was no longer waiting. */
  expireCallback(addressId: string, id: string): Promise<boolean>;
  /** Removes callbacks that left `waiting` before `before` (completed, expired or cancelled); returns how many. */
  purgeCallbacks(before: number): Promise<number>;

  /** Takes one token from the bucket `key` (limit tokens, refilled evenly over periodMs). */
  takeToken(params: TakeTokenParams): Promise<TokenBucketResult>;

  /**
   * Engines shared by several processes report commits made elsewhere (an append or a
   * delete), so that local long-polls wake. The report carries no data: a lost one costs
   * latency, never correctness. The id ANY_ADDRESS means reports may have been lost (the
   * engine reconnected): wake every local waiter once. Returns an unsubscribe function.
   */
  onExternalChange?(listener: (addressId: string) => void): () => void;

  /**
   * Engines shared by several processes: whether reports of commits made elsewhere arrive
   * (for /readyz: polls held here would otherwise wait for their timeouts).
   */
  readonly wakeupsArriving?: boolean;

  /** Resolves when the storage answers; rejects otherwise (for /readyz). */
  ping(): Promise<void>;
  /** Finishes pending writes and closes. */
  close(): Promise<void>;
}

/** What an event counts against its address's byte cap: its stored text, in UTF-8 bytes. */
export function eventSize(input: Pick<AppendInput, 'type' | 'source' | 'dataJson' | 'metadataJson' | 'dedupeKey'>) {
  return (
    Buffer.byteLength(input.dataJson) +
    Buffer.byteLength(input.type) +
    Buffer.byteLength(input.source) +
    (input.metadataJson === null ? 0 : Buffer.byteLength(input.metadataJson)) +
    (input.dedupeKey === null ? 0 : input.dedupeKey.length)
  );
}
