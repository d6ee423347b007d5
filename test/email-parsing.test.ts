// Every message readable: the parser on messages written here for each case — legacy 8-bit
// headers (windows-1251, latin-1, ISO-2022-JP), parse limits that must not lose the
// headers, a malformed boundary, a uuencoded attachment, reply styles, codes in non-Latin
// text, and domains shown one way. One message goes through the SMTP port, to show the
// worker path end to end.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { authenticate } from '../src/smtp/authenticate.js';
import { extractHints } from '../src/smtp/extract.js';
import { parseEmail, uudecode } from '../src/smtp/parse.js';
import { createAddress, listEvents } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { SmtpDialogue } from './helpers/smtp.js';

const LIMITS = { maxTextBytes: 256 * 1024, maxHtmlBytes: 256 * 1024 };

/** Text in windows-1251 (Cyrillic letters only besides ASCII), as a 1990s mail client wrote it. */
function cp1251(text: string): Buffer {
  return Buffer.from(
    [...text].map((c) => {
      const code = c.codePointAt(0)!;
      if (code < 0x80) return code;
      if (code >= 0x410 && code <= 0x44f) return code - 0x410 + 0xc0;
      if (c === 'ё') return 0xb8;
      if (c === 'Ё') return 0xa8;
      throw new Error(`not in this test's windows-1251: ${c}`);
    }),
  );
}
// "こんにちは" in ISO-2022-JP: ESC $ B, five JIS X 0208 characters, ESC ( B.
const KONNICHIWA_JIS = Buffer.from('1b244224332473244b2441244f1b2842', 'hex');

const mail = (...pieces: Array<string | Buffer>) =>
  Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p)));

describe('legacy 8-bit headers', () => {
  test('raw windows-1251 Subject and From name, with the charset declared by the message', async () => {
    const raw = mail(
      'From: ',
      cp1251('Иван Петров'),
      ' <ivan@example.ru>\r\nSubject: ',
      cp1251('Счёт за ноябрь'),
      '\r\nContent-Type: text/plain; charset=windows-1251\r\nContent-Transfer-Encoding: 8bit\r\n\r\n',
      cp1251('Оплатите до пятницы.'),
      '\r\n',
    );
    const { data } = await parseEmail(raw, LIMITS);
    assert.equal(data.subject, 'Счёт за ноябрь');
    assert.equal(data.headers.subject, 'Счёт за ноябрь');
    assert.deepEqual(data.from, { address: 'ivan@example.ru', name: 'Иван Петров' });
    assert.equal(data.text?.trim(), 'Оплатите до пятницы.');
  });

  test('raw windows-1251 Subject in a multipart message: the first part declares the charset', async () => {
    const raw = mail(
      'From: ivan@example.ru\r\nSubject: ',
      cp1251('Привет из Москвы'),
      '\r\nContent-Type: multipart/alternative; boundary="b1"\r\n\r\n--b1\r\n',
      'Content-Type: text/plain; charset="windows-1251"\r\n\r\n',
      cp1251('Привет'),
      '\r\n--b1--\r\n',
    );
    const { data } = await parseEmail(raw, LIMITS);
    assert.equal(data.subject, 'Привет из Москвы');
  });

  test('raw latin-1 Subject with no charset declared anywhere: the detector reads it', async () => {
    const raw = mail(
      'From: rene@example.fr\r\nSubject: ',
      Buffer.from('Réunion à Besançon: très bientôt, déjà prévue', 'latin1'),
      '\r\n\r\nbody\r\n',
    );
    const { data } = await parseEmail(raw, LIMITS);
    assert.equal(data.subject, 'Réunion à Besançon: très bientôt, déjà prévue');
    assert.equal(data.headers.subject, 'Réunion à Besançon: très bientôt, déjà prévue');
  });

  test('raw ISO-2022-JP Subject: the escape sequences are decoded, not kept', async () => {
    const raw = mail(
      'From: taro@example.jp\r\nSubject: ',
      KONNICHIWA_JIS,
      '\r\nContent-Type: text/plain; charset=ISO-2022-JP\r\n\r\nhi\r\n',
    );
    const { data } = await parseEmail(raw, LIMITS);
    assert.equal(data.subject, 'こんにちは');
    assert.equal(data.headers.subject, 'こんにちは');
  });

  test('UTF-8 and encoded-word headers are left as they were', async () => {
    const raw = mail(
      'From: a@example.org\r\nSubject: =?ISO-8859-1?Q?Gr=FC=DFe?=\r\nX-Note: ',
      Buffer.from('Straße', 'utf8'),
      '\r\n\r\nx\r\n',
    );
    const { data } = await parseEmail(raw, LIMITS);
    assert.equal(data.subject, 'Grüße');
    assert.equal(data.headers['x-note'], 'Straße');
  });
});

