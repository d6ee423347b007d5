// What the figures were measured on: printed with every run, because absolute numbers
// only mean something next to the machine and its load at the time.
import { readFileSync } from 'node:fs';
import os from 'node:os';

export function describeMachine(): string {
  const cpu = /model name\s*:\s*(.*)/.exec(safeRead('/proc/cpuinfo'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown CPU';
  const memGiB = (os.totalmem() / 2 ** 30).toFixed(1);
  return `${os.availableParallelism()} × ${cpu}, ${memGiB} GiB RAM, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

export function loadAverage(): string {
  return os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
}

/** The whole machine's CPU time so far (/proc/stat, in clock ticks): all of it, and the part not idle. */
export interface MachineCpu {
  total: number;
  busy: number;
}

/** Null where /proc/stat cannot be read (not Linux). */
export function machineCpu(): MachineCpu | null {
  const line = /^cpu\s+(.*)$/m.exec(safeRead('/proc/stat'))?.[1];
  if (!line) return null;
  // user nice system idle iowait irq softirq steal (guest time is counted in user already).
  const ticks = line.trim().split(/\s+/).slice(0, 8).map(Number);
  const total = ticks.reduce((sum, n) => sum + n, 0);
  return { total, busy: total - ticks[3] - ticks[4] };
}

/** The share of the machine's CPU in use between two readings, 0 to 1; NaN without them. */
export function busyShare(before: MachineCpu | null, after: MachineCpu | null): number {
  if (!before || !after || after.total === before.total) return NaN;
  return (after.busy - before.busy) / (after.total - before.total);
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
