// The service's own log destination (src/logger.ts): stdout written in blocks. Every line
// arrives whole and in order, text beyond ASCII included; a line logged while the service
// idles is out within the flush interval; and what is still buffered at exit is written.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Runs `body` in a child process with `logger` = createLogger('info'); `onLine` gets each line
 * of its stdout, and its stdin. Resolves once the child's output has ended.
 */
function runLogging(body: string, onLine?: (line: string, stdin: Writable) => void) {
  const script = `import { createLogger } from './src/logger.ts';\nconst logger = createLogger('info');\n${body}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  // A child that already ended makes closing its stdin an EPIPE: the exit code tells.
  child.stdin.on('error', () => {});
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (stdout + chunk.toString('latin1')).split('\n');
    stdout = lines.pop()!;
    for (const line of lines) onLine?.(Buffer.from(line, 'latin1').toString('utf8'), child.stdin);
  });
  // 'close', not 'exit': at exit the child's last chunks of stdout may still be on their way.
  return once(child, 'close').then(([code]) => ({ code: code as number | null, rest: stdout }));
}

test('lines are written whole and in order, UTF-8 intact, and those buffered at exit go out', async () => {
  const lines: Array<{ i: number; text: string }> = [];
  // More than a block (64 KiB) and less: the last lines are still buffered when the process ends.
  const { code, rest } = await runLogging(
    `for (let i = 0; i < 5003; i++) logger.info({ i, text: 'é🙂'.repeat(i % 7) + 'x' }, 'line');`,
    (line) => lines.push(JSON.parse(line) as { i: number; text: string }),
  );
  assert.equal(code, 0);
  assert.equal(rest, '', 'no partial line');
  assert.equal(lines.length, 5003);
  lines.forEach((line, i) => {
    assert.equal(line.i, i);
    assert.equal(line.text, 'é🙂'.repeat(i % 7) + 'x');
  });
});

test('a line logged while the process idles is written then, not held until its exit', async () => {
  // The child idles until its stdin closes, which the test does once it has read the line.
  // Were the line held until exit, the child would instead end on its own, exit code 3.
  const { code } = await runLogging(
    `logger.info('alone');\nprocess.stdin.on('end', () => process.exit(0)).resume();\nsetTimeout(() => process.exit(3), 30_000);`,
    (line, stdin) => {
      if ((JSON.parse(line) as { msg?: string }).msg === 'alone') stdin.end();
    },
  );
  assert.equal(code, 0, 'the line came out while the child waited');
});