describe('when MIME parsing gives up, the headers are still read', () => {
  test('1,200 parts: parse_error, with from, subject, message_id and headers kept', async () => {
    const parts = Array.from({ length: 1200 }, (_, i) => `--p\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`);
    const raw = mail(
      'From: Alice <alice@example.org>\r\nTo: bot@roost.test\r\nSubject: many parts\r\n',
      'Message-ID: <many-parts@example.org>\r\nContent-Type: multipart/mixed; boundary="p"\r\n\r\n',
      parts.join(''),
      '--p--\r\n',
    );
    const parsed = await parseEmail(raw, LIMITS);
    assert.match(parsed.data.parse_error!, /the headers were read/);
    assert.deepEqual(parsed.data.from, { address: 'alice@example.org', name: 'Alice' });
    assert.equal(parsed.data.subject, 'many parts');
    assert.equal(parsed.data.message_id, '<many-parts@example.org>');
    assert.equal(parsed.dedupeKey, '<many-parts@example.org>');
    assert.equal(parsed.data.headers['content-type'], 'multipart/mixed; boundary="p"');
    assert.match(parsed.data.text!, /^--p\r?\nContent-Type: text\/plain/);
  });

  test('a 2 MiB header block: parse_error, the first fields kept, truncated', async () => {
    const filler = Array.from({ length: 32_000 }, (_, i) => `X-Filler-${i}: ${'y'.repeat(60)}\r\n`).join('');
    const raw = mail(
      'From: Alice <alice@example.org>\r\nSubject: big header block\r\nMessage-ID: <big-head@example.org>\r\n',
      filler,
      '\r\nthe body\r\n',
    );
    assert.ok(raw.length > 2 * 1024 * 1024);
    const { data } = await parseEmail(raw, LIMITS);
    assert.ok(data.parse_error);
    assert.equal(data.subject, 'big header block');
    assert.equal(data.message_id, '<big-head@example.org>');
    assert.deepEqual(data.from, { address: 'alice@example.org', name: 'Alice' });
    assert.equal(data.headers['x-filler-0'], 'y'.repeat(60));
    assert.equal(data.truncated, true);
    assert.equal(data.text?.trim(), 'the body');
  });
});

describe('malformed structure', () => {
  test('a boundary in single quotes is read without them, with a parse_warning', async () => {
    const raw = mail(
      "From: a@example.org\r\nSubject: quoted\r\nContent-Type: multipart/alternative; boundary='q1'\r\n\r\n",
      '--q1\r\nContent-Type: text/plain\r\n\r\nthe real text\r\n--q1--\r\n',
    );
    const { data } = await parseEmail(raw, LIMITS);
    assert.equal(data.text?.trim(), 'the real text');
    assert.match(data.parse_warning!, /single quotes/);
    assert.equal(data.parse_error, undefined);
  });

  test('a boundary that never occurs: the body as sent, with a parse_warning', async () => {
    const raw = mail(
      'From: a@example.org\r\nSubject: lost\r\nContent-Type: multipart/mixed; boundary="nowhere"\r\n\r\n',
      '--elsewhere\r\nContent-Type: text/plain\r\n\r\nstill readable\r\n',
    );
    const { data } = await parseEmail(raw, LIMITS);
    assert.match(data.parse_warning!, /no part found/);
    assert.match(data.text!, /still readable/);
  });

  test('a well-formed message has no parse_warning', async () => {
    const { data } = await parseEmail(mail('From: a@example.org\r\nSubject: fine\r\n\r\nok\r\n'), LIMITS);
    assert.equal(data.parse_warning, undefined);
  });
});

