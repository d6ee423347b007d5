#!/usr/bin/env node
// The `roost` command (docs/api.md §11): `serve` runs the service; the other commands are a
// client of a running one, built on the SDK in ./client. Output contract: stdout carries
// JSON only (one object a line when piped); progress and summaries go to stderr, and only
// when stderr is a terminal. Exit status: 0 done, 1 failed (one line on stderr), 2 bad usage.
// The Node.js version is checked first, before any other module loads.
import './require-node.js';
import { readFileSync } from 'node:fs';
import { chmod, open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError, ENV_VARS, loadConfig } from './config.js';
import { RoostClient } from './client/client.js';
import { parseCredentials } from './client/credentials.js';
import { readCursorFile, writeCursorFile } from './client/cursor-file.js';
import { RoostError, RoostNetworkError } from './client/errors.js';
import { appendDeadLetter } from './client/dead-letter.js';
import { forwardEvents } from './client/forwarder.js';
import { retryTransient } from './client/retry.js';
import { PROVIDER_NAMES } from './core/senders/provider.js';
import { addCallbackCommands } from './cli/callback.js';
import type { UpdateAddress } from './credential-schemas.js';
import type { PutSender } from './sender-schemas.js';
import type { CreateAddress, CreateEvent, Event } from './schemas.js';

const DEFAULT_URL = 'http://localhost:3000';
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;
const USER_AGENT = `roost-cli/${VERSION}`;

/** Set once `serve` has started: the process then lives until a signal. */
let serving = false;

/** A mistake in how the command was called: exit status 2. */
class UsageError extends Error {}

// ---------------------------------------------------------------- output

const humanStderr = Boolean(process.stderr.isTTY);

/** Progress and summaries for a person; silent when stderr is piped. Never pass a read token. */
function note(message: string): void {
  if (humanStderr) process.stderr.write(`${message}\n`);
}

/** A whole response: indented for a person at a terminal, one line for a program. */
function printJson(value: unknown): void {
  process.stdout.write(
    `${escapeTerminalControls(JSON.stringify(value, null, process.stdout.isTTY ? 2 : undefined))}\n`,
  );
}

/**
 * One record of a stream: always one line, so that `| jq -c`, `| head -1` work. JSON
 * escapes C0 controls itself; C1 controls, line separators and bidi overrides that a sender
 * put in an event are escaped too (the same JSON value), so no terminal acts on them.
 */
function printLine(value: unknown): void {
  process.stdout.write(`${escapeTerminalControls(JSON.stringify(value))}\n`);
}

