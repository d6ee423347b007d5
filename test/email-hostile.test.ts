// Inbound email under attack, over real sockets: a message built to cost CPU and DNS, a
// message that runs past its deadline, forged From headers, a 10 MiB HTML mail, and one
// client IP holding connections. Each case is a finding of a live probe of the SMTP port;
// these tests reproduce it and show what Roost does now.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createAddress, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { ENGINES, engineSkipReason, startTestServer, type TestServer } from './helpers/server.js';
import { SmtpDialogue, message, splitReceived } from './helpers/smtp.js';
import { MAX_DNS_LOOKUPS } from '../src/smtp/processor.js';
import { MAX_DKIM_SIGNATURES } from '../src/smtp/authenticate.js';

const DOMAIN = 'roost.test';
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

// DNS of the test world; every question is counted.
let lookups = 0;
const TXT: Record<string, string> = {
  'evil.duckdns.org': 'v=spf1 ip4:127.0.0.1 -all',
  'mail.good.example': 'v=spf1 ip4:127.0.0.1 -all',
  'attacker.example': 'v=spf1 ip4:127.0.0.1 -all',
};
async function resolver(name: string, rrtype: string): Promise<string[][]> {
  lookups++;
  const record = rrtype === 'TXT' ? TXT[name.toLowerCase()] : undefined;
  if (record === undefined) throw Object.assign(new Error(`no ${rrtype} for ${name}`), { code: 'ENOTFOUND' });
  return [[record]];
}

async function onlyEvent(server: TestServer, address: CreatedAddress) {
  const res = await listEvents(server.url, address);
  assert.equal(res.body.events.length, 1);
  return { event: res.body.events[0], bytes: Buffer.byteLength(res.text) };
}

async function send(port: number, from: string, to: string, raw: string | Buffer, ip?: string) {
  const smtp = await SmtpDialogue.open(port, 'client.test', ip);
  const replies = await smtp.send(from, [to], raw);
  await smtp.quit();
  return replies[replies.length - 1];
}

/**
 * How many GET /healthz answers arrived while a worker was parsing the message, asking one
 * after another until `done` settles: work kept off the event loop lets them through.
 */
async function healthzWhileParsing(server: TestServer, done: Promise<unknown>): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true));
  let answered = 0;
  while (!finished) {
    const res = await fetch(`${server.url}/healthz`);
    await res.arrayBuffer();
    if (res.ok && server.roost.smtp!.parsing > 0) answered++;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return answered;
}

describe('a message built to cost CPU and DNS', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', {
      env: { ROOST_MAIL_DOMAIN: DOMAIN },
      smtp: { port: 0, dnsResolver: resolver },
    });
  });
  after(() => server.close());

  test('1,000 DKIM signatures: at most 5 checked, DNS bounded, /healthz answers meanwhile', async () => {
    const address = await createAddress(server.url);
    const body = `${'x'.repeat(998)}\r\n`.repeat(1024);
    const signatures = Array.from(
      { length: 1000 },
      (_, i) =>
        `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=s${i}.attacker.example; s=k${i}; l=${i + 1}; h=from; bh=${Buffer.alloc(32).toString('base64')}; b=AAAA`,
    ).join('\r\n');
    const raw = `${signatures}\r\nFrom: a@attacker.example\r\nTo: ${address.email}\r\nSubject: heavy\r\nMessage-ID: <heavy@attacker.example>\r\n\r\n${body}`;
    assert.ok(raw.length > 1_100_000);
    lookups = 0;
    const sent = send(server.roost.smtpPort!, 'a@attacker.example', address.email, raw);
    const answered = await healthzWhileParsing(server, sent);
    assert.equal((await sent).code, 250);
    assert.ok(answered >= 2, `/healthz answered ${answered} times while the message was parsed`);
    const { event } = await onlyEvent(server, address);
    assert.ok(event.data.authentication.dkim.length <= MAX_DKIM_SIGNATURES);
    assert.ok(lookups <= MAX_DNS_LOOKUPS, `${lookups} DNS lookups`);
    // The headers the event keeps are bounded too; the raw message has them all.
    assert.equal(event.data.truncated, true);
    const rawCopy = await request(server.url, 'GET', `/api/v1/addresses/${address.id}/events/${event.id}/raw`, {
      token: address.token,
    });
    assert.equal(rawCopy.status, 200);
    assert.equal(rawCopy.headers.get('content-type'), 'message/rfc822');
    assert.equal(sha256(rawCopy.text), event.data.raw.sha256);
  });
});

