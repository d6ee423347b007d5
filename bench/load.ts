// Load generation with autocannon (in the bench process; the server runs in a child) and
// the summary every throughput figure is reported with.
import autocannon, { type RequestSpec } from 'autocannon';
import { shuffled } from './fixtures.js';
import { busyShare, machineCpu } from './machine.js';

export interface LoadResult {
  /** Mean completed requests per second. */
  rps: number;
  p50: number;
  p99: number;
  total: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /**
   * The share of the whole machine's CPU in use while the load ran (server, load generator
   * and anything else): a figure below its cores' worth is held back by something else.
   */
  machineBusy: number;
  /** What the run cost the cores a request, as the bench prints it, where it was measured. */
  cpu?: string;
}

export interface LoadOptions {
  url: string;
  connections: number;
  durationS: number;
  /** Stop after this many requests instead of after durationS. */
  amount?: number;
  /** Paths rotated across, one per request, in a random order (see shuffled). */
  paths: string[];
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

export async function hammer(options: LoadOptions): Promise<LoadResult> {
  const paths = shuffled(options.paths);
  let next = 0;
  const request: RequestSpec = {
    method: options.method,
    headers: options.headers,
    body: options.body,
    setupRequest: (req) => {
      req.path = paths[next++ % paths.length];
      return req;
    },
  };
  const cpuBefore = machineCpu();
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    ...(options.amount ? { amount: options.amount } : { duration: options.durationS }),
    timeout: 30,
    requests: [request],
  });
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    machineBusy: busyShare(cpuBefore, machineCpu()),
  };
}

/** Two runs of the same load as one: mean rate and latencies, summed counts. */
export function meanLoad(a: LoadResult, b: LoadResult): LoadResult {
  return {
    rps: (a.rps + b.rps) / 2,
    p50: (a.p50 + b.p50) / 2,
    p99: (a.p99 + b.p99) / 2,
    total: a.total + b.total,
    errors: a.errors + b.errors,
    timeouts: a.timeouts + b.timeouts,
    non2xx: a.non2xx + b.non2xx,
    machineBusy: (a.machineBusy + b.machineBusy) / 2,
  };
}

/** A figure as the reports print it: grouped thousands, `digits` decimals, n/a when not a number. */
export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : 'n/a';

/** Nearest-rank percentile of a list of numbers (sorted here). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
