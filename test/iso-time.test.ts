// isoTime keeps the part of the last timestamp up to the second: whatever the order of
// calls, it must write exactly what Date#toISOString writes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isoTime } from '../src/core/iso-time.js';

const YEAR_10000 = Date.UTC(10000, 0, 1);

test('isoTime writes what toISOString writes, for any sequence of calls', () => {
  // Runs of nearby instants (the cache's case) mixed with jumps, and instants outside
  // years 0–9999, which have a longer form.
  const instant = fc.oneof(
    fc.integer({ min: 0, max: YEAR_10000 - 1 }),
    fc.integer({ min: -8_640_000_000_000_000, max: 8_640_000_000_000_000 }),
  );
  const run = fc
    .tuple(instant, fc.array(fc.integer({ min: -1500, max: 1500 }), { maxLength: 20 }))
    .map(([start, steps]) => steps.reduce((at, step) => [...at, at[at.length - 1] + step], [start]));
  fc.assert(
    fc.property(fc.array(run, { minLength: 1, maxLength: 5 }), (runs) => {
      for (const ms of runs.flat()) {
        if (Math.abs(ms) > 8_640_000_000_000_000) continue; // outside what a Date can hold
        assert.equal(isoTime(ms), new Date(ms).toISOString(), `at ${ms}`);
      }
    }),
    { numRuns: 2000 },
  );
});

test('isoTime: the milliseconds are padded, and a second seen again is not stale', () => {
  const base = Date.UTC(2026, 10, 21, 10, 0, 0);
  assert.equal(isoTime(base + 7), '2026-11-21T10:00:00.007Z');
  assert.equal(isoTime(base + 42), '2026-11-21T10:00:00.042Z');
  assert.equal(isoTime(base + 999), '2026-11-21T10:00:00.999Z');
  assert.equal(isoTime(base + 1000), '2026-11-21T10:00:01.000Z');
  assert.equal(isoTime(base - 1), '2026-11-21T09:59:59.999Z');
  assert.equal(isoTime(Date.UTC(10000, 0, 1) + 5), '+010000-01-01T00:00:00.005Z');
  assert.equal(isoTime(Date.UTC(10000, 0, 1) + 6), '+010000-01-01T00:00:00.006Z');
});
