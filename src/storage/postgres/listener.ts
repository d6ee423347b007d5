// The LISTEN connection of the PostgreSQL engine: one connection per instance, outside the
// pool, that receives the `NOTIFY roost_wake` of commits made by other instances, so that
// polls and streams held here wake. It survives every way a connection dies (crash,
// pg_terminate_backend, a stalled or partitioned server) by reconnecting on its own.
// Its heartbeat is a NOTIFY sent through the pool that must come back on this connection:
// a LISTEN that cannot hear (one made through a transaction pooler) is found at start and
// refused, and one that goes deaf later is logged and shown in /readyz.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { ANY_ADDRESS } from '../storage.js';

/** The NOTIFY channel; its payload is an address id and nothing else. */
export const WAKE_CHANNEL = 'roost_wake';

/**
 * Reconnect backoff: 100 ms doubling to 1 s, with jitter. The ceiling is low because
 * cross-instance wake-ups are missing until the listener is back, and an attempt against a
 * server that is down costs one refused connection.
 */
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 1_000;

/**
 * The LISTEN connection is asked a `SELECT 1` this often, and counts as lost when no answer
 * comes in time. A connection that dies without a word — a NAT or load balancer dropping a
 * flow it thinks idle, a partition — would otherwise go unnoticed for hours (TCP keepalive
 * starts after 2 h by default), with every wake-up from other instances lost meanwhile; the
 * traffic also keeps such idle timeouts from firing at all.
 */
export interface ListenerHeartbeat {
  everyMs: number;
  timeoutMs: number;
}
export const LISTENER_HEARTBEAT: ListenerHeartbeat = { everyMs: 30_000, timeoutMs: 10_000 };

/** A probe's payload: never an address id (those start with `addr_`). */
const PROBE_PREFIX = 'roost-probe:';

/** How the listener proves that it hears: `send` NOTIFYs a payload through the pool. */
export interface ListenerProbe {
  /** The setting whose URL the LISTEN connection uses, for messages. */
  setting: string;
  send(payload: string): Promise<unknown>;
}

/**
 * One connection per instance, outside the pool, that LISTENs on the wake channel. When it
 * is lost (database restart, pg_terminate_backend, network) it reconnects with backoff; once
 * back it reports ANY_ADDRESS, because notifications sent while it was away are lost and
 * every local waiter must re-read (a lost wake-up costs latency only: a wake-up carries no data).
 */
