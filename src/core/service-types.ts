// The shapes the service's operations take and give (core/service.ts), for the transports
// that call them.
import type { EventDeliveryResponse } from '../contract/schemas.js';
import type {
  AckRecord,
  AddressRecord,
  EmailPart,
  EventFilter,
  EventRecord,
  InboxCredentials,
} from '../storage/storage.js';
import type { ServiceError } from './errors.js';
import type { SharedRead } from './waiters.js';

export type Clock = () => number;

export interface DeliveryInput {
  type?: string;
  source?: string;
  data?: unknown;
  metadata?: Record<string, string>;
  dedupe_key?: string;
  /** Data that names its own event (email attachment URLs): called with the new event's id, instead of `data`. */
  dataFor?: (eventId: string) => unknown;
  /** Bytes stored beside the event (email attachments, the raw message), in its own transaction. */
  parts?: EmailPart[];
  /** Parts that name their own event (the raw message's Received line): used instead of `parts`, after `dataFor`. */
  partsFor?: (eventId: string) => EmailPart[];
}

/**
 * How a transport makes the event of a request as sent: the event type (undefined: the inbox's
 * default) and the bytes to keep.
 */
export type CaptureRequest = (type: string | undefined, body: Buffer) => DeliveryInput;

/** What became of one request to an inbox with a sender (receiveFromSender). */
export type SenderOutcome =
  /** The sender was cleared since the address was read: the request is an ordinary delivery. */
  | { kind: 'no_sender' }
  /** The provider's URL handshake, answered as given; nothing stored. */
  | { kind: 'handshake'; status: number; contentType: string; body: string }
  /** Refused (405, 401, or 503 when the server key cannot open the sender: keyMismatch); nothing stored. */
  | { kind: 'refused'; error: ServiceError; keyMismatch: boolean }
  /** Stored, or found a duplicate. */
  | ({ kind: 'delivered' } & DeliveryResult);

/** An inbox URL that opened (service.ts admitToInbox). */
export interface InboxAdmission {
  address: AddressRecord;
  /**
   * Set when admitted on the address as read lately: deliver with it, and answer any refusal
   * the append did not decide (routes/inbox.ts) after asking afresh.
   */
  admittedBy?: InboxCredentials;
}

export interface DeliveryResult {
  /** 202 for a newly queued event, 200 for an idempotent repeat (docs/api.md §3). */
  status: 200 | 202;
  body: EventDeliveryResponse;
  /** The event as stored: the inbox writes the answer from it as text (wire.ts deliveryJson). */
  record: EventRecord;
}

export interface ListOptions {
  after: number;
  limit: number;
  /** Long-poll seconds (0–25). */
  wait: number;
  /** Only events without acknowledged_at (docs/api.md §4); a long poll waits for one of those. */
  unacked?: boolean;
  /**
   * Filters on content (docs/api.md §4.3, event-filter.ts): a long poll sleeps through
   * events that do not match; the page says how far it scanned.
   */
  filter?: EventFilter;
  /**
   * Read at most this many stored bytes (one event at least), below the page bound: the
   * first part of a page written in parts (readPagePart reads the others).
   */
  partBytes?: number;
}

/** Which transport a delivery came through, for metrics. */
export type Transport = 'http' | 'email' | 'mcp';

/** A reader of one address's queue as a stream (docs/api.md §4.1); see openStream. */
export interface EventStreamHandle {
  /** Milliseconds until the address expires by the service's clock, or null without a lifetime. */
  expiresInMs(): number | null;
  /** True once the service is shutting down: the stream should end. */
  readonly closing: boolean;
  /**
   * Events past `after` (at most `limit`, and at most `maxBytes` or a page's bytes) as stored, to be
   * written with eventJson; 'gone' once the address is deleted or expired; 'revoked' once
   * the stream's credential no longer opens it (the read token rotated, the view token
   * revoked or expired).
   */
  readAfter(
    after: number,
    limit: number,
    maxBytes?: number,
  ): Promise<{ records: EventRecord[]; hasMore: boolean; scannedTo?: number } | 'gone' | 'revoked'>;
  /**
   * The part of a wake-up's shared read past `after`, cut as readAfter cuts; 'gone' and
   * 'revoked' as readAfter; null when the shared read does not cover `after`, or the
   * credential needs a look-up to re-check (a view token): then call readAfter.
   */
  fromShared(
    read: SharedRead,
    after: number,
    limit: number,
    maxBytes?: number,
  ): { records: EventRecord[]; hasMore: boolean; scannedTo?: number } | 'gone' | 'revoked' | null;
  /**
   * The acknowledgements of events up to `upTo` made at or after `since` (ms), by
   * sequence: for the stream's `ack` messages when no shared read brought them.
   */
  acksSince(since: number, upTo: number): Promise<AckRecord[]>;
  /** Stops the wake-ups; call it once when the stream ends. */
  close(): void;
}

/** What a valid credential may do: everything (the read token) or read only (a view token). */
export type Access = 'full' | 'view';
