// A real MTA in front of Roost: Debian's Postfix, as a private instance of its own (its own
// configuration directory, queue, port and log, so that it never meets a system Postfix),
// relaying the test domain to Roost's SMTP port over STARTTLS. What is asserted is what a
// mail operator reads: Postfix's own log (status=sent with the event id, dsn=5.1.1
// bounces, dsn=4.2.2 deferrals) and the events. It needs Postfix and root (the master
// process starts as root); outside CI without them it is skipped, saying so; under CI=true
// it never is.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAddress, deliver, listEvents, request } from './helpers/http.js';
import { selfSignedCertificate } from './helpers/certificate.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { SmtpDialogue, message, splitReceived } from './helpers/smtp.js';

const POSTFIX = '/usr/sbin/postfix';
const DOMAIN = 'roost.test';
const ROOST_HOST = 'roost-mx.test';
const POSTFIX_HOST = 'postfix.test';

const missing = !existsSync(POSTFIX)
  ? `${POSTFIX} is not installed (Debian package postfix)`
  : process.getuid?.() !== 0
    ? 'Postfix must be started as root'
    : undefined;
const skip = process.env.CI === 'true' ? false : (missing ?? false);
const title = `Postfix relays to Roost over TLS${skip ? ` — skipped: ${missing}; CI=true never skips` : ''}`;

