// What a mail operator relies on (RFC 5321, RFC 2034/3463), over a real socket: enhanced
// status codes on every reply, postmaster@ and abuse@ always taken and kept, a Received
// line that names the event, the event ids in the 250 after DATA, every refusal logged
// and counted, and the greeting's host name.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { SmtpDialogue, message, splitReceived } from './helpers/smtp.js';

const DOMAIN = 'mail.roost.test';
const HOSTNAME = 'mx1.roost.test';
const MAX_EMAIL_BYTES = 64 * 1024;
const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};

let server: TestServer;
let port: number;

before(async () => {
  server = await startTestServer('sqlite', {
    env: {
      ROOST_MAIL_DOMAIN: DOMAIN,
      ROOST_SMTP_HOSTNAME: HOSTNAME,
      ROOST_MAX_EMAIL_BYTES: String(MAX_EMAIL_BYTES),
      ROOST_SMTP_MESSAGE_RATE: '1000/min',
    },
    smtp: { port: 0, dnsResolver: offline },
  });
  port = server.roost.smtpPort!;
});
after(() => server?.close());

async function events(address: CreatedAddress) {
  const res = await listEvents(server.url, address, 'limit=100');
  assert.equal(res.status, 200);
  return res.body.events as any[];
}

const postmasterDir = () => join(dirname(server.dbPath!), 'postmaster');
const postmasterFiles = () => {
  try {
    return readdirSync(postmasterDir()).sort();
  } catch {
    return [];
  }
};

describe('replies', () => {
  test('the greeting and EHLO name ROOST_SMTP_HOSTNAME; ENHANCEDSTATUSCODES is advertised and used', async () => {
    const smtp = await SmtpDialogue.open(port);
    assert.match(smtp.greeting.text, new RegExp(`^${HOSTNAME} ESMTP`));
    assert.match(smtp.ehlo.text, new RegExp(`^${HOSTNAME} `));
    assert.match(smtp.ehlo.text, /^ENHANCEDSTATUSCODES$/m);
    const address = await createAddress(server.url);
    const mail = await smtp.command('MAIL FROM:<alice@example.org>');
    assert.match(`${mail.code} ${mail.text}`, /^250 2\.1\.0 /);
    const unknown = await smtp.command(`RCPT TO:<nobody-here@${DOMAIN}>`);
    assert.match(`${unknown.code} ${unknown.text}`, /^550 5\.1\.1 /);
    const relay = await smtp.command('RCPT TO:<someone@example.com>');
    assert.match(`${relay.code} ${relay.text}`, /^550 5\.1\.1 /);
    const rcpt = await smtp.command(`RCPT TO:<${address.email}>`);
    assert.match(`${rcpt.code} ${rcpt.text}`, /^250 2\.1\.5 /);
    const done = await smtp.data(message({ From: 'alice@example.org', Subject: 'traced' }, 'hello'));
    const [event] = await events(address);
    assert.equal(`${done.code} ${done.text}`, `250 2.0.0 OK: queued as ${event.id}`);
    await smtp.quit();
  });

  test('too big: 552 5.3.4 at MAIL (declared SIZE) and at the end of DATA', async () => {
    const address = await createAddress(server.url);
    const smtp = await SmtpDialogue.open(port);
    const declared = await smtp.command(`MAIL FROM:<big@example.org> SIZE=${MAX_EMAIL_BYTES + 1}`);
    assert.match(`${declared.code} ${declared.text}`, /^552 5\.3\.4 /);
    const big = message({ From: 'big@example.org' }, `${'x'.repeat(76)}\r\n`.repeat(MAX_EMAIL_BYTES / 78 + 10));
    const sent = (await smtp.send('big@example.org', [address.email], big)).at(-1)!;
    assert.match(`${sent.code} ${sent.text}`, /^552 5\.3\.4 /);
    await smtp.quit();
  });

  test('a full queue is 452 4.2.2 (mailbox full), with the reason logged and counted', async () => {
    const address = await createAddress(server.url);
    for (let i = 0; i < 1000; i += 125) {
      const batch = await Promise.all(
        Array.from({ length: 125 }, (_, j) => deliver(address.inbox, { data: { n: i + j } })),
      );
      assert.ok(batch.every((r) => r.status === 202));
    }
    const smtp = await SmtpDialogue.open(port, 'full.client.test');
    await smtp.command('MAIL FROM:<late@example.org>');
    const full = await smtp.command(`RCPT TO:<${address.email}>`);
    assert.match(`${full.code} ${full.text}`, /^452 4\.2\.2 /);
    await smtp.quit();
    const line = server
      .logs()
      .split('\n')
      .filter((l) => l.includes('"smtp refusal"') && l.includes(address.email))
      .map((l) => JSON.parse(l))
      .at(-1);
    assert.ok(line, 'the refusal is logged');
    assert.equal(line.code, 452);
    assert.equal(line.enhanced, '4.2.2');
    assert.equal(line.reason, 'mailbox_full');
    assert.equal(line.client_ip, '127.0.0.1');
    assert.equal(line.helo, 'full.client.test');
    assert.equal(line.mail_from, 'late@example.org');
    assert.equal(line.address, address.email);
  });

  test('every refusal is counted in roost_smtp_refusals_total{code,reason}', async () => {
    const smtp = await SmtpDialogue.open(port);
    await smtp.command('MAIL FROM:<x@example.org>');
    for (let i = 0; i < 3; i++) await smtp.command(`RCPT TO:<no-one-${i}@${DOMAIN}>`);
    await smtp.quit();
    const metrics = (await request(server.url, 'GET', '/metrics')).text;
    const count = Number(
      /^roost_smtp_refusals_total\{code="550",reason="unknown_mailbox"\} (\d+)$/m.exec(metrics)?.[1],
    );
    assert.ok(count >= 3, `550 unknown_mailbox counted ${count} times`);
    assert.match(metrics, /^roost_smtp_refusals_total\{code="552",reason="too_big"\} \d+$/m);
    // Logged without the message's content.
    assert.doesNotMatch(server.logs(), /x{76}/);
  });
});

