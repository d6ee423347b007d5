// Numbered SQLite migrations, run in order at start. Never edit one that has landed:
// add the next number instead.

export const SQLITE_MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
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
        -- The highest sequence ever given out here: sequences are never reused (CONTRACT §3).
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
    // An append used to write its address row (last_sequence = the new sequence): one more
    // page at a random place per event, ~10% of the append. Now the next sequence is
    // max(MAX(events.sequence), last_sequence) + 1, and last_sequence only has to remember
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
];
