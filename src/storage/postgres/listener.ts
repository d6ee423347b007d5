// The LISTEN connection of the PostgreSQL engine: one connection per instance, outside the
// pool, that receives the `NOTIFY roost_wake` of commits made by other instances, so that
// polls and streams held here wake. It survives every way a connection dies (crash,
// pg_terminate_backend, a stalled or partitioned server) by reconnecting on its own.
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

  constructor(
    private readonly clientConfig: pg.ClientConfig,
    private readonly onWake: (addressId: string) => void,
    private readonly logger?: Logger,
    private readonly heartbeat: ListenerHeartbeat = LISTENER_HEARTBEAT,
  ) {}

  /** The first connection; open() fails if it cannot be made. */
  start(): Promise<void> {
    return this.connect();
  }

  /** Whether the LISTEN connection is up (for tests and diagnostics). */
  get connected(): boolean {
    return this.client !== undefined;
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
      if (message.channel === WAKE_CHANNEL && message.payload) this.onWake(message.payload);
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

  /** One heartbeat at a time: the next is scheduled once this one has been answered. */
  private scheduleHeartbeat(client: pg.Client): void {
    this.heartbeatTimer = setTimeout(() => {
      let timeout: NodeJS.Timeout | undefined;
      const unanswered = new Promise<never>((_, reject) => {
        timeout = setTimeout(() => reject(new Error('no answer')), this.heartbeat.timeoutMs);
      });
      Promise.race([client.query('SELECT 1'), unanswered])
        .then(
          () => {
            if (client === this.client) this.scheduleHeartbeat(client);
          },
          () => this.lost(client),
        )
        .finally(() => clearTimeout(timeout));
    }, this.heartbeat.everyMs);
    this.heartbeatTimer.unref();
  }

  private lost(client: pg.Client): void {
    if (client !== this.client || this.stopped) return;
    this.client = undefined;
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
          () => {
            if (this.stopped) return;
            this.logger?.info({ attempts: this.attempt }, 'PostgreSQL LISTEN connection restored');
            this.attempt = 0;
            this.onWake(ANY_ADDRESS);
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
