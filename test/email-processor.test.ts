// The email processor's worker pool on its own, with real worker threads: what a worker holds
// at once is bounded by count and by bytes, and small mail is not held up behind large
// messages that wait on silent name servers. The silent name servers are the test's: they
// answer when the test says so, and every step waits on what happened, not on a clock.
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { after, test } from 'node:test';
import { EmailProcessor, type ProcessInput } from '../src/smtp/processor.js';

// Never reached: the test answers the silent names itself.
const DEADLINE_MS = 120_000;
/** What happened, in order: questions to silent names ("asked …") and results ("done …"). */
const trace: string[] = [];
const changed = new EventEmitter();
const note = (entry: string) => {
  trace.push(entry);
  changed.emit('change');
};
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await once(changed, 'change');
}

let silent = true;
const held: Array<() => void> = [];
const timedOut = () => Object.assign(new Error('DNS timed out'), { code: 'ETIMEOUT' });
// Names under blackhole.example answer "timed out" once the test lets them; others do not exist.
async function resolver(name: string): Promise<never> {
  if (!/(^|\.)blackhole\.example$/i.test(name))
    throw Object.assign(new Error(`no record for ${name}`), { code: 'ENOTFOUND' });
  note(`asked ${name.toLowerCase()}`);
  if (!silent) throw timedOut();
  return new Promise<never>((_, reject) => held.push(() => reject(timedOut())));
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
  const run = (name: string, input: ProcessInput) =>
    processor.process(input).then((result) => {
      note(`done ${name}`);
      return result;
    });
  const results = Promise.all([
    run('large 1', mail('a@one.blackhole.example', 600 * 1024)),
    run('large 2', mail('b@two.blackhole.example', 600 * 1024)),
    run('small', mail('someone@example.org', 1024)),
  ]);
  // The small message is done while the first large one still waits on its name servers,
  // and the second large one has not started: the two do not fit in the worker together.
  await until(() => trace.includes('done small'));
  assert.ok(
    trace.some((entry) => entry.startsWith('asked ') && entry.includes('one.blackhole')),
    'large 1 is waiting on DNS',
  );
  assert.ok(!trace.some((entry) => entry.includes('two.blackhole')), 'large 2 has not started');
  assert.ok(!trace.includes('done large 1'));

  silent = false;
  for (const answer of held.splice(0)) answer();
  const [first, second] = await results;
  const done = trace.filter((entry) => entry.startsWith('done '));
  assert.deepEqual(done, ['done small', 'done large 1', 'done large 2']);
  // The second large message started only once the first had gone.
  const firstQuestionOfLarge2 = trace.findIndex((entry) => entry.includes('two.blackhole'));
  assert.ok(firstQuestionOfLarge2 > trace.indexOf('done large 1'), trace.join('\n'));
  for (const result of [first, second]) assert.equal(result.authentication.spf, 'temperror');
});
