// Rows as both SQL engines return them (the same column names in both schemas) and their
// conversion to the records of the storage interface.
import type { AddressRecord, AppendInput, EventRecord, SenderRecord, ViewTokenRecord } from './storage.js';

export interface AddressRow {
  id: string;
  slug: string;
  name: string;
  task_id: string | null;
  email: string;
  created_at: number;
  expires_at: number | null;
  read_token_digest: string;
  ingress_secret_digest: string;
  previous_ingress_digest: string | null;
  previous_ingress_until: number | null;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  has_sender: number | boolean;
}

export interface SenderRow {
  address_id: string;
  provider: string;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  enforce: number | boolean;
  tolerance_seconds: number;
  secret_count: number;
  sealed_secrets: string;
  sealed_verify_token: string | null;
  options: string | null;
  updated_at: number;
}

export const SENDER_COLUMNS =
  'address_id, provider, enforce, tolerance_seconds, secret_count, sealed_secrets, sealed_verify_token, options, updated_at';

export const toSender = (row: SenderRow): SenderRecord => ({
  addressId: row.address_id,
  provider: row.provider,
  enforce: Boolean(row.enforce),
  toleranceSeconds: row.tolerance_seconds,
  secretCount: row.secret_count,
  sealedSecrets: row.sealed_secrets,
  sealedVerifyToken: row.sealed_verify_token,
  optionsJson: row.options,
  updatedAt: row.updated_at,
});

export interface ViewTokenRow {
  id: string;
  address_id: string;
  token_digest: string;
  label: string | null;
  created_at: number;
  expires_at: number | null;
}

export interface EventRow {
  id: string;
  address_id: string;
  sequence: number;
  type: string;
  source: string;
  data: string;
  metadata: string | null;
  dedupe_key: string | null;
  created_at: number;
  acknowledged_at: number | null;
}

export const EVENT_COLUMNS =
  'id, address_id, sequence, type, source, data, metadata, dedupe_key, created_at, acknowledged_at';

/** The columns of AddressRow, for queries that name them. */
export const ADDRESS_COLUMNS =
  'id, slug, name, task_id, email, created_at, expires_at, read_token_digest, ingress_secret_digest, previous_ingress_digest, previous_ingress_until, has_sender';

export const toAddress = (row: AddressRow): AddressRecord => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  taskId: row.task_id,
  email: row.email,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  readTokenDigest: row.read_token_digest,
  ingressSecretDigest: row.ingress_secret_digest,
  previousIngressDigest: row.previous_ingress_digest,
  previousIngressUntil: row.previous_ingress_until,
  hasSender: Boolean(row.has_sender),
});

export const toViewToken = (row: ViewTokenRow): ViewTokenRecord => ({
  id: row.id,
  addressId: row.address_id,
  tokenDigest: row.token_digest,
  label: row.label,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

export const toEvent = (row: EventRow): EventRecord => ({
  id: row.id,
  addressId: row.address_id,
  sequence: row.sequence,
  type: row.type,
  source: row.source,
  dataJson: row.data,
  metadataJson: row.metadata,
  dedupeKey: row.dedupe_key,
  createdAt: row.created_at,
  acknowledgedAt: row.acknowledged_at,
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