describe('the Received line', () => {
  test('is prepended to the stored message and first in headers.received; it names client, HELO, host, event, date', async () => {
    const address = await createAddress(server.url);
    const smtp = await SmtpDialogue.open(port, 'sender.example.org');
    const raw = message(
      {
        From: 'alice@example.org',
        Received: 'from earlier.example by sender.example.org; Mon, 23 Nov 2026 09:00:00 +0000',
      },
      'hi',
    );
    assert.equal((await smtp.send('alice@example.org', [address.email], raw)).at(-1)!.code, 250);
    await smtp.quit();
    const [event] = await events(address);
    const stored = await fetch(`${server.url}/api/v1/addresses/${address.id}/events/${event.id}/raw`, {
      headers: { authorization: `Bearer ${address.token}` },
    });
    const bytes = Buffer.from(await stored.arrayBuffer());
    const { received, rest } = splitReceived(bytes);
    assert.deepEqual(rest, Buffer.from(`${raw}\r\n`));
    assert.match(
      received,
      new RegExp(
        `^Received: from sender\\.example\\.org \\(unknown \\[127\\.0\\.0\\.1\\]\\) by ${HOSTNAME.replace(/\./g, '\\.')} \\(Roost\\) with ESMTP id ${event.id} for <${address.email}>; \\w{3}, \\d{2} \\w{3} \\d{4} \\d{2}:\\d{2}:\\d{2} \\+0000$`,
      ),
    );
    assert.deepEqual(event.data.headers.received, [
      received.replace(/^Received: /, ''),
      'from earlier.example by sender.example.org; Mon, 23 Nov 2026 09:00:00 +0000',
    ]);
    assert.equal(event.data.raw.size, bytes.length);
  });
});

