// One-shot callbacks (docs/api.md §3.6): a secret URL per expected answer, created idempotently
// on the caller's key, whose deliveries are events of the address (type callback.delivery,
// source callback) and whose first matching delivery completes it — once, by the storage's
// conditional UPDATE. Waits hold on the address's waiters (waiters.ts), which every
// delivery, completion and expiry wakes, here and (PostgreSQL) on other instances.
import { hash } from 'node:crypto';
import type { Config } from '../config.js';
import type { Callback } from '../contract/callback-schemas.js';
import type { AddressRecord, CallbackRecord, CallbackStatus, EventRecord, Storage } from '../storage/storage.js';
import { errors, ServiceError } from './errors.js';
import { effectiveIdempotencyKey } from './idempotency-key.js';
import { isoTime } from './iso-time.js';
import { RETENTION_MS, WAIT_MAX_SECONDS } from './limits.js';
import {
  CALLBACK_LIMITS,
  checkCreateInput,
  checkText,
  completes,
  isCallbackStatus,
  CALLBACK_STATUSES,
  type CompleteWhen,
  type CreateCallbackInput,
  type HumanAnswer,
  type HumanQuestion,
} from './callback-input.js';

export {
  CALLBACK_LIMITS,
  checkCreateInput,
  completes,
  isCallbackStatus,
  type CompleteWhen,
  type CreateCallbackInput,
  type HumanAnswer,
  type HumanQuestion,
};
import {
  CALLBACK_SECRET_PREFIX,
  READ_TOKEN_PREFIX,
  callbackSecret,
  digestSecret,
  newCallbackId,
  secretMatches,
} from './secrets.js';
import type { Clock, DeliveryInput, RoostService } from './service.js';
import { namesNothing } from './storable-text.js';
import { toWireEvent } from './wire.js';
import type { Waiters } from './waiters.js';

export const CALLBACK_DELIVERY_TYPE = 'callback.delivery';
export const CALLBACK_EXPIRED_TYPE = 'callback.expired';
export const CALLBACK_SOURCE = 'callback';

/** Without an address expiry, a callback lives this long unless told (docs/api.md §3.6). */
const DEFAULT_LIFETIME_MS = 7 * 24 * 3600 * 1000;
/** Due callbacks one expiry pass takes at a time. */
const EXPIRY_BATCH = 100;

/** A callback as the wire shows it (src/contract/callback-schemas.ts). */
export type WireCallback = Callback;

export interface CallbackSelection {
  ids?: string[];
  key?: string;
  key_prefix?: string;
  status?: CallbackStatus;
}

export interface WaitOptions {
  /** Seconds to hold, 0–25. */
  wait?: number;
  signal?: AbortSignal;
  /** Who holds it (the client's IP), for the waiter caps. */
  client?: string;
}

/** What a callback URL answers its holder: never the stored event. */
export interface CallbackReceipt {
  status: 200 | 202;
  body: { duplicate: boolean; callback: { id: string; status: CallbackStatus } };
}

/** An opened callback URL: the address and the callback it names. */
export interface OpenedCallback {
  address: AddressRecord;
  callback: CallbackRecord;
}

const parse = <T>(json: string | null): T | null => (json === null ? null : (JSON.parse(json) as T));

export class CallbackService {
  constructor(
    private readonly service: RoostService,
    private readonly storage: Storage,
    private readonly waiters: Waiters,
    private readonly config: Pick<Config, 'baseUrl' | 'maxCallbacks'>,
    private readonly now: Clock = Date.now,
  ) {}

  /** The URL of a callback, when `token` is the read token that made its secret (else null). */
  private urlOf(record: CallbackRecord, token: string | undefined): string | null {
    if (!token?.startsWith(READ_TOKEN_PREFIX)) return null;
    const secret = callbackSecret(token, record.id);
    // After a rotation of the read token the URL still works, but this token cannot show it.
    if (!secretMatches(secret, record.secretDigest)) return null;
    return `${this.config.baseUrl}/api/v1/inbox/${record.addressId}/callbacks/${record.id}/${secret}`;
  }

