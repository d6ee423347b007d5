// SPF, DKIM and DMARC on inbound email, offline: the DNS answers come from an injected
// resolver, the DKIM key is made here, and the messages are signed by nodemailer.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { authenticate as mailauthAuthenticate } from 'mailauth';
import nodemailer from 'nodemailer';
import { checkedBytes } from '../src/smtp/authenticate.js';
import { createAddress, listEvents, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { SmtpDialogue } from './helpers/smtp.js';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const publicB64 = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

// The DNS of two sender domains: a careful one and one being impersonated.
const TXT: Record<string, string> = {
  'sel1._domainkey.good.example': `v=DKIM1; k=rsa; p=${publicB64}`,
  'good.example': 'v=spf1 ip4:127.0.0.1 -all',
  '_dmarc.good.example': 'v=DMARC1; p=reject',
  'bank.example': 'v=spf1 ip4:192.0.2.10 -all',
  '_dmarc.bank.example': 'v=DMARC1; p=reject',
  // Signs its mail but publishes neither SPF nor DMARC: only DKIM can vouch for it.
  'sel1._domainkey.plain.example': `v=DKIM1; k=rsa; p=${publicB64}`,
  'repeat.example': 'v=spf1 ip4:127.0.0.1 -all',
  '_dmarc.repeat.example': 'v=DMARC1; p=reject',
};

/** Every question the resolver was asked, as "RRTYPE name". */
let asked: string[] = [];

async function resolver(name: string, rrtype: string): Promise<string[][]> {
  asked.push(`${rrtype} ${name.toLowerCase()}`);
  // A domain whose name servers fail: a temporary error, not an answer.
  if (/(^|\.)flaky\.example$/i.test(name))
    throw Object.assign(new Error(`server failure for ${name}`), { code: 'ESERVFAIL' });
  const record = rrtype === 'TXT' ? TXT[name.toLowerCase()] : undefined;
  if (record === undefined) throw Object.assign(new Error(`no ${rrtype} for ${name}`), { code: 'ENOTFOUND' });
  return [[record]];
}

let server: TestServer;

before(async () => {
  server = await startTestServer('sqlite', {
    env: { ROOST_MAIL_DOMAIN: 'roost.test' },
    smtp: { port: 0, dnsResolver: resolver },
  });
});
after(() => server.close());

async function onlyEvent(address: CreatedAddress) {
  const res = await listEvents(server.url, address);
  assert.equal(res.body.events.length, 1);
  return res.body.events[0];
}

/** A message signed by `domain`, as bytes, without sending it. */
async function signedMessage(to: string, domain = 'good.example'): Promise<Buffer> {
  const composer = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    newline: 'windows',
    dkim: { domainName: domain, keySelector: 'sel1', privateKey: privatePem },
  });
  const info = await composer.sendMail({
    from: `alerts@${domain}`,
    to,
    subject: 'Signed',
    text: 'The amount is 10 EUR.\n',
  });
  return info.message as Buffer;
}

/** Sends raw bytes from a host that no SPF record names, so that only DKIM can vouch. */
async function sendRaw(address: CreatedAddress, raw: Buffer) {
  const smtp = await SmtpDialogue.open(server.roost.smtpPort!);
  const replies = await smtp.send('alerts@elsewhere.example', [address.email], raw);
  assert.equal(replies.at(-1)!.code, 250);
  await smtp.quit();
}

describe('email authentication', () => {
  test('a DKIM-signed message from an SPF-authorised host verifies as pass', async () => {
    const address = await createAddress(server.url);
    const mailer = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.roost.smtpPort!,
      secure: false,
      ignoreTLS: true,
      dkim: { domainName: 'good.example', keySelector: 'sel1', privateKey: privatePem },
    });
    await mailer.sendMail({
      from: 'alerts@good.example',
      to: address.email,
      subject: 'Signed',
      text: 'Hello from a real domain.',
    });
    const { authentication } = (await onlyEvent(address)).data;
    assert.deepEqual(authentication.dkim, [
      { domain: 'good.example', selector: 'sel1', result: 'pass', aligned: true, comment: null },
    ]);
    assert.equal(authentication.spf, 'pass');
    assert.equal(authentication.dmarc, 'pass');
    assert.equal(authentication.from_domain, 'good.example');
    assert.equal(authentication.verdict, 'pass');
  });

  test('a tampered body fails DKIM and the verdict is fail', async () => {
    const address = await createAddress(server.url);
    const signed = (await signedMessage(address.email)).toString('latin1');
    const tampered = signed.replace('10 EUR', '10000 EUR');
    assert.notEqual(tampered, signed);
    await sendRaw(address, Buffer.from(tampered, 'latin1'));
    const { authentication, text } = (await onlyEvent(address)).data;
    assert.match(text, /10000 EUR/);
    assert.equal(authentication.dkim.length, 1);
    assert.equal(authentication.dkim[0].domain, 'good.example');
    assert.equal(authentication.dkim[0].result, 'fail');
    assert.equal(authentication.dmarc, 'fail');
    assert.equal(authentication.verdict, 'fail');
  });

  test('without a DMARC policy, an aligned DKIM signature decides: intact pass, tampered fail', async () => {
    const intact = await createAddress(server.url);
    const tampered = await createAddress(server.url);
    await sendRaw(intact, await signedMessage(intact.email, 'plain.example'));
    const signed = (await signedMessage(tampered.email, 'plain.example')).toString('latin1');
    await sendRaw(tampered, Buffer.from(signed.replace('10 EUR', '10000 EUR'), 'latin1'));
    const good = (await onlyEvent(intact)).data.authentication;
    assert.equal(good.dmarc, 'none');
    assert.deepEqual(
      good.dkim.map((d: any) => [d.domain, d.result, d.aligned]),
      [['plain.example', 'pass', true]],
    );
    assert.equal(good.verdict, 'pass');
    const bad = (await onlyEvent(tampered)).data.authentication;
    assert.deepEqual(
      bad.dkim.map((d: any) => [d.domain, d.result, d.comment]),
      [['plain.example', 'fail', 'body hash did not verify']],
    );
    assert.equal(bad.verdict, 'fail');
  });

  test('a forged From of a domain with SPF and DMARC is fail', async () => {
    const address = await createAddress(server.url);
    const smtp = await SmtpDialogue.open(server.roost.smtpPort!);
    const raw = `From: Your Bank <security@bank.example>\r\nTo: ${address.email}\r\nSubject: Urgent\r\n\r\nYour code is 123456.\r\n`;
    assert.equal((await smtp.send('security@bank.example', [address.email], raw)).at(-1)!.code, 250);
    await smtp.quit();
    const { authentication } = (await onlyEvent(address)).data;
    assert.equal(authentication.spf, 'fail');
    assert.equal(authentication.spf_domain, 'bank.example');
    assert.equal(authentication.dmarc, 'fail');
    assert.equal(authentication.verdict, 'fail');
  });
});

