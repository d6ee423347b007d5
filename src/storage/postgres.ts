// The shared engine: PostgreSQL through node-postgres, for any number of Roost instances
// on one database. Every rule that concurrency could break is settled inside PostgreSQL:
// - the append transaction locks the address row by bumping `last_sequence`, so appends
//   to one address queue behind each other across instances: gapless sequences, one
//   winner per idempotency key (a unique index backs it up), capacity and eviction;
// - a committed append is announced with `NOTIFY roost_wake, '<addressId>'` right after
//   its commit, batched per turn of the event loop (not inside the append's transaction:
//   a NOTIFY takes a database-wide lock through its transaction's commit, which would make
//   every append commit, and wait for its WAL flush, one at a time); deletes and expiries
//   NOTIFY inside their transaction. Each instance keeps one LISTEN connection, outside
//   the pool, that feeds onExternalChange so that polls held anywhere wake;
// - the create rate-limit bucket is a row, taken under its row lock, so all instances
//   share one bucket per client (docs/api.md §9);
// - purges run on one instance at a time (a transaction-scoped advisory lock per batch,
//   which holds through a transaction pooler; others skip).
// Connection failures become 503 `unavailable`; the pool and the listener reconnect on
// their own, so a database restart is survived without restarting Roost.
// All SQL of the engine is in this file (the schema is in postgres-migrations.ts; waiting
// for the database and migrating it, in postgres-start.ts).
import pg from 'pg';
import type { Logger } from 'pino';
import { takeFromBucket } from './token-bucket.js';
import { newEventId } from './event-ids.js';
import {
  beginSql,
  ConnectionSettingError,
  connectionSettings,
  sessionSettingsSql,
  UnnamedStatementClient,
  type PoolMode,
} from './postgres-connection-options.js';
import { ADVISORY_LOCKS, DatabaseStartError, describeDatabase, prepareDatabase } from './postgres-start.js';
import {
  databaseUnavailable,
  isConnectionLost,
  isRetryable,
  isUnavailableFailure,
  isUniqueViolation,
  storageError,
} from './postgres-errors.js';
import { WAKE_CHANNEL, WakeListener, type ListenerHeartbeat } from './postgres-listener.js';
import { Batches } from './batches.js';
import {
  ADDRESS_COLUMNS,
  EVENT_COLUMNS,
  SENDER_COLUMNS,
  insertedEvent,
  toAddress,
  toEvent,
  toSender,
  toViewToken,
  type AddressRow,
  type EventRow,
  type SenderRow,
  type ViewTokenRow,
} from './rows.js';
import {
  type AddressChanges,
  eventSize,
  type AddressRecord,
  type AppendInput,
  type AppendResult,
  type EmailPart,
  type EventPageRecord,
  type EventRecord,
  type PurgeResult,
  type SenderRecord,
  type Storage,
  type TokenBucketResult,
  type ViewTokenRecord,
} from './storage.js';

export type { ListenerHeartbeat } from './postgres-listener.js';

/** What the engine takes from the configuration (the names are config.ts's, which supplies them). */
export interface PostgresOptions {
  /** postgres:// or postgresql:// URL; required. */
  databaseUrl?: string;
  pgPoolSize: number;
  /** statement_timeout in ms; 0 means none. */
  pgStatementTimeoutMs: number;
  pgConnectTimeoutMs: number;
  /** A direct (or session-pooled) URL for the LISTEN connection; databaseUrl when unset. */
  pgListenUrl?: string;
  /** How connections reach the server (postgres-connection-options.ts); `auto` detects a pooler. */
  pgPoolMode: PoolMode;
  /** How long start waits for a database that is not ready (postgres-start.ts). */
  pgStartTimeoutMs: number;
}

export { ADVISORY_LOCKS };
const { namespace: LOCK_NAMESPACE, purge: PURGE_LOCK } = ADVISORY_LOCKS;

/**
 * Rows removed per statement by purge, so that no sweep holds many locks, or the disk, for
 * long: expired addresses are emptied a slice of events at a time before they go.
 */
const PURGE_BATCH_ADDRESSES = 500;
const PURGE_BATCH_EVENTS = 1000;
/**
 * Append batches (batches.ts) run two at a time, each on its own pooled connection: one
 * travels and is executed while the other waits for its WAL flush. One statement holds at
 * most 500 events or 8 MiB, so that a burst of large deliveries is split.
 */
const APPEND_BATCHES = { inFlight: 2, maxItems: 500, maxWeight: 8 * 1024 * 1024 } as const;
/** Address look-ups (every delivery's inbox check) likewise, a few batches at a time. */
const LOOKUP_BATCHES = { inFlight: 2, maxItems: 500 } as const;
/** How often (at most) one instance clears full rate buckets, which need no row. */
const BUCKET_CLEANUP_EVERY_MS = 60_000;
/**
 * How much longer than statement_timeout the client waits for an answer before it gives
 * the connection up. statement_timeout is enforced by the server, so a server that is
 * stalled (stopped, swapping, partitioned away) never sends it: this bound does.
 */
const ANSWER_GRACE_MS = 2_000;

const LIVE = '(expires_at IS NULL OR expires_at > $2)';

function pageSql(unacknowledged: boolean): string {
  return `
    WITH sized AS (
      SELECT sequence, row_number() OVER w AS n,
             sum(octet_length(data) + coalesce(octet_length(metadata), 0)) OVER w AS running
      FROM events WHERE address_id = $1 AND sequence > $2${unacknowledged ? ' AND acknowledged_at IS NULL' : ''}
      WINDOW w AS (ORDER BY sequence ROWS UNBOUNDED PRECEDING)
      ORDER BY sequence LIMIT $3
    )
    SELECT ${EVENT_COLUMNS}, (SELECT count(*) FROM sized)::int AS candidates,
           (SELECT last_sequence FROM addresses WHERE id = $1) AS latest
    FROM events
    WHERE address_id = $1
      AND sequence IN (SELECT sequence FROM sized WHERE n <= $4 AND (n = 1 OR running <= $5))
    ORDER BY sequence`;
}