export class WakeListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** Probes sent and not yet heard, by payload. */
  private readonly awaited = new Map<string, () => void>();
  /** Whether the last probe came back (true until one does not). */
  private heard = true;
  /** Since when wake-ups may have been missing (lost or deaf), until heard again. */
  private downSince: number | undefined;

  constructor(
    private readonly clientConfig: pg.ClientConfig,
    private readonly onWake: (addressId: string) => void,
    private readonly logger?: Logger,
    private readonly heartbeat: ListenerHeartbeat = LISTENER_HEARTBEAT,
    private readonly probe?: ListenerProbe,
  ) {}

  /**
   * The first connection, and a first probe: open() fails if the connection cannot be made
   * or does not hear a NOTIFY sent through the pool.
   */
  async start(): Promise<void> {
    await this.connect();
    const probed = this.probe ? await this.probeOnce() : 'heard';
    if (probed !== 'heard') {
      await this.stop();
      if (probed === 'unsent') throw new Error('the database did not answer a NOTIFY through the pool in time');
      throw new Error(
        `a NOTIFY sent through DATABASE_URL did not reach the LISTEN connection (${this.probe!.setting}) within ` +
          `${this.heartbeat.timeoutMs} ms, so wake-ups from other instances would be lost. LISTEN needs a session: ` +
          'through a transaction pooler, set ROOST_PG_LISTEN_URL to a direct or session-pooled URL of the same database',
      );
    }
  }

  /** Whether the LISTEN connection is up (for tests and diagnostics). */
  get connected(): boolean {
    return this.client !== undefined;
  }

  /** Whether wake-ups from other instances arrive: connected, and the last probe was heard. */
  get healthy(): boolean {
    return this.connected && this.heard;
  }

  /**
   * For /readyz: false once wake-ups have been missing for longer than the heartbeat's
   * timeout. A listener back within it (a database restart, a terminated backend: it
   * reconnects within a second) does not take the instance out of its balancer.
   */
  get arriving(): boolean {
    return this.healthy || this.downSince === undefined || Date.now() - this.downSince < this.heartbeat.timeoutMs;
  }

  /**
   * Sends one probe through the pool: `heard` here in time, `deaf` (sent, not heard), or
   * `unsent` (the pool did not send it in time: the database, not this connection, is away).
   */
  private async probeOnce(): Promise<'heard' | 'deaf' | 'unsent'> {
    const payload = `${PROBE_PREFIX}${randomUUID()}`;
    let timer: NodeJS.Timeout | undefined;
    let sent = false;
    // Bounded by the timeout whether the pool answers or not: a stalled server holds both.
    const heard = new Promise<boolean>((resolve) => {
      this.awaited.set(payload, () => resolve(true));
      timer = setTimeout(() => resolve(false), this.heartbeat.timeoutMs);
      this.probe!.send(payload).then(
        () => (sent = true),
        () => resolve(false),
      );
    });
    try {
      return (await heard) ? 'heard' : sent ? 'deaf' : 'unsent';
    } finally {
      clearTimeout(timer);
      this.awaited.delete(payload);
    }
  }

  /** The listener's backend process id, so tests can terminate it. */
  async backendPid(): Promise<number | undefined> {
    // The connection may be dying under us: no pid then, rather than an error.
    const result = await this.client?.query<{ pid: number }>('SELECT pg_backend_pid() AS pid').catch(() => undefined);
    return result?.rows[0]?.pid;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.clientConfig);
    // Every way the connection can die lands in lost(); the 'error' listener also keeps an
    // error on this client from being an unhandled 'error' event, which would end the process.
    let dead = false;
    const died = () => {
      dead = true;
      this.lost(client);
    };
    client.on('error', died);
    client.on('end', died);
    client.on('notification', (message) => {
      if (message.channel !== WAKE_CHANNEL || !message.payload) return;
      if (message.payload.startsWith(PROBE_PREFIX)) this.awaited.get(message.payload)?.();
      else this.onWake(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${WAKE_CHANNEL}`);
      if (dead) throw new Error('the LISTEN connection closed as it opened');
    } catch (error) {
      client.end().catch(() => {});
      throw error;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.scheduleHeartbeat(client);
  }

  /**
   * One heartbeat at a time: the next is scheduled once this one has been answered. A probe
   * that the pool sent but this connection did not hear means a deaf LISTEN; a probe the
   * pool could not send (the database is away) says nothing about this connection, which
   * then answers a `SELECT 1` itself or counts as lost.
   */
  private scheduleHeartbeat(client: pg.Client): void {
    this.heartbeatTimer = setTimeout(() => {
      void (async () => {
        const probed = this.probe ? await this.probeOnce() : 'unsent';
        if (client !== this.client) return;
        if (probed === 'heard') {
          if (!this.heard) this.logger?.info('wake-ups from other instances arrive again');
          this.heard = true;
          this.downSince = undefined;
          return this.scheduleHeartbeat(client);
        }
        if (probed === 'deaf') {
          this.heard = false;
          this.downSince ??= Date.now();
          this.logger?.warn(
            { setting: this.probe!.setting },
            'a NOTIFY sent through the pool did not reach the LISTEN connection: wake-ups from other instances are ' +
              'not arriving (long-polls held here fall back to their timeouts); reconnecting',
          );
          return this.lost(client);
        }
        if (await this.answers(client)) {
          if (client === this.client) this.scheduleHeartbeat(client);
        } else this.lost(client);
      })();
    }, this.heartbeat.everyMs);
    this.heartbeatTimer.unref();
  }

  /** Whether the connection answers a `SELECT 1` within the heartbeat's timeout. */
  private async answers(client: pg.Client): Promise<boolean> {
    let timeout: NodeJS.Timeout | undefined;
    const unanswered = new Promise<boolean>((resolve) => {
      timeout = setTimeout(() => resolve(false), this.heartbeat.timeoutMs);
    });
    try {
      return await Promise.race([client.query('SELECT 1').then(() => true), unanswered]);
    } catch {
      return false;
    } finally {
      clearTimeout(timeout);
    }
  }

  private lost(client: pg.Client): void {
    if (client !== this.client || this.stopped) return;
    this.client = undefined;
    this.downSince ??= Date.now();
    clearTimeout(this.heartbeatTimer);
    this.logger?.warn(
      'PostgreSQL LISTEN connection lost; reconnecting (long-polls held here fall back to their timeouts meanwhile)',
    );
    client.end().catch(() => {});
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    const ceiling = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.attempt);
    this.attempt++;
    this.timer = setTimeout(
      () => {
        this.connect().then(
          async () => {
            if (this.stopped) return;
            this.logger?.info({ attempts: this.attempt }, 'PostgreSQL LISTEN connection restored');
            this.attempt = 0;
            this.onWake(ANY_ADDRESS);
            // Heard again only once a probe comes back (a deaf LISTEN reconnects deaf).
            if (this.probe && !this.heard) this.heard = (await this.probeOnce()) === 'heard';
            if (this.heard && this.client !== undefined) this.downSince = undefined;
          },
          () => this.scheduleReconnect(),
        );
      },
      ceiling / 2 + Math.random() * (ceiling / 2),
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.heartbeatTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}
