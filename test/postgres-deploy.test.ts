// Deploying on PostgreSQL as docs/scale-out.md § Deploying says: `roost migrate` with the
// owner, then `roost serve` as a role that may only read and write rows; a pending migration
// it may not run, and a schema newer than the build (either engine), refused at start with
// the versions named; TLS with libpq's sslmode (a throwaway cluster with a self-signed
// certificate); and a database that appears seconds after Roost starts.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { PostgresStorage } from '../src/storage/postgres/engine.js';
import { PG_SCHEMA_VERSION } from '../src/storage/postgres/start.js';
import { PG_MIGRATIONS } from '../src/storage/postgres/migrations.js';
import { SQLITE_SCHEMA_VERSION } from '../src/storage/sqlite/connection.js';
import { selfSignedCertificate } from './helpers/certificate.js';
import { createAddress, deliver, listEvents, request } from './helpers/http.js';
import { clusterSkip, createCluster, type Cluster } from './helpers/pg-cluster.js';
import {
  ADMIN_URL,
  createTestDatabase,
  postgresSkipReason,
  withClient,
  type TestDatabase,
} from './helpers/postgres.js';
import { startTestServer } from './helpers/server.js';

/** The schema version before the newest migration (numbers may skip: migrations' header). */
const PREVIOUS_VERSION = Math.max(...PG_MIGRATIONS.map((m) => m.version).filter((v) => v < PG_SCHEMA_VERSION));

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pgSkip = await postgresSkipReason();
const skip = pgSkip ? `skipped: ${pgSkip}` : false;

/** `roost migrate` from source, as an operator runs it: JSON on stdout, exit status. */
function roostMigrate(env: Record<string, string>) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'migrate'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
  });
}

function withUser(url: string, user: string): string {
  const changed = new URL(url);
  changed.username = user;
  changed.password = '';
  return changed.toString();
}

describe(
  'least privilege: roost migrate with the owner, roost serve as a role that reads and writes rows',
  { skip },
  () => {
    let db: TestDatabase;
    const role = `roost_app_${process.pid}_${Date.now() % 1_000_000}`;

    before(async () => {
      db = await createTestDatabase();
    });
    after(async () => {
      await db?.drop();
      await withClient(ADMIN_URL, (c) => c.query(`DROP ROLE IF EXISTS ${role}`)).catch(() => {});
    });

    test('migrate, grant, serve: the role starts and serves without any right to change the schema', async () => {
      const first = roostMigrate({ DATABASE_URL: db.url });
      assert.equal(first.status, 0, first.stderr);
      assert.deepEqual(JSON.parse(first.stdout), { engine: 'postgres', from: 0, to: PG_SCHEMA_VERSION });
      const again = roostMigrate({ DATABASE_URL: db.url });
      assert.deepEqual(JSON.parse(again.stdout), {
        engine: 'postgres',
        from: PG_SCHEMA_VERSION,
        to: PG_SCHEMA_VERSION,
      });

      // The GRANTs of docs/scale-out.md § Deploying, and nothing more.
      await withClient(db.url, async (c) => {
        await c.query(`CREATE ROLE ${role} LOGIN`);
        await c.query(`GRANT CONNECT ON DATABASE ${db.name} TO ${role}`);
        await c.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
        await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
        await c.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
      });
      const appUrl = withUser(db.url, role);
      await assert.rejects(
        withClient(appUrl, (c) => c.query('CREATE TABLE not_allowed (x int)')),
        /permission denied/,
        'the role really may not create tables',
      );

      const server = await startTestServer('postgres', { reuse: { databaseUrl: appUrl } });
      try {
        const address = await createAddress(server.url);
        assert.equal((await deliver(address.inbox, { data: 'as the app role' })).status, 202);
        const page = await listEvents(server.url, address);
        assert.deepEqual(
          page.body.events.map((e: { data: unknown }) => e.data),
          ['as the app role'],
        );
        await server.roost.storage.purge(Date.now(), Date.now() - 86_400_000);
        assert.equal((await request(server.url, 'GET', '/readyz')).status, 200);
        assert.doesNotMatch(server.logs(), /migrated/);
      } finally {
        await server.close();
      }
    });

    test('a pending migration the role may not run is refused at start, naming both versions and roost migrate', async () => {
      // As an upgrade finds it: the newest migration (13, the append batch's function) not yet applied.
      await withClient(db.url, async (c) => {
        await c.query('DROP FUNCTION roost_append_batch');
        await c.query('DELETE FROM schema_migrations WHERE version = $1', [PG_SCHEMA_VERSION]);
      });
      const appUrl = withUser(db.url, role);
      await assert.rejects(startTestServer('postgres', { reuse: { databaseUrl: appUrl } }), (error: Error) => {
        assert.match(error.message, new RegExp(`schema is at version ${PREVIOUS_VERSION}`));
        assert.match(error.message, new RegExp(`needs version ${PG_SCHEMA_VERSION}`));
        assert.match(error.message, new RegExp(`role ${role} may not change the schema`));
        assert.match(error.message, /roost migrate/);
        return true;
      });
      const migrated = roostMigrate({ DATABASE_URL: db.url });
      assert.deepEqual(JSON.parse(migrated.stdout), {
        engine: 'postgres',
        from: PREVIOUS_VERSION,
        to: PG_SCHEMA_VERSION,
      });
      const server = await startTestServer('postgres', { reuse: { databaseUrl: appUrl } });
      await server.close();
    });
  },
);

