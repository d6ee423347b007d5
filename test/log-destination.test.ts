// The service's own log destination (src/logger.ts): stdout written in blocks. Every line
// arrives whole and in order, text beyond ASCII included; a line logged while the service
// idles is out within the flush interval; and what is still buffered at exit is written.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs `body` in a child process with `logger` = createLogger('info'); resolves once its output has ended. */
function runLogging(body: string, onLine?: (line: string) => void) {
  const script = `import { createLogger } from './src/logger.ts';\nconst logger = createLogger('info');\n${body}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (stdout + chunk.toString('latin1')).split('\n');
    stdout = lines.pop()!;
    for (const line of lines) onLine?.(Buffer.from(line, 'latin1').toString('utf8'));
  });
  // 'close', not 'exit': at exit the child's last chunks of stdout may still be on their way.
  return once(child, 'close').then(([code]) => ({ code: code as number | null, rest: stdout }));
}

test('lines are written whole and in order, UTF-8 intact, and those buffered at exit go out', async () => {
  const lines: Array<{ i: number; text: string }> = [];
  // More than a block (8 KiB) and less: the last lines are still buffered when the process ends.
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

test('a line logged while nothing else is is written within the flush interval, not at exit', async () => {
  let seenAt = 0;
  await runLogging(`logger.info('alone');\nsetTimeout(() => {}, 3000);`, (line) => {
    if ((JSON.parse(line) as { msg?: string }).msg === 'alone') seenAt = Date.now();
  });
  const exitedAt = Date.now();
  assert.ok(seenAt > 0, 'the line was written');
  // The process idled 3 s after logging it: it was out long before the exit.
  assert.ok(exitedAt - seenAt > 2000, `written ${exitedAt - seenAt} ms before the exit`);
});
