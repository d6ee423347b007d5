// Reading: pages of 100 events from a filled address (GET …/events?after=…&limit=100,
// rotating across the ten pages of a full queue), against the bare baseline answering the
// same page from memory.
import { hammer, type LoadResult } from './load.js';
import type { BenchAddress } from './fixtures.js';

export const PAGE_SIZE = 100;

/** The pages of a full queue; `filter` (a query's filters) is added to each. */
export function pagePaths(address: BenchAddress, events: number, filter?: string): string[] {
  const paths: string[] = [];
  for (let after = 0; after < events; after += PAGE_SIZE)
    paths.push(`${address.eventsPath}?after=${after}&limit=${PAGE_SIZE}${filter ? `&${filter}` : ''}`);
  return paths;
}

/** A filter every bench event matches (type pattern and containment), and one none does. */
export const MATCHING_FILTER = `type=bench.*&data_contains=${encodeURIComponent('{"status":"done","ok":true}')}`;
export const UNMATCHED_FILTER = `type=bench.*&data_contains=${encodeURIComponent('{"job":"none"}')}`;

export async function measureReading(
  url: string,
  address: BenchAddress,
  paths: string[],
  options: { connections: number; durationS: number; warmupS: number },
): Promise<LoadResult> {
  const load = {
    url,
    paths,
    method: 'GET' as const,
    headers: { authorization: `Bearer ${address.readToken}` },
    connections: options.connections,
  };
  if (options.warmupS > 0) await hammer({ ...load, durationS: options.warmupS });
  return hammer({ ...load, durationS: options.durationS });
}
