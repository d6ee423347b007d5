// `roost send`: one event delivered to an inbox URL, as a remote service would.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { RoostClient } from '../client/client.js';
import type { CreateEvent } from '../contract/schemas.js';
import { USER_AGENT } from './credentials.js';
import { collect, httpUrl, readStdin, UsageError } from './input.js';
import { note, printJson } from './output.js';

export function registerSend(program: Command): void {
  program
    .command('send')
    .description('deliver one event to an inbox URL and print the response')
    .argument('<inbox-url>', 'the inbox_url of a creation response', httpUrl)
    .option('--type <type>', 'event type [message.received]')
    .option('--source <source>', 'event source [https]')
    .option('--data <json>', 'the payload: JSON text, @file, or @- for standard input')
    .option('--metadata <key=value>', 'a metadata entry (repeatable)', collect)
    .option('--key <key>', 'Idempotency-Key: a repeat with the same key queues nothing new')
    .action(send);
}

async function send(
  inboxUrl: string,
  flags: { type?: string; source?: string; data?: string; metadata?: string[]; key?: string },
) {
  const event: CreateEvent = {};
  if (flags.type !== undefined) event.type = flags.type;
  if (flags.source !== undefined) event.source = flags.source;
  if (flags.data !== undefined) event.data = await readData(flags.data);
  if (flags.metadata?.length) {
    event.metadata = {};
    for (const pair of flags.metadata) {
      const at = pair.indexOf('=');
      if (at < 1) throw new UsageError(`--metadata wants key=value, got "${pair}"`);
      event.metadata[pair.slice(0, at)] = pair.slice(at + 1);
    }
  }
  const client = new RoostClient({ baseUrl: new URL(inboxUrl).origin, userAgent: USER_AGENT });
  const result = await client.deliver(inboxUrl, event, { idempotencyKey: flags.key });
  printJson(result);
  note(
    result.duplicate
      ? `Duplicate: ${result.event.id} (#${result.event.sequence}) was already queued with this key; nothing new was queued`
      : `Queued ${result.event.id} as #${result.event.sequence}`,
  );
}

/** --data: JSON text, @file, or @- for standard input. */
async function readData(value: string): Promise<unknown> {
  let text = value;
  let from = '--data';
  if (value.startsWith('@')) {
    from = value === '@-' ? 'standard input' : value.slice(1);
    try {
      text = value === '@-' ? await readStdin() : await readFile(value.slice(1), 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${from}: ${(error as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${from} is not JSON: ${(error as Error).message}`);
  }
}