describe('a schema newer than the build is refused, naming both versions', () => {
  test('PostgreSQL: serve and migrate both refuse', { skip }, async () => {
    const db = await createTestDatabase();
    try {
      assert.equal(roostMigrate({ DATABASE_URL: db.url }).status, 0);
      const future = PG_SCHEMA_VERSION + 90;
      await withClient(db.url, (c) =>
        c.query("INSERT INTO schema_migrations VALUES ($1, 'from a newer Roost', 0)", [future]),
      );
      const expected = new RegExp(
        `version ${future}, newer than this build of Roost knows \\(version ${PG_SCHEMA_VERSION}\\)`,
      );
      await assert.rejects(startTestServer('postgres', { reuse: { databaseUrl: db.url } }), expected);
      const migrate = roostMigrate({ DATABASE_URL: db.url });
      assert.equal(migrate.status, 1);
      assert.match(migrate.stderr, expected);
    } finally {
      await db.drop();
    }
  });

  test('SQLite: serve and migrate both refuse', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-newer-'));
    const dbPath = join(dir, 'roost.db');
    try {
      const migrated = roostMigrate({ ROOST_DB: dbPath });
      assert.deepEqual(JSON.parse(migrated.stdout), { engine: 'sqlite', from: 0, to: SQLITE_SCHEMA_VERSION });
      const future = SQLITE_SCHEMA_VERSION + 90;
      const file = new Database(dbPath);
      file.prepare("INSERT INTO schema_migrations VALUES (?, 'from a newer Roost', 0)").run(future);
      file.close();
      const expected = new RegExp(
        `version ${future}, newer than this build of Roost knows \\(version ${SQLITE_SCHEMA_VERSION}\\)`,
      );
      await assert.rejects(startTestServer('sqlite', { reuse: { dbPath } }), expected);
      const migrate = roostMigrate({ ROOST_DB: dbPath });
      assert.equal(migrate.status, 1);
      assert.match(migrate.stderr, expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A self-signed certificate for localhost and 127.0.0.1, and its key, in `dir` as `name`.pem/-key.pem. */
const selfSigned = (dir: string, name: string) =>
  selfSignedCertificate(
    { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`) },
    'localhost',
    'DNS:localhost,IP:127.0.0.1',
  );

describe(
  'TLS with libpq sslmode, against a throwaway cluster with a self-signed certificate',
  { skip: clusterSkip },
  () => {
    let cluster: Cluster;
    let dir: string;
    let server: { cert: string; key: string };
    let stranger: { cert: string; key: string };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'roost-pg-tls-'));
      chmodSync(dir, 0o755);
      server = selfSigned(dir, 'server');
      stranger = selfSigned(dir, 'stranger');
      // PostgreSQL reads its key only when its own user owns it and no one else can.
      const postgresUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(server.key, postgresUid, 0);
      chmodSync(server.key, 0o600);
      cluster = await createCluster(`-c ssl=on -c ssl_cert_file=${server.cert} -c ssl_key_file=${server.key}`);
      cluster.start();
    });
    after(() => {
      cluster?.destroy();
      rmSync(dir, { recursive: true, force: true });
    });

    const open = (query: string) => PostgresStorage.open(loadConfig({ DATABASE_URL: `${cluster.url}?${query}` }));

    /** Whether the engine's own connection is encrypted (pg_stat_ssl of its backend). */
    async function encrypted(storage: PostgresStorage): Promise<boolean> {
      const engine = storage as unknown as {
        db: { query(text: string): Promise<{ rows: Array<{ ssl: boolean }> }> };
      };
      return (await engine.db.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0].ssl;
    }

    test('sslmode=require encrypts without verifying the certificate (as libpq)', async () => {
      const storage = await open('sslmode=require');
      try {
        assert.equal(await encrypted(storage), true);
      } finally {
        await storage.close();
      }
    });

    test('sslmode=verify-full against the right CA encrypts; verify-ca too', async () => {
      for (const mode of ['verify-full', 'verify-ca']) {
        const storage = await open(`sslmode=${mode}&sslrootcert=${encodeURIComponent(server.cert)}`);
        try {
          assert.equal(await encrypted(storage), true, mode);
        } finally {
          await storage.close();
        }
      }
    });

    test('sslmode=verify-full with the wrong CA is refused, naming the file and the mode', async () => {
      await assert.rejects(
        open(`sslmode=verify-full&sslrootcert=${encodeURIComponent(stranger.cert)}`),
        (error: Error) => {
          assert.match(error.message, /DATABASE_URL \(sslmode=verify-full\)/);
          assert.ok(error.message.includes(`sslrootcert=${stranger.cert}`), error.message);
          return true;
        },
      );
    });

    test('an sslrootcert that cannot be read, and sslmode=prefer, are refused naming the setting', async () => {
      await assert.rejects(open('sslmode=verify-full&sslrootcert=/nonexistent/ca.pem'), (error: Error) => {
        assert.match(error.message, /DATABASE_URL: cannot read sslrootcert=\/nonexistent\/ca\.pem \(ENOENT\)/);
        return true;
      });
      await assert.rejects(open('sslmode=prefer'), /DATABASE_URL: sslmode=prefer would fall back to an unencrypted/);
    });
  },
);

/** `roost serve` from source as a child process, its output kept; `seen` waits for a line. */
function serveChild(env: Record<string, string>, dir: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      ROOST_SMTP_PORT: '0',
      ROOST_DB: join(dir, 'unused.db'),
      ROOST_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
      ROOST_PG_START_TIMEOUT_MS: '300000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const lines = (pattern: RegExp) => output.split('\n').filter((line) => pattern.test(line));
  /** Resolves with the `count`-th line matching, as it arrives. */
  const seen = (pattern: RegExp, count = 1) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const found = lines(pattern);
        if (found.length >= count) resolve(found[count - 1]);
      };
      child.stdout.on('data', check);
      child.stderr.on('data', check);
      child.once('exit', (code) => reject(new Error(`roost exited ${code}:\n${output}`)));
      check();
    });
  return {
    seen,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

describe('start waits for the database', { skip: clusterSkip }, () => {
  test('a database that appears seconds after Roost starts: each try logged, then it serves', async () => {
    const cluster = await createCluster();
    const dir = mkdtempSync(join(tmpdir(), 'roost-late-'));
    const roost = serveChild({ DATABASE_URL: cluster.url }, dir);
    try {
      // Two refused tries logged: Roost is waiting, not gone.
      const tried = await roost.seen(/is not ready.*trying again/, 2);
      assert.match(tried, /ECONNREFUSED/);
      cluster.start();
      const listening = JSON.parse(await roost.seen(/Roost listening/)) as { http: string };
      assert.match(roost.output(), /PostgreSQL at postgres:\/\/127\.0\.0\.1:\d+\/postgres is ready/);
      const address = await createAddress(listening.http);
      assert.equal((await deliver(address.inbox, { data: 'late' })).status, 202);
    } finally {
      await roost.stop();
      cluster.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a database with too many clients: start waits until connections free up', async () => {
    const cluster = await createCluster('-c max_connections=4 -c superuser_reserved_connections=0');
    cluster.start();
    const dir = mkdtempSync(join(tmpdir(), 'roost-full-'));
    const held: pg.Client[] = [];
    for (let i = 0; i < 4; i++) {
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      held.push(client);
    }
    const roost = serveChild({ DATABASE_URL: cluster.url, ROOST_PG_POOL_SIZE: '2' }, dir);
    try {
      await roost.seen(/is not ready \(sorry, too many clients already\)/);
      await Promise.all(held.splice(0).map((client) => client.end()));
      const listening = JSON.parse(await roost.seen(/Roost listening/)) as { http: string };
      assert.equal((await request(listening.http, 'GET', '/readyz')).status, 200);
    } finally {
      await Promise.all(held.map((client) => client.end().catch(() => {})));
      await roost.stop();
      cluster.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
