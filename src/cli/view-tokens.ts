// `roost view-token create | list | revoke`, and `roost inspect`: a link to the inspector page
// carrying a fresh view token.
import type { Command } from 'commander';
import { addressClient, withCredentials, type ServiceFlags } from './credentials.js';
import { wholeNumber } from './input.js';
import { note, printJson } from './output.js';

/** view-token and its subcommands. */
export function registerViewTokens(program: Command): void {
  const viewToken = program.command('view-token').description('read-only tokens to share: create, list, revoke');
  withCredentials(viewToken.command('create'))
    .description('create a view token and print it (shown once): it reads, and cannot ack, delete or change anything')
    .option('--label <label>', 'whom or what it is for (at most 100 characters)')
    .option(
      '--expires-in <seconds>',
      'lifetime, 60–31536000 seconds (default: as long as the address)',
      wholeNumber(60, 31_536_000),
    )
    .action(async (flags: ServiceFlags & { label?: string; expiresIn?: number }) =>
      printJson({
        view_token: await (
          await addressClient(flags)
        ).createViewToken({ label: flags.label, expires_in_seconds: flags.expiresIn }),
      }),
    );
  withCredentials(viewToken.command('list'))
    .description('list the view tokens (never the tokens themselves)')
    .action(async (flags: ServiceFlags) =>
      printJson({ view_tokens: await (await addressClient(flags)).listViewTokens() }),
    );

  withCredentials(viewToken.command('revoke'))
    .description('revoke a view token: it stops at once')
    .argument('<token-id>', 'the view token id (vt_…)')
    .action(async (tokenId: string, flags: ServiceFlags) => {
      await (await addressClient(flags)).revokeViewToken(tokenId);
      note(`Revoked ${tokenId}`);
    });
}

export function registerInspect(program: Command): void {
  withCredentials(program.command('inspect'))
    .description('print a link to the inspector page carrying a fresh view token (read-only) for a person to open')
    .option(
      '--expires-in <seconds>',
      'lifetime of the view token, 60–31536000 seconds',
      wholeNumber(60, 31_536_000),
      86_400,
    )
    .action(async (flags: ServiceFlags & { expiresIn: number }) => {
      const client = await addressClient(flags);
      const view = await client.createViewToken({ label: 'inspector link', expires_in_seconds: flags.expiresIn });
      // The token travels in the fragment, which the browser never sends to the server.
      const url = `${client.baseUrl}/inspect/${client.addressId}#token=${encodeURIComponent(view.token)}`;
      printJson({ inspect_url: url, view_token_id: view.id, expires_at: view.expires_at });
      note(`Open ${url} — read-only; revoke with: roost view-token revoke ${view.id}`);
    });
}