describe('a message that runs past its deadline', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', {
      env: { ROOST_MAIL_DOMAIN: DOMAIN, ROOST_EMAIL_MAX_HTML_BYTES: '10MiB' },
      smtp: { port: 0, dnsResolver: resolver, authTimeoutMs: 100 },
    });
  });
  after(() => server.close());

  test('the worker is stopped, the message is still queued whole, and the next one is processed', async () => {
    const address = await createAddress(server.url);
    // 1.8 MB of HTML, all of it kept here, to be turned into text: far more than 100 ms of work.
    const html = `<div>${'<p>a<b>x</b></p>\r\n'.repeat(100_000)}</div>`;
    const raw = `From: a@attacker.example\r\nTo: ${address.email}\r\nSubject: slow\r\nMIME-Version: 1.0\r\nContent-Type: text/html\r\n\r\n${html}\r\n`;
    const sent = send(server.roost.smtpPort!, 'a@attacker.example', address.email, raw);
    assert.equal((await sent).code, 250);
    assert.ok(server.roost.smtp!.terminations >= 1, 'the worker was terminated');
    const { event } = await onlyEvent(server, address);
    assert.match(event.data.parse_error, /longer than 100 ms/);
    assert.equal(event.data.authentication.verdict, 'none');
    const rawCopy = await request(server.url, 'GET', `/api/v1/addresses/${address.id}/events/${event.id}/raw`, {
      token: address.token,
    });
    assert.equal(sha256(splitReceived(Buffer.from(rawCopy.text, 'latin1')).rest), sha256(raw));

    const next = await createAddress(server.url);
    const reply = await send(
      server.roost.smtpPort!,
      'b@example.org',
      next.email,
      message({ From: 'b@example.org', To: next.email, Subject: 'small' }, 'fine'),
    );
    assert.equal(reply.code, 250);
    assert.equal((await onlyEvent(server, next)).event.data.text, 'fine\n');
  });
});

describe('a sender whose name servers never answer', () => {
  let server: TestServer;
  let unanswered = 0;
  const asked = new EventEmitter();
  const held: Array<() => void> = [];
  // The test world's DNS, except that nothing under blackhole.example answers until the test
  // says so: the order of what happens is then decided by events, never by a clock.
  const hanging = async (name: string, rrtype: string) => {
    if (!/(^|\.)blackhole\.example$/i.test(name)) return resolver(name, rrtype);
    unanswered++;
    asked.emit('question');
    return new Promise<never>((_, reject) =>
      held.push(() => reject(Object.assign(new Error('DNS timed out'), { code: 'ETIMEOUT' }))),
    );
  };
  before(async () => {
    server = await startTestServer('sqlite', {
      env: { ROOST_MAIL_DOMAIN: DOMAIN },
      // Far beyond the test: the silent name servers are answered by the test itself.
      smtp: { port: 0, dnsResolver: hanging, authTimeoutMs: 120_000 },
    });
  });
  after(() => server.close());

  test('holds no worker while it waits: other mail is answered meanwhile, its own is queued with temperror', async () => {
    const address = await createAddress(server.url);
    let stuckAnswered = 0;
    // Twenty messages from two clients, each at its connection cap: more than the workers
    // would hold if a message waiting on DNS kept its worker.
    const stuck = Array.from({ length: 20 }, (_, i) => {
      const from = `x${i}@blackhole.example`;
      const raw = message(
        { From: from, To: address.email, Subject: `stuck ${i}`, 'Message-ID': `<stuck-${i}@x>` },
        'wait',
      );
      return send(server.roost.smtpPort!, from, address.email, raw, `127.0.0.${2 + (i % 2)}`).then((reply) => {
        stuckAnswered++;
        return reply;
      });
    });
    // Both workers hold one of them at least; the others are with them or waiting their turn.
    while (unanswered < 2) await once(asked, 'question');
    const meanwhile = message({ From: 'billing@good.example', To: address.email, Subject: 'meanwhile' }, 'fine');
    const reply = await send(server.roost.smtpPort!, 'bounce@mail.good.example', address.email, meanwhile);
    assert.equal(reply.code, 250, reply.text);
    assert.equal(stuckAnswered, 0, 'the other mail was answered while every stuck message still waited on DNS');

    // Now the silent name servers time out, for the questions asked and any still to come.
    const release = () => {
      for (const answer of held.splice(0)) answer();
    };
    asked.on('question', () => setImmediate(release));
    release();
    for (const answer of await Promise.all(stuck)) assert.equal(answer.code, 250, answer.text);
    const { events } = (await listEvents(server.url, address, 'limit=50')).body;
    assert.equal(events.length, 21);
    for (const event of events.filter((e: any) => e.data.subject.startsWith('stuck')))
      assert.equal(event.data.authentication.spf, 'temperror');
    assert.equal(events.find((e: any) => e.data.subject === 'meanwhile').data.authentication.verdict, 'pass');
  });
});

