// data_contains and body_contains give the same answers on both engines: SQLite's functions
// (json-contains.ts, as the page query calls them) against PostgreSQL's own jsonb `@>` and
// roost_jsonb (migration 11), over random JSON and random filters drawn from it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { openSqlite } from '../../src/storage/sqlite/connection.js';
import { PG_MIGRATIONS } from '../../src/storage/postgres/migrations.js';
import { createTestDatabase, postgresSkipReason, withClient, type TestDatabase } from '../helpers/postgres.js';

const skip = await postgresSkipReason();

/** Strings that stress equality: few letters (so values collide), escapes, non-BMP, NUL, a lone surrogate. */
const text = fc.oneof(
  fc.constantFrom('a', 'b', 'body', '', 'é', '😀', '\\', '"', '\u0000', '\ud800'),
  fc.string({ maxLength: 3, unit: fc.constantFrom('a', 'b', 'c') }),
);
const scalar = fc.oneof(text, fc.constantFrom(0, 1, -1, 1.5, 1e21, true, false, null), fc.integer({ min: -3, max: 3 }));
const { json } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'body', 'x'), tie('json'), { maxKeys: 4 }),
  ),
}));

/** A value and a filter that is often a part of it, so that matches are frequent. */
function part(value: unknown): fc.Arbitrary<unknown> {
  if (Array.isArray(value) && value.length > 0)
    return fc.oneof(fc.constant(value), fc.subarray(value), fc.constantFrom(...value).chain(part));
  if (value !== null && typeof value === 'object' && Object.keys(value).length > 0) {
    const entries = Object.entries(value);
    return fc.oneof(
      fc.constant(value),
      fc.subarray(entries).map((kept) => Object.fromEntries(kept)),
      fc.constantFrom(...entries).chain(([key, child]) => part(child).map((inner) => ({ [key]: inner }))),
    );
  }
  return fc.constant(value);
}
const pair = json.chain((value) => fc.tuple(fc.constant(value), fc.oneof(part(value), json)));

describe('data_contains and body_contains: SQLite answers as PostgreSQL', { skip: skip ?? false }, () => {
  let database: TestDatabase;
  let sqlite: Database.Database;
  before(async () => {
    database = await createTestDatabase();
    await withClient(database.url, async (client) => {
      await client.query(PG_MIGRATIONS.find((m) => m.name === 'a JSON reading for the filters of a page')!.sql);
    });
    sqlite = openSqlite(':memory:', 'NORMAL');
  });
  after(async () => {
    sqlite?.close();
    await database?.drop();
  });

  const postgres = (client: pg.Client, sql: string, data: string[], filters: string[]) =>
    client
      .query<{ m: boolean | null }>(
        `SELECT ${sql} AS m FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(data, filter, n) ORDER BY n`,
        [data, filters],
      )
      .then(({ rows }) => rows.map((row) => row.m === true));

  for (const [name, sqliteCall, pgCall, asStored] of [
    [
      'data_contains',
      'roost_json_contains(?, ?)',
      'roost_jsonb(data) @> filter::jsonb',
      (value: unknown) => JSON.stringify(value),
    ],
    [
      'body_contains (the body as JSON text)',
      'roost_body_contains(?, ?)',
      `(CASE jsonb_typeof(roost_jsonb(data) -> 'body') WHEN 'string' THEN roost_jsonb(roost_jsonb(data) ->> 'body') ELSE roost_jsonb(data) -> 'body' END) @> filter::jsonb`,
      (value: unknown) => JSON.stringify({ body: JSON.stringify(value) }),
    ],
  ] as const) {
    test(`${name}: the same answer for every pair`, async () => {
      const statement = sqlite.prepare<[string, string], number>(`SELECT ${sqliteCall}`).pluck();
      await withClient(database.url, async (client) => {
        let matched = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(pair, { minLength: 1, maxLength: 50 }), async (pairs) => {
            // A filter is never a NUL-bearing or non-UTF-16 text: the API refuses those (400).
            const kept = pairs.filter(([, filter]) => !/\\u0000|\\ud[89a-f]/.test(JSON.stringify(filter)));
            const data = kept.map(([value]) => asStored(value));
            const filters = kept.map(([, filter]) => JSON.stringify(filter));
            const expected = await postgres(client, pgCall, data, filters);
            const actual = data.map((stored, i) => statement.get(stored, filters[i]) === 1);
            matched += actual.filter(Boolean).length;
            assert.deepEqual(actual, expected, JSON.stringify(kept.map((p, i) => [...p, expected[i]])));
          }),
          { numRuns: 150 },
        );
        // The property is not met by answering "no" to everything.
        assert.ok(matched > 100, `only ${matched} matches`);
      });
    });
  }
});
