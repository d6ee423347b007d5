// The cursor of a long-running reader (`roost listen`) kept in a small file, so that a
// restarted reader resumes where it stopped. Written atomically — a temporary file, fsync,
// then rename — so a crash leaves either the old cursor or the new one, never half of one.
import { open, readFile, rename, unlink } from 'node:fs/promises';
import { RoostError } from './errors.js';

interface CursorFileContent {
  address_id: string;
  /** The last sequence handled: resume with `after` = this. */
  after: number;
}

/** The cursor saved in `path`, or undefined when there is no such file. */
export async function readCursorFile(path: string, addressId: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let content: Partial<CursorFileContent> | number;
  try {
    content = JSON.parse(text) as Partial<CursorFileContent> | number;
  } catch {
    throw new RoostError(
      'invalid_cursor_file',
      0,
      `The cursor file ${path} is not JSON; remove it to start from the beginning of the queue.`,
    );
  }
  // A bare number is accepted too, for a cursor written by hand.
  const after = typeof content === 'number' ? content : content?.after;
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0) {
    throw new RoostError(
      'invalid_cursor_file',
      0,
      `The cursor file ${path} holds no valid cursor; remove it to start from the beginning of the queue.`,
    );
  }
  if (typeof content === 'object' && content?.address_id !== undefined && content.address_id !== addressId) {
    throw new RoostError(
      'invalid_cursor_file',
      0,
      `The cursor file ${path} belongs to ${content.address_id}, not ${addressId}; pass another --cursor-file.`,
    );
  }
  return after;
}

export async function writeCursorFile(path: string, addressId: string, after: number): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  const content: CursorFileContent = { address_id: addressId, after };
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(content)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
}