describe('honest verdicts', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', {
      env: { ROOST_MAIL_DOMAIN: DOMAIN },
      smtp: { port: 0, dnsResolver: resolver },
    });
  });
  after(() => server.close());

  test('two From headers: verdict fail, and data.from is the address the verdict judged', async () => {
    const address = await createAddress(server.url);
    const raw = `From: a@attacker.example\r\nFrom: ceo@bank.example\r\nTo: ${address.email}\r\nSubject: wire money\r\n\r\nNow.\r\n`;
    assert.equal((await send(server.roost.smtpPort!, 'a@attacker.example', address.email, raw)).code, 250);
    const { event } = await onlyEvent(server, address);
    assert.equal(event.data.authentication.verdict, 'fail');
    assert.equal(event.data.from.address, 'a@attacker.example');
    assert.equal(event.data.authentication.from_domain, 'attacker.example');
  });

  test('two mailboxes in one From: verdict fail', async () => {
    const address = await createAddress(server.url);
    const raw = `From: a@attacker.example, ceo@bank.example\r\nTo: ${address.email}\r\nSubject: s\r\n\r\nx\r\n`;
    assert.equal((await send(server.roost.smtpPort!, 'a@attacker.example', address.email, raw)).code, 250);
    assert.equal((await onlyEvent(server, address)).event.data.authentication.verdict, 'fail');
  });

  test('alignment follows the Public Suffix List: evil.duckdns.org does not vouch for duckdns.org', async () => {
    const address = await createAddress(server.url);
    const raw = `From: support@duckdns.org\r\nTo: ${address.email}\r\nSubject: reset\r\n\r\nx\r\n`;
    assert.equal((await send(server.roost.smtpPort!, 'x@evil.duckdns.org', address.email, raw)).code, 250);
    const auth = (await onlyEvent(server, address)).event.data.authentication;
    assert.equal(auth.spf, 'pass');
    assert.equal(auth.spf_domain, 'evil.duckdns.org');
    assert.notEqual(auth.verdict, 'pass');
  });

  test('…while a subdomain of one organisation aligns with it', async () => {
    const address = await createAddress(server.url);
    const raw = `From: billing@good.example\r\nTo: ${address.email}\r\nSubject: invoice\r\n\r\nx\r\n`;
    assert.equal((await send(server.roost.smtpPort!, 'bounce@mail.good.example', address.email, raw)).code, 250);
    const auth = (await onlyEvent(server, address)).event.data.authentication;
    assert.equal(auth.spf, 'pass');
    assert.equal(auth.verdict, 'pass');
  });
});

