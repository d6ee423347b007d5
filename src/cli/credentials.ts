// Which service and address a client command uses (--url, --credentials, $ROOST_URL,
// $ROOST_CREDENTIALS, $ROOST_ADDRESS_ID + $ROOST_READ_TOKEN), and the saved creation
// response: written 0600, never overwritten without --force, updated in place on rotation.
import { readFileSync } from 'node:fs';
import { chmod, open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { RoostClient } from '../client/client.js';
import { parseCredentials } from '../client/credentials.js';
import { httpUrl, UsageError } from './input.js';
import { note } from './output.js';

export const DEFAULT_URL = 'http://localhost:3000';
export const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
export const USER_AGENT = `roost-cli/${VERSION}`;

export interface ServiceFlags {
  url?: string;
  credentials?: string;
}

export const withUrl = (command: Command) =>
  command.option(
    '--url <url>',
    `the service (default: $ROOST_URL, else the saved credentials' URL, else ${DEFAULT_URL})`,
    httpUrl,
  );

export const withCredentials = (command: Command) =>
  withUrl(command).option(
    '--credentials <file>',
    'a saved creation response (default: $ROOST_CREDENTIALS, or $ROOST_ADDRESS_ID + $ROOST_READ_TOKEN)',
  );

export function checkedUrl(value: string, from: string): string {
  try {
    return httpUrl(value);
  } catch {
    throw new UsageError(`${from} must be an http(s) URL, got "${value}"`);
  }
}

export async function readCredentialsFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read credentials file ${path}: ${(error as Error).message}`);
  }
}

/** The client for the address in use: --credentials, $ROOST_CREDENTIALS, or id + token. */
export async function addressClient(flags: ServiceFlags): Promise<RoostClient> {
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
export function credentialsFile(flags: ServiceFlags): string | undefined {
  if (flags.credentials) return flags.credentials;
  const value = process.env.ROOST_CREDENTIALS?.trim();
  return value && !value.startsWith('{') ? value : undefined;
}

/**
 * Writes a rotated credential into the saved creation response, atomically and 0600, so that
 * the next command finds it.
 */
export async function updateSavedCredentials(
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

/** A file for the creation response: created 0600, never overwritten without --force. */
export async function openForSave(path: string, force: boolean) {
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
