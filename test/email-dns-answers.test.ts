// What an email worker keeps of the DNS answers it was given (src/smtp/dns-answers.ts): DNS's
// own answers for a minute, never a failure to get one, within a fixed number of entries.
// The same store over SMTP, with a counting resolver, is in email-auth.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DNS_ANSWER_TTL_MS, DnsAnswers } from '../src/smtp/dns-answers.js';

const spf = { ok: true as const, value: [['v=spf1 ip4:192.0.2.1 -all']] };

test('a record is given again until its minute is over, for any letter case of the name', () => {
  const answers = new DnsAnswers();
  answers.put('Mail.Example.', 'txt', spf, 1_000);
  assert.deepEqual(answers.get('mail.example', 'TXT', 1_000), spf);
  assert.deepEqual(answers.get('MAIL.example', 'TXT', 1_000 + DNS_ANSWER_TTL_MS - 1), spf);
  assert.equal(answers.get('mail.example', 'A', 1_000), undefined);
  assert.equal(answers.get('mail.example', 'TXT', 1_000 + DNS_ANSWER_TTL_MS), undefined);
  assert.equal(answers.size, 0, 'an expired answer is dropped when it is asked for');
});

test('"no such name" and "no such record" are kept; timeouts and server failures are not', () => {
  const answers = new DnsAnswers();
  for (const code of ['ENOTFOUND', 'ENODATA', 'ETIMEOUT', 'ESERVFAIL', 'ECONNREFUSED', undefined])
    answers.put(`${code ?? 'none'}.example`, 'TXT', { ok: false, message: 'no', code }, 0);
  assert.deepEqual(answers.get('enotfound.example', 'TXT', 0), { ok: false, message: 'no', code: 'ENOTFOUND' });
  assert.deepEqual(answers.get('enodata.example', 'TXT', 0), { ok: false, message: 'no', code: 'ENODATA' });
  for (const name of ['etimeout', 'eservfail', 'econnrefused', 'none'])
    assert.equal(answers.get(`${name}.example`, 'TXT', 0), undefined, name);
});

test('what one message does with an answer does not change what the next is told', () => {
  const answers = new DnsAnswers();
  const given = { ok: true as const, value: [['v=DMARC1; p=reject']] };
  answers.put('_dmarc.example', 'TXT', given, 0);
  given.value[0][0] = 'changed after it was kept';
  const first = answers.get('_dmarc.example', 'TXT', 0)!;
  assert.ok(first.ok);
  (first.value as string[][])[0][0] = 'changed by a reader';
  assert.deepEqual(answers.get('_dmarc.example', 'TXT', 0), { ok: true, value: [['v=DMARC1; p=reject']] });
});

test('bounded: the oldest answer goes first, and a large one is not kept', () => {
  const answers = new DnsAnswers(DNS_ANSWER_TTL_MS, 3);
  for (const name of ['a', 'b', 'c', 'd']) answers.put(`${name}.example`, 'TXT', spf, 0);
  assert.equal(answers.size, 3);
  assert.equal(answers.get('a.example', 'TXT', 0), undefined);
  assert.deepEqual(answers.get('d.example', 'TXT', 0), spf);
  answers.put('big.example', 'TXT', { ok: true, value: [['x'.repeat(5_000)]] }, 0);
  assert.equal(answers.get('big.example', 'TXT', 0), undefined);
  assert.deepEqual(answers.get('b.example', 'TXT', 0), spf, 'a large answer does not push others out');
});
