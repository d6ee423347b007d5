// The columns of each table that a record of storage.ts is read from, declared once, in
// order. Column lists, placeholders, PostgreSQL array casts, value lists and the decoders
// from a row (by name, or as an array) are derived from these declarations, so a new
// column is one line here plus its migration. Columns no record carries (size_bytes,
// key_scope, last_sequence, SQLite's keys) are named where the SQL uses them.
import type {
  AddressRecord,
  AppendInput,
  CallbackRecord,
  CallbackStatus,
  EventRecord,
  SenderRecord,
  ViewTokenRecord,
} from './storage.js';

/** A column: its SQL name, its PostgreSQL type (for unnest arrays) and how a value read becomes the field. */
export interface Column<T> {
  name: string;
  pgType: 'text' | 'bigint' | 'integer' | 'boolean';
  decode: (value: unknown) => T;
  /** How SQLite takes the value when it has no type of its own for it (booleans). */
  toSqlite?: (value: T) => unknown;
}

const as = <T>(value: unknown) => value as T;
const text = (name: string): Column<string> => ({ name, pgType: 'text', decode: as<string> });
const optionalText = (name: string): Column<string | null> => ({ name, pgType: 'text', decode: as<string | null> });
/** Milliseconds, sequences, counts: numbers in both engines (postgres/connection.ts reads int8 as a number). */
const bigint = (name: string): Column<number> => ({ name, pgType: 'bigint', decode: as<number> });
const optionalBigint = (name: string): Column<number | null> => ({ name, pgType: 'bigint', decode: as<number | null> });
const integer = (name: string): Column<number> => ({ name, pgType: 'integer', decode: as<number> });
/** 0/1 in SQLite, a boolean in PostgreSQL. */
const flag = (name: string): Column<boolean> => ({
  name,
  pgType: 'boolean',
  decode: Boolean,
  toSqlite: (value) => (value ? 1 : 0),
});

/** Every field of the record R, each with its column: the compiler checks none is missing or mistyped. */
type Columns<R> = { [K in keyof R]-?: Column<R[K]> };

export interface Table<R> {
  readonly table: string;
  /** The fields in column order. */
  readonly fields: ReadonlyArray<keyof R>;
  /** The columns in order, as declared. */
  readonly columns: ReadonlyArray<Column<unknown>>;
  /** The column names in order. */
  readonly names: readonly string[];
  /** "a, b, c": for SELECT, INSERT and RETURNING lists. */
  readonly list: string;
  /** The same, each prefixed by a table alias: "e.a, e.b". */
  listOf(alias: string): string;
  /** A row read by column name, as the record. */
  fromRow(row: object): R;
  /** A row read as an array (SQLite's raw mode), its columns from `offset` on in order. */
  fromArray(row: readonly unknown[], offset?: number): R;
  /** The record's values in column order, as the engine takes them, for an INSERT or a tuple. */
  values(record: R, dialect: Dialect): unknown[];
}

function table<R>(name: string, columns: Columns<R>): Table<R> {
  const fields = Object.keys(columns) as Array<keyof R>;
  const specs = fields.map((field) => columns[field] as Column<unknown>);
  const names = specs.map((column) => column.name);
  return {
    table: name,
    fields,
    columns: specs,
    names,
    list: names.join(', '),
    listOf: (alias) => names.map((column) => `${alias}.${column}`).join(', '),
    fromRow(row) {
      const record = {} as Record<keyof R, unknown>;
      const byName = row as Record<string, unknown>;
      for (let i = 0; i < fields.length; i++) record[fields[i]] = specs[i].decode(byName[names[i]]);
      return record as R;
    },
    fromArray(row, offset = 0) {
      const record = {} as Record<keyof R, unknown>;
      for (let i = 0; i < fields.length; i++) record[fields[i]] = specs[i].decode(row[offset + i]);
      return record as R;
    },
    values(record, dialect) {
      const values: unknown[] = [];
      for (let i = 0; i < fields.length; i++) {
        const value = record[fields[i]];
        const toSqlite = specs[i].toSqlite;
        values.push(dialect === 'sqlite' && toSqlite ? toSqlite(value) : value);
      }
      return values;
    },
  };
}

export type Dialect = 'postgres' | 'sqlite';

/** "$first, $first+1, …" (PostgreSQL) or "?, ?, …" (SQLite), `count` of them. */
export function placeholders(dialect: Dialect, count: number, first = 1): string {
  return Array.from({ length: count }, (_, i) => (dialect === 'postgres' ? `$${first + i}` : '?')).join(', ');
}

/** "$first::type[], …": one PostgreSQL array parameter per column, for unnest. */
export const pgArrays = (columns: readonly Column<unknown>[], first = 1): string =>
  columns.map((column, i) => `$${first + i}::${column.pgType}[]`).join(', ');

const ADDRESS_FIELDS: Columns<AddressRecord> = {
  id: text('id'),
  slug: text('slug'),
  name: text('name'),
  taskId: optionalText('task_id'),
  email: text('email'),
  createdAt: bigint('created_at'),
  expiresAt: optionalBigint('expires_at'),
  readTokenDigest: text('read_token_digest'),
  ingressSecretDigest: text('ingress_secret_digest'),
  previousIngressDigest: optionalText('previous_ingress_digest'),
  previousIngressUntil: optionalBigint('previous_ingress_until'),
  hasSender: flag('has_sender'),
};
export const ADDRESSES = table<AddressRecord>('addresses', ADDRESS_FIELDS);

