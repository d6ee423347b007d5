// What a command takes in: its arguments' parsers, standard input, the signal that stops it,
// and the error for a command called wrongly (exit status 2).
import { InvalidArgumentError } from 'commander';

/** A mistake in how the command was called: exit status 2. */
export class UsageError extends Error {}

export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `must be a whole number ≥ ${min}.`
          : `must be a whole number from ${min} to ${max}.`,
      );
    }
    return Number(value);
  };
}

export function httpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be an http(s) URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('must be an http(s) URL.');
  return value;
}

export const collect = (value: string, previous: string[] = []) => [...previous, value];

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Aborts on SIGINT/SIGTERM, so that a held poll or a retry sleep ends at once. */
export function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}
