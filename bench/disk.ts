// The disk's own limit for durable commits: how long appending 4 KiB to a file and
// fdatasync-ing it takes here, now. One commit with synchronous=FULL costs at least this.
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { percentile } from './load.js';

export function measureFsync(dir: string, trials = 200): { p50: number; p99: number } {
  const path = join(dir, 'fsync-probe');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < trials; i++) {
      const startedAt = performance.now();
      writeSync(fd, block);
      fdatasyncSync(fd);
      times.push(performance.now() - startedAt);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}
