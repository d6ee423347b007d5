// postmaster@ and abuse@ at the mail domain (RFC 5321 §4.5.1, RFC 2142): always accepted,
// and kept where the operator reads them. With ROOST_POSTMASTER_ADDRESS they are events of
// that return address like any other mail; without it (or while that address is gone) each
// message is a .eml file in the postmaster directory beside the database. The directory is
// bounded: past MAX_POSTMASTER_FILES the sender is told 452 4.2.2 and retries later.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Local parts every mail domain must answer for. */
export const OPERATOR_MAILBOXES = new Set(['postmaster', 'abuse']);
/** Files the postmaster directory holds before new mail is deferred. */
export const MAX_POSTMASTER_FILES = 1000;

export class PostmasterDirectory {
  constructor(readonly dir: string) {}

  /** Whether one more message fits. */
  async hasRoom(): Promise<boolean> {
    try {
      return (await readdir(this.dir)).length < MAX_POSTMASTER_FILES;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
      throw err;
    }
  }

  /** A name for the next file, also used as the Received line's id. */
  newId(now: Date): string {
    return `pm_${now.toISOString().replace(/[-:.]/g, '')}_${randomBytes(6).toString('hex')}`;
  }

  /** Writes the message durably (flushed before the 250), readable by the operator only. */
  async keep(id: string, message: Buffer): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, `${id}.eml`);
    const file = await open(path, 'wx', 0o600);
    try {
      await file.writeFile(message);
      await file.sync();
    } finally {
      await file.close();
    }
    return path;
  }
}
