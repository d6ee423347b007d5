// Prometheus metrics (docs/api.md §9): one registry per running service, so that several
// servers in one process (tests) do not share counters. No label ever holds a secret or
// an address id (unbounded cardinality); only transports and outcomes.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();

  readonly deliveries = new Counter({
    name: 'roost_deliveries_total',
    help: 'Deliveries by transport and outcome (created, duplicate, queue_full, not_found).',
    labelNames: ['transport', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly duplicates = new Counter({
    name: 'roost_duplicates_total',
    help: 'Deliveries recognised as idempotent repeats (answered 200, nothing queued).',
    registers: [this.registry],
  });

  readonly addressesCreated = new Counter({
    name: 'roost_addresses_created_total',
    help: 'Return addresses created.',
    registers: [this.registry],
  });

  readonly pollsHeld: Gauge;

  readonly wakeLatency = new Histogram({
    name: 'roost_wake_latency_seconds',
    help: 'From the commit that woke a held poll to its answer being ready.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });

  readonly storageErrors = new Counter({
    name: 'roost_storage_errors_total',
    help: 'Requests that failed on our side: storage unreachable (503) or an unexpected error (500).',
    registers: [this.registry],
  });

  readonly eventsPurged = new Counter({
    name: 'roost_events_purged_total',
    help: 'Events removed by retention or expiry.',
    registers: [this.registry],
  });

  readonly refusals = new Counter({
    name: 'roost_refusals_total',
    help: 'Requests refused for the client to fix or retry (4xx), by error code: rate_limited, queue_full, forbidden…',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly smtpRefusals = new Counter({
    name: 'roost_smtp_refusals_total',
    help: 'SMTP replies refusing something (4xx, 5xx), by reply code and a fixed reason: unknown_mailbox, mailbox_full, rate_limited…',
    labelNames: ['code', 'reason'] as const,
    registers: [this.registry],
  });

  readonly streamsOpen: Gauge;

  readonly senderDeliveries = new Counter({
    name: 'roost_sender_deliveries_total',
    help:
      'Requests to inboxes with a sender (docs/api.md §3.2), by provider and outcome: verified, unverified (stored, not enforced), ' +
      'rejected (401 signature_invalid), handshake (answered, nothing stored), not_allowed (405), unavailable (503: the server key cannot open its secrets).',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly waitersRefused = new Counter({
    name: 'roost_waiters_refused_total',
    help: 'Long-polls and streams refused with 429 too_many_waiters, by the cap reached (address or client).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly connectionsRefused = new Counter({
    name: 'roost_connections_refused_total',
    help: 'HTTP connections refused with 429 too_many_connections: the peer address had too many open.',
    registers: [this.registry],
  });

  readonly requestsTimedOut = new Counter({
    name: 'roost_requests_timed_out_total',
    help: 'Requests whose headers or body did not arrive in time (answered 408, connection closed).',
    registers: [this.registry],
  });

  readonly streamsStalled = new Gauge({
    name: 'roost_streams_stalled',
    help: 'Server-Sent Event streams waiting for their reader to take what was written (backpressure).',
    registers: [this.registry],
  });

  readonly slowReadersDropped = new Counter({
    name: 'roost_slow_readers_dropped_total',
    help: 'Streams and pages whose connection was closed because the reader took nothing for ROOST_SLOW_READER_TIMEOUT_MS.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly wakeReads = new Counter({
    name: 'roost_wake_reads_total',
    help: 'Storage reads made for a wake-up: one per address woken, shared by all its polls and streams.',
    registers: [this.registry],
  });

  constructor(heldPolls: () => number, openStreams: () => number) {
    this.pollsHeld = this.sampledGauge('roost_polls_held', 'Long-polls currently held open.', heldPolls);
    this.streamsOpen = this.sampledGauge(
      'roost_streams_open',
      'Server-Sent Event streams currently open.',
      openStreams,
    );
    collectDefaultMetrics({ register: this.registry, prefix: 'roost_' });
  }

  /** A gauge read from `sample` when /metrics is scraped, not kept up to date by hand. */
  private sampledGauge(name: string, help: string, sample: () => number): Gauge {
    return new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(sample());
      },
    });
  }
}