for (const engine of ENGINES) {
  const skip = await engineSkipReason(engine);
  describe(`small events, parts stored once (${engine})`, { skip }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(engine, {
        env: { ROOST_MAIL_DOMAIN: DOMAIN, ROOST_MAX_EMAIL_BYTES: '16MiB' },
        smtp: { port: 0, dnsResolver: resolver },
      });
    });
    after(() => server.close());

    async function blobCount(): Promise<number> {
      if (engine === 'sqlite') {
        const { default: Database } = await import('better-sqlite3');
        const db = new Database(server.dbPath, { readonly: true });
        try {
          return (db.prepare('SELECT COUNT(*) AS n FROM email_blobs').get() as { n: number }).n;
        } finally {
          db.close();
        }
      }
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: server.databaseUrl });
      await client.connect();
      try {
        return Number((await client.query('SELECT COUNT(*) AS n FROM email_blobs')).rows[0].n);
      } finally {
        await client.end();
      }
    }

    test('a 10 MiB HTML mail with an attachment, to two recipients: small events, bytes served, removed with the events', async () => {
      const one = await createAddress(server.url);
      const two = await createAddress(server.url);
      // Control characters would be escaped 6× in JSON; the cap counts the JSON encoding.
      const html = `<p>${'\u0001<b>x</b>'.repeat(1_400_000)}</p>`;
      const attachment = Buffer.alloc(512 * 1024, 7);
      const boundary = 'b0undary';
      const raw = [
        `From: big@example.org`,
        `To: ${one.email}, ${two.email}`,
        `Subject: big`,
        `Message-ID: <big@example.org>`,
        `MIME-Version: 1.0`,
        `Content-Type: multipart/mixed; boundary=${boundary}`,
        ``,
        `--${boundary}`,
        `Content-Type: text/html; charset=utf-8`,
        `Content-Transfer-Encoding: 8bit`,
        ``,
        html,
        `--${boundary}`,
        `Content-Type: application/octet-stream; name="blob.bin"`,
        `Content-Disposition: attachment; filename="../../etc/\\"passwd\\".bin"`,
        `Content-Transfer-Encoding: base64`,
        ``,
        attachment.toString('base64').replace(/.{76}/g, '$&\r\n'),
        `--${boundary}--`,
        ``,
      ].join('\r\n');
      assert.ok(raw.length > 10_000_000);
      const smtp = await SmtpDialogue.open(server.roost.smtpPort!);
      const replies = await smtp.send('big@example.org', [one.email, two.email], raw);
      await smtp.quit();
      assert.equal(replies[replies.length - 1].code, 250);

      for (const address of [one, two]) {
        const { event, bytes } = await onlyEvent(server, address);
        // The event holds at most 256 KiB of HTML (its JSON), and no attachment bytes.
        assert.ok(bytes < 1024 * 1024, `the page with the event is ${bytes} bytes`);
        assert.equal(event.data.truncated, true);
        assert.ok(Buffer.byteLength(JSON.stringify(event.data.html)) <= 256 * 1024);
        const [listed] = event.data.attachments;
        assert.deepEqual(
          { size: listed.size, sha256: listed.sha256, content_type: listed.content_type },
          { size: attachment.length, sha256: sha256(attachment), content_type: 'application/octet-stream' },
        );
        const download = await fetch(`${server.url}/api/v1/addresses/${address.id}/events/${event.id}/attachments/0`, {
          headers: { authorization: `Bearer ${address.token}` },
        });
        assert.equal(download.status, 200);
        assert.deepEqual(Buffer.from(await download.arrayBuffer()), attachment);
        // A hostile filename stays a quoted parameter of an attachment download.
        assert.match(download.headers.get('content-disposition')!, /^attachment; filename="/);
        assert.equal(download.headers.get('content-security-policy'), "default-src 'none'; sandbox");
        const rawCopy = await fetch(`${server.url}/api/v1/addresses/${address.id}/events/${event.id}/raw`, {
          headers: { authorization: `Bearer ${address.token}` },
        });
        assert.equal(sha256(splitReceived(Buffer.from(await rawCopy.arrayBuffer())).rest), sha256(raw));
        // Another address's token, a missing token, an index past the list.
        assert.equal(
          (
            await request(server.url, 'GET', `/api/v1/addresses/${address.id}/events/${event.id}/raw`, {
              token: (address === one ? two : one).token,
            })
          ).status,
          401,
        );
        assert.equal(
          (await request(server.url, 'GET', `/api/v1/addresses/${address.id}/events/${event.id}/raw`)).status,
          401,
        );
        const missing = await request(
          server.url,
          'GET',
          `/api/v1/addresses/${address.id}/events/${event.id}/attachments/1`,
          {
            token: address.token,
          },
        );
        assert.equal(missing.status, 404);
        assert.equal(missing.body.error.code, 'event_not_found');
      }
      // The attachment is stored once, whatever the number of recipients; each recipient's
      // raw message is its own, as its Received line names its event.
      assert.equal(await blobCount(), 3);
      // Deleting one address keeps what the other still names; deleting both removes all.
      assert.equal(
        (await request(server.url, 'DELETE', `/api/v1/addresses/${one.id}`, { token: one.token })).status,
        204,
      );
      assert.equal(await blobCount(), 2);
      assert.equal(
        (await request(server.url, 'DELETE', `/api/v1/addresses/${two.id}`, { token: two.token })).status,
        204,
      );
      assert.equal(await blobCount(), 0);
    });

    test('retention purge removes the stored parts with the events', async () => {
      const address = await createAddress(server.url);
      const raw = message({ From: 'old@example.org', To: address.email, Subject: 'old' }, 'old');
      assert.equal((await send(server.roost.smtpPort!, 'old@example.org', address.email, raw)).code, 250);
      assert.equal(await blobCount(), 1);
      await server.roost.storage.purge(Date.now(), Date.now() + 1000);
      assert.equal(await blobCount(), 0);
    });
  });
}

