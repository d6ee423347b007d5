// `roost rotate read-token | inbox-secret`: a new credential printed, and written into the
// saved credentials file in use.
import type { Command } from 'commander';
import { addressClient, updateSavedCredentials, withCredentials, type ServiceFlags } from './credentials.js';
import { wholeNumber } from './input.js';
import { note, printJson } from './output.js';

export function registerRotate(program: Command): void {
  const rotate = program
    .command('rotate')
    .description('replace a credential of the address; a saved credentials file is updated in place');
  withCredentials(rotate.command('read-token'))
    .description('replace the read token (the old one stops at once) and print the new one')
    .action(rotateReadToken);
  withCredentials(rotate.command('inbox-secret'))
    .description('replace the inbox URL and print the new one')
    .option('--grace <seconds>', 'keep the old inbox URL working this long, 0–86400', wholeNumber(0, 86_400))
    .action(rotateInboxSecret);
}

async function rotateReadToken(flags: ServiceFlags) {
  const client = await addressClient(flags);
  const credentials = await client.rotateReadToken();
  printJson({ credentials });
  await updateSavedCredentials(flags, (saved) => {
    saved.credentials = { ...saved.credentials, read_token: credentials.read_token };
  });
  note('The old read token no longer works.');
}

async function rotateInboxSecret(flags: ServiceFlags & { grace?: number }) {
  const client = await addressClient(flags);
  const inboxUrl = await client.rotateInboxSecret({ graceSeconds: flags.grace });
  printJson({ endpoints: { inbox_url: inboxUrl } });
  await updateSavedCredentials(flags, (saved) => {
    saved.endpoints = { ...saved.endpoints, inbox_url: inboxUrl };
  });
  note(
    flags.grace
      ? `Give the new inbox URL to the sender; the old one works for ${flags.grace} s more.`
      : 'Give the new inbox URL to the sender; the old one no longer works.',
  );
}
