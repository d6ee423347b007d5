// `roost create`: a new return address; its creation response printed (and saved with --save).
import type { Command } from 'commander';
import { RoostClient } from '../client/client.js';
import type { CreateAddress } from '../contract/schemas.js';
import { checkedUrl, DEFAULT_URL, openForSave, USER_AGENT, withUrl, type ServiceFlags } from './credentials.js';
import { wholeNumber } from './input.js';
import { note, printJson } from './output.js';

export function registerCreate(program: Command): void {
  withUrl(program.command('create'))
    .description('create a return address and print the creation response (its read token is shown once)')
    .option('--name <name>', 'human-readable purpose (at most 100 characters)')
    .option('--task-id <id>', 'your task identifier (at most 200 characters)')
    .option('--expires-in <seconds>', 'lifetime, 60–31536000 seconds', wholeNumber(60, 31_536_000))
    .option('--save <file>', 'also write the response to FILE, mode 0600')
    .option('--force', 'let --save overwrite an existing file')
    .action(create);
}

async function create(
  flags: ServiceFlags & { name?: string; taskId?: string; expiresIn?: number; save?: string; force?: boolean },
) {
  const baseUrl = flags.url ?? (process.env.ROOST_URL ? checkedUrl(process.env.ROOST_URL, 'ROOST_URL') : DEFAULT_URL);
  const client = new RoostClient({ baseUrl, userAgent: USER_AGENT });
  // Open the file before creating, so that a refusal to overwrite wastes no address.
  const file = flags.save ? await openForSave(flags.save, Boolean(flags.force)) : undefined;
  const request: CreateAddress = {};
  if (flags.name !== undefined) request.name = flags.name;
  if (flags.taskId !== undefined) request.task_id = flags.taskId;
  if (flags.expiresIn !== undefined) request.expires_in_seconds = flags.expiresIn;
  let created;
  try {
    created = await client.createAddress(request);
  } catch (error) {
    await file?.discard();
    throw error;
  }
  let saveError: unknown;
  try {
    await file?.write(`${JSON.stringify(created, null, 2)}\n`);
  } catch (error) {
    saveError = error;
  }
  // Printed even when saving failed: the read token is shown once (docs/api.md §2.3).
  printJson(created);
  if (saveError)
    throw new Error(`could not save to ${flags.save}: ${(saveError as Error).message} (the response is on stdout)`);
  note(`Created ${created.address.id} (${created.address.name})`);
  note(`  email:  ${created.address.email}`);
  note(`  inbox:  ${created.endpoints.inbox_url}  (give this to the sender; it can only write)`);
  if (created.address.expiresAt) note(`  expires ${created.address.expiresAt}`);
  note(
    flags.save
      ? `The read token is shown once; it is saved in ${flags.save} (mode 0600). Next: roost events --credentials ${flags.save} --follow`
      : 'The read token is shown once: keep the JSON above (or use --save FILE).',
  );
}
