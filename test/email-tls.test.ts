// STARTTLS with the operator's certificate, negotiated by a real client (Python's smtplib)
// against a self-signed certificate made here by openssl; a renewed certificate is served
// without a restart.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createAddress, listEvents } from './helpers/http.js';
import { selfSignedCertificate } from './helpers/certificate.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const dir = mkdtempSync(join(tmpdir(), 'roost-tls-'));

const makeCertificate = (name: string) =>
  selfSignedCertificate({ cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) });

const fingerprint = (certPath: string) =>
  execFileSync('openssl', ['x509', '-in', certPath, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' })
    .split('=')[1]
    .trim()
    .replace(/:/g, '')
    .toLowerCase();

// Sends one message over STARTTLS, verifying the server against `cafile`; prints the
// SHA-256 of the certificate the server presented.
const CLIENT = `
import hashlib, smtplib, ssl, sys
port, cafile, sender, rcpt = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
context = ssl.create_default_context(cafile=cafile)
with smtplib.SMTP('localhost', port, local_hostname='client.test', timeout=20) as smtp:
    smtp.ehlo()
    assert smtp.has_extn('starttls'), 'STARTTLS not offered'
    smtp.starttls(context=context)
    der = smtp.sock.getpeercert(binary_form=True)
    smtp.ehlo()
    smtp.sendmail(sender, [rcpt], 'From: ' + sender + '\\r\\nTo: ' + rcpt + '\\r\\nSubject: over TLS\\r\\n\\r\\nsecret code 482913\\r\\n')
    print(hashlib.sha256(der).hexdigest())
`;

// Asynchronous: the server under test runs in this process and must go on answering.
async function sendOverTls(port: number, cafile: string, rcpt: string): Promise<string> {
  const { stdout } = await promisify(execFile)('python3', [
    '-c',
    CLIENT,
    String(port),
    cafile,
    'alice@example.org',
    rcpt,
  ]);
  return stdout.trim();
}

describe('STARTTLS', () => {
  let server: TestServer;
  let first: { cert: string; key: string };
  const live = { cert: join(dir, 'live.crt'), key: join(dir, 'live.key') };

  before(async () => {
    first = makeCertificate('first');
    writeFileSync(live.cert, execFileSync('cat', [first.cert]));
    writeFileSync(live.key, execFileSync('cat', [first.key]));
    server = await startTestServer('sqlite', {
      env: { ROOST_MAIL_DOMAIN: 'roost.test', ROOST_SMTP_TLS_CERT: live.cert, ROOST_SMTP_TLS_KEY: live.key },
      smtp: {
        port: 0,
        dnsResolver: async () => {
          throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
        },
        tlsWatchIntervalMs: 100,
      },
    });
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a real client negotiates STARTTLS and the mail is queued', async () => {
    const address = await createAddress(server.url);
    const presented = await sendOverTls(server.roost.smtpPort!, first.cert, address.email);
    assert.equal(presented, fingerprint(first.cert));
    const res = await listEvents(server.url, address);
    assert.equal(res.body.events.length, 1);
    assert.match(res.body.events[0].data.text, /482913/);
    // The Received line says how the message travelled.
    assert.match(
      res.body.events[0].data.headers.received,
      /^from client\.test \(unknown \[127\.0\.0\.1\]\) \(using TLSv1\.3 with cipher TLS_\w+\) by \S+ \(Roost\) with ESMTPS id evt_/,
    );
  });

  test('a renewed certificate is served without a restart', async () => {
    const renewed = makeCertificate('renewed');
    // As renewals do: new files moved into place.
    writeFileSync(`${live.key}.new`, execFileSync('cat', [renewed.key]));
    writeFileSync(`${live.cert}.new`, execFileSync('cat', [renewed.cert]));
    renameSync(`${live.key}.new`, live.key);
    renameSync(`${live.cert}.new`, live.cert);
    const address = await createAddress(server.url);
    let presented = '';
    for (let attempt = 0; attempt < 50 && presented !== fingerprint(renewed.cert); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      try {
        presented = await sendOverTls(server.roost.smtpPort!, renewed.cert, address.email);
      } catch {
        // Still the old certificate: the client does not trust it.
      }
    }
    assert.equal(presented, fingerprint(renewed.cert));
  });
});
