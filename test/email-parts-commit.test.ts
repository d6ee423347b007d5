// An email's event and its stored parts (the raw message, the attachments) are one commit,
// on both engines: a failed parts write stores no event, a reader that sees the event can
// fetch its parts at once, a refused email stores no parts, and a repeat still stores the
// parts of an event held without them. Real mail over a real socket into a real Roost; the
// faults are made inside the database itself (triggers on email_parts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { withClient } from './helpers/postgres.js';
import { ENGINES, engineSkipReason, startTestServer, type Engine, type TestServer } from './helpers/server.js';
import { SmtpDialogue, splitReceived } from './helpers/smtp.js';

const DOMAIN = 'mail.roost.test';
const MAX_BYTES_PER_ADDRESS = 64 * 1024;
const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** The SQL of each fault, per engine: a trigger that refuses every part, one that makes parts slow. */
const FAULTS: Record<Engine, Record<'refuse' | 'unrefuse' | 'slow' | 'unslow', string>> = {
  sqlite: {
    refuse: `CREATE TRIGGER refuse_parts BEFORE INSERT ON email_parts BEGIN SELECT RAISE(ABORT, 'parts refused'); END`,
    unrefuse: 'DROP TRIGGER refuse_parts',
    // SQLite has no sleep in SQL: a cross join of a few thousand rows keeps the writer busy instead.
    slow: `CREATE TABLE ballast (x INTEGER);
           INSERT INTO ballast WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3000) SELECT x FROM n;
           CREATE TRIGGER slow_parts BEFORE INSERT ON email_parts BEGIN SELECT sum(a.x * b.x) FROM ballast a, ballast b; END`,
    unslow: 'DROP TRIGGER slow_parts; DROP TABLE ballast',
  },
  postgres: {
    refuse: `CREATE FUNCTION refuse_parts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'parts refused'; END $$;
             CREATE TRIGGER refuse_parts BEFORE INSERT ON email_parts FOR EACH ROW EXECUTE FUNCTION refuse_parts()`,
    unrefuse: 'DROP TRIGGER refuse_parts ON email_parts; DROP FUNCTION refuse_parts()',
    slow: `CREATE FUNCTION slow_parts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.6); RETURN NULL; END $$;
           CREATE TRIGGER slow_parts BEFORE INSERT ON email_parts FOR EACH STATEMENT EXECUTE FUNCTION slow_parts()`,
    unslow: 'DROP TRIGGER slow_parts ON email_parts; DROP FUNCTION slow_parts()',
  },
};

