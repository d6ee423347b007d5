// Numbered SQLite migrations, run in order at start. Never edit one that has landed (the
// checksums in test/storage/migrations.test.ts say when one did): add the next number.
// Numbers: 1–9 here and 1–7 in postgres/migrations.ts grew apart; from 10 on a number names
// the same change on both engines, and a change one engine does not need is recorded there
// under its number with empty SQL, so the next migration is the same number on both.

/**
 * The integer key of the address whose id is the statement's next parameter (migration 3):
 * events are indexed by it. SQLite evaluates this once per statement, one seek in the
 * addresses' unique index on id.
 */
export const KEY_OF_ID = '(SELECT key FROM addresses WHERE id = ?)';

export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
  /** A query whose single value says whether `sql` runs; the version is recorded either way. */
  onlyIf?: string;
}

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'addresses, events, rate buckets',
    sql: `
      CREATE TABLE addresses (
        id                    TEXT PRIMARY KEY,
        slug                  TEXT NOT NULL UNIQUE,
        name                  TEXT NOT NULL,
        task_id               TEXT,
        email                 TEXT NOT NULL,
        created_at            INTEGER NOT NULL,
        expires_at            INTEGER,
        read_token_digest     TEXT NOT NULL,
        ingress_secret_digest TEXT NOT NULL,
        -- The highest sequence ever given out here: sequences are never reused (docs/api.md §3).
        last_sequence         INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX addresses_expiry ON addresses (expires_at) WHERE expires_at IS NOT NULL;

      CREATE TABLE events (
        id              TEXT PRIMARY KEY,
        address_id      TEXT NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
        sequence        INTEGER NOT NULL,
        type            TEXT NOT NULL,
        source          TEXT NOT NULL,
        data            TEXT NOT NULL,
        metadata        TEXT,
        dedupe_key      TEXT,
        created_at      INTEGER NOT NULL,
        acknowledged_at INTEGER
      );
      CREATE UNIQUE INDEX events_by_sequence ON events (address_id, sequence);
      -- One event per idempotency key per address: the second writer cannot win.
      CREATE UNIQUE INDEX events_by_dedupe_key ON events (address_id, dedupe_key) WHERE dedupe_key IS NOT NULL;
      CREATE INDEX events_acknowledged ON events (address_id, sequence) WHERE acknowledged_at IS NOT NULL;
      CREATE INDEX events_by_age ON events (created_at);

      CREATE TABLE rate_buckets (
        key        TEXT PRIMARY KEY,
        tokens     REAL NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'sequence floor kept by a trigger, not by every append',
    // So that an append need not write its address row (a page at a random place per event),
    // the next sequence is max(MAX(events.sequence), last_sequence) + 1, and last_sequence
    // only has to remember
    // the sequences of events that are gone — which this trigger records for every way an
    // event can leave (eviction, retention, address deletion), in the same transaction.
    // A database from version 1 already satisfies the rule: last_sequence was the highest
    // sequence given out.
    sql: `
      CREATE TRIGGER events_removed AFTER DELETE ON events
      BEGIN
        UPDATE addresses SET last_sequence = OLD.sequence WHERE id = OLD.address_id AND last_sequence < OLD.sequence;
      END;
    `,
  },
  {
    version: 3,
    name: 'integer address keys in the event indexes',
    // Every append writes one leaf of events_by_sequence at its address's place: keyed by an
    // integer rather than the 27-character address id, a leaf holds more entries and splits
    // less often. The key is an explicit INTEGER PRIMARY KEY because VACUUM may
    // renumber an implicit rowid; a deleted address's key may be given out again, which is
    // safe because its events go in the same transaction. Events keep address_id too, so
    // that reading one needs no join. Both tables are rebuilt (the only way to change a key
    // or a foreign key in SQLite); the existing rowids are kept, so ids, sequences and the
    // order of events are unchanged.
    sql: `
      CREATE TABLE addresses_v3 (
        key                   INTEGER PRIMARY KEY,
        id                    TEXT NOT NULL UNIQUE,
        slug                  TEXT NOT NULL UNIQUE,
        name                  TEXT NOT NULL,
        task_id               TEXT,
        email                 TEXT NOT NULL,
        created_at            INTEGER NOT NULL,
        expires_at            INTEGER,
        read_token_digest     TEXT NOT NULL,
        ingress_secret_digest TEXT NOT NULL,
        last_sequence         INTEGER NOT NULL DEFAULT 0
      );
      INSERT INTO addresses_v3 (key, id, slug, name, task_id, email, created_at, expires_at, read_token_digest, ingress_secret_digest, last_sequence)
        SELECT rowid, id, slug, name, task_id, email, created_at, expires_at, read_token_digest, ingress_secret_digest, last_sequence FROM addresses;

      CREATE TABLE events_v3 (
        id              TEXT PRIMARY KEY,
        address_key     INTEGER NOT NULL REFERENCES addresses_v3 (key) ON DELETE CASCADE,
        address_id      TEXT NOT NULL,
        sequence        INTEGER NOT NULL,
        type            TEXT NOT NULL,
        source          TEXT NOT NULL,
        data            TEXT NOT NULL,
        metadata        TEXT,
        dedupe_key      TEXT,
        created_at      INTEGER NOT NULL,
        acknowledged_at INTEGER
      );
      INSERT INTO events_v3 (rowid, id, address_key, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at)
        SELECT e.rowid, e.id, a.rowid, e.address_id, e.sequence, e.type, e.source, e.data, e.metadata, e.dedupe_key, e.created_at, e.acknowledged_at
        FROM events e JOIN addresses a ON a.id = e.address_id
        ORDER BY e.rowid;

      DROP TRIGGER events_removed;
      DROP TABLE events;
      DROP TABLE addresses;
      -- Renaming addresses_v3 also renames the reference to it in events_v3.
      ALTER TABLE addresses_v3 RENAME TO addresses;
      ALTER TABLE events_v3 RENAME TO events;

      CREATE INDEX addresses_expiry ON addresses (expires_at) WHERE expires_at IS NOT NULL;
      CREATE UNIQUE INDEX events_by_sequence ON events (address_key, sequence);
      -- One event per idempotency key per address: the second writer cannot win.
      CREATE UNIQUE INDEX events_by_dedupe_key ON events (address_key, dedupe_key) WHERE dedupe_key IS NOT NULL;
      CREATE INDEX events_acknowledged ON events (address_key, sequence) WHERE acknowledged_at IS NOT NULL;
      CREATE INDEX events_by_age ON events (created_at);
      -- Migration 2's rule, on the new key.
      CREATE TRIGGER events_removed AFTER DELETE ON events
      BEGIN
        UPDATE addresses SET last_sequence = OLD.sequence WHERE key = OLD.address_key AND last_sequence < OLD.sequence;
      END;
    `,
  },
  {
    version: 4,
    name: 'event rowids led by the time: no index on event ids or on age',
    // Every event's rowid becomes a key in the range of its millisecond (event-ids.ts):
    // its created_at × 1,024 plus its rank among that millisecond's events. Ids are not
    // changed. The unique index on ids and events_by_age go: two B-trees fewer for every
    // commit to write. An event whose id
    // does not carry its created_at keeps its old rowid, below 2^32, where no millisecond's
    // range is, and unplaced_event_ids finds it by id: the ids of versions before time-led
    // ids, and time-led ids whose millisecond ended between minting the id and stamping
    // created_at. The key is an explicit INTEGER PRIMARY KEY (the rowid itself, which the
    // code names) because VACUUM may renumber an implicit rowid. roost_ms_of_id is msOfId,
    // registered by migrate(). The table is rebuilt, as in migration 3.
    sql: `
      CREATE TABLE events_v4 (
        key             INTEGER PRIMARY KEY,
        id              TEXT NOT NULL,
        address_key     INTEGER NOT NULL REFERENCES addresses (key) ON DELETE CASCADE,
        address_id      TEXT NOT NULL,
        sequence        INTEGER NOT NULL,
        type            TEXT NOT NULL,
        source          TEXT NOT NULL,
        data            TEXT NOT NULL,
        metadata        TEXT,
        dedupe_key      TEXT,
        created_at      INTEGER NOT NULL,
        acknowledged_at INTEGER
      );
      INSERT INTO events_v4 (key, id, address_key, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at)
        SELECT CASE WHEN ms = created_at AND ms * 1024 >= 4294967296 AND rank <= 1024 THEN ms * 1024 + rank - 1 ELSE old_key END,
               id, address_key, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at
        FROM (SELECT e.rowid AS old_key, e.*, roost_ms_of_id(e.id) AS ms,
                     ROW_NUMBER() OVER (PARTITION BY roost_ms_of_id(e.id) ORDER BY e.rowid) AS rank
              FROM events e)
        ORDER BY 1;

      -- The events that kept a low rowid, by id. A row goes with its event (trigger below).
      CREATE TABLE unplaced_event_ids (
        event_key INTEGER PRIMARY KEY,
        id        TEXT NOT NULL UNIQUE
      );
      INSERT INTO unplaced_event_ids (event_key, id) SELECT key, id FROM events_v4 WHERE key < 4294967296;

      DROP TRIGGER events_removed;
      DROP TABLE events;
      ALTER TABLE events_v4 RENAME TO events;

      CREATE UNIQUE INDEX events_by_sequence ON events (address_key, sequence);
      -- One event per idempotency key per address: the second writer cannot win.
      CREATE UNIQUE INDEX events_by_dedupe_key ON events (address_key, dedupe_key) WHERE dedupe_key IS NOT NULL;
      CREATE INDEX events_acknowledged ON events (address_key, sequence) WHERE acknowledged_at IS NOT NULL;
      -- Migration 2's rule, as in migration 3.
      CREATE TRIGGER events_removed AFTER DELETE ON events
      BEGIN
        UPDATE addresses SET last_sequence = OLD.sequence WHERE key = OLD.address_key AND last_sequence < OLD.sequence;
      END;
      CREATE TRIGGER unplaced_event_removed AFTER DELETE ON events WHEN OLD.key < 4294967296
      BEGIN
        DELETE FROM unplaced_event_ids WHERE event_key = OLD.key;
      END;
    `,
  },
  {
    version: 5,
    name: 'credentials: the previous inbox secret during a grace period, view tokens',
    sql: `
      ALTER TABLE addresses ADD COLUMN previous_ingress_digest TEXT;
      ALTER TABLE addresses ADD COLUMN previous_ingress_until INTEGER;

      CREATE TABLE view_tokens (
        id           TEXT PRIMARY KEY,
        address_id   TEXT NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
        token_digest TEXT NOT NULL UNIQUE,
        label        TEXT,
        created_at   INTEGER NOT NULL,
        expires_at   INTEGER
      );
      CREATE INDEX view_tokens_by_address ON view_tokens (address_id, created_at);
    `,
  },
  {
    version: 6,
    name: 'bytes held per event',
    // Each event's size (storage.ts eventSize). An address's total is their sum, read with
    // its queue state and then kept in the writer's memory (events-append.ts): a column kept
    // by triggers would cost every append a write of the address row.
    sql: `
      ALTER TABLE events ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
      UPDATE events SET size_bytes = length(CAST(data AS BLOB)) + length(CAST(type AS BLOB)) + length(CAST(source AS BLOB))
        + COALESCE(length(CAST(metadata AS BLOB)), 0) + COALESCE(length(dedupe_key), 0);
    `,
  },
  {
    version: 7,
    name: 'email parts: attachments and raw messages outside the event row',
    // An email event keeps a manifest; the bytes of its attachments and of the raw message are
    // blobs keyed by their sha256, stored once however many events (recipients, retries) name
    // them. email_parts links an event to its blobs; it goes with the event (ON DELETE
    // CASCADE: eviction, retention, address deletion), and a blob goes with its last link.
    // Part -1 is the raw message, 0… the attachments in manifest order.
    sql: `
      CREATE TABLE email_blobs (
        sha256 TEXT PRIMARY KEY,
        bytes  BLOB NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE email_parts (
        event_key    INTEGER NOT NULL REFERENCES events (key) ON DELETE CASCADE,
        part         INTEGER NOT NULL,
        event_id     TEXT NOT NULL,
        sha256       TEXT NOT NULL,
        content_type TEXT NOT NULL,
        filename     TEXT,
        PRIMARY KEY (event_key, part)
      ) WITHOUT ROWID;
      CREATE INDEX email_parts_by_event_id ON email_parts (event_id, part);
      CREATE INDEX email_parts_by_blob ON email_parts (sha256);
      CREATE TRIGGER email_part_removed AFTER DELETE ON email_parts
      WHEN NOT EXISTS (SELECT 1 FROM email_parts WHERE sha256 = OLD.sha256)
      BEGIN
        DELETE FROM email_blobs WHERE sha256 = OLD.sha256;
      END;
    `,
  },
  {
    version: 8,
    name: 'senders: the provider whose signatures an inbox verifies',
    // One row per address (docs/api.md §3.2); it goes with the address. Secrets and Meta's
    // verify token are sealed by the core with the server key (core/secret-box.ts): no
    // column holds one in clear. has_sender is read with the address itself, so that a
    // delivery to an address without a sender costs no look-up of this table.
    sql: `
      CREATE TABLE senders (
        address_id          TEXT PRIMARY KEY REFERENCES addresses (id) ON DELETE CASCADE,
        provider            TEXT NOT NULL,
        enforce             INTEGER NOT NULL,
        tolerance_seconds   INTEGER NOT NULL,
        secret_count        INTEGER NOT NULL,
        sealed_secrets      TEXT NOT NULL,
        sealed_verify_token TEXT,
        options             TEXT,
        updated_at          INTEGER NOT NULL
      ) WITHOUT ROWID;
      ALTER TABLE addresses ADD COLUMN has_sender INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 9,
    name: 'idempotency keys scoped to HTTP or email',
    // docs/api.md §3: a key only matches events that came the same way (key_scope 'http':
    // the inbox, raw capture, MCP; 'email': SMTP), so that an inbox URL cannot fetch an email
    // by its Message-ID. Existing events get the scope of what they are: the SMTP path alone
    // stores type email.received with source email. An HTTP sender could have sent that pair
    // too; such an event now only matches emails, which costs its sender at worst a second
    // event on a retry, and leaks nothing. The column's default fills the other rows without
    // rewriting them.
    sql: `
      ALTER TABLE events ADD COLUMN key_scope TEXT NOT NULL DEFAULT 'http';
      UPDATE events SET key_scope = 'email' WHERE source = 'email' AND type = 'email.received';
      DROP INDEX events_by_dedupe_key;
      -- One event per idempotency key per address and scope: the second writer cannot win.
      CREATE UNIQUE INDEX events_by_dedupe_key ON events (address_key, key_scope, dedupe_key) WHERE dedupe_key IS NOT NULL;
    `,
  },
  {
    version: 10,
    name: 'the byte total per address and its triggers go where an early migration 6 left them',
    // A database that ran the first text of migration 6 has addresses.stored_bytes and two
    // triggers that write the address row on every append; the writer sums the bytes itself
    // (events-append.ts), so both go. Any other database has neither, and nothing changes.
    onlyIf: "SELECT count(*) FROM pragma_table_info('addresses') WHERE name = 'stored_bytes'",
    sql: `
      DROP TRIGGER IF EXISTS events_bytes_added;
      DROP TRIGGER IF EXISTS events_bytes_removed;
      ALTER TABLE addresses DROP COLUMN stored_bytes;
    `,
  },
  {
    version: 11,
    name: 'a JSON reading for the filters of a page',
    // PostgreSQL's migration 11; SQLite's connections register the functions (connection.ts).
    sql: '',
  },
  {
    version: 12,
    name: 'callbacks: one-shot URLs answered by machines and people',
    // docs/api.md §3.6: one row per callback URL. The unique index on (address_id, key)
    // makes create idempotent on the caller's key (a second insert finds the first), and
    // every change of status is an UPDATE … WHERE status = 'waiting', so a callback leaves
    // `waiting` once. Only the digest of the URL's secret is kept.
    sql: `
      CREATE TABLE callbacks (
        id             TEXT PRIMARY KEY,
        address_id     TEXT NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
        key            TEXT,
        label          TEXT,
        secret_digest  TEXT NOT NULL,
        status         TEXT NOT NULL,
        created_at     INTEGER NOT NULL,
        expires_at     INTEGER NOT NULL,
        completed_at   INTEGER,
        event_id       TEXT,
        event_sequence INTEGER,
        deliveries     INTEGER NOT NULL DEFAULT 0,
        complete_when  TEXT,
        human          TEXT,
        answer         TEXT
      );
      CREATE UNIQUE INDEX callbacks_by_key ON callbacks (address_id, key);
      CREATE INDEX callbacks_by_address ON callbacks (address_id, status, created_at);
      CREATE INDEX callbacks_due ON callbacks (expires_at) WHERE status = 'waiting';
    `,
  },
  {
    version: 13,
    name: 'the append batch as a function that keeps its plan on each server connection',
    // PostgreSQL's migration 13; SQLite's writer runs its batches as statements it keeps prepared.
    sql: '',
  },
];
