// `roost callback create|wait|list|cancel` (docs/cli.md): one-shot callback URLs of the
// address, built on the client SDK.
import { InvalidArgumentError, type Command } from 'commander';
import type { CallbackSelection, CallbackStatus, CreateCallback } from '../client/callback-types.js';
import { addressClient, withCredentials, type ServiceFlags } from './credentials.js';
import { collect, wholeNumber } from './input.js';
import { printJson } from './output.js';

function json(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('must be JSON, e.g. \'{"status":"succeeded"}\'.');
  }
}

/** Any JSON the command line gives, typed as the wire's pattern: the service answers a scalar with 400. */
type Pattern = NonNullable<CreateCallback['complete_when']>['data_contains'];

interface CreateFlags {
  key?: string;
  label?: string;
  expiresIn?: number;
  bodyContains?: Pattern;
  dataContains?: Pattern;
  question?: string;
  option?: string[];
  allowComment?: boolean;
}

interface SelectFlags {
  key?: string;
  keyPrefix?: string;
  status?: CallbackStatus;
}

const selectionOf = (ids: string[], flags: SelectFlags): CallbackSelection => ({
  ids: ids.length ? ids : undefined,
  key: flags.key,
  keyPrefix: flags.keyPrefix,
  status: flags.status,
});

export function registerCallback(program: Command): void {
  const callback = program
    .command('callback')
    .description('one-shot callback URLs: create one per expected answer, wait on them, list, cancel');

  withCredentials(callback.command('create'))
    .description('create a callback URL (the same --key again gives the same one) and print it')
    .option('--key <key>', 'your own key, unique in the address (e.g. a job id)')
    .option('--label <label>', 'what it is for (at most 100 characters)')
    .option('--expires-in <seconds>', 'lifetime (default: the address’s)', wholeNumber(1, 31_536_000))
    .option('--body-contains <json>', 'complete on the first delivery whose body contains this JSON', json)
    .option('--data-contains <json>', 'complete on the first delivery whose event data contains this JSON', json)
    .option('--question <text>', 'ask a person: the question shown on the page at the URL')
    .option('--option <answer>', 'an answer the person may choose (repeat, 1–10)', collect)
    .option('--allow-comment', 'let the person add a comment')
    .action(async (flags: CreateFlags & ServiceFlags) => {
      const request: CreateCallback = { key: flags.key, label: flags.label, expires_in_seconds: flags.expiresIn };
      if (flags.bodyContains !== undefined) request.complete_when = { body_contains: flags.bodyContains };
      if (flags.dataContains !== undefined) request.complete_when = { data_contains: flags.dataContains };
      if (flags.question !== undefined)
        request.human = { question: flags.question, options: flags.option ?? [], allow_comment: flags.allowComment };
      const { callback: created } = await (await addressClient(flags)).createCallback(request);
      printJson({ callback: created });
    });

  withCredentials(callback.command('wait'))
    .description('wait until any (or with --all, every) selected callback is done, and print them with their bodies')
    .argument('[ids...]', 'callback ids (cb_…)')
    .option('--key <key>', 'the callback with this key')
    .option('--key-prefix <prefix>', 'the callbacks whose key starts so')
    .option('--all', 'wait for all of them (default: any)')
    .option('--timeout <seconds>', 'give up after S seconds (default 25)', wholeNumber(0), 25)
    .action(async (ids: string[], flags: SelectFlags & ServiceFlags & { all?: boolean; timeout: number }) => {
      const client = await addressClient(flags);
      const mode = flags.all ? 'all' : 'any';
      const callbacks = await client.waitForCallbacks(selectionOf(ids, flags), {
        mode,
        timeoutMs: flags.timeout * 1000,
      });
      const withBodies = [];
      for (const one of callbacks)
        withBodies.push(
          one.status === 'completed'
            ? { ...one, body: (await client.getCallback(one.id)).body }
            : { ...one, body: null },
        );
      printJson({ callbacks: withBodies });
      const settled = callbacks.filter((one) => one.status !== 'waiting').length;
      const done = mode === 'any' ? settled > 0 || callbacks.length === 0 : settled === callbacks.length;
      // Not done in time: exit 1, as a command that did not get what it waited for.
      if (!done) process.exitCode = 1;
    });

  withCredentials(callback.command('list'))
    .description('list callbacks, oldest first')
    .argument('[ids...]', 'callback ids (cb_…)')
    .option('--key <key>', 'the callback with this key')
    .option('--key-prefix <prefix>', 'the callbacks whose key starts so')
    .option('--status <status>', 'waiting, completed, expired or cancelled')
    .action(async (ids: string[], flags: SelectFlags & ServiceFlags) =>
      printJson({ callbacks: await (await addressClient(flags)).listCallbacks(selectionOf(ids, flags)) }),
    );

  withCredentials(callback.command('cancel'))
    .description('cancel a callback: its URL answers 410 from now on')
    .argument('<id>', 'the callback (cb_…)')
    .action(async (id: string, flags: ServiceFlags) =>
      printJson({ callback: await (await addressClient(flags)).cancelCallback(id) }),
    );
}
