// A PgBouncer of a test's own (Debian's `pgbouncer` package), in session or transaction
// pooling mode, in front of the test PostgreSQL: its own ini, user list and log in a temp
// folder, on a free port. PgBouncer will not run as root, so as root it is started with
// `-u postgres`. Without the binary these tests skip with the reason, except under
// CI=true, where .ci/run installs it and they must run. The bench (bench/run.ts) runs Roost
// through one too.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './pg-cluster.js';
import { ADMIN_URL } from './postgres.js';

const BINARY = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path));

/** Why PgBouncer cannot run here, or undefined. */
export const pgbouncerSkipReason: string | undefined = BINARY
  ? undefined
  : 'no pgbouncer binary (apt-get install pgbouncer)';

export interface Bouncer {
  port: number;
  /** `url` with its host and port replaced by PgBouncer's. */
  through(url: string): string;
  /** Everything PgBouncer logged. */
  log(): string;
  stop(): Promise<void>;
}

/** Resolves once something accepts TCP connections on the port. */
async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited ${child.exitCode}:\n${log()}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** PgBouncer in front of the PostgreSQL server of `upstreamUrl` (the tests' by default). */
export async function startPgBouncer(
  poolMode: 'session' | 'transaction',
  upstreamUrl: string = ADMIN_URL,
): Promise<Bouncer> {
  if (!BINARY) throw new Error(pgbouncerSkipReason);
  const dir = mkdtempSync(join(tmpdir(), 'roost-pgbouncer-'));
  chmodSync(dir, 0o777);
  const port = await freePort();
  const upstream = new URL(upstreamUrl);
  const user = decodeURIComponent(upstream.username || 'postgres');
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n"roost_app" ""\n"roost_owner" ""\n`);
  // No ignore_startup_parameters: a client that sends statement_timeout at login is refused,
  // as PgBouncer refuses it by default.
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${poolMode}`,
      'default_pool_size = 20',
      'max_client_conn = 200',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  for (const file of ['userlist.txt', 'pgbouncer.ini']) chmodSync(join(dir, file), 0o644);
  const asRoot = process.getuid?.() === 0;
  const child = spawn(BINARY, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const log = () => {
    const file = join(dir, 'pgbouncer.log');
    return output + (existsSync(file) ? readFileSync(file, 'utf8') : '');
  };
  await listening(port, child, log);
  return {
    port,
    through(url: string) {
      const via = new URL(url);
      via.hostname = '127.0.0.1';
      via.port = String(port);
      return via.toString();
    },
    log,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGINT');
        await once(child, 'exit');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** PgBouncer's version line, for test names. */
export const pgbouncerVersion = BINARY
  ? execFileSync(BINARY, ['--version'], { encoding: 'utf8' }).split('\n')[0]
  : 'PgBouncer';