  toWire(record: CallbackRecord, token: string | undefined): WireCallback {
    const url = this.urlOf(record, token);
    const human = parse<HumanQuestion>(record.humanJson);
    const answer = parse<HumanAnswer>(record.answerJson);
    return {
      id: record.id,
      key: record.key,
      url,
      label: record.label,
      status: record.status,
      created_at: isoTime(record.createdAt),
      expires_at: isoTime(record.expiresAt),
      completed_at: record.completedAt === null ? null : isoTime(record.completedAt),
      event_id: record.eventId,
      deliveries: record.deliveries,
      complete_when: parse<CompleteWhen>(record.completeWhenJson),
      human: human && {
        question: human.question,
        options: human.options,
        allow_comment: human.allow_comment ?? false,
        ...(url === null ? {} : { message: `${human.question}\n\nAnswer here: ${url}` }),
        answer: answer?.answer ?? null,
        comment: answer?.comment ?? null,
        answered_at: answer?.answered_at ?? null,
      },
    };
  }

  // --- bearer side ----------------------------------------------------------------------

  /** POST …/callbacks (read token): 201 with a new callback, 200 with the one its key names. */
  async create(
    addressId: string,
    token: string | undefined,
    input: CreateCallbackInput,
  ): Promise<{ status: 200 | 201; body: { callback: WireCallback } }> {
    const address = await this.service.authenticate(addressId, token, 'create callbacks');
    checkCreateInput(input);
    const now = this.now();
    const id = newCallbackId();
    // Never past the address: a callback's URL goes with it.
    const wanted = input.expires_in_seconds === undefined ? undefined : now + input.expires_in_seconds * 1000;
    const bound = address.expiresAt ?? now + DEFAULT_LIFETIME_MS;
    const human = input.human && {
      question: input.human.question,
      options: input.human.options,
      allow_comment: input.human.allow_comment ?? false,
    };
    const record: CallbackRecord = {
      id,
      addressId,
      key: input.key ?? null,
      label: input.label ?? null,
      secretDigest: digestSecret(callbackSecret(token!, id)),
      status: 'waiting',
      createdAt: now,
      expiresAt: wanted === undefined ? bound : Math.min(wanted, bound),
      completedAt: null,
      eventId: null,
      eventSequence: null,
      deliveries: 0,
      completeWhenJson: input.complete_when === undefined ? null : JSON.stringify(input.complete_when),
      humanJson: human ? JSON.stringify(human) : null,
      answerJson: null,
    };
    const result = await this.storage.createCallback({ callback: record, maxWaiting: this.config.maxCallbacks, now });
    switch (result.status) {
      case 'created':
        return { status: 201, body: { callback: this.toWire(result.callback, token) } };
      case 'existing':
        return { status: 200, body: { callback: this.toWire(result.callback, token) } };
      case 'limit':
        throw errors.callbackLimit({ max: this.config.maxCallbacks });
      case 'address_not_found':
        throw errors.inboxNotFound();
    }
  }

  private async found(addressId: string, id: string): Promise<CallbackRecord> {
    const record = namesNothing(id) ? null : await this.storage.getCallback(addressId, id);
    if (!record) throw errors.callbackNotFound();
    return record;
  }

  /**
   * GET …/callbacks/{id}: the callback and, once completed, the completing delivery's body
   * (a raw capture's parsed body, a person's answer); `includeEvent` adds the whole event.
   * With `wait`, held until it leaves `waiting` or the wait ends.
   */
  async get(
    addressId: string,
    token: string | undefined,
    id: string,
    options: WaitOptions & { includeEvent?: boolean } = {},
  ): Promise<{ callback: WireCallback; body: unknown; event?: unknown }> {
    await this.service.authenticate(addressId, token);
    const record = await this.hold(addressId, token, options, async () => {
      const current = await this.found(addressId, id);
      return { done: current.status !== 'waiting', value: current };
    });
    const event = await this.completingEvent(record);
    const answer: { callback: WireCallback; body: unknown; event?: unknown } = {
      callback: this.toWire(record, token),
      body: event === null ? null : bodyOf(record, event),
    };
    if (options.includeEvent) answer.event = event === null ? null : toWireEvent(event);
    return answer;
  }