const TERMINAL_CONTROLS = /[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escapeTerminalControls(json: string): string {
  return json.replace(TERMINAL_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Text from a sender for a human line: control characters (and bidi overrides) shown as `?`. */
function printable(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu, '?');
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

// ---------------------------------------------------------------- argument parsers

function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER) {
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

function httpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be an http(s) URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('must be an http(s) URL.');
  return value;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

// ---------------------------------------------------------------- credentials

interface ServiceFlags {
  url?: string;
  credentials?: string;
}

const withUrl = (command: Command) =>
  command.option(
    '--url <url>',
    `the service (default: $ROOST_URL, else the saved credentials' URL, else ${DEFAULT_URL})`,
    httpUrl,
  );

const withCredentials = (command: Command) =>
  withUrl(command).option(
    '--credentials <file>',
    'a saved creation response (default: $ROOST_CREDENTIALS, or $ROOST_ADDRESS_ID + $ROOST_READ_TOKEN)',
  );

function checkedUrl(value: string, from: string): string {
  try {
    return httpUrl(value);
  } catch {
    throw new UsageError(`${from} must be an http(s) URL, got "${value}"`);
  }
}

async function readCredentialsFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read credentials file ${path}: ${(error as Error).message}`);
  }
}

/** The client for the address in use: --credentials, $ROOST_CREDENTIALS, or id + token. */
async function addressClient(flags: ServiceFlags): Promise<RoostClient> {
  const env = process.env;
  let saved: string | undefined;
  let from = '';
  if (flags.credentials) {
    saved = await readCredentialsFile(flags.credentials);
    from = flags.credentials;
  } else if (env.ROOST_CREDENTIALS) {
    // Either the path of a saved creation response or (for CI secrets) its JSON text.
    const value = env.ROOST_CREDENTIALS.trim();
    saved = value.startsWith('{') ? value : await readCredentialsFile(value);
    from = value.startsWith('{') ? '$ROOST_CREDENTIALS' : value;
  }
  const explicitUrl = flags.url ?? (env.ROOST_URL ? checkedUrl(env.ROOST_URL, 'ROOST_URL') : undefined);
  if (saved !== undefined) {
    let credentials;
    try {
      credentials = parseCredentials(saved);
    } catch (error) {
      throw new UsageError(`${from}: ${(error as Error).message}`);
    }
    return new RoostClient({
      baseUrl: explicitUrl ?? credentials.baseUrl,
      addressId: credentials.addressId,
      readToken: credentials.readToken,
      userAgent: USER_AGENT,
    });
  }
  if (env.ROOST_ADDRESS_ID && env.ROOST_READ_TOKEN) {
    return new RoostClient({
      baseUrl: explicitUrl ?? DEFAULT_URL,
      addressId: env.ROOST_ADDRESS_ID,
      readToken: env.ROOST_READ_TOKEN,
      userAgent: USER_AGENT,
    });
  }
  throw new UsageError(
    'no credentials: pass --credentials FILE (a creation response saved with `roost create --save FILE`), or set ROOST_CREDENTIALS, or ROOST_ADDRESS_ID and ROOST_READ_TOKEN',
  );
}

/** The saved creation response in use, when it is a file (--credentials, or $ROOST_CREDENTIALS as a path). */
function credentialsFile(flags: ServiceFlags): string | undefined {
  if (flags.credentials) return flags.credentials;
  const value = process.env.ROOST_CREDENTIALS?.trim();
  return value && !value.startsWith('{') ? value : undefined;
}

/**
 * Writes a rotated credential into the saved creation response, atomically and 0600, so that
 * the next command finds it.
 */
async function updateSavedCredentials(
  flags: ServiceFlags,
  change: (saved: { credentials?: { read_token?: string }; endpoints?: { inbox_url?: string } }) => void,
): Promise<void> {
  const path = credentialsFile(flags);
  if (!path) {
    note('The credentials in use are not a file: store the new value above wherever they are kept.');
    return;
  }
  const saved = JSON.parse(await readCredentialsFile(path)) as Parameters<typeof change>[0];
  change(saved);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  await rename(temporary, path);
  note(`Saved in ${path}.`);
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

/** Aborts on SIGINT/SIGTERM, so that a held poll or a retry sleep ends at once. */
function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}

// ---------------------------------------------------------------- commands

/** The configuration from the environment, each flag given overriding its variable. */
function configFromFlags(flags: Record<string, string | boolean | undefined>, command: Command) {
  const fromFlags: Record<string, string> = {};
  for (const option of command.options) {
    const value = flags[option.attributeName()];
    if (option.envVar !== undefined && value !== undefined) {
      fromFlags[option.envVar] = value === true ? 'true' : String(value);
    }
  }
  try {
    return loadConfig({ ...process.env, ...fromFlags });
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
}

async function serve(flags: Record<string, string | boolean | undefined>, command: Command): Promise<void> {
  // Loaded here, so that the client commands start without the server's dependencies.
  const { startRoost } = await import('./server.js');
  const config = configFromFlags(flags, command);
  const roost = await startRoost(config);
  serving = true;
  const stop = (signal: string) => {
    roost.logger.info({ signal }, 'shutting down');
    roost.close().then(
      () => process.exit(0),
      (err) => {
        roost.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

/**
 * `roost migrate`: brings the database's schema to this build's version, then exits (JSON
 * on stdout: engine, from, to). Run it with a role that owns the schema before starting
 * `roost serve` as one that may only read and write rows (docs/scale-out.md § Deploying).
 */
async function migrateCommand(flags: Record<string, string | boolean | undefined>, command: Command): Promise<void> {
  const config = configFromFlags(flags, command);
  const [{ migrateStorage }, { createLogger }] = await Promise.all([
    import('./storage/open.js'),
    import('./logger.js'),
  ]);
  // Waiting for the database is logged on stderr: stdout carries the JSON result alone.
  const logger = createLogger(config.logLevel, process.stderr);
  for (const warning of config.warnings ?? []) logger.warn(warning);
  printJson(await migrateStorage(config, logger));
}

type EnvVar = (typeof ENV_VARS)[number];

/**
 * `roost serve` has a flag for every variable of README.md § Configuration, named after it
 * (`ROOST_` dropped, `--max-body-bytes`); these keep shorter names.
 */
const SERVE_FLAG_NAMES: Partial<Record<EnvVar, string>> = {
  ROOST_DEFAULT_TTL_SECONDS: 'default-ttl',
  ROOST_MAX_TTL_SECONDS: 'max-ttl',
};

/** The value placeholder and help of the most used flags; the others say which variable they set. */
const SERVE_FLAG_HELP: Partial<Record<EnvVar, [string, string]>> = {
  PORT: ['<n>', 'HTTP port; 0 picks a free one [3000]'],
  HOST: ['<host>', 'HTTP interface [127.0.0.1]'],
  ROOST_BASE_URL: ['<url>', 'public origin used in returned URLs'],
  ROOST_DB: ['<file>', 'SQLite file [./data/roost.db]'],
  DATABASE_URL: ['<url>', 'postgres://… — use PostgreSQL instead'],
  ROOST_SMTP_PORT: ['<n>', 'inbound SMTP port, 0 disables [2525]'],
  ROOST_MAIL_DOMAIN: ['<domain>', 'domain of the addresses [localhost]'],
  ROOST_CREATE_RATE: ['<rate>', 'creations per client IP, N/sec|min|hour [20/min]'],
  ROOST_TRUST_PROXY: ['[value]', 'believe X-Forwarded-For: true, hop count or addresses'],
  ROOST_MAX_BODY_BYTES: ['<size>', 'largest delivery, e.g. 256KiB'],
  ROOST_MAX_EMAIL_BYTES: ['<size>', 'largest email, e.g. 10MiB'],
  ROOST_DEFAULT_TTL_SECONDS: ['<seconds>', 'lifetime when a creation gives none'],
  ROOST_MAX_TTL_SECONDS: ['<seconds>', 'longest lifetime allowed'],
  LOG_LEVEL: ['<level>', 'fatal|error|warn|info|debug|trace|silent [info]'],
};

function serveOptions(): Option[] {
  return ENV_VARS.map((name) => {
    const flag =
      SERVE_FLAG_NAMES[name] ??
      name
        .replace(/^ROOST_/, '')
        .toLowerCase()
        .replaceAll('_', '-');
    const [value, help] = SERVE_FLAG_HELP[name] ?? ['<value>', 'see README.md § Configuration'];
    // .env() shows the variable in --help; the value itself is read by loadConfig.
    return new Option(`--${flag} ${value}`, help).env(name);
  });
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

/** A file for the creation response: created 0600, never overwritten without --force. */
async function openForSave(path: string, force: boolean) {
  let handle;
  try {
    handle = await open(path, force ? 'w' : 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      throw new UsageError(`${path} exists; pass --force to overwrite it`);
    throw new UsageError(`cannot write ${path}: ${(error as Error).message}`);
  }
  // An existing file keeps its mode when reopened: make it private either way.
  await chmod(path, 0o600);
  return {
    async write(text: string) {
      try {
        await handle.writeFile(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
    },
    async discard() {
      await handle.close();
      if (!force) await unlink(path).catch(() => {});
    },
  };
}

async function events(
  flags: ServiceFlags & {
    after: number;
    limit?: number;
    wait?: number;
    follow?: boolean;
    ack?: boolean;
    unacked?: boolean;
  },
) {
  const client = await addressClient(flags);
  const signal = stopSignal();
  const unacked = flags.unacked === true;
  let printed = 0;
  let cursor = flags.after;
  let latest: number | undefined;
  const take = async (event: Event) => {
    printLine(event);
    printed += 1;
    cursor = event.sequence;
    if (flags.ack) await retryTransient(() => client.ack(event.id, { signal }), { signal });
  };

  if (flags.follow) {
    note(
      `Following ${client.addressId} after ${cursor}${unacked ? ', unacknowledged only' : ''}${flags.ack ? ', acknowledging' : ''} (Ctrl-C to stop)`,
    );
    const stream = client.events({
      after: cursor,
      unacked,
      wait: Math.max(1, flags.wait ?? 25),
      signal,
      onRetry: (error, delay) => note(`${error.message}; retrying in ${seconds(delay)}`),
    });
    for await (const event of stream) {
      await take(event);
      if (flags.limit !== undefined && printed >= flags.limit) break;
    }
  } else {
    // Read on until caught up (or --limit events); only the first request waits.
    let wait = flags.wait ?? 0;
    for (;;) {
      const pageSize = Math.min(100, flags.limit === undefined ? 100 : flags.limit - printed);
      const page = await client.listEvents({ after: cursor, limit: pageSize, wait, unacked, signal }).catch((error) => {
        if (signal.aborted) return undefined;
        throw error;
      });
      if (!page) break;
      latest = page.latest_sequence;
      for (const event of page.events) await take(event);
      cursor = Math.max(cursor, page.next_cursor);
      wait = 0;
      if (!page.has_more || (flags.limit !== undefined && printed >= flags.limit)) break;
    }
  }
  note(
    `${printed} event${printed === 1 ? '' : 's'}${flags.ack && printed ? ', acknowledged' : ''}; next: --after ${cursor}` +
      (latest === undefined ? '' : ` (latest sequence ${latest})`),
  );
  // A cursor past the end of the queue would silently skip every event up to it (docs/api.md §4).
  // Said even when piped: a warning, not progress.
  if (latest !== undefined && flags.after > latest)
    process.stderr.write(
      `warning: --after ${flags.after} is past the latest sequence ${latest}: events ${latest + 1} to ${flags.after} would never be shown. Use --after 0, or --unacked for whatever is not acknowledged yet.\n`,
    );
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

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

type OnFail = 'park' | 'skip' | 'stop';

async function listen(
  flags: ServiceFlags & {
    forward: string;
    cursorFile?: string;
    includeAcked?: boolean;
    onFail: OnFail;
    deadLetter?: string;
  },
) {
  const client = await addressClient(flags);
  const addressId = client.addressId!;
  const cursorFile = flags.cursorFile ?? `.roost-cursor-${addressId}`;
  const deadLetter = flags.deadLetter ?? `.roost-dead-letter-${addressId}.jsonl`;
  let after: number;
  try {
    after = (await readCursorFile(cursorFile, addressId)) ?? 0;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const signal = stopSignal();
  note(`Forwarding ${addressId} → ${flags.forward}, after #${after} (cursor in ${cursorFile}; Ctrl-C to stop)`);
  // Event ids and types come from senders: printed only with control characters replaced.
  const stopped = await forwardEvents({
    client,
    target: flags.forward,
    after,
    signal,
    includeAcknowledged: flags.includeAcked,
    onFail: flags.onFail,
    park: (event, reason) => appendDeadLetter(deadLetter, event, reason),
    saveCursor: (sequence) => writeCursorFile(cursorFile, addressId, sequence),
    onForwarded: (event, status, attempts) => {
      printLine({ id: event.id, sequence: event.sequence, type: event.type, status, attempts });
      note(
        `#${event.sequence} ${printable(event.id)} ${printable(event.type)} → ${status}${attempts > 1 ? ` after ${attempts} attempts` : ''}`,
      );
    },
    onPermanentFailure: (event, reason) => {
      const outcome = flags.onFail === 'park' ? 'parked' : 'skipped';
      printLine({ id: event.id, sequence: event.sequence, type: event.type, [outcome]: reason });
      note(
        `#${event.sequence} ${printable(event.id)} ${printable(event.type)}: ${printable(reason)}; ${outcome}` +
          (outcome === 'parked' ? ` in ${deadLetter}` : ''),
      );
    },
    onSkipped: (event) => note(`#${event.sequence} ${printable(event.id)} already acknowledged; skipped`),
    onRetry: (event, reason, delay) =>
      note(`${event ? `#${event.sequence}: ` : ''}${printable(reason)}; retrying in ${seconds(delay)}`),
  });
  if (stopped) {
    throw new Error(
      `event #${stopped.event.sequence} cannot be forwarded (${printable(stopped.reason)}); stopped before it (--on-fail stop)`,
    );
  }
  note('Stopped.');
}

// ---------------------------------------------------------------- the program

function buildProgram(): Command {
  const program = new Command('roost')
    .description('Return addresses for software agents: run the service, or use one from the command line.')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`roost: ${text.replace(/^error: /, '')}`) })
    .showHelpAfterError('(add --help for usage)');

  const serveCommand = program
    .command('serve')
    .description('run the service (HTTP, SMTP, MCP); every flag overrides its environment variable')
    .action(serve);
  for (const option of serveOptions()) serveCommand.addOption(option);

  const migrate = program
    .command('migrate')
    .description(
      "bring the database's schema to this version of Roost, then exit (run before serve; see docs/scale-out.md)",
    )
    .action(migrateCommand);
  for (const option of serveOptions()) migrate.addOption(option);

  withUrl(program.command('create'))
    .description('create a return address and print the creation response (its read token is shown once)')
    .option('--name <name>', 'human-readable purpose (at most 100 characters)')
    .option('--task-id <id>', 'your task identifier (at most 200 characters)')
    .option('--expires-in <seconds>', 'lifetime, 60–31536000 seconds', wholeNumber(60, 31_536_000))
    .option('--save <file>', 'also write the response to FILE, mode 0600')
    .option('--force', 'let --save overwrite an existing file')
    .action(create);

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

  withCredentials(program.command('events'))
    .description('print events, one JSON object a line')
    .option('--after <n>', 'start after this sequence', wholeNumber(0), 0)
    .option('--limit <n>', 'print at most N events', wholeNumber(1))
    .option('--wait <seconds>', 'long-poll up to S seconds (0–25) when nothing is new', wholeNumber(0, 25))
    .option('--follow', 'keep long-polling for new events until interrupted')
    .option('--ack', 'acknowledge each event once printed')
    .option('--unacked', 'only events not acknowledged yet (no cursor needed: whatever is not handled)')
    .action(events);

  withCredentials(program.command('ack'))
    .description('acknowledge one event and print it')
    .argument('<event-id>', 'the event (evt_…)')
    .action(async (eventId: string, flags: ServiceFlags) =>
      printJson({ event: await (await addressClient(flags)).ack(eventId) }),
    );

  withCredentials(program.command('update'))
    .description('change the name, task id or lifetime of the address and print it')
    .option('--name <name>', 'human-readable purpose (at most 100 characters)')
    .option('--task-id <id>', 'your task identifier (at most 200 characters)')
    .option('--clear-task-id', 'remove the task identifier')
    .option('--expires-in <seconds>', 'new lifetime from now, 60–31536000 seconds', wholeNumber(60, 31_536_000))
    .option('--no-expiry', 'remove the lifetime (where the service allows addresses without one)')
    .action(update);

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

  withCredentials(viewToken.command('revoke'))
    .description('revoke a view token: it stops at once')
    .argument('<token-id>', 'the view token id (vt_…)')
    .action(async (tokenId: string, flags: ServiceFlags) => {
      await (await addressClient(flags)).revokeViewToken(tokenId);
      note(`Revoked ${tokenId}`);
    });

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

  addCallbackCommands(program, { withCredentials, addressClient, printJson, wholeNumber });

  withCredentials(program.command('listen'))
    .description(
      'forward each event, in order, as a JSON POST to URL; acknowledge on 2xx, retry otherwise, resume after a restart',
    )
    .requiredOption('--forward <url>', 'where to POST each event', httpUrl)
    .option('--cursor-file <file>', 'where the cursor is kept [.roost-cursor-<addressId>]')
    .option('--include-acked', 'also forward events already acknowledged')
    .addOption(
      new Option('--on-fail <action>', 'when the target can never take an event: park it, skip it, or stop')
        .choices(['park', 'skip', 'stop'])
        .default('park'),
    )
    .option('--dead-letter <file>', 'where parked events go, one JSON line each [.roost-dead-letter-<addressId>.jsonl]')
    .action(listen);

  return program;
}

function fail(error: unknown): never {
  if (error instanceof UsageError) {
    process.stderr.write(`roost: ${error.message}\n`);
    process.exit(2);
  }
  if (error instanceof RoostNetworkError) process.stderr.write(`roost: ${error.message}\n`);
  else if (error instanceof RoostError) process.stderr.write(`roost: ${error.code}: ${error.message}\n`);
  else process.stderr.write(`roost: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

// A reader that stops early (`roost events --follow | head -1`) is not a failure.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  fail(error);
});

try {
  await buildProgram().parseAsync(process.argv);
  // The client commands are done here; idle keep-alive sockets must not hold the process.
  // `serve` keeps running until a signal stops it.
  if (!serving) process.exit(0);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  fail(error);
}
