// Per-client-IP limits of the SMTP listener: simultaneous connections and messages per
// period (a token bucket), kept in memory — a sender is one process's concern, and a real
// MTA told 4xx retries later. One address cannot take the whole listener from the others.
import { takeFromBucket, type BucketState } from '../core/records.js';
import type { RateSpec } from '../config.js';

/** Buckets kept at most; the oldest goes first (a full bucket is the same as none). */
const MAX_BUCKETS = 100_000;

export class IpLimits {
  private readonly connections = new Map<string, Set<string>>();
  private readonly buckets = new Map<string, BucketState>();

  constructor(
    private readonly maxConnections: number,
    private readonly rate: RateSpec,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records a connection; false when the IP already holds its maximum. */
  connect(ip: string, sessionId: string): boolean {
    let held = this.connections.get(ip);
    if (!held) this.connections.set(ip, (held = new Set()));
    if (held.size >= this.maxConnections) return false;
    held.add(sessionId);
    return true;
  }

  disconnect(ip: string, sessionId: string): void {
    const held = this.connections.get(ip);
    if (!held) return;
    held.delete(sessionId);
    if (held.size === 0) this.connections.delete(ip);
  }

  /** Takes one message token; the seconds to wait when none is left, else 0. */
  takeMessage(ip: string): number {
    const { next, result } = takeFromBucket(
      this.buckets.get(ip) ?? null,
      this.rate.limit,
      this.rate.periodMs,
      this.now(),
    );
    this.buckets.delete(ip); // re-inserted last: the map's order is least recently used first
    if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value!);
    this.buckets.set(ip, next);
    return result.allowed ? 0 : Math.max(1, Math.ceil(result.retryAfterMs / 1000));
  }
}