  /** The event that completed a callback, while the queue still holds it. */
  private async completingEvent(record: CallbackRecord): Promise<EventRecord | null> {
    if (record.eventSequence === null || record.eventId === null) return null;
    const page = await this.storage.listEvents({
      addressId: record.addressId,
      after: record.eventSequence - 1,
      limit: 1,
    });
    const event = page.events[0];
    return event?.id === record.eventId ? event : null;
  }

  /**
   * GET …/callbacks: those the selection names, oldest first. With `wait` and `mode`, held
   * until any (or all) of them has left `waiting` — completed, expired or cancelled.
   */
  async list(
    addressId: string,
    token: string | undefined,
    selection: CallbackSelection,
    options: WaitOptions & { mode?: 'any' | 'all'; withBodies?: boolean } = {},
  ): Promise<{ callbacks: Array<WireCallback & { body?: unknown }> }> {
    await this.service.authenticate(addressId, token);
    if (selection.ids !== undefined) {
      if (selection.ids.length === 0 || selection.ids.length > CALLBACK_LIMITS.list)
        throw errors.invalidRequest({ message: `"ids" must name 1–${CALLBACK_LIMITS.list} callbacks.` });
    }
    if (selection.key !== undefined) checkText('key', selection.key, CALLBACK_LIMITS.key);
    if (selection.key_prefix !== undefined) checkText('key_prefix', selection.key_prefix, CALLBACK_LIMITS.key);
    if (selection.status !== undefined && !isCallbackStatus(selection.status))
      throw errors.invalidRequest({ message: `"status" must be one of ${CALLBACK_STATUSES.join(', ')}.` });
    const mode = options.mode ?? 'any';
    const records = await this.hold(addressId, token, options, async () => {
      const found = await this.storage.listCallbacks({
        addressId,
        ids: selection.ids,
        key: selection.key,
        keyPrefix: selection.key_prefix,
        status: selection.status,
        limit: CALLBACK_LIMITS.list,
      });
      const settled = found.filter((record) => record.status !== 'waiting').length;
      const done = mode === 'any' ? settled > 0 || found.length === 0 : settled === found.length;
      return { done, value: found };
    });
    const callbacks: Array<WireCallback & { body?: unknown }> = [];
    for (const record of records) {
      const wire: WireCallback & { body?: unknown } = this.toWire(record, token);
      if (options.withBodies) {
        const event = await this.completingEvent(record);
        wire.body = event === null ? null : bodyOf(record, event);
      }
      callbacks.push(wire);
    }
    return { callbacks };
  }

  /**
   * Holds a read until `check` says done, re-checking after each wake-up of the address,
   * within one waiter slot and at most WAIT_MAX_SECONDS. A wake-up carries no data: the
   * check reads again after registering, so a change between read and wait still wakes it.
   */
  private async hold<T>(
    addressId: string,
    token: string | undefined,
    options: WaitOptions,
    check: () => Promise<{ done: boolean; value: T }>,
  ): Promise<T> {
    const wait = options.wait ?? 0;
    if (!Number.isFinite(wait) || wait < 0 || wait > WAIT_MAX_SECONDS)
      throw errors.invalidRequest({ message: `"wait" must be 0–${WAIT_MAX_SECONDS} seconds.` });
    if (wait === 0) return (await check()).value;
    const release = this.service.admitWaiter(addressId, options.client ?? '', token);
    try {
      const deadline = performance.now() + wait * 1000;
      for (;;) {
        // Sequence Infinity: this ticket asks the shared read of a wake-up for nothing.
        const ticket = this.waiters.register(addressId, Infinity);
        const result = await check().catch((error: unknown) => {
          ticket.cancel();
          throw error;
        });
        const left = deadline - performance.now();
        if (result.done || left <= 0 || this.waiters.isClosing) {
          ticket.cancel();
          return result.value;
        }
        const outcome = await ticket.wait(left, options.signal);
        if (outcome !== 'woken') return (await check()).value;
        // The address may be gone or the token revoked since: authenticate again.
        await this.service.authenticate(addressId, token);
      }
    } finally {
      release();
    }
  }

