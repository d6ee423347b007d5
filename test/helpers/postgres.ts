// PostgreSQL for tests: each test gets its own fresh database `roost_test_<random>`, made
// through the admin URL ROOST_TEST_DATABASE_URL (default: the local server as `postgres`)
// and dropped afterwards. Outside CI, PostgreSQL tests skip with a visible reason when no
// server is reachable; in CI (CI=true) they run anyway, and so fail, rather than skip.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const ADMIN_URL = process.env.ROOST_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * The ROOST_SECRET_KEY of every PostgreSQL test server (32 bytes, base64): instances sharing
 * a database share one server key, as docs/scale-out.md says to deploy them.
 */
export const POSTGRES_TEST_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');

/** The admin URL without credentials, for messages. */
function where(): string {
  try {
    const url = new URL(ADMIN_URL);
    return `${url.host}${url.pathname}`;
  } catch {
    return 'ROOST_TEST_DATABASE_URL';
  }
}

/** Runs `work` on a fresh connection to `url`, closed afterwards whatever happens. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

let probe: Promise<string | undefined> | undefined;

/** Why PostgreSQL tests cannot run here, or undefined when they can (probed once). */
export function postgresSkipReason(): Promise<string | undefined> {
  probe ??= withClient(ADMIN_URL, (client) => client.query('SELECT 1')).then(
    () => undefined,
    (error: Error) =>
      process.env.CI === 'true'
        ? undefined
        : `no PostgreSQL server reachable at ${where()} (${error.message}); set ROOST_TEST_DATABASE_URL`,
  );
  return probe;
}

export interface TestDatabase {
  /** postgres://… of the new database, with the admin URL's credentials. */
  url: string;
  name: string;
  /** Terminates its connections and drops it. */
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `roost_test_${randomBytes(6).toString('hex')}`;
  await withClient(ADMIN_URL, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    name,
    drop: () =>
      (dropped ??= withClient(ADMIN_URL, async (client) => {
        await client.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [name],
        );
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      })),
  };
}