describe('DNS answers kept by the worker', () => {
  /** A plain message from `domain`, sent by a host its SPF record names (127.0.0.1). */
  async function sendFrom(domain: string) {
    const address = await createAddress(server.url);
    const smtp = await SmtpDialogue.open(server.roost.smtpPort!);
    const raw = `From: <alerts@${domain}>\r\nTo: ${address.email}\r\nSubject: Build done\r\n\r\nAll green.\r\n`;
    assert.equal((await smtp.send(`alerts@${domain}`, [address.email], raw)).at(-1)!.code, 250);
    await smtp.quit();
    return (await onlyEvent(address)).data.authentication;
  }

  // Messages sent one after another all go to the first worker, so it holds what was asked.
  test('a second message from a domain asks DNS nothing and is judged the same', async () => {
    asked = [];
    const first = await sendFrom('repeat.example');
    assert.ok(asked.includes('TXT repeat.example'), asked.join(', '));
    assert.ok(asked.includes('TXT _dmarc.repeat.example'), asked.join(', '));
    assert.equal(first.spf, 'pass');
    assert.equal(first.dmarc, 'pass');
    assert.equal(first.verdict, 'pass');
    asked = [];
    assert.deepEqual(await sendFrom('repeat.example'), first);
    assert.deepEqual(asked, []);
  });

  test('a failure to get an answer is not kept: the next message asks again', async () => {
    asked = [];
    const first = await sendFrom('flaky.example');
    assert.equal(first.spf, 'temperror');
    assert.ok(asked.includes('TXT flaky.example'), asked.join(', '));
    asked = [];
    const second = await sendFrom('flaky.example');
    assert.equal(second.spf, 'temperror');
    assert.ok(asked.includes('TXT flaky.example'), asked.join(', '));
  });
});

describe('unreachable DNS', () => {
  let silent: TestServer;
  before(async () => {
    // A resolver that never answers: the checks give up after authTimeoutMs.
    const never = () => new Promise<never>(() => {});
    silent = await startTestServer('sqlite', { smtp: { port: 0, dnsResolver: never, authTimeoutMs: 300 } });
  });
  after(() => silent.close());

  test('records temperror and still accepts the message', async () => {
    const address = await createAddress(silent.url);
    const mailer = nodemailer.createTransport({
      host: '127.0.0.1',
      port: silent.roost.smtpPort!,
      secure: false,
      ignoreTLS: true,
    });
    const info = await mailer.sendMail({
      from: 'someone@good.example',
      to: address.email,
      subject: 'no dns',
      text: 'hi',
    });
    assert.ok(info.response.startsWith('250'));
    const res = await listEvents(silent.url, address);
    const { authentication } = res.body.events[0].data;
    assert.equal(authentication.spf, 'temperror');
    assert.equal(authentication.dmarc, 'temperror');
    assert.equal(authentication.verdict, 'none');
  });
});

describe('what mailauth reads of a message', () => {
  const check = async (raw: Buffer) => {
    const result = await mailauthAuthenticate(raw, {
      ip: '192.0.2.7',
      helo: 'mx.good.example',
      sender: 'alerts@good.example',
      mta: 'roost.test',
      resolver,
      disableArc: true,
      disableBimi: true,
    });
    return {
      spf: result.spf && { status: result.spf.status, domain: result.spf.domain },
      headerFrom: result.dkim.headerFrom,
      dkim: result.dkim.results.map((row) => row.status),
      dmarc: result.dmarc && result.dmarc.status,
    };
  };

  test('an unsigned message: its header block alone, judged as the whole message is', async () => {
    const head = 'From: <alerts@good.example>\r\nTo: <a@roost.test>\r\nSubject: Build done\r\n\r\n';
    const raw = Buffer.concat([Buffer.from(head), Buffer.alloc(1 << 20, 'All green. ')]);
    const read = checkedBytes(raw);
    assert.equal(read.toString(), head);
    assert.deepEqual(await check(read), await check(raw));
  });

  test('a signed message, or a header block that names DKIM-Signature anywhere: the whole message', async () => {
    const signed = await signedMessage('a@roost.test');
    assert.equal(checkedBytes(signed), signed);
    // Bare line feeds in the header block, a blank CRLF line only in the body: not cut there.
    const bare = Buffer.from(
      'DKIM-Signature: v=1; d=good.example; s=sel1; bh=x; b=y\nFrom: <alerts@good.example>\n\nline\r\n\r\nmore\r\n',
    );
    assert.equal(checkedBytes(bare), bare);
  });
});
