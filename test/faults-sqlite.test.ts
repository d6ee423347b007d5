// SQLite faults: a full disk while the service runs (the database on a small tmpfs, filled
// to the last byte under load), and a database file that cannot be used at start (not a
// database, a directory, locked by another program). A full disk answers writes with 503
// `unavailable` while reads go on, and writes resume once space returns, with every
// accepted delivery stored exactly once; a bad file stops start-up with one clear line and
// a non-zero exit, before anything listens.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { assertStoredExactlyOnce, readAll, startSenders } from './helpers/fault-load.js';
import { createAddress, listEvents, request } from './helpers/http.js';
import { spawnServer, type ServerProcess } from './helpers/process.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'roost-faults-'));
const processes: ServerProcess[] = [];
let mounted = false;
after(async () => {
  for (const proc of processes) await proc.kill();
  if (mounted) execFileSync('umount', ['-l', join(dir, 'disk')]);
  rmSync(dir, { recursive: true, force: true });
});

/** Writes zeros to `path` until the file system has no byte left. */
function fillDisk(path: string): void {
  const fd = openSync(path, 'w');
  try {
    for (let chunk = 1 << 16; chunk >= 1;) {
      try {
        writeSync(fd, Buffer.alloc(chunk));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        chunk >>= 1;
      }
    }
  } finally {
    closeSync(fd);
  }
}

const mountSkip =
  process.getuid?.() !== 0 && process.env.CI !== 'true' ? 'skipped: mounting a small tmpfs needs root' : false;

describe('SQLite on a full disk', { skip: mountSkip }, () => {
  test(
    'writes answer 503 while the tmpfs is full, reads go on, writes resume when space returns',
    { timeout: 60_000 },
    async () => {
      const disk = join(dir, 'disk');
      mkdirSync(disk);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk]);
      mounted = true;
      const roost = await spawnServer({
        ROOST_DB: join(disk, 'roost.db'),
        ROOST_CREATE_RATE: '100000/sec',
        LOG_LEVEL: 'warn',
      });
      processes.push(roost);
      const addresses = [await createAddress(roost.url), await createAddress(roost.url)];

      const load = startSenders([roost.url], addresses, { senders: 10, label: 'full' });
      let report;
      try {
        await sleep(1_000);
        fillDisk(join(disk, 'filler'));
        await sleep(1_500);
        // Full: reads are served, writes refused with 503.
        const page = await listEvents(roost.url, addresses[0]);
        assert.equal(page.status, 200);
        assert.equal((await request(roost.url, 'GET', '/healthz')).status, 200);
        // A write that needs a new page of disk is refused; one that fits in space the WAL
        // already holds (SQLite reuses it after a checkpoint) may still succeed.
        const create = await request(roost.url, 'POST', '/api/v1/addresses', { body: {} });
        assert.ok([201, 503].includes(create.status), create.text);
        if (create.status === 503) {
          assert.equal(create.body.error.code, 'unavailable');
          assert.match(create.body.error.message, /disk .* full/);
          assert.ok(create.headers.get('retry-after'));
        }
        const ack = await request(
          roost.url,
          'POST',
          `/api/v1/addresses/${addresses[0].id}/events/${page.body.events[0].id}/ack`,
          { token: addresses[0].token },
        );
        assert.ok([200, 503].includes(ack.status), ack.text);

        rmSync(join(disk, 'filler'));
        const freedAt = Date.now();
        await sleep(1_500);
        report = await load.stop();
        assert.deepEqual(report.unexpected, [], 'only 200, 202 and 503 were answered');
        assert.ok(report.unavailableAt.length > 0, 'the full disk was felt');
        assert.equal(report.unavailableAt.filter((t) => t > freedAt + 1_000).length, 0, 'no 503 once space returned');
        const stored = await assertStoredExactlyOnce(roost.url, addresses, report.accepted);
        assert.equal(stored, report.accepted.size);
        assert.ok((await readAll(roost.url, addresses[1])).length > 0);
        assert.equal((await createAddress(roost.url)).id.startsWith('addr_'), true, 'creating works again');
        assert.equal(await roost.stop(), 0, 'a clean shutdown after the fault');
      } finally {
        // A failed check must not leave the disk full and the senders retrying forever.
        rmSync(join(disk, 'filler'), { force: true });
        if (!report) await load.stop();
      }
    },
  );
});

/** Runs `roost serve` on `dbPath` and returns its exit code and stderr (it must not start). */
async function serveMustFail(dbPath: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', ROOST_SMTP_PORT: '0', ROOST_DB: dbPath },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stderr, stdout };
}

describe('a database file that cannot be used at start', () => {
  test('not a SQLite database: a clear error and exit 1, nothing listening', async () => {
    const path = join(dir, 'garbage.db');
    writeFileSync(path, 'this is not a database, just text that is long enough to be a header '.repeat(100));
    const { code, stderr, stdout } = await serveMustFail(path);
    assert.equal(code, 1);
    assert.match(stderr, /^roost: Cannot open the SQLite database .*garbage\.db: it is not a SQLite database/m);
    assert.doesNotMatch(stdout, /Roost listening/);
  });

  test('a directory where the file should be: a clear error and exit 1', async () => {
    const path = join(dir, 'a-directory.db');
    mkdirSync(path);
    const { code, stderr, stdout } = await serveMustFail(path);
    assert.equal(code, 1);
    assert.match(stderr, /^roost: Cannot open the SQLite database .*a-directory\.db: it cannot be opened/m);
    assert.doesNotMatch(stdout, /Roost listening/);
  });

  test('locked by another program: a clear error and exit 1', async () => {
    const path = join(dir, 'locked.db');
    // Another program (Python's sqlite3) holds an exclusive lock on the file.
    const holder = spawn(
      'python3',
      [
        '-c',
        'import sqlite3, sys, time\n' +
          'c = sqlite3.connect(sys.argv[1], isolation_level=None)\n' +
          'c.execute("CREATE TABLE t (x)")\n' +
          'c.execute("BEGIN EXCLUSIVE")\n' +
          'print("locked", flush=True)\n' +
          'time.sleep(60)',
        path,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await once(holder.stdout, 'data');
      const { code, stderr, stdout } = await serveMustFail(path);
      assert.equal(code, 1);
      assert.match(stderr, /^roost: Cannot open the SQLite database .*locked\.db: another program holds a lock on it/m);
      assert.doesNotMatch(stdout, /Roost listening/);
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
