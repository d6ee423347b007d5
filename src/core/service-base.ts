// What every operation of the service (core/service.ts) stands on: its clock and parts, who
// a bearer credential is (docs/api.md §5), which address an inbox URL opens (§3), a slot for
// a held poll or stream, the one read a wake-up shares, and the sender of an address opened
// with the server key.
import type { Config } from '../config.js';
import type { AddressRecord, InboxCredentials, Storage } from '../storage/storage.js';
import { errors } from './errors.js';
import { EVENT_CAPACITY, LIMIT_MAX, WAITER_RETRY_AFTER_SECONDS } from './limits.js';
import type { Metrics } from './metrics.js';
import { SecretKeyMismatch, type SecretBox } from './secret-box.js';
import { INGRESS_SECRET_PREFIX, READ_TOKEN_PREFIX, VIEW_TOKEN_PREFIX, digestSecret, secretMatches } from './secrets.js';
import { openSender, type LoadedSender } from './senders/settings.js';
import type { Access, Clock, InboxAdmission } from './service-types.js';
import { namesNothing } from './storable-text.js';
import type { SharedRead, Waiters } from './waiters.js';

export class ServiceBase {
  protected readonly now: Clock;

  constructor(
    protected readonly storage: Storage,
    protected readonly waiters: Waiters,
    protected readonly config: Config,
    protected readonly metrics: Metrics,
    clock: Clock = Date.now,
    /** Seals and opens sender secrets (docs/api.md §3.2); without it, senders cannot be set. */
    protected readonly secretBox?: SecretBox,
  ) {
    this.now = clock;
    waiters.useReader((addressId, after, ackSince) => this.readForWaiters(addressId, after, ackSince));
  }

  /**
   * The inbox: the secret in the URL is the only credential; every miss is the same 404.
   * After a rotation with a grace period the previous secret is accepted until it ends.
   */
  async authorizeInbox(addressId: string, secret: string): Promise<AddressRecord> {
    const now = this.now();
    const address = namesNothing(addressId) ? null : await this.storage.getAddress(addressId, now);
    if (address && admits(address, secret, now)) return address;
    throw errors.inboxNotFound();
  }

  /**
   * As authorizeInbox, but a plain inbox may be admitted on the address as this instance read
   * it lately (PostgreSQL: one round trip fewer a delivery, docs/scale-out.md); `admittedBy`
   * then goes with its append, which stores nothing unless the address still admits it.
   * Only a yes is taken from that read: a no, or an inbox with a sender, is asked afresh.
   */
  async admitToInbox(addressId: string, secret: string): Promise<InboxAdmission> {
    const now = this.now();
    const recent = namesNothing(addressId) ? null : this.storage.recentAddress(addressId, now);
    if (recent && !recent.hasSender && admits(recent, secret, now)) return { address: recent, admittedBy: recent };
    return { address: await this.authorizeInbox(addressId, secret) };
  }

  /** The one read a wake-up makes for all the polls and streams of an address. */
  private async readForWaiters(addressId: string, after: number, ackSince?: number): Promise<SharedRead> {
    this.metrics.wakeReads.inc();
    const address = await this.storage.getAddress(addressId, this.now());
    if (!address) return { after, address, records: [], bytes: [], hasMore: false, latestSequence: 0 };
    const page = await this.storage.listEvents({
      addressId,
      after,
      limit: LIMIT_MAX,
      maxBytes: this.config.maxPageBytes,
    });
    const bytes = page.events.map(
      (record) =>
        Buffer.byteLength(record.dataJson) +
        (record.metadataJson === null ? 0 : Buffer.byteLength(record.metadataJson)),
    );
    const acks =
      ackSince === undefined
        ? undefined
        : await this.storage.listAcknowledged({
            addressId,
            since: ackSince,
            upTo: Number.MAX_SAFE_INTEGER,
            limit: EVENT_CAPACITY,
          });
    return {
      after,
      address,
      records: page.events,
      bytes,
      hasMore: page.hasMore,
      latestSequence: page.latestSequence,
      acks,
      ackSince,
    };
  }

