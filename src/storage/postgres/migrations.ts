// Numbered PostgreSQL migrations, run in order at start by connection.ts inside one
// transaction that holds an advisory lock, so that several instances starting together
// apply each migration exactly once. Never edit one that has landed (the checksums in
// test/storage/migrations.test.ts say when one did): add the next number.
// Numbers: 1–7 here and 1–9 in sqlite/migrations.ts grew apart; from 10 on a number names
// the same change on both engines, and a change one engine does not need is recorded there
// under its number with empty SQL, so the next migration is the same number on both.
//
// Types, and why:
// - times are bigint milliseconds since the epoch (the Storage interface speaks ms);
// - `data` and `metadata` are TEXT, not jsonb: docs/api.md §3 wants `data` back with its keys
//   in the order they were delivered, which jsonb normalises away;
// - `last_sequence` lives on the address row: the append transaction bumps it under the
//   row lock, so sequences are gapless per address and never reused (docs/api.md §3).

export const PG_MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'addresses, events, rate buckets',
    sql: `
      CREATE TABLE addresses (
        id                    text PRIMARY KEY,
        slug                  text NOT NULL UNIQUE,
        name                  text NOT NULL,
        task_id               text,
        email                 text NOT NULL,
        created_at            bigint NOT NULL,
        expires_at            bigint,
        read_token_digest     text NOT NULL,
        ingress_secret_digest text NOT NULL,
        -- The highest sequence ever given out here: sequences are never reused (docs/api.md §3).
        last_sequence         bigint NOT NULL DEFAULT 0
      );
      CREATE INDEX addresses_expiry ON addresses (expires_at) WHERE expires_at IS NOT NULL;

      CREATE TABLE events (
        id              text PRIMARY KEY,
        address_id      text NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
        sequence        bigint NOT NULL,
        type            text NOT NULL,
        source          text NOT NULL,
        data            text NOT NULL,
        metadata        text,
        dedupe_key      text,
        created_at      bigint NOT NULL,
        acknowledged_at bigint
      );
      CREATE UNIQUE INDEX events_by_sequence ON events (address_id, sequence);
      -- One event per idempotency key per address: a second writer cannot win.
      CREATE UNIQUE INDEX events_by_dedupe_key ON events (address_id, dedupe_key) WHERE dedupe_key IS NOT NULL;
      CREATE INDEX events_acknowledged ON events (address_id, sequence) WHERE acknowledged_at IS NOT NULL;
      CREATE INDEX events_by_age ON events (created_at);

      CREATE TABLE rate_buckets (
        key        text PRIMARY KEY,
        tokens     double precision NOT NULL,
        updated_at bigint NOT NULL
      );
      CREATE INDEX rate_buckets_by_age ON rate_buckets (updated_at);
    `,
  },
  {
    version: 2,
    name: 'credentials: the previous inbox secret during a grace period, view tokens',
    sql: `
      ALTER TABLE addresses ADD COLUMN previous_ingress_digest text;
      ALTER TABLE addresses ADD COLUMN previous_ingress_until bigint;

      CREATE TABLE view_tokens (
        id           text PRIMARY KEY,
        address_id   text NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
        token_digest text NOT NULL UNIQUE,
        label        text,
        created_at   bigint NOT NULL,
        expires_at   bigint
      );
      CREATE INDEX view_tokens_by_address ON view_tokens (address_id, created_at);
    `,
  },
  {
    version: 3,
    name: 'bytes held per address',
    // Each event's size (storage.ts eventSize) and each address's total, which the append
    // keeps under its row lock and the purge of old events subtracts (events-append.ts, purge.ts).
    sql: `
      ALTER TABLE events ADD COLUMN size_bytes bigint NOT NULL DEFAULT 0;
      ALTER TABLE addresses ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0;
      UPDATE events SET size_bytes = octet_length(data) + octet_length(type) + octet_length(source)
        + COALESCE(octet_length(metadata), 0) + COALESCE(octet_length(dedupe_key), 0);
      UPDATE addresses SET stored_bytes = held.bytes
        FROM (SELECT address_id, sum(size_bytes) AS bytes FROM events GROUP BY address_id) AS held
        WHERE addresses.id = held.address_id;
    `,
  },
  {
    version: 4,
    name: 'email parts: attachments and raw messages outside the event row',
    // As SQLite's migration 7: blobs keyed by sha256, stored once; email_parts links an event
    // to them and goes with the event; a blob goes with its last link (the trigger).
    // Part -1 is the raw message, 0… the attachments in manifest order.
    sql: `
      CREATE TABLE email_blobs (
        sha256 text PRIMARY KEY,
        bytes  bytea NOT NULL
      );
      CREATE TABLE email_parts (
        event_id     text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
        part         integer NOT NULL,
        sha256       text NOT NULL,
        content_type text NOT NULL,
        filename     text,
        PRIMARY KEY (event_id, part)
      );
      CREATE INDEX email_parts_by_blob ON email_parts (sha256);
      CREATE FUNCTION email_part_removed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM email_blobs b WHERE b.sha256 = OLD.sha256
          AND NOT EXISTS (SELECT 1 FROM email_parts p WHERE p.sha256 = OLD.sha256);
        RETURN NULL;
      END $$;
      CREATE TRIGGER email_part_removed AFTER DELETE ON email_parts
        FOR EACH ROW EXECUTE FUNCTION email_part_removed();
    `,
  },
  {
    version: 5,
    name: 'senders: the provider whose signatures an inbox verifies',
    // As SQLite's migration 8: one row per address, secrets sealed by the core; has_sender
    // comes with the address row, so an address without a sender costs no extra query.
    sql: `
      CREATE TABLE senders (
        address_id          text PRIMARY KEY REFERENCES addresses (id) ON DELETE CASCADE,
        provider            text NOT NULL,
        enforce             boolean NOT NULL,
        tolerance_seconds   integer NOT NULL,
        secret_count        integer NOT NULL,
        sealed_secrets      text NOT NULL,
        sealed_verify_token text,
        options             text,
        updated_at          bigint NOT NULL
      );
      ALTER TABLE addresses ADD COLUMN has_sender boolean NOT NULL DEFAULT false;
    `,
  },
  {
    version: 6,
    name: 'idempotency keys scoped to HTTP or email',
    // As SQLite's migration 9: a key only matches events that came the same way, existing
    // email events (type email.received, source email: the SMTP path's pair) get the scope
    // 'email', the default (no table rewrite in PostgreSQL 11+) gives the rest 'http'. The
    // unique index keeps its
    // name: events-append.ts recognises its violation by it.
    sql: `
      ALTER TABLE events ADD COLUMN key_scope text NOT NULL DEFAULT 'http';
      UPDATE events SET key_scope = 'email' WHERE source = 'email' AND type = 'email.received';
      DROP INDEX events_by_dedupe_key;
      CREATE UNIQUE INDEX events_by_dedupe_key ON events (address_id, key_scope, dedupe_key) WHERE dedupe_key IS NOT NULL;
    `,
  },
  {
    version: 7,
    name: 'email parts: a blob stays while a part is being linked to it',
    // Migration 4's trigger looked for other parts of the blob with its statement's
    // snapshot, so it could delete a blob that a concurrent email had just found held and
    // linked a part to: a part pointing at nothing. Now the trigger first locks the blob,
    // which waits for any transaction holding it FOR KEY SHARE (email-parts.ts, blobsHeld),
    // then looks again with a fresh snapshot. The foreign key states the rule; parts left
    // pointing at nothing by the old race could not be read anyway and go.
    sql: `
      DELETE FROM email_parts p WHERE NOT EXISTS (SELECT 1 FROM email_blobs b WHERE b.sha256 = p.sha256);
      ALTER TABLE email_parts ADD CONSTRAINT email_parts_blob FOREIGN KEY (sha256) REFERENCES email_blobs (sha256);
      CREATE OR REPLACE FUNCTION email_part_removed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM 1 FROM email_blobs WHERE sha256 = OLD.sha256 FOR UPDATE;
        DELETE FROM email_blobs b WHERE b.sha256 = OLD.sha256
          AND NOT EXISTS (SELECT 1 FROM email_parts p WHERE p.sha256 = OLD.sha256);
        RETURN NULL;
      END $$;
    `,
  },
  {
    version: 10,
    name: 'the byte total per address and its triggers go where an early migration 6 left them',
    // SQLite's migration 10; PostgreSQL keeps stored_bytes under the append's row lock by design.
    sql: '',
  },
  {
    version: 11,
    name: 'a JSON reading for the filters of a page',
    // The page's filters on content (page-query.ts) read stored text as jsonb; text jsonb
    // refuses (a \u0000 escape, a body that is not JSON) is no match rather than an error.
    // OR REPLACE: running it again (a lost schema_migrations row) changes nothing.
    sql: `
      CREATE OR REPLACE FUNCTION roost_jsonb(value text) RETURNS jsonb
        LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
      BEGIN
        RETURN value::jsonb;
      EXCEPTION WHEN data_exception THEN
        RETURN NULL;
      END $$;
    `,
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
        id             text PRIMARY KEY,
        address_id     text NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
        key            text,
        label          text,
        secret_digest  text NOT NULL,
        status         text NOT NULL,
        created_at     bigint NOT NULL,
        expires_at     bigint NOT NULL,
        completed_at   bigint,
        event_id       text,
        event_sequence bigint,
        deliveries     integer NOT NULL DEFAULT 0,
        complete_when  text,
        human          text,
        answer         text
      );
      CREATE UNIQUE INDEX callbacks_by_key ON callbacks (address_id, key);
      CREATE INDEX callbacks_by_address ON callbacks (address_id, status, created_at);
      CREATE INDEX callbacks_due ON callbacks (expires_at) WHERE status = 'waiting';
    `,
  },
  {
    version: 13,
    name: 'the append batch as a function that keeps its plan on each server connection',
    // events-append.ts sends every append that arrives while the previous batches run as one
    // call of this function: one round trip, one transaction, one WAL flush. As a function
    // its plan is kept by each server connection, whoever holds it: through a transaction
    // pooler, where every statement goes unnamed, the statement itself was planned again at
    // every call, and planning cost the database more than running it (BENCHMARKS.md, "kept
    // by the function"). The SET clause keeps one generic plan whatever the batches' sizes.
    // Arguments: the events' columns as arrays, then what the batch decides by (BATCH_INPUT).
    //
    // `locked` takes the addresses' row locks in id order, so that batches on any number of
    // instances cannot deadlock one another. Each address's events are then numbered in
    // arrival order (the input's ordinality) after the highest sequence it has handed out.
    // An event goes in while it fits as the queue stands (append-policy.ts fitsAsIs, counting
    // every sequence handed out as held; test/postgres-batched-appends.test.ts checks the
    // expression against fitsAsIsSql), and only while every earlier one of its address went
    // in too (`fits`, a prefix). Left out, for the full transaction to decide one at a time:
    // an address that is unknown, deleted or expired at the delivery's time, or no longer as
    // it admitted the delivery, a key the address already holds, anything that needs an
    // eviction. The NOT EXISTS reads the query's snapshot, which may predate a racing append
    // of the same key that committed while this one waited for a lock: then the key's unique
    // index refuses the INSERT, the call fails whole, and every append of the batch runs on
    // its own. The caller sends at most one append per (address, key).
    // Changing the batch: add a migration with a function of a new name, so that instances
    // still running the old build keep theirs until they stop.
    sql: `
      CREATE FUNCTION roost_append_batch(
        text[], text[], bigint[], text[], text[], text[], text[], text[], bigint[], bigint[],
        bigint[], bigint[], bigint[], text[], text[], text[], bigint[]
      ) RETURNS TABLE (event_id text, event_sequence bigint)
        LANGUAGE plpgsql VOLATILE
        SET plan_cache_mode = force_generic_plan
      AS $$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        WITH input AS (
          SELECT * FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
            WITH ORDINALITY AS t(id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at,
              acknowledged_at, size_bytes, capacity, max_bytes, key_scope, admitted_ingress_secret_digest,
              admitted_previous_ingress_digest, admitted_previous_ingress_until, n)
        ),
        locked AS MATERIALIZED (
          SELECT id, last_sequence, stored_bytes, expires_at, has_sender, ingress_secret_digest,
                 previous_ingress_digest, previous_ingress_until
          FROM addresses WHERE id = ANY($2) ORDER BY id FOR UPDATE
        ),
        candidates AS (
          SELECT i.*, l.last_sequence, l.stored_bytes,
                 row_number() OVER w AS k, sum(i.size_bytes) OVER w AS bytes_so_far
          FROM input i JOIN locked l ON l.id = i.address_id
          WHERE (l.expires_at IS NULL OR l.expires_at > i.created_at)
            AND (i.admitted_ingress_secret_digest IS NULL OR (NOT l.has_sender
              AND l.ingress_secret_digest IS NOT DISTINCT FROM i.admitted_ingress_secret_digest
              AND l.previous_ingress_digest IS NOT DISTINCT FROM i.admitted_previous_ingress_digest
              AND l.previous_ingress_until IS NOT DISTINCT FROM i.admitted_previous_ingress_until))
            AND (i.dedupe_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM events e
              WHERE e.address_id = i.address_id AND e.key_scope = i.key_scope AND e.dedupe_key = i.dedupe_key))
          WINDOW w AS (PARTITION BY i.address_id ORDER BY i.n ROWS UNBOUNDED PRECEDING)
        ),
        accepted AS (
          SELECT * FROM (
            SELECT c.*, bool_and((c.last_sequence + c.k - 1 + 1 <= c.capacity AND (c.max_bytes = 0 OR c.stored_bytes + c.bytes_so_far - c.size_bytes + c.size_bytes <= c.max_bytes)))
                     OVER (PARTITION BY c.address_id ORDER BY c.n ROWS UNBOUNDED PRECEDING) AS fits
            FROM candidates c
          ) AS checked
          WHERE fits
        ),
        bumped AS (
          UPDATE addresses a
          SET last_sequence = a.last_sequence + per.events, stored_bytes = a.stored_bytes + per.bytes
          FROM (SELECT address_id, count(*) AS events, sum(size_bytes) AS bytes FROM accepted GROUP BY address_id) AS per
          WHERE a.id = per.address_id
        ),
        inserted AS (
          INSERT INTO events (id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at,
                              acknowledged_at, size_bytes, key_scope)
          SELECT id, address_id, last_sequence + k, type, source, data, metadata, dedupe_key, created_at,
                 acknowledged_at, size_bytes, key_scope
          FROM accepted
          RETURNING id, sequence
        )
        SELECT inserted.id, inserted.sequence FROM inserted;
      END $$;
    `,
  },
];