/** The columns a new address is inserted with; the others start at their defaults. */
export const NEW_ADDRESS_FIELDS = [
  'id',
  'slug',
  'name',
  'taskId',
  'email',
  'createdAt',
  'expiresAt',
  'readTokenDigest',
  'ingressSecretDigest',
] as const satisfies ReadonlyArray<keyof AddressRecord>;
export const NEW_ADDRESS_COLUMNS = NEW_ADDRESS_FIELDS.map((field) => ADDRESS_FIELDS[field].name).join(', ');

export const EVENTS = table<EventRecord>('events', {
  id: text('id'),
  addressId: text('address_id'),
  sequence: bigint('sequence'),
  type: text('type'),
  source: text('source'),
  dataJson: text('data'),
  metadataJson: optionalText('metadata'),
  dedupeKey: optionalText('dedupe_key'),
  createdAt: bigint('created_at'),
  acknowledgedAt: optionalBigint('acknowledged_at'),
});
/**
 * The columns a page reads of each event (page-query.ts pageCandidatesQuery, pageRangeQuery):
 * EVENTS' but address_id, which the page knows.
 */
export const PAGE_EVENT_NAMES = EVENTS.names.filter((name) => name !== 'address_id');
const columnsAt = (names: readonly string[]) =>
  Object.fromEntries(names.map((name, i) => [name, i])) as Record<string, number>;
const EVENT_AT = columnsAt(EVENTS.names);
const PAGE_EVENT_AT = columnsAt(PAGE_EVENT_NAMES);

/**
 * An event from a row read as an array, field by field into one object shape: pages are the
 * hottest read, where a generic decoder's keyed stores cost, and where every page's records
 * should share one shape for the code that writes them out.
 */
function eventOf(row: readonly unknown[], at: Record<string, number>, addressId: string): EventRecord {
  return {
    id: row[at.id] as string,
    addressId,
    sequence: row[at.sequence] as number,
    type: row[at.type] as string,
    source: row[at.source] as string,
    dataJson: row[at.data] as string,
    metadataJson: row[at.metadata] as string | null,
    dedupeKey: row[at.dedupe_key] as string | null,
    createdAt: row[at.created_at] as number,
    acknowledgedAt: row[at.acknowledged_at] as number | null,
  };
}

/** A row of PAGE_EVENT_NAMES, of the address `addressId`. */
export const pageEventFromArray = (row: readonly unknown[], addressId: string): EventRecord =>
  eventOf(row, PAGE_EVENT_AT, addressId);

/** Whether a row of page-query.ts pageCandidatesQuery came without its stored text (data is never NULL). */
export const pageEventLeftUnread = (row: readonly unknown[]): boolean => row[PAGE_EVENT_AT.data] === null;

/** A row of EVENTS' columns, as a page reads it. */
export const eventFromArray = (row: readonly unknown[]): EventRecord =>
  eventOf(row, EVENT_AT, row[EVENT_AT.address_id] as string);

export const SENDERS = table<SenderRecord>('senders', {
  addressId: text('address_id'),
  provider: text('provider'),
  enforce: flag('enforce'),
  toleranceSeconds: integer('tolerance_seconds'),
  secretCount: integer('secret_count'),
  sealedSecrets: text('sealed_secrets'),
  sealedVerifyToken: optionalText('sealed_verify_token'),
  optionsJson: optionalText('options'),
  updatedAt: bigint('updated_at'),
});

export const VIEW_TOKENS = table<ViewTokenRecord>('view_tokens', {
  id: text('id'),
  addressId: text('address_id'),
  tokenDigest: text('token_digest'),
  label: optionalText('label'),
  createdAt: bigint('created_at'),
  expiresAt: optionalBigint('expires_at'),
});

export const CALLBACKS = table<CallbackRecord>('callbacks', {
  id: text('id'),
  addressId: text('address_id'),
  key: optionalText('key'),
  label: optionalText('label'),
  secretDigest: text('secret_digest'),
  status: { name: 'status', pgType: 'text', decode: as<CallbackStatus> },
  createdAt: bigint('created_at'),
  expiresAt: bigint('expires_at'),
  completedAt: optionalBigint('completed_at'),
  eventId: optionalText('event_id'),
  eventSequence: optionalBigint('event_sequence'),
  deliveries: integer('deliveries'),
  completeWhenJson: optionalText('complete_when'),
  humanJson: optionalText('human'),
  answerJson: optionalText('answer'),
});

/** The record of an event an engine has just inserted as `id` with `sequence`. */
export const insertedEvent = (input: AppendInput, id: string, sequence: number): EventRecord => ({
  id,
  addressId: input.addressId,
  sequence,
  type: input.type,
  source: input.source,
  dataJson: input.dataJson,
  metadataJson: input.metadataJson,
  dedupeKey: input.dedupeKey,
  createdAt: input.createdAt,
  acknowledgedAt: null,
});
