// Inbound email end to end (docs/api.md §8): real mail over a real socket — nodemailer for
// ordinary messages, a raw SMTP dialogue for the edge cases — into a real Roost, read back
// through the events URL.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import nodemailer from 'nodemailer';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { ENGINES, engineSkipReason, startTestServer, type TestServer } from './helpers/server.js';
import { SmtpDialogue, message } from './helpers/smtp.js';

const DOMAIN = 'mail.roost.test';
const MAX_EMAIL_BYTES = 64 * 1024;
// Offline: every DNS question is answered "no such name", so authentication says none.
const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};

let server: TestServer;
let port: number;

for (const engine of ENGINES) {
  const skip = await engineSkipReason(engine);
  describe(`inbound email (${engine})`, { skip }, () => {
    before(async () => {
      server = await startTestServer(engine, {
        env: { ROOST_MAIL_DOMAIN: DOMAIN, ROOST_MAX_EMAIL_BYTES: String(MAX_EMAIL_BYTES) },
        smtp: { port: 0, dnsResolver: offline },
      });
      port = server.roost.smtpPort!;
    });
    after(() => server?.close());
    sessionTests();
    messageTests();
    capacityTests();
  });
}

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

function transport() {
  return nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
}

async function events(address: CreatedAddress) {
  const res = await listEvents(server.url, address, 'limit=100');
  assert.equal(res.status, 200);
  return res.body.events as any[];
}

async function dialogue() {
  return SmtpDialogue.open(port);
}

function sessionTests() {
  describe('SMTP session', () => {
    test('advertises SIZE, offers neither AUTH nor STARTTLS', async () => {
      const smtp = await dialogue();
      assert.equal(smtp.ehlo.code, 250);
      assert.match(smtp.ehlo.text, new RegExp(`^SIZE ${MAX_EMAIL_BYTES}$`, 'm'));
      assert.doesNotMatch(smtp.ehlo.text, /AUTH|STARTTLS/);
      assert.notEqual((await smtp.command('AUTH PLAIN AGZvbwBiYXI=')).code, 235);
      await smtp.quit();
    });

    test('refuses unknown, deleted and foreign recipients with 550; accepts any case', async () => {
      const live = await createAddress(server.url, { name: 'Case test' });
      const gone = await createAddress(server.url);
      const [slug] = live.email.split('@');
      const smtp = await dialogue();
      // Accepted while it lives, so its slug has been looked up (and kept) before it goes.
      assert.equal((await smtp.command('MAIL FROM:<sender@example.org>')).code, 250);
      assert.equal((await smtp.command(`RCPT TO:<${gone.email}>`)).code, 250, 'live address');
      assert.equal((await smtp.command('RSET')).code, 250);
      assert.equal(
        (await request(server.url, 'DELETE', `/api/v1/addresses/${gone.id}`, { token: gone.token })).status,
        204,
      );
      assert.equal((await smtp.command('MAIL FROM:<sender@example.org>')).code, 250);
      assert.equal((await smtp.command(`RCPT TO:<nobody-here@${DOMAIN}>`)).code, 550);
      assert.equal((await smtp.command(`RCPT TO:<${gone.email}>`)).code, 550, 'deleted address');
      assert.equal((await smtp.command(`RCPT TO:<${slug}@example.com>`)).code, 550, 'relay to another domain');
      assert.equal((await smtp.command(`RCPT TO:<${slug}@sub.${DOMAIN}>`)).code, 550, 'subdomain is another domain');
      assert.equal((await smtp.command(`RCPT TO:<${slug}-x@${DOMAIN}>`)).code, 550, 'a longer slug');
      assert.equal((await smtp.command(`RCPT TO:<${slug.toUpperCase()}@${DOMAIN.toUpperCase()}>`)).code, 250);
      const done = await smtp.data(message({ From: 'sender@example.org', Subject: 'case' }, 'hi'));
      assert.equal(done.code, 250);
      await smtp.quit();
      const queued = await events(live);
      assert.equal(queued.length, 1);
      assert.equal(queued[0].data.subject, 'case');
      assert.equal(queued[0].metadata.envelope_from, 'sender@example.org');
    });

    test('refuses an oversized message at MAIL (declared SIZE) and at DATA (552), queueing nothing', async () => {
      const address = await createAddress(server.url);
      const smtp = await dialogue();
      assert.equal((await smtp.command(`MAIL FROM:<big@example.org> SIZE=${MAX_EMAIL_BYTES + 1}`)).code, 552);
      const big = message(
        { From: 'big@example.org', Subject: 'big' },
        `${'x'.repeat(76)}\r\n`.repeat(Math.ceil(MAX_EMAIL_BYTES / 78) + 10),
      );
      const replies = await smtp.send('big@example.org', [address.email], big);
      assert.equal(replies.at(-1)!.code, 552);
      // The session survives the refusal.
      assert.equal((await smtp.command('NOOP')).code, 250);
      await smtp.quit();
      assert.equal((await events(address)).length, 0);
    });

    test('limits recipients per message to 50 (452 for the rest)', async () => {
      const addresses = await Promise.all(Array.from({ length: 51 }, () => createAddress(server.url)));
      const smtp = await dialogue();
      await smtp.command('MAIL FROM:<many@example.org>');
      const codes: number[] = [];
      for (const address of addresses) codes.push((await smtp.command(`RCPT TO:<${address.email}>`)).code);
      assert.deepEqual(codes, [...Array(50).fill(250), 452]);
      await smtp.quit();
    });
  });
}