describe('per-IP limits', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', {
      env: {
        ROOST_MAIL_DOMAIN: DOMAIN,
        ROOST_SMTP_MAX_CONNECTIONS_PER_IP: '3',
        ROOST_SMTP_MESSAGE_RATE: '2/min',
        ROOST_SMTP_IDLE_TIMEOUT_SECONDS: '1',
      },
      smtp: { port: 0, dnsResolver: resolver },
    });
  });
  after(() => server.close());

  /** The first line the server says on a new connection from `ip`. */
  function greeting(ip: string) {
    return new Promise<{ line: string; socket: ReturnType<typeof connect> }>((resolve, reject) => {
      const socket = connect({ port: server.roost.smtpPort!, host: '127.0.0.1', localAddress: ip });
      socket.setEncoding('latin1');
      socket.once('data', (line: string) => resolve({ line, socket }));
      socket.once('error', reject);
    });
  }

  test('one address holding its connections does not lock out another; idle ones are closed', async () => {
    const held = await Promise.all([1, 2, 3].map(() => greeting('127.0.0.1')));
    for (const { line } of held) assert.match(line, /^220 /);
    const refused = await greeting('127.0.0.1');
    assert.match(refused.line, /^421 4\.7\.0 /);
    refused.socket.destroy();
    const other = await greeting('127.0.0.2');
    assert.match(other.line, /^220 /);
    other.socket.destroy();
    // Idle for over a second: closed by the server.
    await Promise.all(held.map(({ socket }) => new Promise((resolve) => socket.once('close', resolve))));
  });

  test('messages per minute per address: past the rate, 451 at MAIL', async () => {
    const address = await createAddress(server.url);
    const smtp = await SmtpDialogue.open(server.roost.smtpPort!, 'client.test', '127.0.0.3');
    const codes = [];
    for (let i = 0; i < 3; i++) {
      const reply = await smtp.command('MAIL FROM:<a@example.org>');
      codes.push(`${reply.code} ${reply.text.split(' ')[0]}`);
      await smtp.command('RSET');
    }
    await smtp.quit();
    assert.deepEqual(codes, ['250 2.1.0', '250 2.1.0', '451 4.7.0']);
    // Another address is not affected.
    const reply = await send(
      server.roost.smtpPort!,
      'a@example.org',
      address.email,
      message({ From: 'a@example.org', To: address.email, Subject: 's' }, 'x'),
      '127.0.0.4',
    );
    assert.equal(reply.code, 250);
  });
});