const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Resolves once `condition` holds, checking again every 50 ms (the suite's timeout bounds the wait). */
async function until<T>(condition: () => T | undefined | false): Promise<T> {
  for (;;) {
    const value = condition();
    if (value) return value;
    await sleep(50);
  }
}

describe(title, { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'roost-postfix-'));
  const log = join(dir, 'postfix.log');
  const postmasterDir = join(dir, 'roost', 'postmaster');
  let server: TestServer;
  let postfixPort: number;
  let started = false;

  const postfix = (...args: string[]) =>
    execFileSync(POSTFIX, ['-c', join(dir, 'etc'), ...args], { stdio: 'pipe', encoding: 'utf8' });
  const logText = () => (existsSync(log) ? readFileSync(log, 'utf8') : '');
  /** The first line of Postfix's log about delivering to `rcpt` with this status. */
  const logLine = (rcpt: string, status: string) =>
    until(() =>
      logText()
        .split('\n')
        .find((line) => line.includes(`to=<${rcpt}>`) && line.includes(`status=${status}`)),
    );

  before(async () => {
    // The Postfix daemons run as the postfix user: they must reach their directories.
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, 'etc'));
    mkdirSync(join(dir, 'roost'));
    selfSignedCertificate({ cert: join(dir, 'roost.crt'), key: join(dir, 'roost.key') }, ROOST_HOST);
    server = await startTestServer('sqlite', {
      env: {
        ROOST_DB: join(dir, 'roost', 'roost.db'),
        ROOST_MAIL_DOMAIN: DOMAIN,
        ROOST_SMTP_HOSTNAME: ROOST_HOST,
        ROOST_SMTP_TLS_CERT: join(dir, 'roost.crt'),
        ROOST_SMTP_TLS_KEY: join(dir, 'roost.key'),
      },
      smtp: { port: 0, dnsResolver: offline },
    });
    postfixPort = await freePort();
    const etc = join(dir, 'etc');
    // A relay for roost.test only, to Roost's port, with TLS required; retries come fast.
    writeFileSync(
      join(etc, 'main.cf'),
      [
        'compatibility_level = 3.6',
        `queue_directory = ${join(dir, 'queue')}`,
        `data_directory = ${join(dir, 'data')}`,
        'mail_owner = postfix',
        'setgid_group = postdrop',
        `myhostname = ${POSTFIX_HOST}`,
        `mydomain = ${POSTFIX_HOST}`,
        `myorigin = ${POSTFIX_HOST}`,
        'mydestination =',
        'inet_interfaces = 127.0.0.1',
        'inet_protocols = ipv4',
        'mynetworks = 127.0.0.0/8',
        `relay_domains = ${DOMAIN}`,
        `transport_maps = inline:{ ${DOMAIN}=smtp:[127.0.0.1]:${server.roost.smtpPort} }`,
        'smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination',
        'smtp_dns_support_level = disabled',
        'smtp_tls_security_level = encrypt',
        'smtp_tls_loglevel = 1',
        'alias_maps =',
        'alias_database =',
        'local_recipient_maps =',
        'biff = no',
        `maillog_file = ${log}`,
        `maillog_file_prefixes = ${dir}`,
        'queue_run_delay = 1s',
        'minimal_backoff_time = 1s',
        'maximal_backoff_time = 2s',
        '',
      ].join('\n'),
    );
    // Every service outside a chroot: the instance's queue is all it has.
    writeFileSync(
      join(etc, 'master.cf'),
      [
        `127.0.0.1:${postfixPort} inet n - n - - smtpd`,
        'pickup unix n - n 60 1 pickup',
        'cleanup unix n - n - 0 cleanup',
        'qmgr unix n - n 300 1 qmgr',
        'tlsmgr unix - - n 1000? 1 tlsmgr',
        'rewrite unix - - n - - trivial-rewrite',
        'bounce unix - - n - 0 bounce',
        'defer unix - - n - 0 bounce',
        'trace unix - - n - 0 bounce',
        'verify unix - - n - 1 verify',
        'flush unix n - n 1000? 0 flush',
        'proxymap unix - - n - - proxymap',
        'smtp unix - - n - - smtp',
        'relay unix - - n - - smtp',
        'showq unix n - n - - showq',
        'error unix - - n - - error',
        'retry unix - - n - - error',
        'discard unix - - n - - discard',
        'local unix - n n - - local',
        'anvil unix - - n - 1 anvil',
        'scache unix - - n - 1 scache',
        'postlog unix-dgram n - n - 1 postlogd',
        '',
      ].join('\n'),
    );
    // The queue and data directories, owned as Postfix wants them (`check` makes the rest).
    mkdirSync(join(dir, 'queue'));
    mkdirSync(join(dir, 'data'));
    const uid = Number(execFileSync('id', ['-u', 'postfix'], { encoding: 'utf8' }));
    chownSync(join(dir, 'data'), uid, 0);
    postfix('check');
    try {
      postfix('start');
    } catch (err) {
      throw new Error(`postfix start failed:\n${logText()}`, { cause: err });
    }
    started = true;
    // Up once its SMTP port answers.
    await until(() => {
      try {
        execFileSync(
          'python3',
          ['-c', `import socket; socket.create_connection(('127.0.0.1', ${postfixPort}), 1).close()`],
          {
            stdio: 'ignore',
          },
        );
        return true;
      } catch {
        return false;
      }
    });
  });

  after(async () => {
    if (started) {
      const pid = Number(readFileSync(join(dir, 'queue', 'pid', 'master.pid'), 'utf8'));
      postfix('stop');
      // Gone before its directories are removed.
      await until(() => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      });
    }
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function relay(to: string, raw: string, from = `postmaster@${DOMAIN}`) {
    const smtp = await SmtpDialogue.open(postfixPort, 'agent.test');
    const replies = await smtp.send(from, [to], raw);
    await smtp.quit();
    assert.equal(replies.at(-1)!.code, 250, `Postfix took the message: ${replies.at(-1)!.text}`);
  }

  test('delivered over TLS: Postfix logs status=sent (250 2.0.0 … evt_…), naming the event it became', async () => {
    const address = await createAddress(server.url);
    await relay(
      address.email,
      message({ From: `alerts@${POSTFIX_HOST}`, To: address.email, Subject: 'disk 91% full' }, 'on /var'),
    );
    const line = await logLine(address.email, 'sent');
    const eventId = /status=sent \(250 2\.0\.0 OK: queued as (evt_[\w-]+)\)/.exec(line)?.[1];
    assert.ok(eventId, line);
    assert.match(line, /dsn=2\.0\.0/);
    assert.match(
      logText(),
      new RegExp(
        `TLS connection established to 127\\.0\\.0\\.1\\[127\\.0\\.0\\.1\\]:${server.roost.smtpPort}: TLSv1\\.3`,
      ),
    );
    const { events } = (await listEvents(server.url, address)).body;
    assert.deepEqual(
      events.map((e: any) => [e.id, e.data.subject]),
      [[eventId, 'disk 91% full']],
    );
    const raw = await fetch(`${server.url}/api/v1/addresses/${address.id}/events/${eventId}/raw`, {
      headers: { authorization: `Bearer ${address.token}` },
    });
    const { received } = splitReceived(Buffer.from(await raw.arrayBuffer()));
    assert.match(
      received,
      new RegExp(
        `^Received: from ${POSTFIX_HOST.replace('.', '\\.')} \\(unknown \\[127\\.0\\.0\\.1\\]\\) \\(using TLSv1\\.3 with cipher \\w+\\) by ${ROOST_HOST.replace('.', '\\.')} \\(Roost\\) with ESMTPS id ${eventId} `,
      ),
    );
  });

  test('an unknown mailbox bounces with dsn=5.1.1; the bounce reaches postmaster@, kept for the operator', async () => {
    const rcpt = `nobody-here@${DOMAIN}`;
    await relay(rcpt, message({ From: `postmaster@${DOMAIN}`, To: rcpt, Subject: 'to no one' }, 'x'));
    const line = await logLine(rcpt, 'bounced');
    assert.match(line, /dsn=5\.1\.1/);
    assert.match(line, /said: 550 5\.1\.1 No such mailbox here/);
    // Postfix's bounce goes to the sender, postmaster@roost.test: Roost keeps it as a file.
    const bounce = await until(() =>
      existsSync(postmasterDir)
        ? readdirSync(postmasterDir)
            .map((name) => readFileSync(join(postmasterDir, name), 'utf8'))
            .find((text) => text.includes(`Final-Recipient: rfc822; ${rcpt}`))
        : undefined,
    );
    assert.match(bounce, /^Status: 5\.1\.1$/m);
    assert.match(bounce, /^Received: from postfix\.test /);
  });

  test('a full queue defers with dsn=4.2.2, and the retry is delivered once there is room', async () => {
    const address = await createAddress(server.url);
    for (let i = 0; i < 1000; i += 125) {
      const batch = await Promise.all(
        Array.from({ length: 125 }, (_, j) => deliver(address.inbox, { data: { n: i + j } })),
      );
      assert.ok(batch.every((r) => r.status === 202));
    }
    await relay(address.email, message({ From: `alerts@${POSTFIX_HOST}`, To: address.email, Subject: 'later' }, 'x'));
    const deferred = await logLine(address.email, 'deferred');
    assert.match(deferred, /dsn=4\.2\.2/);
    assert.match(deferred, /said: 452 4\.2\.2 Mailbox full/);
    // Room for one: acknowledge the oldest event; Postfix's next try (backoff of 1 to 2 s) gets in.
    const [oldest] = (await listEvents(server.url, address, 'limit=1')).body.events;
    const ack = await request(server.url, 'POST', `/api/v1/addresses/${address.id}/events/${oldest.id}/ack`, {
      token: address.token,
    });
    assert.equal(ack.status, 200, ack.text);
    const sent = await logLine(address.email, 'sent');
    const eventId = /queued as (evt_[\w-]+)/.exec(sent)![1];
    const after = (await listEvents(server.url, address, 'after=1000')).body.events;
    assert.deepEqual(
      after.map((e: any) => [e.id, e.data.subject]),
      [[eventId, 'later']],
    );
  });
});