describe('postmaster and abuse', () => {
  test('without ROOST_POSTMASTER_ADDRESS: accepted and kept as files in the postmaster directory', async () => {
    const before = postmasterFiles();
    const smtp = await SmtpDialogue.open(port);
    await smtp.command('MAIL FROM:<reporter@example.org>');
    for (const rcpt of [`postmaster@${DOMAIN}`, `Abuse@${DOMAIN.toUpperCase()}`, 'postmaster']) {
      const reply = await smtp.command(`RCPT TO:<${rcpt}>`);
      assert.match(`${reply.code} ${reply.text}`, /^250 2\.1\.5 /, rcpt);
    }
    const done = await smtp.data(message({ From: 'reporter@example.org', Subject: 'spam from you' }, 'report'));
    assert.match(`${done.code} ${done.text}`, /^250 2\.0\.0 OK: queued as pm_\w+$/);
    await smtp.quit();
    const added = postmasterFiles().filter((f) => !before.includes(f));
    // One copy for the directory, however many of its names were used.
    assert.equal(added.length, 1);
    assert.equal(`${done.text.split(' ').at(-1)}.eml`, added[0]);
    const kept = readFileSync(join(postmasterDir(), added[0]));
    assert.match(splitReceived(kept).received, /for <postmaster@mail\.roost\.test>/);
    assert.match(splitReceived(kept).rest.toString(), /^From: reporter@example\.org\r\nSubject: spam from you/);
  });

  test('with ROOST_POSTMASTER_ADDRESS: events of that return address; back to the directory when it is gone', async () => {
    const operator = await createAddress(server.url, { name: 'postmaster inbox' });
    server.roost.config.email.postmasterAddress = operator.email;
    try {
      const smtp = await SmtpDialogue.open(port);
      for (const rcpt of [`postmaster@${DOMAIN}`, `abuse@${DOMAIN}`]) {
        const replies = await smtp.send('reporter@example.org', [rcpt], message({ Subject: `to ${rcpt}` }, 'x'));
        assert.equal(replies.at(-1)!.code, 250);
      }
      const queued = await events(operator);
      assert.deepEqual(
        queued.map((e) => [e.data.subject, e.metadata.envelope_to]),
        [
          [`to postmaster@${DOMAIN}`, `postmaster@${DOMAIN}`],
          [`to abuse@${DOMAIN}`, `abuse@${DOMAIN}`],
        ],
      );
      assert.equal(
        (await request(server.url, 'DELETE', `/api/v1/addresses/${operator.id}`, { token: operator.token })).status,
        204,
      );
      const before = postmasterFiles();
      const reply = (
        await smtp.send('reporter@example.org', [`abuse@${DOMAIN}`], message({ Subject: 'after' }, 'x'))
      ).at(-1)!;
      assert.equal(reply.code, 250, 'never refused, even with the named address gone');
      assert.equal(postmasterFiles().length, before.length + 1);
      await smtp.quit();
    } finally {
      server.roost.config.email.postmasterAddress = undefined;
    }
  });

  test('postmaster at another domain is still refused (no relaying)', async () => {
    const smtp = await SmtpDialogue.open(port);
    await smtp.command('MAIL FROM:<x@example.org>');
    assert.equal((await smtp.command('RCPT TO:<postmaster@example.com>')).code, 550);
    await smtp.quit();
  });
});

describe('ROOST_SMTP_HOSTNAME', () => {
  test('defaults to the machine name when it is a full one, else to the host of ROOST_BASE_URL; a bad name stops the start', () => {
    const machine = hostname().toLowerCase();
    const expected = machine.includes('.') ? machine : 'roost.example.com';
    assert.equal(loadConfig({ ROOST_BASE_URL: 'https://roost.example.com' }).email.hostname, expected);
    assert.equal(loadConfig({ ROOST_SMTP_HOSTNAME: 'MX1.Example.com' }).email.hostname, 'mx1.example.com');
    assert.throws(() => loadConfig({ ROOST_SMTP_HOSTNAME: 'bad name\r\n250 OK' }), ConfigError);
    assert.throws(() => loadConfig({ ROOST_POSTMASTER_ADDRESS: 'not an email' }), ConfigError);
  });
});