describe('uuencoded attachments', () => {
  // 544 bytes: every byte value twice, and 32 more.
  const file = Buffer.from(Array.from({ length: 544 }, (_, i) => (i * 37) % 256));
  const uuencode = (bytes: Buffer, name: string) => {
    const char = (v: number) => String.fromCharCode(v === 0 ? 96 : v + 32);
    const lines = [`begin 644 ${name}`];
    for (let at = 0; at < bytes.length; at += 45) {
      const chunk = bytes.subarray(at, at + 45);
      let line = char(chunk.length);
      for (let i = 0; i < chunk.length; i += 3) {
        const [a, b = 0, c = 0] = chunk.subarray(i, i + 3);
        line += char(a >> 2) + char(((a & 3) << 4) | (b >> 4)) + char(((b & 15) << 2) | (c >> 6)) + char(c & 63);
      }
      lines.push(line);
    }
    return [...lines, '`', 'end', ''].join('\r\n');
  };

  test('Content-Transfer-Encoding x-uuencode: the attachment is the decoded file', async () => {
    const raw = mail(
      'From: a@example.org\r\nSubject: the file\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="u"\r\n\r\n',
      '--u\r\nContent-Type: text/plain\r\n\r\nattached\r\n',
      '--u\r\nContent-Type: application/octet-stream; name="table.bin"\r\nContent-Transfer-Encoding: x-uuencode\r\n',
      'Content-Disposition: attachment; filename="table.bin"\r\n\r\n',
      uuencode(file, 'table.bin'),
      '--u--\r\n',
    );
    const parsed = await parseEmail(raw, LIMITS);
    assert.equal(parsed.data.attachments.length, 1);
    assert.equal(parsed.data.attachments[0].size, 544);
    assert.deepEqual(parsed.attachmentBytes[0], file);
  });

  test('uudecode: a file name from the begin line; not uuencoded gives null', () => {
    assert.deepEqual(uudecode(Buffer.from('begin 644 cat.txt\r\n#0V%T\r\n`\r\nend\r\n')), {
      bytes: Buffer.from('Cat'),
      filename: 'cat.txt',
    });
    assert.equal(uudecode(Buffer.from('just text')), null);
  });
});

describe('reply_text', () => {
  const reply = async (text: string) =>
    (await parseEmail(mail(`From: a@example.org\r\nSubject: re\r\n\r\n${text}`), LIMITS)).data.reply_text;
  const htmlReply = async (html: string) =>
    (
      await parseEmail(
        mail(`From: a@example.org\r\nSubject: re\r\nContent-Type: text/html; charset=utf-8\r\n\r\n${html}`),
        LIMITS,
      )
    ).data;

  test('an Outlook HTML reply: no trailing ----- rule above the quoted message', async () => {
    const data = await htmlReply(
      '<div>Thanks, will do.</div><div><br></div><hr style="display:inline-block;width:98%">' +
        '<div id="divRplyFwdMsg"><b>From:</b> Alice &lt;alice@example.org&gt;<br><b>Sent:</b> Monday, November 23, 2026 9:14 AM' +
        '<br><b>To:</b> Bob<br><b>Subject:</b> Re: plan</div><div>the old text</div>',
    );
    assert.equal(data.reply_text, 'Thanks, will do.');
  });

  test('a code after a bare -- is kept: it is the message, not a signature', async () => {
    assert.equal(await reply('Your code is below.\r\n--\r\n482913\r\n'), 'Your code is below.\n--\n482913');
  });

  test('a real signature after "-- " still goes', async () => {
    assert.equal(await reply('See you then.\r\n\r\n-- \r\nBob Example\r\nACME Corp\r\n'), 'See you then.');
  });

  test('a Japanese attribution line above the quote goes with the quote', async () => {
    const text =
      '了解しました。\r\n\r\n2026年11月23日(月) 9:14 山田太郎 <taro@example.jp>:\r\n> 確認お願いします。\r\n> よろしく\r\n';
    const { data } = await parseEmail(
      mail('From: a@example.jp\r\nSubject: re\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n', Buffer.from(text)),
      LIMITS,
    );
    assert.equal(data.reply_text, '了解しました。');
  });

  test('HTML table cells stay apart in the text made from HTML', async () => {
    const data = await htmlReply('<p>Your order:</p><table><tr><td>Cell A</td><td>Cell B</td></tr></table>');
    assert.match(data.text!, /Cell A\s+Cell B/);
    assert.doesNotMatch(data.text!, /Cell ACell B/);
  });
});

