// Durable ingest: many senders POSTing small JSON deliveries to the inbox URLs of many
// addresses at once (autocannon, rotating across the inboxes); the same load against the
// bare baseline's route of the same shape.
import { hammer, type LoadResult } from './load.js';
import { JSON_HEADERS, SMALL_EVENT, type BenchAddress } from './fixtures.js';

export interface IngestOptions {
  connections: number;
  durationS: number;
  warmupS: number;
}

/** `afterWarmup` runs between the warm-up and the measured run (to read counters). */
export async function measureIngest(
  url: string,
  addresses: BenchAddress[],
  options: IngestOptions,
  afterWarmup?: () => Promise<void>,
): Promise<LoadResult> {
  const paths = addresses.map((a) => a.inboxPath);
  const load = {
    url,
    paths,
    method: 'POST' as const,
    headers: JSON_HEADERS,
    body: SMALL_EVENT,
    connections: options.connections,
  };
  if (options.warmupS > 0) await hammer({ ...load, durationS: options.warmupS });
  await afterWarmup?.();
  return hammer({ ...load, durationS: options.durationS });
}

/** Inbox-shaped paths for the baseline, which checks no secret. */
export function baselineInboxes(count: number): BenchAddress[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `addr_${i}`,
    readToken: '',
    email: '',
    inboxPath: `/api/v1/inbox/addr_${i}/roost_ingress_${i}`,
    eventsPath: `/api/v1/addresses/addr_${i}/events`,
  }));
}
