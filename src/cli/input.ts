// What a command takes in: its arguments' parsers (filters included), standard input, the signal that stops it,
// and the error for a command called wrongly (exit status 2).
import { InvalidArgumentError, type Command } from 'commander';
import type { EventFilterOptions } from '../client/client.js';

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

/** --type, --source, --callback, --data-contains, --body-contains of `events` and `listen` (docs/cli.md). */
export interface FilterFlags {
  type?: string;
  source?: string;
  callback?: string;
  dataContains?: string;
  bodyContains?: string;
}

export function filterOf(flags: FilterFlags): EventFilterOptions {
  const json = (name: string, text: string | undefined): unknown => {
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${name} is not JSON: ${(error as Error).message}`);
    }
  };
  return {
    type: flags.type,
    source: flags.source,
    callback: flags.callback,
    dataContains: json('--data-contains', flags.dataContains),
    bodyContains: json('--body-contains', flags.bodyContains),
  };
}

/** The filter options of `events` and `listen`. */
export function withFilters(command: Command): Command {
  return command
    .option('--type <patterns>', 'only these types: comma-separated, each exact or ending in * for a prefix')
    .option('--source <source>', 'only events of this source')
    .option('--callback <id-or-key>', "only a callback's deliveries (its cb_… id or its key)")
    .option('--data-contains <json>', 'only events whose data contains this JSON (e.g. \'{"status":"done"}\')')
    .option('--body-contains <json>', "the same against data.body (a raw capture's JSON body)");
}
