// The house rules `npm run lint` enforces, each shown to refuse what it is for: a transport
// importing storage (types included), a module of src/ over 600 lines, and a comment citing a
// document outside the repository.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cruise } from 'dependency-cruiser';
import { ESLint } from 'eslint';

const { forbidden } = createRequire(import.meta.url)('../.dependency-cruiser.cjs') as {
  forbidden: Array<{ name: string }>;
};

describe('the layer rules', () => {
  const root = mkdtempSync(join(tmpdir(), 'roost-layers-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };

  async function violations(files: Record<string, string>): Promise<string[]> {
    rmSync(join(root, 'src'), { recursive: true, force: true });
    for (const [path, text] of Object.entries(files)) write(path, text);
    const result = await cruise(['src'], {
      baseDir: root,
      tsPreCompilationDeps: true,
      validate: true,
      ruleSet: { forbidden },
    } as never);
    const output = result.output as {
      summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> };
    };
    return output.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
  }

  const storage = { 'src/storage/storage.ts': 'export type Storage = { ok: true };\nexport const RAW = -1;\n' };

  it('refuse a transport importing storage, a type import included', async () => {
    for (const transport of ['http', 'smtp', 'mcp']) {
      const found = await violations({
        ...storage,
        [`src/${transport}/a.ts`]: "import type { Storage } from '../storage/storage.js';\nexport type A = Storage;\n",
      });
      assert.deepEqual(found, [`transports-above-core: src/${transport}/a.ts → src/storage/storage.ts`]);
    }
  });

  it('let a transport reach storage through the core, and the contract read only the fixed limits', async () => {
    assert.deepEqual(
      await violations({
        ...storage,
        'src/core/records.ts': "export type { Storage } from '../storage/storage.js';\n",
        'src/core/limits.ts': 'export const LIMIT = 1;\n',
        'src/contract/schemas.ts': "export { LIMIT } from '../core/limits.js';\n",
        'src/http/a.ts': "import type { Storage } from '../core/records.js';\nexport type A = Storage;\n",
      }),
      [],
    );
    assert.deepEqual(
      await violations({
        'src/core/service.ts': 'export const S = 1;\n',
        'src/contract/schemas.ts': "export { S } from '../core/service.js';\n",
      }),
      ['contract-is-a-leaf: src/contract/schemas.ts → src/core/service.ts'],
    );
  });
});

describe('the lint rules of src/', () => {
  const eslint = new ESLint();
  // An existing module's path, so that the type-aware rules find it in the project.
  const lint = async (text: string) => {
    const [result] = await eslint.lintText(text, { filePath: 'src/core/limits.ts' });
    return result.messages.map((message) => message.ruleId);
  };

  it('refuse a module over 600 lines, blank lines and comments counted', async () => {
    const line = (i: number) => (i % 3 === 0 ? '' : i % 3 === 1 ? '// a comment' : `export const N${i} = ${i};`);
    assert.deepEqual(await lint(Array.from({ length: 600 }, (_, i) => line(i)).join('\n') + '\n'), []);
    assert.deepEqual(await lint(Array.from({ length: 601 }, (_, i) => line(i)).join('\n') + '\n'), ['max-lines']);
  });

  it('refuse a comment citing a document outside the repository, and take the repository’s own', async () => {
    for (const cited of ['CONTRACT §4.1', 'DESIGN.md § Style', 'the specification (§8)', 'STACK.md § Node']) {
      assert.deepEqual(await lint(`// See ${cited}.\nexport const A = 1;\n`), ['roost/no-outside-citations'], cited);
    }
    for (const cited of [
      'docs/api.md §4.1',
      'README.md § Layout',
      'RFC 5321 §4.5.1',
      'https://docs.stripe.com/webhooks',
    ]) {
      assert.deepEqual(await lint(`// See ${cited}.\nexport const A = 1;\n`), [], cited);
    }
  });
});