for (const engine of ENGINES) {
  const skip = await engineSkipReason(engine);
  describe(`an email's event and its parts commit together (${engine})`, { skip }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(engine, {
        env: { ROOST_MAIL_DOMAIN: DOMAIN, ROOST_MAX_BYTES_PER_ADDRESS: String(MAX_BYTES_PER_ADDRESS) },
        smtp: { port: 0, dnsResolver: offline },
      });
    });
    after(() => server?.close());

    /**
     * Runs SQL on the server's database through a connection of the test's own: a script
     * without values, else one statement whose parameters are written `?`.
     */
    async function sql(text: string, values?: unknown[]): Promise<unknown[]> {
      if (engine === 'postgres') {
        let n = 0;
        const numbered = values ? text.replace(/\?/g, () => `$${++n}`) : text;
        return withClient(server.databaseUrl!, async (client) => (await client.query(numbered, values)).rows);
      }
      assert.ok(server.dbPath, 'a SQLite server has a file');
      const db = new Database(server.dbPath);
      try {
        db.pragma('busy_timeout = 5000');
        if (!values) {
          db.exec(text);
          return [];
        }
        const statement = db.prepare(text);
        if (statement.reader) return statement.all(...values);
        statement.run(...values);
        return [];
      } finally {
        db.close();
      }
    }

    /** Sends `raw` to one address over SMTP; the final reply. */
    async function send(to: string, raw: string) {
      const smtp = await SmtpDialogue.open(server.roost.smtpPort!);
      try {
        return (await smtp.send('sender@example.org', [to], raw)).at(-1)!;
      } finally {
        await smtp.quit();
      }
    }

    async function events(address: CreatedAddress): Promise<any[]> {
      const res = await listEvents(server.url, address, 'limit=100');
      assert.equal(res.status, 200);
      return res.body.events;
    }

    function part(address: CreatedAddress, eventId: string, which: string) {
      return fetch(`${server.url}/api/v1/addresses/${address.id}/events/${eventId}/${which}`, {
        headers: { authorization: `Bearer ${address.token}` },
      });
    }

    test('a parts write that fails stores no event (451); the resend stores one event with all its parts', async () => {
      const address = await createAddress(server.url);
      const attachment = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7) % 256));
      const raw = multipart(address.email, '<refused-parts@example.org>', attachment);
      await sql(FAULTS[engine].refuse);
      let refused;
      try {
        refused = await send(address.email, raw);
      } finally {
        await sql(FAULTS[engine].unrefuse);
      }
      assert.equal(refused.code, 451, refused.text);
      assert.deepEqual(await events(address), [], 'no event without its parts');

      const accepted = await send(address.email, raw);
      assert.equal(accepted.code, 250, accepted.text);
      const held = await events(address);
      assert.equal(held.length, 1, 'exactly one event');
      assert.equal(held[0].sequence, 1, 'the refused try used up no sequence');
      const rawCopy = await part(address, held[0].id, 'raw');
      assert.equal(rawCopy.status, 200);
      const stored = Buffer.from(await rawCopy.arrayBuffer());
      assert.deepEqual(splitReceived(stored).rest, Buffer.from(raw));
      assert.match(splitReceived(stored).received, new RegExp(` id ${held[0].id} `));
      assert.equal(held[0].data.raw.sha256, sha256(stored));
      const attached = await part(address, held[0].id, 'attachments/0');
      assert.equal(attached.status, 200);
      assert.deepEqual(Buffer.from(await attached.arrayBuffer()), attachment);
    });

    test('a reader that sees the email, held poll or plain read, fetches its raw message at once', async () => {
      const address = await createAddress(server.url);
      const raw = multipart(address.email, '<seen-with-parts@example.org>', Buffer.from('attached'));
      /** Once `page` lists the email: its raw message, fetched right away. */
      const rawOnceSeen = async (page: () => Promise<any[]>): Promise<{ status: number; bytes: Buffer }> => {
        const deadline = Date.now() + 15_000;
        for (;;) {
          const [event] = await page();
          if (event) {
            const response = await part(address, event.id, 'raw');
            return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
          }
          assert.ok(Date.now() < deadline, 'the email was never seen');
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      };
      // A held poll, woken by the email's commit, and a reader that keeps asking meanwhile;
      // the parts take a while to write, so that any gap between event and parts is seen.
      const held = rawOnceSeen(async () => (await listEvents(server.url, address, 'wait=20')).body.events);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sql(FAULTS[engine].slow);
      try {
        const polling = rawOnceSeen(() => events(address));
        const reply = await send(address.email, raw);
        assert.equal(reply.code, 250, reply.text);
        for (const [reader, seen] of [
          ['held poll', await held],
          ['polling reader', await polling],
        ] as const) {
          assert.equal(seen.status, 200, `the ${reader} saw the event before its raw message`);
          assert.deepEqual(splitReceived(seen.bytes).rest, Buffer.from(raw));
        }
      } finally {
        await sql(FAULTS[engine].unslow);
      }
    });

    /** Resolves once an email's parts write is held up by the `slow` fault. */
    async function partsWriteUnderWay(): Promise<void> {
      if (engine === 'sqlite') return new Promise((resolve) => setTimeout(resolve, 100));
      const deadline = Date.now() + 10_000;
      const sleeping =
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'";
      while (((await sql(sleeping)) as Array<{ n: number }>)[0].n === 0) {
        assert.ok(Date.now() < deadline, 'the parts write never started');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }

    test('an attachment stays while an email links to it, though its only other event goes meanwhile', async () => {
      const attachment = Buffer.from(`shared by two emails, ${engine}`);
      const first = await createAddress(server.url);
      const second = await createAddress(server.url);
      assert.equal((await send(first.email, multipart(first.email, '<shared-1@example.org>', attachment))).code, 250);
      // The second email finds the attachment's blob held and links a part to it, slowly;
      // meanwhile the first address goes, and with it the blob's only other link.
      await sql(FAULTS[engine].slow);
      try {
        const reply = send(second.email, multipart(second.email, '<shared-2@example.org>', attachment));
        await partsWriteUnderWay();
        const deleted = await request(server.url, 'DELETE', `/api/v1/addresses/${first.id}`, { token: first.token });
        assert.equal(deleted.status, 204, deleted.text);
        const accepted = await reply;
        assert.equal(accepted.code, 250, accepted.text);
      } finally {
        await sql(FAULTS[engine].unslow);
      }
      const [event] = await events(second);
      const attached = await part(second, event.id, 'attachments/0');
      assert.equal(attached.status, 200, 'the blob went from under the part that links it');
      assert.deepEqual(Buffer.from(await attached.arrayBuffer()), attachment);
    });

    test('an email refused at the byte cap (452) stores no parts either', async () => {
      const address = await createAddress(server.url);
      // Room left for a few hundred bytes: less than any email event takes.
      const filler = await deliver(address.inbox, { data: 'x'.repeat(MAX_BYTES_PER_ADDRESS - 400) });
      assert.equal(filler.status, 202);
      const attachment = Buffer.from('never stored: the byte cap refused its email');
      const raw = multipart(address.email, '<over-the-cap@example.org>', attachment);
      const reply = await send(address.email, raw);
      assert.equal(reply.code, 452, reply.text);
      assert.equal((await events(address)).length, 1, 'only the filler');
      const blobs = await sql('SELECT sha256 FROM email_blobs WHERE sha256 IN (?, ?)', [
        sha256(raw),
        sha256(attachment),
      ]);
      assert.deepEqual(blobs, [], 'neither the raw message nor the attachment was stored');
    });

    test('a repeat stores the parts of an event held without them (as an older version could leave it)', async () => {
      const address = await createAddress(server.url);
      const raw = multipart(address.email, '<parts-lost@example.org>', Buffer.from('again'));
      assert.equal((await send(address.email, raw)).code, 250);
      const [event] = await events(address);
      await sql('DELETE FROM email_parts WHERE event_id = ?', [event.id]);
      assert.equal((await part(address, event.id, 'raw')).status, 404);
      const repeat = await send(address.email, raw);
      assert.equal(repeat.code, 250, repeat.text);
      const held = await events(address);
      assert.deepEqual(
        held.map((e) => e.id),
        [event.id],
        'still the one event',
      );
      const rawCopy = await part(address, event.id, 'raw');
      assert.equal(rawCopy.status, 200);
      assert.deepEqual(splitReceived(Buffer.from(await rawCopy.arrayBuffer())).rest, Buffer.from(raw));
      assert.equal((await part(address, event.id, 'attachments/0')).status, 200);
    });
  });
}

/** A message with a text body and one attachment, CRLF line ends, no line starting with a dot. */
function multipart(to: string, messageId: string, attachment: Buffer): string {
  return [
    'From: sender@example.org',
    `To: ${to}`,
    'Subject: parts',
    `Message-ID: ${messageId}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="part-boundary"',
    '',
    '--part-boundary',
    'Content-Type: text/plain',
    '',
    'See the attachment.',
    '--part-boundary',
    'Content-Type: application/octet-stream',
    'Content-Disposition: attachment; filename="blob.bin"',
    'Content-Transfer-Encoding: base64',
    '',
    attachment.toString('base64'),
    '--part-boundary--',
    '',
  ].join('\r\n');
}
