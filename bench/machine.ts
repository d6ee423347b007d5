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

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
