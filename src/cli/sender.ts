// `roost sender set | get | clear` (docs/api.md §3.2): the sender whose signatures the inbox verifies.
import type { Command } from 'commander';
import { PROVIDER_NAMES } from '../contract/providers.js';
import type { PutSender } from '../contract/sender-schemas.js';
import { addressClient, withCredentials, type ServiceFlags } from './credentials.js';
import { readStdin, UsageError, wholeNumber } from './input.js';
import { note, printJson } from './output.js';

export function registerSender(program: Command): void {
  const sender = program
    .command('sender')
    .description('the sender whose signatures the inbox verifies (GitHub, Stripe, Slack…): set, get, clear');
  withCredentials(sender.command('set'))
    .description(
      "make the inbox verify this provider's signatures and answer its handshakes; prints the sender (never its secrets). " +
        'Secrets: --secrets-stdin or $ROOST_SENDER_SECRETS (one a line, newest first; kept out of shell history), or --secret',
    )
    .argument('<provider>', `one of ${PROVIDER_NAMES.join(', ')}`)
    .option(
      '--secret <secret>',
      'a signing secret (repeat for rotation, newest first); visible in shell history',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option('--secrets-stdin', 'read the secrets from standard input, one a line, newest first')
    .option(
      '--no-enforce',
      'store deliveries that do not verify, marked verified: false, instead of refusing them (401)',
    )
    .option(
      '--tolerance <seconds>',
      'how far a signed timestamp may be from now, 1–86400 (default 300)',
      wholeNumber(1, 86_400),
    )
    .option('--verify-token <token>', 'meta only: the verify token of its handshake (or $ROOST_SENDER_VERIFY_TOKEN)')
    .option('--header <name>', 'hmac_sha256 only: the header that carries the signature')
    .option('--encoding <encoding>', 'hmac_sha256 only: hex (default) or base64')
    .option('--prefix <text>', 'hmac_sha256 only: text before the signature, e.g. sha256=')
    .action(setSender);
  withCredentials(sender.command('get'))
    .description('print the sender (provider, enforce, tolerance, how many secrets), or {"sender": null}')
    .action(async (flags: ServiceFlags) => printJson({ sender: await (await addressClient(flags)).getSender() }));
  withCredentials(sender.command('clear'))
    .description('remove the sender: the inbox stores deliveries unverified again')
    .action(async (flags: ServiceFlags) => {
      const cleared = await (await addressClient(flags)).clearSender();
      note(cleared ? 'Sender removed.' : 'No sender was set.');
    });
}

interface SenderFlags extends ServiceFlags {
  secret: string[];
  secretsStdin?: boolean;
  enforce: boolean;
  tolerance?: number;
  verifyToken?: string;
  header?: string;
  encoding?: string;
  prefix?: string;
}

/** Secrets, one a line (blank lines skipped): from standard input or $ROOST_SENDER_SECRETS. */
const secretLines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

/**
 * `roost sender set` (docs/api.md §3.2). The secrets come from --secret (which a shell history
 * keeps), or standard input (--secrets-stdin) or $ROOST_SENDER_SECRETS (which it does not),
 * one a line, newest first; the verify token from --verify-token or $ROOST_SENDER_VERIFY_TOKEN.
 */
async function setSender(provider: string, flags: SenderFlags) {
  let secrets = flags.secret;
  let from = '--secret';
  if (flags.secretsStdin) {
    if (secrets.length > 0) throw new UsageError('give --secret or --secrets-stdin, not both');
    secrets = secretLines(await readStdin());
    from = 'standard input';
  } else if (secrets.length === 0 && process.env.ROOST_SENDER_SECRETS) {
    secrets = secretLines(process.env.ROOST_SENDER_SECRETS);
    from = '$ROOST_SENDER_SECRETS';
  }
  if (secrets.length === 0)
    throw new UsageError(
      'no secret: give --secrets-stdin (one a line, newest first), set ROOST_SENDER_SECRETS, or pass --secret',
    );
  if (secrets.length > 3) throw new UsageError(`${from}: at most 3 secrets (newest first), got ${secrets.length}`);
  const verifyToken = flags.verifyToken ?? process.env.ROOST_SENDER_VERIFY_TOKEN;
  const body: PutSender = { provider: provider as PutSender['provider'], secrets, enforce: flags.enforce };
  if (flags.tolerance !== undefined) body.tolerance_seconds = flags.tolerance;
  if (verifyToken !== undefined && verifyToken !== '') body.verify_token = verifyToken;
  if (flags.header !== undefined) body.header = flags.header;
  if (flags.encoding !== undefined) body.encoding = flags.encoding as PutSender['encoding'];
  if (flags.prefix !== undefined) body.prefix = flags.prefix;
  printJson({ sender: await (await addressClient(flags)).setSender(body) });
}
