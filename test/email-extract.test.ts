// The pure parts of inbound email: hints (codes and links) and header decoding. No server:
// these are the rules a reader of `data.extracted` and `data.headers` relies on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeEncodedWords, headerValue } from '../src/smtp/encoded-words.js';
import { extractHints } from '../src/smtp/extract.js';
import { judge } from '../src/smtp/authenticate.js';

test('codes: near a code word or alone on a line; not years, phone numbers or URL digits', () => {
  const hints = extractHints({
    subject: 'Welcome to Example (2026)',
    text: [
      'Thanks for joining in 2026. Your account number is 99887766.',
      'Call 555-1234 if this was not you.',
      'Open https://example.org/a/123456/b to continue.',
      'Your one-time passcode: 739 201',
      '',
      '    K7Q-29X    ',
    ].join('\n'),
    html: null,
  });
  assert.deepEqual(hints.codes, ['739 201', 'K7Q-29X']);
  assert.match(hints.note, /hints only/);
  assert.match(hints.note, /not visited/);
});

test('links: anchors with their text and entities decoded, bare URLs, List-Unsubscribe; kinds', () => {
  const hints = extractHints({
    subject: null,
    text: null,
    html:
      '<p><a class="btn" href="https://app.example/magic-link?t=a1&amp;next=%2F">Log&nbsp;in</a> ' +
      'or see https://docs.example/guide. <a href=\'mailto:x@example.org\'>mail</a> <a href="javascript:alert(1)">x</a></p>' +
      '<script>document.write(\'<a href="https://tracker.example/">t</a>\')</script><a href="https://unclosed.example/"',
    listUnsubscribe: '<mailto:leave@example.org>, <https://news.example/unsub?u=9>',
  });
  assert.deepEqual(hints.links, [
    { url: 'https://app.example/magic-link?t=a1&next=%2F', text: 'Log in', kind: 'action' },
    { url: 'https://docs.example/guide', text: null, kind: 'other' },
    // An unclosed tag is not an anchor, but its URL is still text on the page.
    { url: 'https://unclosed.example/', text: null, kind: 'other' },
    { url: 'https://news.example/unsub?u=9', text: null, kind: 'unsubscribe' },
  ]);
});

test('RFC 2047: B and Q words, a character split across words, other charsets, bad charset kept', () => {
  const euro = Buffer.from('€', 'utf8'); // three bytes, split over two Q words below
  const q = (bytes: Buffer) => [...bytes].map((b) => `=${b.toString(16).toUpperCase()}`).join('');
  assert.equal(
    decodeEncodedWords(`=?UTF-8?Q?Preis_${q(euro.subarray(0, 1))}?= =?UTF-8?Q?${q(euro.subarray(1))}_5?=`),
    'Preis € 5',
  );
  assert.equal(decodeEncodedWords('=?utf-8?b?w6Rwc2lsb24=?= und =?iso-8859-1?q?K=E4se?='), 'äpsilon und Käse');
  assert.equal(decodeEncodedWords('=?x-unknown?Q?abc?= plain'), '=?x-unknown?Q?abc?= plain');
  assert.equal(headerValue('Subject: first\r\n second'), 'first second');
  assert.equal(headerValue(Buffer.from('X-Note: Grüße', 'utf8').toString('latin1')), 'Grüße');
});

test('verdict: DMARC decides when it has a policy; otherwise aligned DKIM/SPF pass, any fail, or none', () => {
  const dkim = (result: any, aligned: boolean) => [
    { domain: 'd.example', selector: 's', result, aligned, comment: null },
  ];
  assert.equal(judge('fail', false, [], 'pass'), 'pass');
  assert.equal(judge('pass', true, [], 'fail'), 'fail');
  assert.equal(judge('none', false, dkim('pass', true), 'none'), 'pass');
  assert.equal(
    judge('none', false, dkim('pass', false), 'none'),
    'none',
    'a third party signature vouches for nothing',
  );
  assert.equal(judge('pass', false, [], 'none'), 'none', 'SPF for another domain than From');
  assert.equal(judge('pass', true, [], 'temperror'), 'pass');
  assert.equal(judge('softfail', false, dkim('fail', true), 'none'), 'fail');
  assert.equal(judge('temperror', false, [], 'temperror'), 'none');
});