function messageTests() {
  describe('messages become events', () => {
    test('text, HTML and attachments, with sha256 and size', async () => {
      const address = await createAddress(server.url, { name: 'Mail reader' });
      const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0xff, 0x00, 0x10]);
      const csv = 'a,b\n1,2\n';
      const info = await transport().sendMail({
        from: '"Alice Example" <alice@example.org>',
        to: address.email,
        cc: 'Bob <bob@example.org>',
        replyTo: 'replies@example.org',
        subject: 'Your verification code',
        text: 'Your verification code is 482913.\nOr open https://example.org/verify?token=abc&u=1 to confirm.',
        html: '<p>Your verification code is <b>482913</b>. <a href="https://example.org/verify?token=abc&amp;u=1">Confirm</a></p>',
        attachments: [
          { filename: 'pixel.png', content: png, contentType: 'image/png' },
          { filename: 'data.csv', content: csv },
        ],
        headers: { 'X-Agent-Task': 'task-7' },
      });
      assert.ok(info.response.startsWith('250'));
      const [event] = await events(address);
      assert.equal(event.type, 'email.received');
      assert.equal(event.source, 'email');
      assert.equal(event.dedupe_key, info.messageId);
      const data = event.data;
      assert.equal(data.message_id, info.messageId);
      assert.deepEqual(data.from, { address: 'alice@example.org', name: 'Alice Example' });
      assert.deepEqual(data.to, [{ address: address.email, name: '' }]);
      assert.deepEqual(data.cc, [{ address: 'bob@example.org', name: 'Bob' }]);
      assert.deepEqual(data.reply_to, [{ address: 'replies@example.org', name: '' }]);
      assert.equal(data.subject, 'Your verification code');
      assert.match(data.date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.match(data.text, /482913/);
      assert.match(data.html, /<b>482913<\/b>/);
      assert.equal(data.in_reply_to, null);
      assert.deepEqual(data.references, []);
      assert.equal(data.headers['x-agent-task'], 'task-7');
      assert.equal(data.headers.subject, 'Your verification code');
      assert.equal(data.attachments.length, 2);
      const [pixel, table] = data.attachments;
      assert.deepEqual(
        { filename: pixel.filename, content_type: pixel.content_type, size: pixel.size, sha256: pixel.sha256 },
        { filename: 'pixel.png', content_type: 'image/png', size: png.length, sha256: sha256(png) },
      );
      // The bytes are not in the event: they are served, bearer-protected, at the listed URL.
      assert.equal(
        pixel.url,
        `${server.roost.config.baseUrl}/api/v1/addresses/${address.id}/events/${event.id}/attachments/0`,
      );
      const download = await fetch(pixel.url.replace(server.roost.config.baseUrl, server.url), {
        headers: { authorization: `Bearer ${address.token}` },
      });
      assert.equal(download.status, 200);
      assert.equal(download.headers.get('content-type'), 'image/png');
      assert.equal(download.headers.get('content-disposition'), 'attachment; filename=pixel.png');
      assert.equal(download.headers.get('x-content-type-options'), 'nosniff');
      assert.deepEqual(Buffer.from(await download.arrayBuffer()), png);
      assert.equal(table.filename, 'data.csv');
      assert.equal(table.size, Buffer.byteLength(csv));
      assert.equal(table.sha256, sha256(csv));
      assert.equal(data.truncated, false);
      assert.equal(
        data.raw.url,
        `${server.roost.config.baseUrl}/api/v1/addresses/${address.id}/events/${event.id}/raw`,
      );
      // Hints: the code and the link, marked as hints and never visited.
      assert.match(data.extracted.note, /hints/);
      assert.deepEqual(data.extracted.codes, ['482913']);
      assert.deepEqual(data.extracted.links, [
        { url: 'https://example.org/verify?token=abc&u=1', text: 'Confirm', kind: 'action' },
      ]);
      // Unsigned mail from a domain without records cannot be vouched for.
      assert.equal(data.authentication.verdict, 'none');
      assert.deepEqual(data.authentication.dkim, []);
    });

    test('one event for each recipient address; a refused recipient does not stop the others', async () => {
      const one = await createAddress(server.url);
      const two = await createAddress(server.url);
      const smtp = await dialogue();
      const replies = await smtp.send(
        'sender@example.org',
        [one.email, `ghost@${DOMAIN}`, two.email, one.email.toUpperCase()],
        message(
          {
            From: 'sender@example.org',
            To: `${one.email}, ${two.email}`,
            Subject: 'to both',
            'Message-ID': '<both-1@example.org>',
          },
          'hello both',
        ),
      );
      assert.deepEqual(
        replies.map((r) => r.code),
        [250, 250, 550, 250, 250, 250],
      );
      await smtp.quit();
      for (const address of [one, two]) {
        const queued = await events(address);
        assert.equal(queued.length, 1, address.email);
        assert.equal(queued[0].data.subject, 'to both');
        assert.equal(queued[0].metadata.envelope_to.toLowerCase(), address.email);
        assert.equal(queued[0].dedupe_key, '<both-1@example.org>');
      }
    });

    test('a repeated Message-ID queues nothing new; the same message without one is queued each time', async () => {
      const address = await createAddress(server.url);
      const smtp = await dialogue();
      const withId = message({ From: 'a@example.org', Subject: 'first', 'Message-ID': '<same-id@example.org>' }, 'one');
      const sameIdOtherBody = message(
        { From: 'a@example.org', Subject: 'second', 'Message-ID': '<same-id@example.org>' },
        'two',
      );
      // A cron alert sent three times: three messages, however alike (SMTP is at-least-once).
      const withoutId = message({ From: 'cron@example.org', Subject: 'disk 91% full' }, 'disk 91% full on /var');
      const ids: string[] = [];
      for (const raw of [withId, sameIdOtherBody, withoutId, withoutId, withoutId]) {
        const done = (await smtp.send('a@example.org', [address.email], raw)).at(-1)!;
        assert.equal(done.code, 250);
        ids.push(done.text.match(/evt_[0-9A-Za-z_-]+/)![0]);
      }
      await smtp.quit();
      const queued = await events(address);
      assert.deepEqual(
        queued.map((e) => e.data.subject),
        ['first', 'disk 91% full', 'disk 91% full', 'disk 91% full'],
      );
      assert.equal(queued[0].dedupe_key, '<same-id@example.org>');
      assert.deepEqual(
        queued.slice(1).map((e) => e.dedupe_key),
        [undefined, undefined, undefined],
      );
      // Each 250 names the event it queued; the repeat names the one it repeats.
      assert.deepEqual(ids, [queued[0].id, queued[0].id, queued[1].id, queued[2].id, queued[3].id]);
    });

    test('8-bit and RFC 2047 encoded headers are decoded', async () => {
      const address = await createAddress(server.url);
      const subject = `=?UTF-8?B?${Buffer.from('Grüße aus Köln ✓').toString('base64')}?=`;
      const raw = Buffer.concat([
        Buffer.from(
          `From: =?ISO-8859-1?Q?Ren=E9_M=FCller?= <rene@example.org>\r\nTo: ${address.email}\r\nSubject: ${subject}\r\n`,
        ),
        Buffer.from('X-Note: Straße über 8 Bit\r\n', 'utf8'),
        Buffer.from(
          'MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nKäse und Brötchen\r\n',
          'utf8',
        ),
      ]);
      const smtp = await dialogue();
      const replies = await smtp.send('rene@example.org', [address.email], raw);
      assert.equal(replies.at(-1)!.code, 250);
      await smtp.quit();
      const [event] = await events(address);
      assert.equal(event.data.subject, 'Grüße aus Köln ✓');
      assert.equal(event.data.headers.subject, 'Grüße aus Köln ✓');
      assert.deepEqual(event.data.from, { address: 'rene@example.org', name: 'René Müller' });
      assert.equal(event.data.headers['x-note'], 'Straße über 8 Bit');
      assert.equal(event.data.text.trim(), 'Käse und Brötchen');
    });

    test('malformed MIME is still queued, never dropped', async () => {
      const address = await createAddress(server.url);
      const raw = [
        'From: broken@example.org',
        'Subject: broken',
        'this header line has no colon',
        'Date: not a date at all',
        'Content-Type: multipart/mixed; boundary="never-closed"',
        '',
        '--never-closed',
        'Content-Type: text/plain',
        'Content-Transfer-Encoding: base64',
        '',
        '%%% not base64 %%%',
        '--never-closed',
        'Content-Type: application/octet-stream; name="x.bin"',
        'Content-Transfer-Encoding: quoted-printable',
        '',
        'tail without a closing boundary =ZZ',
      ].join('\r\n');
      const smtp = await dialogue();
      assert.equal((await smtp.send('broken@example.org', [address.email], raw)).at(-1)!.code, 250);
      await smtp.quit();
      const [event] = await events(address);
      assert.equal(event.type, 'email.received');
      assert.equal(event.data.subject, 'broken');
      assert.equal(event.data.date, null, 'an unreadable Date header is null, not "now"');
      assert.equal(event.dedupe_key, undefined, 'no Message-ID: never deduplicated');
    });

    test('a reply carries In-Reply-To and References', async () => {
      const address = await createAddress(server.url);
      await transport().sendMail({
        from: 'person@example.org',
        to: address.email,
        subject: 'Re: your question',
        text: 'Yes, go ahead.',
        inReplyTo: '<question-1@roost.test>',
        references: ['<thread-0@roost.test>', '<question-1@roost.test>'],
      });
      const [event] = await events(address);
      assert.equal(event.data.in_reply_to, '<question-1@roost.test>');
      assert.deepEqual(event.data.references, ['<thread-0@roost.test>', '<question-1@roost.test>']);
      assert.deepEqual(event.data.extracted.codes, []);
    });
  });
}

