// How a DATABASE_URL is read (libpq's sslmode, the TLS parameters kept from the driver) and
// the client that never names a statement, checked against the test PostgreSQL's own
// record of prepared statements.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import {
  beginSql,
  connectionSettings,
  sessionSettingsSql,
  UnnamedStatementClient,
} from '../src/storage/postgres/connection-options.js';
import { ADMIN_URL, postgresSkipReason } from './helpers/postgres.js';

const pgSkip = await postgresSkipReason();

describe('reading a DATABASE_URL as libpq does', () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-url-'));
  const ca = join(dir, 'ca.pem');
  writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n');
  const url = (query: string) => `postgres://app:s3cret@db.example:5432/roost?${query}`;

  test('no sslmode: no TLS options, the URL as given', () => {
    const { config } = connectionSettings('postgres://app:s3cret@db.example/roost', 'DATABASE_URL');
    assert.equal(config.ssl, undefined);
    assert.equal(config.connectionString, 'postgres://app:s3cret@db.example/roost');
  });

  test('require encrypts without verifying; with sslrootcert it verifies the chain but not the name', () => {
    const plain = connectionSettings(url('sslmode=require&application_name=x'), 'DATABASE_URL').config;
    assert.deepEqual(plain.ssl, { rejectUnauthorized: false });
    // The TLS parameters are read here and taken out, the others stay.
    assert.equal(plain.connectionString, 'postgres://app:s3cret@db.example:5432/roost?application_name=x');
    const withCa = connectionSettings(url(`sslmode=require&sslrootcert=${ca}`), 'DATABASE_URL').config;
    const ssl = withCa.ssl as { ca?: string; rejectUnauthorized?: boolean; checkServerIdentity?: unknown };
    assert.match(ssl.ca ?? '', /BEGIN CERTIFICATE/);
    assert.equal(ssl.rejectUnauthorized, undefined);
    assert.equal(typeof ssl.checkServerIdentity, 'function');
  });

  test('verify-full checks the name (no override), against sslrootcert or the system store', () => {
    const own = connectionSettings(url(`sslmode=verify-full&sslrootcert=${ca}`), 'DATABASE_URL').config.ssl as {
      ca?: string;
      checkServerIdentity?: unknown;
    };
    assert.ok(own.ca);
    assert.equal(own.checkServerIdentity, undefined);
    assert.deepEqual(connectionSettings(url('sslmode=verify-full'), 'DATABASE_URL').config.ssl, {});
    assert.deepEqual(connectionSettings(url('sslmode=verify-full&sslrootcert=system'), 'DATABASE_URL').config.ssl, {});
  });

  test('disable means no TLS; no-verify reads as require', () => {
    assert.equal(connectionSettings(url('sslmode=disable'), 'DATABASE_URL').config.ssl, false);
    assert.deepEqual(connectionSettings(url('sslmode=no-verify'), 'DATABASE_URL').config.ssl, {
      rejectUnauthorized: false,
    });
  });

  test('what cannot work is refused naming the setting, never the password', () => {
    const refusals: Array<[string, RegExp]> = [
      ['sslmode=prefer', /^ROOST_PG_LISTEN_URL: sslmode=prefer would fall back to an unencrypted connection/],
      ['sslmode=allow', /sslmode=allow would fall back/],
      ['sslmode=verify-ca', /^ROOST_PG_LISTEN_URL: sslmode=verify-ca needs sslrootcert=<file>/],
      ['sslmode=strict', /sslmode=strict is not one of disable, require, verify-ca, verify-full/],
      [`sslmode=verify-full&sslrootcert=${dir}/missing.pem`, /cannot read sslrootcert=.*missing\.pem \(ENOENT\)/],
    ];
    for (const [query, expected] of refusals) {
      assert.throws(
        () => connectionSettings(url(query), 'ROOST_PG_LISTEN_URL'),
        (error: Error) => {
          assert.match(error.message, expected);
          assert.doesNotMatch(error.message, /s3cret/);
          return true;
        },
      );
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('settings go by statement: the session one, and BEGIN with SET LOCAL through a transaction pooler', () => {
    assert.equal(sessionSettingsSql(10_000), 'SET statement_timeout = 10000; SET plan_cache_mode = force_generic_plan');
    assert.equal(beginSql('session', 10_000), 'BEGIN');
    assert.equal(beginSql('transaction', 10_000), 'BEGIN; SET LOCAL statement_timeout = 10000');
  });
});

describe('the client for transaction poolers', { skip: pgSkip ? `skipped: ${pgSkip}` : false }, () => {
  test('prepares no named statement where the ordinary client does', async () => {
    const prepared = async (client: pg.Client) => {
      await client.connect();
      try {
        await client.query({ name: 'roost_probe', text: 'SELECT $1::int AS n', values: [1] });
        const second = await client.query({ name: 'roost_probe', text: 'SELECT $1::int AS n', values: [2] });
        assert.equal(second.rows[0].n, 2);
        const { rows } = await client.query<{ name: string }>('SELECT name FROM pg_prepared_statements');
        return rows.map((row) => row.name);
      } finally {
        await client.end();
      }
    };
    assert.deepEqual(await prepared(new pg.Client({ connectionString: ADMIN_URL })), ['roost_probe']);
    assert.deepEqual(await prepared(new UnnamedStatementClient({ connectionString: ADMIN_URL })), []);
  });
});