  /** DELETE …/callbacks/{id} (read token): its URL answers 410 from now on. */
  async cancel(addressId: string, token: string | undefined, id: string): Promise<{ callback: WireCallback }> {
    await this.service.authenticate(addressId, token, 'cancel callbacks');
    if (namesNothing(id)) throw errors.callbackNotFound();
    const record = await this.storage.cancelCallback(addressId, id);
    if (!record) throw errors.callbackNotFound();
    this.waiters.wake(addressId);
    return { callback: this.toWire(record, token) };
  }

  // --- the URL side ---------------------------------------------------------------------

  /**
   * A callback URL: a wrong address, id or secret is the inbox's 404, whatever is sent; an
   * expired or cancelled callback is 410.
   */
  async open(addressId: string, id: string, secret: string): Promise<OpenedCallback> {
    const now = this.now();
    if (namesNothing(addressId) || namesNothing(id) || !secret.startsWith(CALLBACK_SECRET_PREFIX))
      throw errors.inboxNotFound();
    const address = await this.storage.getAddress(addressId, now);
    const callback = address ? await this.storage.getCallback(addressId, id) : null;
    if (!address || !callback || !secretMatches(secret, callback.secretDigest)) throw errors.inboxNotFound();
    if (callback.status === 'cancelled') throw errors.callbackGone({ status: 'cancelled' });
    // Past its expiry the URL is closed whatever came before (the sweeper marks a waiting one).
    if (callback.status === 'expired' || callback.expiresAt <= now) throw errors.callbackGone({ status: 'expired' });
    return { address, callback };
  }

  /**
   * Stores one delivery to a callback URL as an event, and completes the callback when it
   * is waiting and the delivery matches. A repeat (the same bytes, or the same
   * Idempotency-Key) is a duplicate; it completes a callback that a stored delivery should
   * have completed but did not (a stop between the two writes).
   */
  async deliver(
    opened: OpenedCallback,
    data: unknown,
    bytes: Buffer,
    idempotencyKey: string | undefined,
  ): Promise<CallbackReceipt> {
    const { address, callback } = opened;
    const header = effectiveIdempotencyKey(idempotencyKey, undefined);
    const key =
      header === undefined
        ? `callback:${callback.id}:body:${hash('sha256', bytes, 'hex')}`
        : `callback:${callback.id}:key:${hash('sha256', header, 'hex')}`;
    const when = parse<CompleteWhen>(callback.completeWhenJson);
    const settles = callback.status === 'waiting' && completes(when, data);
    const input: DeliveryInput = {
      type: CALLBACK_DELIVERY_TYPE,
      source: CALLBACK_SOURCE,
      data,
      metadata: callbackMetadata(callback),
    };
    const result = await this.service.deliver(address, input, key, 'http', settles);
    const event = result.body.event;
    let status = callback.status;
    if (!result.body.duplicate) await this.storage.countCallbackDelivery(address.id, callback.id);
    if (callback.status === 'waiting' && (settles || (result.body.duplicate && completes(when, event.data)))) {
      const done = await this.complete(callback, event.id, event.sequence, data);
      status = done?.status ?? (await this.found(address.id, callback.id)).status;
    }
    return {
      status: result.body.duplicate ? 200 : 202,
      body: { duplicate: result.body.duplicate, callback: { id: callback.id, status } },
    };
  }

  private async complete(callback: CallbackRecord, eventId: string, eventSequence: number, data: unknown) {
    const done = await this.storage.completeCallback({
      addressId: callback.addressId,
      id: callback.id,
      eventId,
      eventSequence,
      answerJson: callback.humanJson === null ? null : JSON.stringify(data),
      now: this.now(),
    });
    if (done) this.waiters.wake(callback.addressId);
    return done;
  }