  /**
   * A slot for one held poll or stream, or 429 too_many_waiters (counted) when a cap is
   * reached. `token` has been authenticated: a view token takes a slot of the view tokens' share.
   * Every held read takes its slot here, the callback waits (callbacks.ts) included.
   */
  admitWaiter(addressId: string, client: string, token: string | undefined): () => void {
    const access = token?.startsWith(VIEW_TOKEN_PREFIX) ? 'view' : 'full';
    const admitted = this.waiters.admit(addressId, client, access);
    if (typeof admitted === 'function') return admitted;
    this.metrics.waitersRefused.inc({ limit: admitted });
    const cap =
      admitted === 'address'
        ? this.config.maxWaitersPerAddress
        : admitted === 'view'
          ? this.waiters.viewShare
          : this.config.maxWaitersPerIp;
    throw errors.tooManyWaiters({ scope: admitted, limit: cap, retryAfterSeconds: WAITER_RETRY_AFTER_SECONDS });
  }

  /** The operator's lifetime cap (ROOST_MAX_TTL_SECONDS), at creation and on PATCH alike. */
  protected checkLifetimeCap(seconds: number): void {
    const cap = this.config.maxTtlSeconds;
    if (cap !== undefined && seconds > cap) {
      throw errors.invalidRequest({
        message: `expires_in_seconds must be at most ${cap} on this service (its lifetime cap); got ${seconds}.`,
      });
    }
  }

  /**
   * docs/api.md §5: unknown or expired address → 404 first; then a bad token → 401. `write`
   * names what the call changes; a view token may not (403).
   */
  async authenticate(addressId: string, token: string | undefined, write?: string): Promise<AddressRecord> {
    const address = namesNothing(addressId) ? null : await this.storage.getAddress(addressId, this.now());
    if (!address) throw errors.addressNotFound();
    if (token === undefined) throw errors.unauthorized({ why: 'Missing bearer token.' });
    const access = await this.accessOf(address, token);
    if (access === null) throw errors.unauthorized({ why: 'The bearer token is not valid for this return address.' });
    if (access === 'view' && write !== undefined) throw errors.forbidden({ what: write });
    return address;
  }

  /** A rotation or revocation wakes held polls: the old credential gets no more events. */
  protected async stillOpens(address: AddressRecord, token: string | undefined): Promise<void> {
    if ((await this.accessOf(address, token!)) === null)
      throw errors.unauthorized({ why: 'The bearer token was rotated or revoked while the poll was held.' });
  }

  /** What `token` may do on this address now, or null when it opens nothing. */
  protected async accessOf(address: AddressRecord, token: string): Promise<Access | null> {
    if (token.startsWith(READ_TOKEN_PREFIX)) return secretMatches(token, address.readTokenDigest) ? 'full' : null;
    if (!token.startsWith(VIEW_TOKEN_PREFIX)) return null;
    const found = await this.storage.findViewToken(address.id, digestSecret(token), this.now());
    return found ? 'view' : null;
  }

  protected box(): SecretBox {
    if (!this.secretBox) throw errors.sendersUnavailable();
    return this.secretBox;
  }

  /**
   * The sender that verifies this inbox's deliveries, null when none is set (cleared since
   * the address was read), or 'key_mismatch' when the server key cannot open its secrets or
   * this build knows no provider of its name: never a delivery let through unverified.
   */
  protected async loadSender(address: AddressRecord): Promise<LoadedSender | null | 'key_mismatch'> {
    const record = await this.storage.getSender(address.id);
    if (!record) return null;
    try {
      return (this.secretBox && openSender(record, this.secretBox)) ?? 'key_mismatch';
    } catch (error) {
      if (error instanceof SecretKeyMismatch) return 'key_mismatch';
      throw error;
    }
  }
}

/** Whether an inbox secret opens the address at `now`: its secret, or the previous one within its grace period. */
function admits(address: InboxCredentials, secret: string, now: number): boolean {
  if (!secret.startsWith(INGRESS_SECRET_PREFIX)) return false;
  if (secretMatches(secret, address.ingressSecretDigest)) return true;
  const { previousIngressDigest: previous, previousIngressUntil: until } = address;
  return previous !== null && until !== null && until > now && secretMatches(secret, previous);
}
