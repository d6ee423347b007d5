// A headline ratio taken in short slices: the baseline and Roost measured in turn (baseline,
// Roost, baseline, …, baseline), each Roost slice against the mean of the two baseline
// slices around it. On a shared machine the baseline's own rate moves by a quarter from one
// second to the next and drifts over minutes (BENCHMARKS.md, "each headline ratio
// taken in turn"); a ratio per slice follows the machine, and their median is not
// moved by one slow stretch on either side as one long run of each is.

import { percentile } from './load.js';

export interface InterleavedRatio {
  /** Roost's rate over the baseline's, one per Roost slice, in the order measured. */
  ratios: number[];
  median: number;
  /** The middle half of the ratios: the first and third quartiles. */
  low: number;
  high: number;
  /** The median rate of each side's slices, to set beside its long run's. */
  roostRate: number;
  baselineRate: number;
}

/**
 * `slices` Roost slices, each between two baseline slices; each slice function runs one
 * slice of load (its server already warm) and returns its rate.
 */
export async function interleave(
  slices: number,
  baseline: () => Promise<number>,
  roost: () => Promise<number>,
): Promise<InterleavedRatio> {
  if (slices < 1) throw new Error('interleave: at least one slice');
  const baselineRates = [await baseline()];
  const roostRates: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < slices; i++) {
    roostRates.push(await roost());
    baselineRates.push(await baseline());
    ratios.push(roostRates[i] / ((baselineRates[i] + baselineRates[i + 1]) / 2));
  }
  return {
    ratios,
    median: percentile(ratios, 50),
    low: percentile(ratios, 25),
    high: percentile(ratios, 75),
    roostRate: percentile(roostRates, 50),
    baselineRate: percentile(baselineRates, 50),
  };
}
