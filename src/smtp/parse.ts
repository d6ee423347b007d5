// A raw RFC 5322 message → the `data` of an `email.received` event (CONTRACT §8), and its
// dedupe key. Parsing is lenient: mail is what senders make of it, and a message the
// parser cannot make sense of is still queued (with `parse_error`), never dropped.
import { createHash } from 'node:crypto';
import type { AddressObject, ParsedMail } from 'mailparser';
import { IDEMPOTENCY_KEY_PATTERN } from '../core/limits.js';
import { headerValue } from './encoded-words.js';

/** mailparser is loaded with the first message, not at start (a service may never get mail). */
let mailparser: Promise<typeof import('mailparser')> | undefined;
const loadMailparser = () => (mailparser ??= import('mailparser'));

export interface EmailAddress {
  address: string;
  name: string;
}

export interface EmailAttachment {
  filename: string | null;
  content_type: string;
  size: number;
  sha256: string;
  content_base64: string;
}

export interface EmailData {
  message_id: string | null;
  from: EmailAddress | null;
  to: EmailAddress[];
  cc: EmailAddress[];
  reply_to: EmailAddress[];
  subject: string | null;
  /** The Date header as RFC 3339 UTC, or null when absent or unreadable. */
  date: string | null;
  text: string | null;
  html: string | null;
  in_reply_to: string | null;
  references: string[];
  /** Lower-case name → decoded value; an array when the header occurs more than once. */
  headers: Record<string, string | string[]>;
  attachments: EmailAttachment[];
  /** Present only when the MIME structure could not be parsed; `text` then holds the raw message. */
  parse_error?: string;
}

export interface ParsedEmail {
  data: EmailData;
  /** Message-ID when usable as a key, else sha256:<hex of the raw message> (CONTRACT §8). */
  dedupeKey: string;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function addresses(field: AddressObject | AddressObject[] | undefined): EmailAddress[] {
  const out: EmailAddress[] = [];
  const visit = (entries: ReadonlyArray<{ address?: string; name?: string; group?: unknown[] }>) => {
    for (const entry of entries) {
      // Group syntax ("Team: a@x, b@y;") nests its members.
      if (Array.isArray(entry.group)) visit(entry.group as typeof entries);
      else if (entry.address) out.push({ address: entry.address, name: entry.name ?? '' });
    }
  };
  for (const object of field === undefined ? [] : Array.isArray(field) ? field : [field]) visit(object.value);
  return out;
}

function headerMap(lines: ParsedMail['headerLines']): Record<string, string | string[]> {
  // A null-prototype object: a header named "__proto__" must stay a header.
  const headers = Object.create(null) as Record<string, string | string[]>;
  for (const { key, line } of lines ?? []) {
    const value = headerValue(line);
    const held = headers[key];
    if (held === undefined) headers[key] = value;
    else if (Array.isArray(held)) held.push(value);
    else headers[key] = [held, value];
  }
  return { ...headers };
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function dateOf(headers: Record<string, string | string[]>): string | null {
  const raw = first(headers.date);
  if (!raw) return null;
  const ms = Date.parse(raw);
  // The parser substitutes "now" for an unreadable date; a reader should see null instead.
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

function dedupeKeyFor(messageId: string | null, raw: Buffer): string {
  if (messageId && IDEMPOTENCY_KEY_PATTERN.test(messageId)) return messageId;
  return `sha256:${sha256(raw)}`;
}

export async function parseEmail(raw: Buffer): Promise<ParsedEmail> {
  let mail: ParsedMail;
  try {
    const { simpleParser } = await loadMailparser();
    mail = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
  } catch (err) {
    const data: EmailData = {
      message_id: null,
      from: null,
      to: [],
      cc: [],
      reply_to: [],
      subject: null,
      date: null,
      text: raw.toString('utf8'),
      html: null,
      in_reply_to: null,
      references: [],
      headers: {},
      attachments: [],
      parse_error: err instanceof Error ? err.message : String(err),
    };
    return { data, dedupeKey: dedupeKeyFor(null, raw) };
  }
  const headers = headerMap(mail.headerLines);
  const messageId = mail.messageId?.trim() || null;
  const references =
    mail.references === undefined ? [] : Array.isArray(mail.references) ? mail.references : [mail.references];
  const data: EmailData = {
    message_id: messageId,
    from: addresses(mail.from)[0] ?? null,
    to: addresses(mail.to),
    cc: addresses(mail.cc),
    reply_to: addresses(mail.replyTo),
    subject: mail.subject ?? null,
    date: dateOf(headers),
    text: mail.text ?? null,
    html: typeof mail.html === 'string' ? mail.html : null,
    in_reply_to: mail.inReplyTo?.trim() || null,
    references,
    headers,
    attachments: mail.attachments.map((attachment) => ({
      filename: attachment.filename ?? null,
      content_type: attachment.contentType,
      size: attachment.content.length,
      sha256: sha256(attachment.content),
      content_base64: attachment.content.toString('base64'),
    })),
  };
  return { data, dedupeKey: dedupeKeyFor(messageId, raw) };
}