const SQL = {
  insertAddress: `
    INSERT INTO addresses (id, slug, name, task_id, email, created_at, expires_at, read_token_digest, ingress_secret_digest)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
  // Columns named, not *: a prepared statement whose result columns change (a later
  // migration run by another instance during a rolling deploy) fails until re-prepared.
  // The n-th row answers the n-th (id, now) pair; a pair without a row found nothing live.
  addressesById: `
    SELECT ${ADDRESS_COLUMNS}, wanted.n::int AS n
    FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS wanted(address_id, at, n)
    JOIN addresses ON addresses.id = wanted.address_id
    WHERE addresses.expires_at IS NULL OR addresses.expires_at > wanted.at`,
  addressBySlug: `SELECT ${ADDRESS_COLUMNS} FROM addresses WHERE slug = $1 AND ${LIVE}`,
  // Events go with it (ON DELETE CASCADE). The DELETE waits for the address row lock that
  // a racing append holds, so that append's event is deleted too; an append that comes
  // after finds no row. Either way no event outlives its address.
  deleteAddress: `
    WITH gone AS (DELETE FROM addresses WHERE id = $1 RETURNING id)
    SELECT pg_notify('${WAKE_CHANNEL}', id) FROM gone`,

  // Credentials and mutable fields of a live address; each change is announced, so that
  // every instance re-checks what an old credential holds open.
  updateAddress: `
    WITH changed AS (
      UPDATE addresses SET name = COALESCE($3, name),
                           task_id = CASE WHEN $4::boolean THEN $5 ELSE task_id END,
                           expires_at = CASE WHEN $6::boolean THEN $7::bigint ELSE expires_at END
      WHERE id = $1 AND ${LIVE}
      RETURNING ${ADDRESS_COLUMNS}
    )
    SELECT changed.*, pg_notify('${WAKE_CHANNEL}', id) FROM changed`,
  replaceReadToken: `
    WITH changed AS (
      UPDATE addresses SET read_token_digest = $3 WHERE id = $1 AND ${LIVE} RETURNING ${ADDRESS_COLUMNS}
    )
    SELECT changed.*, pg_notify('${WAKE_CHANNEL}', id) FROM changed`,
  replaceIngressSecret: `
    UPDATE addresses SET previous_ingress_digest = CASE WHEN $4::bigint IS NULL THEN NULL ELSE ingress_secret_digest END,
                         previous_ingress_until = $4::bigint, ingress_secret_digest = $3
    WHERE id = $1 AND ${LIVE}
    RETURNING ${ADDRESS_COLUMNS}`,
  // The address row lock orders concurrent inserts of one address, so the count holds.
  lockLiveAddress: `SELECT id FROM addresses WHERE id = $1 AND ${LIVE} FOR UPDATE`,
  forgetExpiredViewTokens: 'DELETE FROM view_tokens WHERE address_id = $1 AND expires_at <= $2',
  countViewTokens: 'SELECT count(*) AS n FROM view_tokens WHERE address_id = $1',
  insertViewToken: `
    INSERT INTO view_tokens (id, address_id, token_digest, label, created_at, expires_at)
    VALUES ($1, $2, $3, $4, $5, $6)`,
  viewTokens: `
    SELECT id, address_id, token_digest, label, created_at, expires_at FROM view_tokens
    WHERE address_id = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY created_at, id`,
  viewToken: `
    SELECT id, address_id, token_digest, label, created_at, expires_at FROM view_tokens
    WHERE address_id = $1 AND token_digest = $2 AND (expires_at IS NULL OR expires_at > $3)`,
  // The flag and the row change in one statement: an instance reading the address after it
  // commits sees both, so no instance needs to be told (there is no address cache here).
  putSender: `
    WITH live AS (UPDATE addresses SET has_sender = true WHERE id = $1 AND ${LIVE} RETURNING id)
    INSERT INTO senders (${SENDER_COLUMNS})
    SELECT id, $3, $4, $5, $6, $7, $8, $9, $10 FROM live
    ON CONFLICT (address_id) DO UPDATE SET provider = excluded.provider, enforce = excluded.enforce,
      tolerance_seconds = excluded.tolerance_seconds, secret_count = excluded.secret_count,
      sealed_secrets = excluded.sealed_secrets, sealed_verify_token = excluded.sealed_verify_token,
      options = excluded.options, updated_at = excluded.updated_at
    RETURNING address_id`,
  sender: `SELECT ${SENDER_COLUMNS} FROM senders WHERE address_id = $1`,
  deleteSender: `
    WITH gone AS (DELETE FROM senders WHERE address_id = $1 RETURNING address_id)
    UPDATE addresses SET has_sender = false WHERE id IN (SELECT address_id FROM gone) RETURNING id`,
  deleteViewToken: `
    WITH gone AS (DELETE FROM view_tokens WHERE address_id = $1 AND id = $2 RETURNING address_id)
    SELECT pg_notify('${WAKE_CHANNEL}', address_id) FROM gone`,

  // Every append that arrives while the previous batches run, in one statement (one round
  // trip, one transaction, one WAL flush). `locked` takes the addresses' row locks in id
  // order, so that batches on any number of instances cannot deadlock one another. Each
  // address's events are then numbered in arrival order (the input's ordinality) after the
  // highest sequence it has handed out: an event goes in while the queue cannot be full
  // (fewer sequences handed out than its capacity, as in the full transaction) and the
  // bytes stay under the cap, and only while every earlier one of its address went in too
  // (`fits`, a prefix). Left out, for the full transaction to decide one at a time: an
  // address that is unknown, deleted or expired at the delivery's time, a key the address
  // already holds, anything past the caps. The NOT EXISTS reads the statement's snapshot,
  // which may predate a racing append of the same key that committed while this one
  // waited for a lock: then the key's unique index refuses the INSERT, the statement
  // rolls back whole, and every append of the batch runs on its own. The caller sends at
  // most one append per (address, key): repeats inside a batch wait for the first.
  appendBatch: `
    WITH input AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                           $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[])
        WITH ORDINALITY AS t(id, address_id, type, source, data, metadata, dedupe_key,
                             created_at, size_bytes, capacity, max_bytes, key_scope, n)
    ),
    locked AS MATERIALIZED (
      SELECT id, last_sequence, stored_bytes, expires_at FROM addresses
      WHERE id = ANY($2::text[]) ORDER BY id FOR UPDATE
    ),
    candidates AS (
      SELECT i.*, l.last_sequence, l.stored_bytes,
             row_number() OVER w AS k, sum(i.size_bytes) OVER w AS bytes_so_far
      FROM input i JOIN locked l ON l.id = i.address_id
      WHERE (l.expires_at IS NULL OR l.expires_at > i.created_at)
        AND (i.dedupe_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM events e
          WHERE e.address_id = i.address_id AND e.key_scope = i.key_scope AND e.dedupe_key = i.dedupe_key))
      WINDOW w AS (PARTITION BY i.address_id ORDER BY i.n ROWS UNBOUNDED PRECEDING)
    ),
    accepted AS (
      SELECT * FROM (
        SELECT c.*, bool_and(c.last_sequence + c.k <= c.capacity
                             AND (c.max_bytes = 0 OR c.stored_bytes + c.bytes_so_far <= c.max_bytes))
                      OVER (PARTITION BY c.address_id ORDER BY c.n ROWS UNBOUNDED PRECEDING) AS fits
        FROM candidates c
      ) AS checked
      WHERE fits
    ),
    bumped AS (
      UPDATE addresses a SET last_sequence = a.last_sequence + per.events, stored_bytes = a.stored_bytes + per.bytes
      FROM (SELECT address_id, count(*) AS events, sum(size_bytes) AS bytes FROM accepted GROUP BY address_id) AS per
      WHERE a.id = per.address_id
    ),
    inserted AS (
      INSERT INTO events (${EVENT_COLUMNS}, size_bytes, key_scope)
      SELECT id, address_id, last_sequence + k, type, source, data, metadata, dedupe_key, created_at, NULL, size_bytes,
             key_scope
      FROM accepted
      RETURNING id, sequence
    )
    SELECT id, sequence FROM inserted`,

  // The full append transaction, in order. The UPDATE takes the address row lock (held until
  // COMMIT) and hands out the next sequence; it finds no row when the address is unknown,
  // deleted or expired at the delivery's time.
  bumpSequence: `
    UPDATE addresses SET last_sequence = last_sequence + 1
    WHERE id = $1 AND ${LIVE}
    RETURNING last_sequence, stored_bytes`,
  // Oldest first, with their sizes: what may make room under the byte cap.
  acknowledgedBySize: `
    SELECT id, size_bytes FROM events WHERE address_id = $1 AND acknowledged_at IS NOT NULL ORDER BY sequence`,
  evictMany: 'DELETE FROM events WHERE id = ANY($1::text[])',
  addBytes: 'UPDATE addresses SET stored_bytes = stored_bytes + $2 WHERE id = $1',
  // Runs after the lock, so it sees every append to this address that committed before.
  // A key is matched only among events of its scope (docs/api.md §3, migration 6).
  eventByKey: `SELECT ${EVENT_COLUMNS} FROM events WHERE address_id = $1 AND key_scope = $3 AND dedupe_key = $2`,
  occupancy: `
    SELECT count(*) AS held,
           (SELECT id FROM events WHERE address_id = $1 AND acknowledged_at IS NOT NULL
            ORDER BY sequence LIMIT 1) AS oldest_acknowledged
    FROM events WHERE address_id = $1`,
  evict: 'DELETE FROM events WHERE id = $1 RETURNING size_bytes',
  insertEvent: `
    INSERT INTO events (${EVENT_COLUMNS}, size_bytes, key_scope) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10, $11)`,

  // An email's parts (migration 4), in its append's transaction. A blob already held is not
  // sent again (a message to several addresses, a repeat); the parts of a repeat that its
  // event has already are kept as they are. Held FOR KEY SHARE until the commit: the last
  // other part of a blob may be going at this moment, and its trigger (migration 7) waits
  // for this transaction before it decides whether the blob goes too.
  blobsHeld: 'SELECT sha256 FROM email_blobs WHERE sha256 = ANY($1::text[]) FOR KEY SHARE',
  insertBlob: 'INSERT INTO email_blobs (sha256, bytes) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING',
  insertParts: `
    INSERT INTO email_parts (event_id, part, sha256, content_type, filename)
    SELECT $1, t.part, t.sha256, t.content_type, t.filename
    FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[]) AS t(part, sha256, content_type, filename)
    ON CONFLICT (event_id, part) DO NOTHING`,
  // The wake-ups of the appends committed in one turn of the event loop, sent after their
  // commits in a transaction of their own (see the top of this file).
  announce: `SELECT pg_notify('${WAKE_CHANNEL}', id) FROM unnest($1::text[]) AS id`,

  hasRoom: `
    SELECT count(*) < $2 OR EXISTS (
      SELECT 1 FROM events WHERE address_id = $1 AND acknowledged_at IS NOT NULL
    ) AS room
    FROM events WHERE address_id = $1`,
  // A page bounded by count and by bytes: `sized` numbers the candidates ($3 = limit + 1)
  // and sums their sizes (octet_length reads a TOASTed value's size, not the value); only
  // the events kept are read — the first always, then each while the sum stays within $5.
  // More candidates than events returned means has_more. The address's last_sequence comes
  // in the same statement (one snapshot): at least every sequence of the page.
  page: pageSql(false),
  // Only events without acknowledged_at, filtered on the page's own index scan, which the
  // address's capacity bounds: an index of their own would cost every append a write.
  unacknowledgedPage: pageSql(true),
  // For an empty page, which has no row to carry it.
  latestSequence: 'SELECT last_sequence FROM addresses WHERE id = $1',
  // COALESCE keeps the first acknowledged_at (docs/api.md §4: acknowledging again is a no-op).
  ack: `
    UPDATE events SET acknowledged_at = COALESCE(acknowledged_at, $3)
    WHERE id = $2 AND address_id = $1
    RETURNING ${EVENT_COLUMNS}`,
  ackUpTo:
    'UPDATE events SET acknowledged_at = $3 WHERE address_id = $1 AND sequence <= $2 AND acknowledged_at IS NULL',

  // Held until its batch's transaction ends, on whichever server connection that is.
  tryPurgeLock: 'SELECT pg_try_advisory_xact_lock($1, $2) AS locked',
  // SKIP LOCKED: an address locked by a racing delete is left for the next sweep rather
  // than waited for. The events go by cascade; the count reads them before it runs.
  purgeExpiredAddresses: `
    WITH expired AS (
      SELECT id FROM addresses WHERE expires_at IS NOT NULL AND expires_at <= $1
      ORDER BY expires_at LIMIT ${PURGE_BATCH_ADDRESSES}
      FOR UPDATE SKIP LOCKED
    ),
    gone AS (DELETE FROM addresses WHERE id IN (SELECT id FROM expired) RETURNING id)
    SELECT id,
           (SELECT count(*) FROM events WHERE address_id IN (SELECT id FROM expired)) AS events,
           pg_notify('${WAKE_CHANNEL}', id) AS notified
    FROM gone`,
  purgeEventsOfExpired: `
    DELETE FROM events WHERE id IN (
      SELECT id FROM events WHERE address_id IN (
        SELECT id FROM addresses WHERE expires_at IS NOT NULL AND expires_at <= $1 LIMIT ${PURGE_BATCH_ADDRESSES}
      )
      LIMIT ${PURGE_BATCH_EVENTS}
      FOR UPDATE SKIP LOCKED
    )`,
  // The bytes they held come off their addresses' totals in the same statement.
  purgeOldEvents: `
    WITH gone AS (
      DELETE FROM events WHERE id IN (
        SELECT id FROM events WHERE created_at < $1
        ORDER BY created_at LIMIT ${PURGE_BATCH_EVENTS}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING address_id, size_bytes
    ),
    freed AS (
      UPDATE addresses SET stored_bytes = stored_bytes - per.bytes
      FROM (SELECT address_id, sum(size_bytes) AS bytes FROM gone GROUP BY address_id) AS per
      WHERE addresses.id = per.address_id
    )
    SELECT count(*)::int AS purged FROM gone`,

  // Creates the row (full: `limit` tokens) if missing, and either way locks it until
  // COMMIT: concurrent takes from any instance queue on this row.
  lockBucket: `
    INSERT INTO rate_buckets (key, tokens, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key
    RETURNING tokens, updated_at`,
  saveBucket: 'UPDATE rate_buckets SET tokens = $2, updated_at = $3 WHERE key = $1',
  // A bucket untouched for a whole period is full again: its row can go.
  forgetFullBuckets: `
    DELETE FROM rate_buckets WHERE key IN (
      SELECT key FROM rate_buckets WHERE updated_at < $1 LIMIT 1000 FOR UPDATE SKIP LOCKED
    )`,

  ping: 'SELECT 1',
  // A wake-up whose payload names no address: the listener's proof that NOTIFY reaches it.
  probeWake: `SELECT pg_notify('${WAKE_CHANNEL}', $1)`,
} as const;

/**
 * The engine's statements run as named prepared statements: each pooled connection parses
 * and plans one once instead of on every call. Planning the append's statement was most of
 * PostgreSQL's CPU per delivery (BENCHMARKS.md, History). Migrations and
 * other one-off SQL stay unnamed, and so does everything through a transaction pooler
 * (UnnamedStatementClient drops the names).
 */
const STATEMENT_NAMES = new Map<string, string>(Object.entries(SQL).map(([key, text]) => [text, `roost_${key}`]));

function statement(text: string, values?: unknown[]): pg.QueryConfig {
  const name = STATEMENT_NAMES.get(text);
  return name === undefined ? { text, values } : { name, text, values };
}

// node-postgres returns int8 as a string (it may exceed 2^53). Our bigints are
// milliseconds, sequences and counts, all far below 2^53: read them as numbers, for this
// engine's connections only (not by changing pg's global parsers).
const INT8_OID = 20;
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : (pg.types.getTypeParser(oid, format) as unknown)) as typeof pg.types.getTypeParser,
};

/** What a transaction's work decides: commit and return, or roll back and return. */
type Outcome<T> = { commit: T } | { rollback: T };

/** An address look-up waiting for its batch. */
interface QueuedLookup {
  id: string;
  now: number;
  resolve: (address: AddressRecord | null) => void;
  reject: (error: unknown) => void;
}

/** One append, with its event's id and size. */
interface Append {
  input: AppendInput;
  eventId: string;
  size: number;
  capacity: number;
  maxBytes: number;
}

/** An append waiting for its batch, with what its caller awaits. */
interface QueuedAppend extends Append {
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

// --- the engine ------------------------------------------------------------------------

export class PostgresStorage implements Storage {
  readonly engine = 'postgres' as const;
  readonly description: string;
  private readonly pool: pg.Pool;
  private readonly listener: WakeListener;
  private readonly changeListeners = new Set<(addressId: string) => void>();
  private lastBucketCleanup = 0;
  private closing: Promise<void> | undefined;
  /** Addresses with an append committed in this turn, to be announced to other instances. */
  private toAnnounce = new Set<string>();
  private announcing: Promise<void> = Promise.resolve();
  /**
   * Appends, and address look-ups, that arrive together go as one statement. One waits
   * for a batch to take it no longer than for a pooled connection (pgConnectTimeoutMs):
   * then it is `unavailable`, as it would be in a full pool.
   */
  private readonly appends: Batches<QueuedAppend>;
  private readonly addressLookups: Batches<QueuedLookup>;
  /** Whether statements are named and settings per session, or unnamed and per transaction. */
  readonly poolMode: 'session' | 'transaction';
  /** What opens a transaction: BEGIN, with the statement timeout when it cannot be per session. */
  private readonly begin: string;
  /** Through a transaction pooler, a lone statement also runs in a transaction, which carries the timeout. */
  private readonly timeoutPerTransaction: boolean;

  /**
   * Waits for the database, brings its schema to this build's (postgres-start.ts), then
   * opens the pool and the LISTEN connection, proving that a NOTIFY sent through the pool
   * reaches it. `options.listenerHeartbeat` is for tests, which cannot wait 30 s.
   */
  static async open(
    config: PostgresOptions,
    logger?: Logger,
    options: { listenerHeartbeat?: ListenerHeartbeat } = {},
  ): Promise<PostgresStorage> {
    const prepared = await prepareDatabase(config, logger).catch((error: unknown) => {
      if (error instanceof DatabaseStartError || error instanceof ConnectionSettingError) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(`Cannot open PostgreSQL at ${describeDatabase(config.databaseUrl ?? '')}: ${reason}`, {
        cause: error,
      });
    });
    const storage = new PostgresStorage(config, prepared.mode, logger, options.listenerHeartbeat);
    try {
      await storage.listener.start();
    } catch (error) {
      await storage.close();
      // At start the operator needs the real cause, not the 503 a request would get.
      const reason = (error as { cause?: unknown }).cause ?? error;
      throw new Error(
        `Cannot open PostgreSQL at ${storage.description}: ${reason instanceof Error ? reason.message : String(reason)}`,
        { cause: error },
      );
    }
    return storage;
  }

  private constructor(
    config: PostgresOptions,
    mode: 'session' | 'transaction',
    private readonly logger?: Logger,
    listenerHeartbeat?: ListenerHeartbeat,
  ) {
    if (!config.databaseUrl) throw new Error('PostgresStorage needs DATABASE_URL');
    this.description = describeDatabase(config.databaseUrl);
    this.poolMode = mode;
    const waited = (item: { reject: (error: unknown) => void }) =>
      item.reject(databaseUnavailable(new Error('no database connection became free in time')));
    this.appends = new Batches<QueuedAppend>((batch) => this.appendBatch(batch), {
      ...APPEND_BATCHES,
      weight: (append) => append.size,
      maxWaitMs: config.pgConnectTimeoutMs,
      expire: waited,
    });
    this.addressLookups = new Batches<QueuedLookup>((batch) => this.lookUpAddresses(batch), {
      ...LOOKUP_BATCHES,
      maxWaitMs: config.pgConnectTimeoutMs,
      expire: waited,
    });
    const common: pg.ClientConfig = {
      application_name: 'roost',
      // Bounds both opening a connection and waiting for a free one in a full pool.
      connectionTimeoutMillis: config.pgConnectTimeoutMs,
      keepAlive: true,
      types: TYPES,
    };
    const answerTimeout = config.pgStatementTimeoutMs > 0 ? config.pgStatementTimeoutMs + ANSWER_GRACE_MS : undefined;
    const timeout = config.pgStatementTimeoutMs;
    this.begin = beginSql(mode, timeout);
    this.timeoutPerTransaction = mode === 'transaction' && timeout > 0;
    this.pool = new pg.Pool({
      ...connectionSettings(config.databaseUrl, 'DATABASE_URL').config,
      ...common,
      max: config.pgPoolSize,
      query_timeout: answerTimeout,
      // The statement timeout is set by a statement, never as a startup parameter (which a
      // pooler refuses); through a transaction pooler, inside each transaction instead.
      // pg-pool waits for the promise onConnect returns before handing the client out; its types say void.
      // eslint-disable-next-line @typescript-eslint/no-misused-promises
      onConnect: mode === 'session' ? (client) => client.query(sessionSettingsSql(timeout)) : undefined,
      Client: mode === 'transaction' ? UnnamedStatementClient : undefined,
    });
    // pg-pool listens for 'error' on a client only while it is idle, and a pg client emits
    // 'error' when its connection dies; a checked-out client with no listener of its own
    // would take the process down (an unhandled 'error' event). This listener stays for
    // the client's life; the query in flight fails on its own and the request answers 503.
    this.pool.on('connect', (client) => {
      client.on('error', (error) =>
        this.logger?.warn({ err: error }, 'PostgreSQL connection lost; replaced on demand'),
      );
    });
    // An idle client's error also reaches the pool, which drops that client.
    this.pool.on('error', () => {});
    const listenSetting = config.pgListenUrl ? 'ROOST_PG_LISTEN_URL' : 'DATABASE_URL';
    this.listener = new WakeListener(
      {
        ...connectionSettings(config.pgListenUrl ?? config.databaseUrl, listenSetting).config,
        ...common,
        query_timeout: config.pgConnectTimeoutMs,
      },
      (addressId) => {
        for (const listener of this.changeListeners) listener(addressId);
      },
      logger,
      listenerHeartbeat,
      { setting: listenSetting, send: (payload) => this.query(SQL.probeWake, [payload]) },
    );
  }

  // --- plumbing ------------------------------------------------------------------------

  /**
   * A pooled connection. Failing to get one is always "unavailable" (503), whatever the
   * cause: refused, timed out, the database not accepting connections, too many clients.
   */
  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (error) {
      throw databaseUnavailable(error);
    }
  }

  /** One statement on its own (autocommit). */
  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await this.queryAsIs<R>(text, values);
    } catch (error) {
      throw storageError(error);
    }
  }

  /** As query, with the database's error as it came (a failed connect is already 503). */
  private async queryAsIs<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      const db = await this.connect();
      try {
        const query = statement(text, values);
        const result = this.timeoutPerTransaction
          ? await this.inOwnTransaction<R>(db, query)
          : await db.query<R>(query);
        db.release();
        return result;
      } catch (error) {
        // A connection-level failure destroys the connection rather than pooling it again;
        // so does one left inside a transaction that it cannot roll back.
        const broken =
          isConnectionLost(error) ||
          (this.timeoutPerTransaction &&
            (await db.query('ROLLBACK').then(
              () => false,
              () => true,
            )));
        db.release(broken ? (error as Error) : undefined);
        if (attempt < 3 && isRetryable(error)) continue;
        throw error;
      }
    }
  }

  private async inOwnTransaction<R extends pg.QueryResultRow>(
    db: pg.PoolClient,
    query: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    await db.query(this.begin);
    const result = await db.query<R>(query);
    await db.query('COMMIT');
    return result;
  }

  /**
   * Runs `work` in one transaction on one pooled connection. A deadlock or serialization
   * failure runs it again (nothing of the failed try was committed). A connection that
   * fails mid-way is destroyed rather than returned to the pool, without a ROLLBACK when it
   * is lost (the server rolls back a session that ends; a stalled one would not answer).
   * A COMMIT whose answer never came has an unknown outcome: it answers 503 like any
   * other failure, and the sender's retry with its idempotency key settles it.
   */
  private async transaction<T>(work: (db: pg.PoolClient) => Promise<Outcome<T>>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const db = await this.connect();
      try {
        await db.query(this.begin);
        const outcome = await work(db);
        await db.query('commit' in outcome ? 'COMMIT' : 'ROLLBACK');
        db.release();
        return 'commit' in outcome ? outcome.commit : outcome.rollback;
      } catch (error) {
        const broken =
          isConnectionLost(error) ||
          (await db.query('ROLLBACK').then(
            () => false,
            () => true,
          ));
        db.release(broken ? (error instanceof Error ? error : true) : undefined);
        if (attempt < 3 && isRetryable(error)) continue;
        throw storageError(error);
      }
    }
  }

  // --- addresses -----------------------------------------------------------------------

  async insertAddress(address: AddressRecord): Promise<'ok' | 'slug_taken'> {
    try {
      await this.query(SQL.insertAddress, [
        address.id,
        address.slug,
        address.name,
        address.taskId,
        address.email,
        address.createdAt,
        address.expiresAt,
        address.readTokenDigest,
        address.ingressSecretDigest,
      ]);
      return 'ok';
    } catch (error) {
      if (isUniqueViolation(error, 'addresses_slug_key')) return 'slug_taken';
      throw error;
    }
  }

  /** Batched (every delivery asks, just before its append): one statement for those that arrive together. */
  getAddress(id: string, now: number): Promise<AddressRecord | null> {
    return new Promise((resolve, reject) => this.addressLookups.add({ id, now, resolve, reject }));
  }

  private async lookUpAddresses(batch: QueuedLookup[]): Promise<void> {
    try {
      const { rows } = await this.query<AddressRow & { n: number }>(SQL.addressesById, [
        batch.map((l) => l.id),
        batch.map((l) => l.now),
      ]);
      const found = new Map<number, AddressRow>();
      for (const row of rows) found.set(row.n, row);
      batch.forEach((lookup, i) => {
        const row = found.get(i + 1);
        lookup.resolve(row ? toAddress(row) : null);
      });
    } catch (error) {
      for (const lookup of batch) lookup.reject(error);
    }
  }

  async getAddressBySlug(slug: string, now: number): Promise<AddressRecord | null> {
    const { rows } = await this.query<AddressRow>(SQL.addressBySlug, [slug, now]);
    return rows[0] ? toAddress(rows[0]) : null;
  }

  async deleteAddress(id: string): Promise<boolean> {
    const { rowCount } = await this.query(SQL.deleteAddress, [id]);
    return (rowCount ?? 0) > 0;
  }

  // --- credentials and mutable fields ---------------------------------------------------

  async updateAddress(id: string, changes: AddressChanges, now: number): Promise<AddressRecord | null> {
    const { rows } = await this.query<AddressRow>(SQL.updateAddress, [
      id,
      now,
      changes.name ?? null,
      changes.taskId !== undefined,
      changes.taskId ?? null,
      changes.expiresAt !== undefined,
      changes.expiresAt ?? null,
    ]);
    return rows[0] ? toAddress(rows[0]) : null;
  }

  async replaceReadToken(id: string, digest: string, now: number): Promise<AddressRecord | null> {
    const { rows } = await this.query<AddressRow>(SQL.replaceReadToken, [id, now, digest]);
    return rows[0] ? toAddress(rows[0]) : null;
  }

  async replaceIngressSecret(
    id: string,
    digest: string,
    previousUntil: number | null,
    now: number,
  ): Promise<AddressRecord | null> {
    const { rows } = await this.query<AddressRow>(SQL.replaceIngressSecret, [id, now, digest, previousUntil]);
    return rows[0] ? toAddress(rows[0]) : null;
  }

  async insertViewToken(
    token: ViewTokenRecord,
    max: number,
    now: number,
  ): Promise<'ok' | 'limit' | 'address_not_found'> {
    return this.transaction(async (db) => {
      if ((await db.query(SQL.lockLiveAddress, [token.addressId, now])).rowCount === 0)
        return { commit: 'address_not_found' as const };
      await db.query(SQL.forgetExpiredViewTokens, [token.addressId, now]);
      const { rows } = await db.query<{ n: number }>(SQL.countViewTokens, [token.addressId]);
      if (rows[0].n >= max) return { commit: 'limit' as const };
      await db.query(SQL.insertViewToken, [
        token.id,
        token.addressId,
        token.tokenDigest,
        token.label,
        token.createdAt,
        token.expiresAt,
      ]);
      return { commit: 'ok' as const };
    });
  }

  async putSender(sender: SenderRecord, now: number): Promise<boolean> {
    const { rowCount } = await this.query(SQL.putSender, [
      sender.addressId,
      now,
      sender.provider,
      sender.enforce,
      sender.toleranceSeconds,
      sender.secretCount,
      sender.sealedSecrets,
      sender.sealedVerifyToken,
      sender.optionsJson,
      sender.updatedAt,
    ]);
    return (rowCount ?? 0) > 0;
  }

  async getSender(addressId: string): Promise<SenderRecord | null> {
    const { rows } = await this.query<SenderRow>(SQL.sender, [addressId]);
    return rows[0] ? toSender(rows[0]) : null;
  }

  async deleteSender(addressId: string): Promise<boolean> {
    const { rowCount } = await this.query(SQL.deleteSender, [addressId]);
    return (rowCount ?? 0) > 0;
  }

  async listViewTokens(addressId: string, now: number): Promise<ViewTokenRecord[]> {
    const { rows } = await this.query<ViewTokenRow>(SQL.viewTokens, [addressId, now]);
    return rows.map(toViewToken);
  }

  async findViewToken(addressId: string, digest: string, now: number): Promise<ViewTokenRecord | null> {
    const { rows } = await this.query<ViewTokenRow>(SQL.viewToken, [addressId, digest, now]);
    return rows[0] ? toViewToken(rows[0]) : null;
  }

  async deleteViewToken(addressId: string, tokenId: string): Promise<boolean> {
    const { rowCount } = await this.query(SQL.deleteViewToken, [addressId, tokenId]);
    return (rowCount ?? 0) > 0;
  }

  // --- events --------------------------------------------------------------------------

  /**
   * Appends are batched (batches.ts): the appends that arrive while earlier batches run go
   * together as one statement (SQL.appendBatch). Each promise resolves only after the
   * COMMIT of the statement or transaction that stored its event.
   */
  appendEvent(input: AppendInput, capacity: number, maxBytes = 0): Promise<AppendResult> {
    // Time-led (newEventId): the primary key's index grows at its end.
    const append: Append = {
      input,
      eventId: input.id ?? newEventId(input.createdAt),
      size: eventSize(input),
      capacity,
      maxBytes,
    };
    // An email goes in a transaction of its own with its parts, whose bytes travel there as
    // binary parameters; in the batch's statement they would be bytea[] text, twice as
    // large, and up to megabytes of them would hold up every append sent with them.
    if (input.parts) return this.appendAlone(append);
    return new Promise<AppendResult>((resolve, reject) => this.appends.add({ ...append, resolve, reject }));
  }

  /**
   * One batch: its appends in one statement, except a repeat of a key that an earlier
   * append of the same batch carries (it waits for that one: docs/api.md §3, the first
   * event wins). What the statement left out runs through the full transaction, one append
   * at a time, after the batch has committed.
   */
  private async appendBatch(batch: QueuedAppend[]): Promise<void> {
    const first = new Map<string, QueuedAppend>();
    const sent: QueuedAppend[] = [];
    const repeats: Array<{ append: QueuedAppend; of: QueuedAppend }> = [];
    for (const append of batch) {
      const { addressId, dedupeKey, keyScope } = append.input;
      if (dedupeKey !== null) {
        // Keys are matched within their scope (docs/api.md §3.4): the same text from an
        // email and from HTTP names two deliveries.
        const key = `${addressId}\u0000${keyScope}\u0000${dedupeKey}`;
        const earlier = first.get(key);
        if (earlier) {
          repeats.push({ append, of: earlier });
          continue;
        }
        first.set(key, append);
      }
      sent.push(append);
    }
    const outcomes = new Map<QueuedAppend, Promise<AppendResult>>();
    let stored = new Map<string, number>();
    for (let attempt = 1; ; attempt++) {
      try {
        stored = await this.insertBatch(sent);
        break;
      } catch (error) {
        // Away or overloaded: every append of the batch would fail alike.
        if (isUnavailableFailure(error)) {
          const failure = storageError(error);
          for (const append of batch) append.reject(failure);
          return;
        }
        // A key that a racing batch committed after this statement's snapshot: the next
        // try sees it, and leaves that append to the full transaction (a duplicate).
        if (attempt < 3 && isUniqueViolation(error, 'events_by_dedupe_key')) continue;
        // Anything else (a value the database refuses) is settled per append, so that
        // one bad append fails only itself.
        break;
      }
    }
    for (const append of sent) {
      const sequence = stored.get(append.eventId);
      const outcome =
        sequence === undefined
          ? this.appendAlone(append)
          : Promise.resolve<AppendResult>({
              status: 'created',
              event: insertedEvent(append.input, append.eventId, sequence),
            });
      outcomes.set(append, outcome);
    }
    if (stored.size > 0)
      for (const append of sent) if (stored.has(append.eventId)) this.announce(append.input.addressId);
    for (const { append, of } of repeats) {
      const outcome = outcomes.get(of)!.then(
        (result) =>
          result.status === 'created' || result.status === 'duplicate'
            ? { status: 'duplicate' as const, event: result.event }
            : this.appendAlone(append),
        () => this.appendAlone(append),
      );
      outcomes.set(append, outcome);
    }
    for (const append of batch) outcomes.get(append)!.then(append.resolve, append.reject);
  }

  /** The batch statement: the sequence of each event it stored, by event id. */
  private async insertBatch(appends: QueuedAppend[]): Promise<Map<string, number>> {
    const columns: unknown[][] = Array.from({ length: 12 }, () => []);
    for (const { input, eventId, size, capacity, maxBytes } of appends) {
      columns[0].push(eventId);
      columns[1].push(input.addressId);
      columns[2].push(input.type);
      columns[3].push(input.source);
      columns[4].push(input.dataJson);
      columns[5].push(input.metadataJson);
      columns[6].push(input.dedupeKey);
      columns[7].push(input.createdAt);
      columns[8].push(size);
      columns[9].push(capacity);
      columns[10].push(maxBytes);
      columns[11].push(input.keyScope);
    }
    const { rows } = await this.queryAsIs<{ id: string; sequence: number }>(SQL.appendBatch, columns);
    const stored = new Map<string, number>();
    for (const row of rows) stored.set(row.id, row.sequence);
    return stored;
  }

  /** The full transaction for one append: it tells every case apart (full, duplicate, gone). */
  private async appendAlone({ input, eventId, size, capacity, maxBytes }: Append): Promise<AppendResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.transaction((db) =>
          this.appendTransaction(db, input, eventId, capacity, maxBytes, size),
        );
        if (result.status === 'created') this.announce(input.addressId);
        return result;
      } catch (error) {
        // The row lock already serialises appends to one address, so the key's unique
        // index should never fire; if it does, the other writer won: run again to return
        // its event as the duplicate (docs/api.md §3: exactly one 202 per key).
        if (attempt < 3 && isUniqueViolation(error, 'events_by_dedupe_key')) continue;
        throw error;
      }
    }
  }

  private async appendTransaction(
    db: pg.PoolClient,
    input: AppendInput,
    eventId: string,
    capacity: number,
    maxBytes: number,
    size: number,
  ): Promise<Outcome<AppendResult>> {
    const { parts } = input;
    if (parts && input.dedupeKey !== null) {
      // A repeat of an email commits the parts its event may lack (one stored by a version
      // that wrote them apart), so its key is looked up under the address row lock before
      // a sequence is handed out: a repeat must not use one up.
      const live = await db.query(statement(SQL.lockLiveAddress, [input.addressId, input.createdAt]));
      if (live.rowCount === 0) return { rollback: { status: 'address_not_found' } };
      const held = await db.query<EventRow>(
        statement(SQL.eventByKey, [input.addressId, input.dedupeKey, input.keyScope]),
      );
      if (held.rows[0]) {
        await this.insertParts(db, held.rows[0].id, parts);
        return { commit: { status: 'duplicate', event: toEvent(held.rows[0]) } };
      }
    }
    const bumped = await db.query<{ last_sequence: number; stored_bytes: string }>(
      statement(SQL.bumpSequence, [input.addressId, input.createdAt]),
    );
    if (bumped.rows.length === 0) return { rollback: { status: 'address_not_found' } };
    const sequence = bumped.rows[0].last_sequence;
    const held = Number(bumped.rows[0].stored_bytes);
    if (input.dedupeKey !== null && !parts) {
      const held = await db.query<EventRow>(
        statement(SQL.eventByKey, [input.addressId, input.dedupeKey, input.keyScope]),
      );
      // Roll back: the repeat must not use up a sequence number.
      if (held.rows[0]) return { rollback: { status: 'duplicate', event: toEvent(held.rows[0]) } };
    }
    let freed = 0;
    // An address holds at most as many events as sequences it has handed out, so while
    // those are below capacity there is nothing to count.
    if (sequence > capacity) {
      const { rows } = await db.query<{ held: number; oldest_acknowledged: string | null }>(
        statement(SQL.occupancy, [input.addressId]),
      );
      if (rows[0].held >= capacity) {
        // docs/api.md §3: make room by dropping the oldest acknowledged event, never an unacknowledged one.
        if (rows[0].oldest_acknowledged === null) return { rollback: { status: 'queue_full' } };
        const evicted = await db.query<{ size_bytes: string }>(statement(SQL.evict, [rows[0].oldest_acknowledged]));
        freed += Number(evicted.rows[0]?.size_bytes ?? 0);
      }
    }
    if (maxBytes > 0 && held - freed + size > maxBytes) {
      // The byte cap makes room the same way: the oldest acknowledged events, never others.
      const { rows } = await db.query<{ id: string; size_bytes: string }>(
        statement(SQL.acknowledgedBySize, [input.addressId]),
      );
      const evict: string[] = [];
      for (const row of rows) {
        if (held - freed + size <= maxBytes) break;
        evict.push(row.id);
        freed += Number(row.size_bytes);
      }
      if (held - freed + size > maxBytes) return { rollback: { status: 'bytes_full' } };
      await db.query(statement(SQL.evictMany, [evict]));
    }
    await db.query(statement(SQL.addBytes, [input.addressId, size - freed]));
    await db.query(
      statement(SQL.insertEvent, [
        eventId,
        input.addressId,
        sequence,
        input.type,
        input.source,
        input.dataJson,
        input.metadataJson,
        input.dedupeKey,
        input.createdAt,
        size,
        input.keyScope,
      ]),
    );
    if (parts) await this.insertParts(db, eventId, parts);
    return { commit: { status: 'created', event: insertedEvent(input, eventId, sequence) } };
  }

  /** Stores an event's email parts in the caller's transaction, keeping any it has already. */
  private async insertParts(db: pg.PoolClient, eventId: string, parts: readonly EmailPart[]): Promise<void> {
    // In sha256 order: transactions that store the same blobs take their locks alike.
    const digests = [...new Set(parts.map((p) => p.sha256))].sort();
    const held = await db.query<{ sha256: string }>(statement(SQL.blobsHeld, [digests]));
    const present = new Set(held.rows.map((r) => r.sha256));
    for (const digest of digests) {
      if (present.has(digest)) continue;
      const { bytes } = parts.find((p) => p.sha256 === digest)!;
      await db.query(
        statement(SQL.insertBlob, [digest, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]),
      );
    }
    await db.query(
      statement(SQL.insertParts, [
        eventId,
        parts.map((p) => p.part),
        parts.map((p) => p.sha256),
        parts.map((p) => p.contentType),
        parts.map((p) => p.filename),
      ]),
    );
  }

  /**
   * Tells the other instances that `addressId` has a new event, once its append has
   * committed. The wake-ups of one turn go out in one statement. A wake-up carries no data
   * and a lost one costs latency, never correctness: should this one fail (or the process
   * die first), polls held elsewhere answer at their timeout and find the event then.
   */
  private announce(addressId: string): void {
    if (this.toAnnounce.size === 0) setImmediate(() => this.sendAnnouncements());
    this.toAnnounce.add(addressId);
  }

  private sendAnnouncements(): void {
    const ids = [...this.toAnnounce];
    this.toAnnounce.clear();
    if (ids.length === 0 || this.closing) return;
    this.announcing = this.query(SQL.announce, [ids]).then(
      () => undefined,
      (error) =>
        this.logger?.warn(
          { err: error, addresses: ids.length },
          'could not announce new events to other instances; their polls answer at their timeout',
        ),
    );
  }

  async hasRoom(addressId: string, capacity: number): Promise<boolean> {
    const { rows } = await this.query<{ room: boolean }>(SQL.hasRoom, [addressId, capacity]);
    return rows[0].room;
  }

  async listEvents(
    addressId: string,
    after: number,
    limit: number,
    maxBytes = Number.MAX_SAFE_INTEGER,
    unacknowledgedOnly = false,
  ): Promise<EventPageRecord> {
    const page = unacknowledgedOnly ? SQL.unacknowledgedPage : SQL.page;
    const { rows } = await this.query<EventRow & { candidates: number; latest: number }>(page, [
      addressId,
      after,
      limit + 1,
      limit,
      maxBytes,
    ]);
    if (rows.length === 0) {
      const latest = await this.query<{ last_sequence: number }>(SQL.latestSequence, [addressId]);
      return { events: [], hasMore: false, latestSequence: latest.rows[0]?.last_sequence ?? 0 };
    }
    return { events: rows.map(toEvent), hasMore: rows[0].candidates > rows.length, latestSequence: rows[0].latest };
  }

  async ackEvent(addressId: string, eventId: string, now: number): Promise<EventRecord | null> {
    const { rows } = await this.query<EventRow>(SQL.ack, [addressId, eventId, now]);
    return rows[0] ? toEvent(rows[0]) : null;
  }

  async ackUpTo(addressId: string, upTo: number, now: number): Promise<number> {
    const { rowCount } = await this.query(SQL.ackUpTo, [addressId, upTo, now]);
    return rowCount ?? 0;
  }

  // --- email parts (migration 4) -------------------------------------------------------

  async getEmailPart(addressId: string, eventId: string, part: number): Promise<EmailPart | null> {
    const { rows } = await this.query<{ sha256: string; contentType: string; filename: string | null; bytes: Buffer }>(
      `SELECT p.sha256, p.content_type AS "contentType", p.filename, b.bytes
       FROM email_parts p JOIN events e ON e.id = p.event_id JOIN email_blobs b ON b.sha256 = p.sha256
       WHERE p.event_id = $1 AND p.part = $2 AND e.address_id = $3`,
      [eventId, part, addressId],
    );
    return rows[0] ? { part, ...rows[0] } : null;
  }

  // --- housekeeping --------------------------------------------------------------------

  /**
   * One instance purges at a time: each bounded batch is a transaction that first tries a
   * transaction-scoped advisory lock, and an instance that does not get it stops this sweep
   * (another is doing the work). The lock ends with its transaction, so it holds through a
   * transaction pooler, where consecutive statements may run on different server connections.
   */
  async purge(now: number, retainAfter: number): Promise<PurgeResult> {
    const result: PurgeResult = { expiredAddressIds: [], eventsPurged: 0 };
    const batch = <R extends pg.QueryResultRow>(text: string, values: unknown[]) =>
      this.transaction<pg.QueryResult<R> | undefined>(async (db) => {
        const { rows } = await db.query<{ locked: boolean }>(statement(SQL.tryPurgeLock, [LOCK_NAMESPACE, PURGE_LOCK]));
        if (!rows[0].locked) return { rollback: undefined };
        return { commit: await db.query<R>(statement(text, values)) };
      });
    for (;;) {
      const emptied = await batch(SQL.purgeEventsOfExpired, [now]);
      if (!emptied) return result;
      if (!emptied.rowCount) break;
      result.eventsPurged += emptied.rowCount;
    }
    for (;;) {
      const expired = await batch<{ id: string; events: number }>(SQL.purgeExpiredAddresses, [now]);
      if (!expired) return result;
      if (expired.rows.length === 0) break;
      result.expiredAddressIds.push(...expired.rows.map((r) => r.id));
      result.eventsPurged += expired.rows[0].events;
    }
    for (;;) {
      const old = await batch<{ purged: number }>(SQL.purgeOldEvents, [retainAfter]);
      if (!old) return result;
      if (!old.rows[0].purged) break;
      result.eventsPurged += old.rows[0].purged;
    }
    return result;
  }

  async takeToken(key: string, limit: number, periodMs: number, now: number): Promise<TokenBucketResult> {
    const result = await this.transaction(async (db) => {
      const { rows } = await db.query<{ tokens: number; updated_at: number }>(
        statement(SQL.lockBucket, [key, limit, now]),
      );
      const { next, result } = takeFromBucket(
        { tokens: rows[0].tokens, updatedAt: rows[0].updated_at },
        limit,
        periodMs,
        now,
      );
      await db.query(statement(SQL.saveBucket, [key, next.tokens, next.updatedAt]));
      return { commit: result };
    });
    if (now - this.lastBucketCleanup >= BUCKET_CLEANUP_EVERY_MS) {
      this.lastBucketCleanup = now;
      // Housekeeping only: a failure here must not fail the request that took the token.
      this.query(SQL.forgetFullBuckets, [now - periodMs]).catch(() => {});
    }
    return result;
  }

  // --- wake-ups across instances -------------------------------------------------------

  onExternalChange(listener: (addressId: string) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** The LISTEN connection's backend pid (tests terminate it to prove the reconnect). */
  listenerBackendPid(): Promise<number | undefined> {
    return this.listener.backendPid();
  }

  get listening(): boolean {
    return this.listener.connected;
  }

  /** Whether wake-ups from other instances arrive (the LISTEN connection is up and hears), give or take a reconnect. */
  get wakeupsArriving(): boolean {
    return this.listener.arriving;
  }

  // --- lifecycle -----------------------------------------------------------------------

  async ping(): Promise<void> {
    await this.query(SQL.ping);
  }

  close(): Promise<void> {
    if (!this.closing) {
      this.sendAnnouncements(); // the last appends' wake-ups still go out
      const announced = this.announcing;
      this.closing = (async () => {
        await announced;
        await this.listener.stop();
        await this.pool.end();
      })();
    }
    return this.closing;
  }
}
