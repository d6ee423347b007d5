// `roost get`, `roost delete`, `roost update`: the address of the credentials in use.
import type { Command } from 'commander';
import type { UpdateAddress } from '../contract/credential-schemas.js';
import { addressClient, withCredentials, type ServiceFlags } from './credentials.js';
import { UsageError, wholeNumber } from './input.js';
import { note, printJson } from './output.js';

/** get and delete. */
export function registerAddress(program: Command): void {
  withCredentials(program.command('get'))
    .description('print the address of the credentials in use')
    .action(async (flags: ServiceFlags) => printJson({ address: await (await addressClient(flags)).getAddress() }));

  withCredentials(program.command('delete'))
    .description('delete the address and its events; its token and inbox URL stop working')
    .action(async (flags: ServiceFlags) => {
      const client = await addressClient(flags);
      await client.deleteAddress();
      note(`Deleted ${client.addressId}`);
    });
}

export function registerUpdate(program: Command): void {
  withCredentials(program.command('update'))
    .description('change the name, task id or lifetime of the address and print it')
    .option('--name <name>', 'human-readable purpose (at most 100 characters)')
    .option('--task-id <id>', 'your task identifier (at most 200 characters)')
    .option('--clear-task-id', 'remove the task identifier')
    .option('--expires-in <seconds>', 'new lifetime from now, 60–31536000 seconds', wholeNumber(60, 31_536_000))
    .option('--no-expiry', 'remove the lifetime (where the service allows addresses without one)')
    .action(update);
}

async function update(
  flags: ServiceFlags & { name?: string; taskId?: string; clearTaskId?: boolean; expiresIn?: number; expiry?: boolean },
) {
  const changes: UpdateAddress = {};
  if (flags.name !== undefined) changes.name = flags.name;
  if (flags.taskId !== undefined && flags.clearTaskId)
    throw new UsageError('give --task-id or --clear-task-id, not both');
  if (flags.taskId !== undefined) changes.task_id = flags.taskId;
  if (flags.clearTaskId) changes.task_id = null;
  if (flags.expiresIn !== undefined && flags.expiry === false)
    throw new UsageError('give --expires-in or --no-expiry, not both');
  if (flags.expiresIn !== undefined) changes.expires_in_seconds = flags.expiresIn;
  if (flags.expiry === false) changes.expires_in_seconds = null;
  if (Object.keys(changes).length === 0)
    throw new UsageError('nothing to change: give --name, --task-id, --clear-task-id, --expires-in or --no-expiry');
  printJson({ address: await (await addressClient(flags)).updateAddress(changes) });
}