  /**
   * A person's answer (the page's form, or JSON): one of the options, and a comment where
   * allowed. The first answer completes the callback; a later one stores nothing and is
   * shown the first. Returns the callback as it now is, and whether this answer is its answer.
   */
  async answer(
    opened: OpenedCallback,
    answer: unknown,
    comment: unknown,
    bytes: Buffer,
  ): Promise<{ recorded: boolean; callback: CallbackRecord; human: HumanQuestion }> {
    const human = parse<HumanQuestion>(opened.callback.humanJson);
    if (!human) throw errors.invalidRequest({ message: 'This callback asks no question; POST the delivery itself.' });
    if (opened.callback.status !== 'waiting') return { recorded: false, callback: opened.callback, human };
    if (typeof answer !== 'string' || !human.options.includes(answer))
      throw errors.invalidAnswer({ options: human.options });
    let note: string | null = null;
    if (comment !== undefined && comment !== null && comment !== '') {
      if (!human.allow_comment) throw errors.invalidRequest({ message: 'This question takes no comment.' });
      note = checkText('comment', comment, CALLBACK_LIMITS.comment);
    }
    const data: HumanAnswer = { answer, comment: note, answered_at: isoTime(this.now()) };
    await this.deliver(opened, data, bytes, undefined);
    const callback = await this.found(opened.address.id, opened.callback.id);
    // Two answers at once are both stored as events; the one that completed it is recorded.
    return { recorded: callback.answerJson === JSON.stringify(data), callback, human };
  }

  // --- housekeeping ---------------------------------------------------------------------

  /**
   * Expires due callbacks: each one's callback.expired event is queued first (keyed by the
   * callback, so a pass interrupted between the two writes queues no second one), then it
   * leaves `waiting`. Run by the sweeper.
   */
  async expireDue(): Promise<number> {
    const now = this.now();
    let expired = 0;
    for (;;) {
      const due = await this.storage.dueCallbacks(now, EXPIRY_BATCH);
      for (const callback of due) {
        const address = await this.storage.getAddress(callback.addressId, now);
        if (address) {
          const input: DeliveryInput = {
            type: CALLBACK_EXPIRED_TYPE,
            source: CALLBACK_SOURCE,
            data: {
              callback_id: callback.id,
              key: callback.key,
              label: callback.label,
              expires_at: isoTime(callback.expiresAt),
            },
            metadata: callbackMetadata(callback),
          };
          try {
            await this.service.deliver(address, input, `callback.expired:${callback.id}`, 'http', true);
          } catch (error) {
            // Gone meanwhile: its callbacks go with it. Anything else: the next pass retries.
            if (!(error instanceof ServiceError && error.status === 404)) throw error;
          }
        }
        if (await this.storage.expireCallback(callback.addressId, callback.id)) expired++;
        this.waiters.wake(callback.addressId);
      }
      if (due.length < EXPIRY_BATCH) return expired;
    }
  }

  /** One sweep: due callbacks expire; completed, expired and cancelled ones go with the events' retention. */
  async sweep(): Promise<void> {
    await this.expireDue();
    await this.storage.purgeCallbacks(this.now() - RETENTION_MS);
  }
}

/** The metadata of a callback's events: its id, and its key when it has one (what the `callback` read filter matches). */
function callbackMetadata(callback: CallbackRecord): Record<string, string> {
  return callback.key === null
    ? { callback_id: callback.id }
    : { callback_id: callback.id, callback_key: callback.key };
}

/** What a wait shows of the completing delivery: a person's answer, or a capture's parsed body. */
function bodyOf(record: CallbackRecord, event: EventRecord): unknown {
  const data = JSON.parse(event.dataJson) as unknown;
  if (record.humanJson !== null) return data;
  return data !== null && typeof data === 'object' && 'body' in data ? data.body : data;
}
