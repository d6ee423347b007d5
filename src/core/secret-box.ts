// Secrets that must be usable again, not just compared: a sender's signing secrets (docs/api.md
// §3.2). They are sealed with the server key (ROOST_SECRET_KEY, or a key generated into the
// data directory) by AES-256-GCM, a fresh random nonce per value, and bound to where they
// belong (the address and the field) so that a sealed value copied elsewhere does not open.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

/** The server key's length: AES-256. */
export const SECRET_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** The format of a sealed value; a later format (another cipher, a key id) takes the next number. */
const VERSION = 'v1:';

/** A sealed value that this server's key cannot open: another key sealed it, or it was altered. */
export class SecretKeyMismatch extends Error {
  constructor() {
    super('a stored secret cannot be decrypted with this server key (ROOST_SECRET_KEY)');
    this.name = 'SecretKeyMismatch';
  }
}

/**
 * ROOST_SECRET_KEY as text: 32 bytes in base64 (standard or URL-safe, padding optional) or in
 * hex. Undefined when it is not one of these (the configuration then refuses to start).
 */
export function parseSecretKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return undefined;
  const key = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return key.length === SECRET_KEY_BYTES ? key : undefined;
}

export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== SECRET_KEY_BYTES) throw new Error(`the secret key must be ${SECRET_KEY_BYTES} bytes`);
    this.key = Buffer.from(key);
  }

  /** `plain` encrypted and authenticated; `context` (e.g. the address id and field) must match to open it. */
  seal(plain: string, context: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return VERSION + Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** The plain text of a sealed value; SecretKeyMismatch when this key (or this context) does not open it. */
  open(sealed: string, context: string): string {
    if (!sealed.startsWith(VERSION)) throw new SecretKeyMismatch();
    const bytes = Buffer.from(sealed.slice(VERSION.length), 'base64url');
    if (bytes.length < NONCE_BYTES + TAG_BYTES) throw new SecretKeyMismatch();
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, NONCE_BYTES));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const body = bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyMismatch();
    }
  }
}

/**
 * The key in `path`, written there (mode 0600) when the file does not exist yet: the first
 * start generates it, later ones reuse it. `generated` says which. The key is written whole
 * to a file of this process's own and then linked into place, which fails when `path` exists:
 * of processes starting at once one key wins and every one of them reads it, complete (never
 * a file half written, nor an empty one left by a crash).
 */
export function keyFromFile(path: string): { key: Buffer; generated: boolean } {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) {
    const key = randomBytes(SECRET_KEY_BYTES);
    const draft = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const fd = openSync(draft, 'wx', 0o600);
    try {
      writeSync(fd, `${key.toString('base64')}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(draft, path);
      syncDirectory(dirname(path));
      return { key, generated: true };
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(draft);
    }
  }
  const key = parseSecretKey(readFileSync(path, 'utf8'));
  if (!key) throw new Error(`${path} does not hold a ${SECRET_KEY_BYTES}-byte key in base64`);
  return { key, generated: false };
}

/** The new name survives a power cut only once its directory is on disk too. */
function syncDirectory(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
