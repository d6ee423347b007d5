// The email processor's worker pool on its own, with real worker threads: what a worker holds
// at once is bounded by count and by bytes, and small mail is not held up behind large
// messages that wait on silent name servers.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { EmailProcessor, type ProcessInput } from '../src/smtp/processor.js';

const DEADLINE_MS = 800;
// Nothing under blackhole.example ever answers; every other name does not exist.
async function resolver(name: string): Promise<never> {
  if (/(^|\.)blackhole\.example$/i.test(name)) return new Promise<never>(() => {});
  throw Object.assign(new Error(`no record for ${name}`), { code: 'ENOTFOUND' });
}

const processor = new EmailProcessor({
  workers: 1,
  messagesPerWorker: 50,
  bytesPerWorker: 1024 * 1024,
  deadlineMs: DEADLINE_MS,
  limits: { maxTextBytes: 1024 * 1024, maxHtmlBytes: 1024 * 1024 },
  resolver,
  logger: { warn: () => {} },
});
after(() => processor.close());

function mail(sender: string, bodyBytes: number): ProcessInput {
  const raw = Buffer.from(`From: ${sender}\r\nTo: a@roost.test\r\nSubject: s\r\n\r\n${'x'.repeat(bodyBytes)}\r\n`);
  return { raw, ip: '127.0.0.1', helo: 'client.test', sender, mta: 'roost.test' };
}

test('a worker holds at most its bytes: a large message waits for room, a small one that fits goes first', async () => {
  const started = performance.now();
  const done: Array<{ name: string; at: number }> = [];
  const run = (name: string, input: ProcessInput) =>
    processor.process(input).then((result) => {
      done.push({ name, at: performance.now() - started });
      return result;
    });
  const results = await Promise.all([
    run('large 1', mail('one@blackhole.example', 600 * 1024)),
    run('large 2', mail('two@blackhole.example', 600 * 1024)),
    run('small', mail('someone@example.org', 1024)),
  ]);
  assert.deepEqual(
    done.map((d) => d.name),
    ['small', 'large 1', 'large 2'],
  );
  const [first, second] = done.filter((d) => d.name.startsWith('large')).map((d) => d.at);
  // The second large message starts only once the first has gone: a deadline apart.
  assert.ok(second - first >= DEADLINE_MS * 0.75, `the large messages ended ${(second - first).toFixed(0)} ms apart`);
  for (const result of results.slice(0, 2)) assert.equal(result.authentication.spf, 'temperror');
});
