// Arrays sent to PostgreSQL in its binary form (src/storage/postgres/binary-arrays.ts), read
// back by the database itself: each must equal the same values sent as node-postgres's
// array literal, for every element type the batch statement uses, NULLs, empty arrays,
// characters that literals escape, and the edges of each integer type.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { binaryArrays } from '../../src/storage/postgres/binary-arrays.js';
import { ADMIN_URL, postgresSkipReason, withClient } from '../helpers/postgres.js';

const binaryArray = (type: 'text' | 'bigint' | 'integer' | 'boolean', values: readonly unknown[]) =>
  binaryArrays([type], [values])[0];

const CASES = {
  text: [
    '',
    'plain',
    'a "quote", a back\\slash, {braces} and a comma',
    'NULL',
    '  spaced  ',
    'é, 日本語, 🎉',
    'a lone \uD800 surrogate',
    null,
    JSON.stringify({ nested: { list: [1, 'two', null] }, text: 'line\nbreak\ttab' }),
  ],
  bigint: [
    0,
    1,
    -1,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 32,
    -(2 ** 32) - 1,
    Number.MAX_SAFE_INTEGER,
    Number.MIN_SAFE_INTEGER,
    null,
    Date.UTC(2026, 10, 27),
  ],
  integer: [0, 1, -1, 2 ** 31 - 1, -(2 ** 31), null],
  boolean: [true, false, null],
} as const;

test('binary arrays refuse a value of another type rather than send it', () => {
  assert.throws(() => binaryArray('text', [1]), TypeError);
  assert.throws(() => binaryArray('bigint', ['1']), TypeError);
  assert.throws(() => binaryArray('bigint', [1.5]), TypeError);
  assert.throws(() => binaryArray('bigint', [2 ** 53]), TypeError);
  assert.throws(() => binaryArray('integer', [2 ** 31]), RangeError);
  assert.throws(() => binaryArray('boolean', [1]), TypeError);
});

const postgresSkip = await postgresSkipReason();
const onPostgres = (name: string) => `PostgreSQL: ${name}${postgresSkip ? ` (skipped: ${postgresSkip})` : ''}`;
const skip = postgresSkip ? `skipped: ${postgresSkip}` : false;

test(onPostgres('each binary array is the array its literal names'), { skip }, () =>
  withClient(ADMIN_URL, async (client) => {
    for (const [type, values] of Object.entries(CASES) as Array<[keyof typeof CASES, readonly unknown[]]>) {
      for (const sent of [values, [], [null], values.filter((value) => value !== null)]) {
        const { rows } = await client.query<{ same: boolean; shown: string; literal: string }>(
          `SELECT $1::${type}[] IS NOT DISTINCT FROM $2::${type}[] AS same, $1::${type}[]::text AS shown, $2::${type}[]::text AS literal`,
          [binaryArray(type, sent), sent],
        );
        assert.equal(rows[0].shown, rows[0].literal, `${type}[] of ${sent.length}`);
        assert.equal(rows[0].same, true, `${type}[] of ${sent.length}: ${rows[0].shown}`);
      }
    }
  }),
);

test(onPostgres('arrays encoded together, in one buffer, are each their own array'), { skip }, () =>
  withClient(ADMIN_URL, async (client) => {
    const types = Object.keys(CASES) as Array<keyof typeof CASES>;
    const columns = types.map((type) => CASES[type]);
    const { rows } = await client.query<{ shown: string[]; literal: string[] }>(
      `SELECT ARRAY[${types.map((type, i) => `$${i + 1}::${type}[]::text`).join(', ')}] AS shown,
              ARRAY[${types.map((type, i) => `$${i + 1 + types.length}::${type}[]::text`).join(', ')}] AS literal`,
      [...binaryArrays(types, columns), ...columns],
    );
    assert.deepEqual(rows[0].shown, rows[0].literal);
  }),
);

test(onPostgres('a NUL in a text element is refused as the literal form refuses it'), { skip }, () =>
  withClient(ADMIN_URL, async (client) => {
    const codeOf = (value: unknown) =>
      client.query('SELECT $1::text[]', [value]).then(
        () => 'stored',
        (error: { code?: string }) => error.code,
      );
    const binary = await codeOf(binaryArray('text', ['a\u0000b']));
    assert.equal(binary, '22021');
    assert.equal(binary, await codeOf(['a\u0000b']));
  }),
);