function capacityTests() {
  describe('queue capacity and wake-ups', () => {
    test('a full queue answers 452 at RCPT, and at DATA when it filled in between', async () => {
      const address = await createAddress(server.url);
      // 999 by HTTP, in concurrent batches.
      for (let i = 0; i < 999; i += 111) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(111, 999 - i) }, (_, j) => deliver(address.inbox, { data: { n: i + j } })),
        );
        assert.ok(batch.every((r) => r.status === 202));
      }
      const smtp = await dialogue();
      assert.equal((await smtp.command('MAIL FROM:<late@example.org>')).code, 250);
      assert.equal((await smtp.command(`RCPT TO:<${address.email}>`)).code, 250, 'room for one more');
      // The thousandth arrives by HTTP between RCPT and DATA.
      assert.equal((await deliver(address.inbox, { data: { n: 999 } })).status, 202);
      const atData = await smtp.data(
        message({ From: 'late@example.org', Subject: 'late', 'Message-ID': '<late@example.org>' }, 'x'),
      );
      assert.equal(atData.code, 452);
      // Now RCPT itself says 452.
      assert.equal((await smtp.command('MAIL FROM:<late@example.org>')).code, 250);
      assert.equal((await smtp.command(`RCPT TO:<${address.email}>`)).code, 452);
      await smtp.command('RSET');
      // Acknowledging one makes room (the oldest acknowledged event gives way); the retry lands.
      const first = (await listEvents(server.url, address, 'limit=1')).body.events[0];
      assert.equal(
        (
          await request(server.url, 'POST', `/api/v1/addresses/${address.id}/events/${first.id}/ack`, {
            token: address.token,
          })
        ).status,
        200,
      );
      const retry = await smtp.send(
        'late@example.org',
        [address.email],
        message({ From: 'late@example.org', Subject: 'late', 'Message-ID': '<late@example.org>' }, 'x'),
      );
      assert.equal(retry.at(-1)!.code, 250);
      await smtp.quit();
      const tail = await listEvents(server.url, address, 'after=1000');
      assert.deepEqual(
        tail.body.events.map((e: any) => [e.sequence, e.type]),
        [[1001, 'email.received']],
      );
    });

    test('an email wakes a held long-poll', async () => {
      const address = await createAddress(server.url);
      const poll = listEvents(server.url, address, 'wait=20');
      // Let the poll be held before the mail is sent; the assertion does not depend on it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      await transport().sendMail({ from: 'waker@example.org', to: address.email, subject: 'wake up', text: 'now' });
      const res = await poll;
      assert.equal(res.status, 200);
      assert.equal(res.body.events.length, 1);
      assert.equal(res.body.events[0].data.subject, 'wake up');
    });
  });
}
