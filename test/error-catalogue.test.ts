// The server's errors come from one catalogue (src/core/errors.ts): docs/api.md §6 lists
// every code it has with its status and headers, and the lint refuses an error built
// anywhere else.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import { ServiceError, catalogueRows, errors } from '../src/core/errors.js';

interface DocRow {
  status: number;
  code: string;
  headers: string;
}

/** The rows of the table in docs/api.md §6 (Status | code | Where | Extra headers). */
function documentedRows(): DocRow[] {
  const text = readFileSync('docs/api.md', 'utf8');
  const section = text.slice(text.indexOf('\n## 6. Errors'), text.indexOf('\n## 7. '));
  const rows = [...section.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|[^|\n]*\|([^|\n]*)\|$/gm)].map(
    ([, status, code, headers]) => ({ status: Number(status), code, headers }),
  );
  assert.ok(rows.length > 10, 'the error table of docs/api.md §6 was not found');
  return rows;
}

const key = (row: { status: number; code: string }) => `${row.status} ${row.code}`;

describe('the error catalogue and docs/api.md §6', () => {
  it('list the same codes with the same statuses', () => {
    const documented = new Set(documentedRows().map(key));
    const catalogued = new Set(catalogueRows().map(key));
    assert.deepEqual(
      [...catalogued].filter((row) => !documented.has(row)),
      [],
      'in the catalogue, missing from docs/api.md §6',
    );
    assert.deepEqual(
      [...documented].filter((row) => !catalogued.has(row)),
      [],
      'in docs/api.md §6, not in the catalogue',
    );
  });

  it('name every fixed extra header a row sends', () => {
    const docs = documentedRows();
    const missing = catalogueRows().flatMap((row) =>
      row.headers
        .filter((header) => !docs.some((doc) => key(doc) === key(row) && doc.headers.includes(header)))
        .map((header) => `${row.name} (${key(row)}): ${header}`),
    );
    assert.deepEqual(missing, []);
  });

  it('makes each row into an error with its code, status and the wire shape', () => {
    const made = [
      errors.addressNotFound(),
      errors.unauthorized({ why: 'Missing bearer token.' }),
      errors.rateLimited({ retryAfterMs: 1500 }),
      errors.methodNotAllowed({ method: 'PUT', allowed: ['GET', 'POST'] }),
    ];
    assert.ok(made.every((error) => error instanceof ServiceError));
    assert.deepEqual(made[0].toJSON(), {
      error: {
        code: 'address_not_found',
        message: 'No return address with this id exists (it may have been deleted or have expired).',
      },
    });
    assert.equal(made[1].headers['WWW-Authenticate'], 'Bearer realm="roost"');
    assert.equal(made[2].message, 'Too many return addresses created from this client; retry in 2 s.');
    assert.equal(made[2].headers['Retry-After'], '2');
    assert.deepEqual([made[3].status, made[3].headers.Allow], [405, 'GET, POST']);
    for (const row of catalogueRows()) assert.equal(typeof errors[row.name], 'function', row.name);
  });
});

describe('the lint rule against errors built outside the catalogue', () => {
  const eslint = new ESLint({ ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-syntax' });
  const restricted = async (text: string, filePath: string) => {
    const [result] = await eslint.lintText(text, { filePath });
    return result.messages.filter((message) => message.ruleId === 'no-restricted-syntax').map((m) => m.message);
  };

  it('fails a module of src that constructs a ServiceError', async () => {
    const file = 'src/http/body.ts';
    const inline = `${readFileSync(file, 'utf8')}\nexport const inline = new ServiceError('not_found', 404, 'No such thing.');\n`;
    const withImport = `import { ServiceError } from '../core/errors.js';\n${inline}`;
    const messages = await restricted(withImport, file);
    assert.equal(messages.length, 1);
    assert.match(messages[0], /catalogue in src\/core\/errors\.ts/);
  });

  it('passes the catalogue itself and the module as it is', async () => {
    for (const file of ['src/core/errors.ts', 'src/http/body.ts']) {
      assert.deepEqual(await restricted(readFileSync(file, 'utf8'), file), [], file);
    }
  });
});