describe('codes in non-Latin text', () => {
  test('Japanese and Russian code words', () => {
    assert.deepEqual(extractHints({ subject: null, text: '確認コードは 739201 です。', html: null }).codes, ['739201']);
    assert.deepEqual(extractHints({ subject: null, text: 'Ваш код подтверждения: 550123', html: null }).codes, [
      '550123',
    ]);
    assert.deepEqual(extractHints({ subject: null, text: '認証コード：482913', html: null }).codes, ['482913']);
  });

  test('a number in the same text with no code word is still not a code', () => {
    assert.deepEqual(extractHints({ subject: null, text: 'Заказ на 15000 рублей отправлен.', html: null }).codes, []);
  });
});

describe('domains, shown one way', () => {
  test('spf_domain and from_domain are both Unicode, however the sender wrote them, and they align', async () => {
    const TXT: Record<string, string> = { 'xn--mnchen-3ya.example': 'v=spf1 ip4:127.0.0.1 -all' };
    const resolver = async (name: string, rrtype: string) => {
      const record = rrtype === 'TXT' ? TXT[name.toLowerCase()] : undefined;
      if (!record) throw Object.assign(new Error('none'), { code: 'ENOTFOUND' });
      return [[record]];
    };
    const raw = Buffer.from('From: info@münchen.example\r\nTo: bot@roost.test\r\nSubject: s\r\n\r\nx\r\n');
    const summary = await authenticate(
      {
        raw,
        ip: '127.0.0.1',
        helo: 'mail.xn--mnchen-3ya.example',
        sender: 'bounce@xn--mnchen-3ya.example',
        mta: 'roost.test',
        from: 'info@münchen.example',
        fromMailboxes: 1,
      },
      resolver,
    );
    assert.equal(summary.spf, 'pass');
    assert.equal(summary.spf_domain, 'münchen.example');
    assert.equal(summary.from_domain, 'münchen.example');
    assert.equal(summary.verdict, 'pass', 'the SPF pass aligns with the From domain');
  });
});

describe('end to end through the SMTP port', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', {
      env: { ROOST_MAIL_DOMAIN: 'roost.test' },
      smtp: {
        port: 0,
        dnsResolver: async () => {
          throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
        },
      },
    });
  });
  after(() => server?.close());

  test('a raw windows-1251 Subject arrives readable in subject and headers', async () => {
    const address = await createAddress(server.url);
    const smtp = await SmtpDialogue.open(server.roost.smtpPort!);
    const raw = mail(
      'From: ivan@example.ru\r\nSubject: ',
      cp1251('Ваш код: 550123'),
      '\r\nContent-Type: text/plain; charset=windows-1251\r\n\r\n',
      cp1251('код подтверждения: 550123'),
      '\r\n',
    );
    assert.equal((await smtp.send('ivan@example.ru', [address.email], raw)).at(-1)!.code, 250);
    await smtp.quit();
    const [event] = (await listEvents(server.url, address)).body.events;
    assert.equal(event.data.subject, 'Ваш код: 550123');
    assert.equal(event.data.headers.subject, 'Ваш код: 550123');
    assert.deepEqual(event.data.extracted.codes, ['550123']);
  });
});
