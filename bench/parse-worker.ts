// A parsing thread of the SMTP limit (bench/smtp-sink.ts given durable appends): parses
// each message it is given with mailparser, off the event loop as Roost's email workers do,
// and answers with what the limit stores.
import { simpleParser } from 'mailparser';
import { parentPort } from 'node:worker_threads';

export interface ParseJob {
  id: number;
  raw: Uint8Array;
}
export interface ParseReply {
  id: number;
  /** The message's subject and text, or why it could not be parsed. */
  data?: { subject?: string; text?: string };
  error?: string;
}

const port = parentPort!;
port.on('message', ({ id, raw }: ParseJob) => {
  simpleParser(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)).then(
    (mail) => port.postMessage({ id, data: { subject: mail.subject, text: mail.text } } satisfies ParseReply),
    (error: Error) => port.postMessage({ id, error: error.message } satisfies ParseReply),
  );
});
