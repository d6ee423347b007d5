// What crosses to a worker thread carries only its own bytes. A small Buffer is a view into
// Node's allocation pool, and postMessage copies the whole ArrayBuffer behind a view: each
// message would copy the pool (64 KiB on Node 24) to the thread and back out of it.
import assert from 'node:assert/strict';
import { after, mock, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import nodemailer from 'nodemailer';
import { EmailProcessor } from '../src/smtp/processor.js';
import { ownBytes } from '../src/storage/own-bytes.js';
import { toAppendTuple } from '../src/storage/sqlite/events-append.js';
import type { AppendInput, EmailPart } from '../src/storage/storage.js';

/** A small Buffer as Buffer.from makes it: a view into the shared pool, not its own ArrayBuffer. */
const pooled = (text: string) => {
  const bytes = Buffer.from(text);
  assert.ok(bytes.buffer.byteLength > bytes.byteLength, 'Buffer.from gave a pooled view');
  return bytes;
};
const ownsItsBuffer = (bytes: Uint8Array) => bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength;

test('ownBytes copies a view of a larger buffer to a buffer of its own, and leaves one that owns its buffer alone', () => {
  const view = pooled('a few bytes');
  assert.ok(structuredClone(view).buffer.byteLength > view.byteLength, 'a clone of the view carries the pool');
  const own = ownBytes(view);
  assert.ok(ownsItsBuffer(own));
  assert.deepEqual(Buffer.from(own), view);
  assert.equal(structuredClone(own).buffer.byteLength, view.byteLength);
  const whole = Buffer.allocUnsafeSlow(16).fill(1);
  assert.equal(ownBytes(whole), whole);
});

test("an append's email parts reach the writer thread as their own bytes", () => {
  const part = (n: number, text: string): EmailPart => ({
    part: n,
    sha256: 'x'.repeat(64),
    contentType: 'text/plain',
    filename: null,
    bytes: pooled(text),
  });
  const input: AppendInput = {
    addressId: 'adr_x',
    type: 'email.received',
    source: 'email',
    dataJson: '{}',
    metadataJson: null,
    dedupeKey: null,
    keyScope: 'email',
    createdAt: Date.now(),
    parts: [part(-1, 'raw message'), part(0, 'attachment')],
  };
  const parts = toAppendTuple(input, 'evt_x', 10).at(-1) as EmailPart[];
  assert.deepEqual(
    parts.map((p) => [ownsItsBuffer(p.bytes), Buffer.from(p.bytes).toString()]),
    [
      [true, 'raw message'],
      [true, 'attachment'],
    ],
  );
  // The caller's parts are left as they were.
  assert.ok(!ownsItsBuffer(input.parts![0].bytes));
});

const processor = new EmailProcessor({
  workers: 1,
  messagesPerWorker: 4,
  bytesPerWorker: 1024 * 1024,
  deadlineMs: 60_000,
  limits: { maxTextBytes: 1024 * 1024, maxHtmlBytes: 1024 * 1024 },
  resolver: async () => {
    throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
  },
  logger: { warn: () => {} },
});
after(() => processor.close());

test('a message goes to its email worker, and its attachments come back, as their own bytes', async () => {
  const posted: Array<{ op?: string; raw?: Uint8Array }> = [];
  const original = Reflect.get(Worker.prototype, 'postMessage') as (this: Worker, message: unknown) => void;
  const postMessage = mock.method(Worker.prototype, 'postMessage', function (this: Worker, message: unknown) {
    posted.push(message as { op?: string });
    original.call(this, message);
  });
  try {
    // Composed as a mailer would send it, then held as a pooled view, as the SMTP server holds a message.
    const composed = await nodemailer
      .createTransport({ streamTransport: true, buffer: true, newline: 'windows' })
      .sendMail({
        from: 'a@example.org',
        to: 'b@roost.test',
        subject: 'with an attachment',
        text: 'hello',
        attachments: [{ filename: 'note.txt', content: 'a small attachment' }],
      });
    const raw = pooled((composed.message as Buffer).toString('latin1'));
    const result = await processor.process({
      raw,
      ip: '127.0.0.1',
      helo: 'client.test',
      sender: '',
      mta: 'roost.test',
    });
    const job = posted.find((message) => message.op === 'job');
    assert.ok(job?.raw && ownsItsBuffer(job.raw), 'the job carries the message alone');
    assert.deepEqual(Buffer.from(job.raw), raw);
    const attachments = result.parsed?.attachmentBytes ?? [];
    assert.deepEqual(
      attachments.map((bytes) => [ownsItsBuffer(bytes), bytes.toString()]),
      [[true, 'a small attachment']],
    );
  } finally {
    postMessage.mock.restore();
  }
});
