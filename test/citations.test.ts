// Every section of the repository's own docs that a comment cites (`docs/api.md §3.1`,
// `docs/api.md §2–5`, `docs/api.md §6, §9`) exists, so that a citation can be followed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const CITATION = /docs\/([a-z-]+)\.md ((?:§[0-9]+(?:\.[0-9]+)?(?:–[0-9]+(?:\.[0-9]+)?)?(?:, (?=§))?)+)/g;

function sectionsOf(doc: string): Set<string> {
  const text = readFileSync(`docs/${doc}.md`, 'utf8');
  return new Set([...text.matchAll(/^#{2,4} ([0-9]+(?:\.[0-9]+)?)\.? /gm)].map((match) => match[1]));
}

test('every docs/….md §N cited in src, test and bench names a section that exists', () => {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'src', 'test', 'bench'])
    .toString()
    .split('\n')
    .filter((file) => file.endsWith('.ts'));
  const sections = new Map<string, Set<string>>();
  const missing: string[] = [];
  let cited = 0;
  for (const file of files) {
    for (const [, doc, list] of readFileSync(file, 'utf8').matchAll(CITATION)) {
      if (!sections.has(doc)) sections.set(doc, sectionsOf(doc));
      for (const item of list.split(', ')) {
        for (const number of item.replace('§', '').split('–')) {
          cited++;
          if (!sections.get(doc)!.has(number)) missing.push(`${file}: docs/${doc}.md §${number}`);
        }
      }
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(cited > 100, `the citations were found (${cited})`);
});
