// A raw RFC 5322 message → the `data` of an `email.received` event (docs/api.md §8), its dedupe
// key and the parts stored beside the event (attachment bytes). Parsing is lenient: mail is
// what senders make of it, and a message the parser cannot make sense of is still queued
// (with `parse_error`), never dropped. Every part of the event is bounded (docs/email.md
// "Size of an event"): what is cut stays whole in the raw message, served on its own URL.
// Runs in the email worker thread (process-worker.ts), never on the event loop.
import { createHash } from 'node:crypto';
import type { AddressObject, ParsedMail } from 'mailparser';
import { IDEMPOTENCY_KEY_PATTERN } from '../core/limits.js';
import { headerValue } from './encoded-words.js';

/** mailparser is loaded with the first message, not at start (a service may never get mail). */
let mailparser: Promise<typeof import('mailparser')> | undefined;
const loadMailparser = () => (mailparser ??= import('mailparser'));
let replyParser: Promise<typeof import('email-reply-parser')> | undefined;
const loadReplyParser = () => (replyParser ??= import('email-reply-parser'));
let htmlConverter: Promise<typeof import('html-to-text')> | undefined;
const loadHtmlToText = () => (htmlConverter ??= import('html-to-text'));

export interface EmailAddress {
  address: string;
  name: string;
}

/** An attachment as the event lists it; its bytes are served at `url`. */
export interface EmailAttachment {
  filename: string | null;
  content_type: string;
  size: number;
  sha256: string;
  /** Added once the event's id is known (attachmentUrl); absent only while parsing. */
  url?: string;
}

export interface ParseLimits {
  /** The longest `text` / `html` kept, in bytes of their JSON encoding. */
  maxTextBytes: number;
  maxHtmlBytes: number;
}

/** Headers kept in `data.headers`, in bytes of their JSON encoding (the raw message has all). */
export const MAX_HEADER_BYTES = 64 * 1024;
/** Attachments listed and stored per message; the raw message holds any beyond. */
export const MAX_ATTACHMENTS = 100;
/** Entries kept in to, cc, reply_to and references. */
export const MAX_LIST_ENTRIES = 100;
/** The longest subject, message_id and in_reply_to kept, in bytes of their JSON encoding. */
const MAX_LINE_BYTES = 8 * 1024;
/** The longest attachment filename kept, in characters. */
const MAX_FILENAME_CHARS = 255;

/** The data of a message that could not be parsed: nothing is known but why. */
export function unparsedEmail(parseError: string): EmailData {
  return {
    message_id: null,
    from: null,
    to: [],
    cc: [],
    reply_to: [],
    subject: null,
    date: null,
    text: null,
    html: null,
    reply_text: null,
    truncated: false,
    in_reply_to: null,
    references: [],
    headers: {},
    attachments: [],
    parse_error: parseError,
  };
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
  /** The new part of a reply: `text` without quoted history and signature (email-reply-parser). */
  reply_text: string | null;
  /** True when text, html, headers or the attachment list were cut to their bound. */
  truncated: boolean;
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
  /** The Message-ID when usable as a key; without one a message is never deduplicated (docs/email.md). */
  dedupeKey: string | undefined;
  /** The bytes of data.attachments, in the same order. */
  attachmentBytes: Buffer[];
  /** Mailboxes in all From headers together: anything but 1 makes the verdict fail (RFC 7489 §6.6.1). */
  fromMailboxes: number;
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

const jsonBytes = (value: string) => Buffer.byteLength(JSON.stringify(value));

/** `value` cut so that its JSON encoding fits in `max` bytes; escapes may make it up to 6× its length. */
export function capped(value: string | null, max: number): { value: string | null; cut: boolean } {
  if (value === null || jsonBytes(value) <= max) return { value, cut: false };
  let end = Math.min(value.length, max);
  while (end > 0 && jsonBytes(value.slice(0, end)) > max) end = Math.floor(end * 0.75);
  // Never end on the first half of a surrogate pair.
  if (end > 0 && /[\uD800-\uDBFF]/.test(value[end - 1])) end--;
  return { value: value.slice(0, end), cut: true };
}

function headerMap(lines: ParsedMail['headerLines']): { headers: Record<string, string | string[]>; cut: boolean } {
  // A null-prototype object: a header named "__proto__" must stay a header.
  const headers = Object.create(null) as Record<string, string | string[]>;
  let budget = MAX_HEADER_BYTES;
  for (const { key, line } of lines ?? []) {
    const value = headerValue(line);
    budget -= jsonBytes(key) + jsonBytes(value) + 2;
    if (budget < 0) return { headers: { ...headers }, cut: true };
    const held = headers[key];
    if (held === undefined) headers[key] = value;
    else if (Array.isArray(held)) held.push(value);
    else headers[key] = [held, value];
  }
  return { headers: { ...headers }, cut: false };
}

/** A MIME type safe to repeat in a Content-Type header, else application/octet-stream. */
export function safeContentType(value: string | undefined): string {
  const type = (value ?? '').trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(type)
    ? type
    : 'application/octet-stream';
}

function replyText(text: string | null, parser: InstanceType<typeof import('email-reply-parser').default>) {
  if (text === null) return null;
  try {
    return parser.parseReply(text).trim();
  } catch {
    return text;
  }
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

// Identical bytes are no proof of one message: a cron job or an appliance sends the same
// alert again and again without a Message-ID, and each is news.
function dedupeKeyFor(messageId: string | null): string | undefined {
  return messageId && IDEMPOTENCY_KEY_PATTERN.test(messageId) ? messageId : undefined;
}

export async function parseEmail(raw: Buffer, limits: ParseLimits): Promise<ParsedEmail> {
  let mail: ParsedMail;
  try {
    const { simpleParser } = await loadMailparser();
    // The text of an HTML-only message is made below from the capped HTML: converting a
    // hostile 10 MiB of HTML costs seconds, converting the bounded part does not.
    mail = await simpleParser(raw, {
      skipImageLinks: true,
      skipTextToHtml: true,
      skipTextLinks: true,
      skipHtmlToText: true,
    });
  } catch (err) {
    const data = unparsedEmail(err instanceof Error ? err.message : String(err));
    const text = capped(raw.toString('utf8'), limits.maxTextBytes);
    Object.assign(data, { text: text.value, truncated: text.cut });
    return { data, dedupeKey: undefined, attachmentBytes: [], fromMailboxes: 0 };
  }
  const { default: EmailReplyParser } = await loadReplyParser();
  const { headers, cut: headersCut } = headerMap(mail.headerLines);
  const html = capped(typeof mail.html === 'string' ? mail.html : null, limits.maxHtmlBytes);
  let derivedText: string | null = null;
  if (!mail.text && html.value !== null) {
    const { htmlToText } = await loadHtmlToText();
    derivedText = htmlToText(html.value, { wordwrap: false, limits: { maxDepth: 64 } });
  }
  const text = capped(derivedText ?? mail.text ?? null, limits.maxTextBytes);
  const listed = mail.attachments.slice(0, MAX_ATTACHMENTS);
  const fromHeaders = (mail.headerLines ?? []).filter((h) => h.key === 'from').length;
  const fromMailboxes = fromHeaders > 1 ? fromHeaders : addresses(mail.from).length;
  let cut = text.cut || html.cut || headersCut || listed.length < mail.attachments.length;
  const line = (value: string | null) => {
    const kept = capped(value, MAX_LINE_BYTES);
    cut ||= kept.cut;
    return kept.value;
  };
  const list = <T>(values: T[]) => {
    cut ||= values.length > MAX_LIST_ENTRIES;
    return values.slice(0, MAX_LIST_ENTRIES);
  };
  const messageId = mail.messageId?.trim() || null;
  const references =
    mail.references === undefined ? [] : Array.isArray(mail.references) ? mail.references : [mail.references];
  const data: EmailData = {
    message_id: line(messageId),
    from: addresses(mail.from)[0] ?? null,
    to: list(addresses(mail.to)),
    cc: list(addresses(mail.cc)),
    reply_to: list(addresses(mail.replyTo)),
    subject: line(mail.subject ?? null),
    date: dateOf(headers),
    text: text.value,
    html: html.value,
    reply_text: replyText(text.value, new EmailReplyParser()),
    truncated: false,
    in_reply_to: line(mail.inReplyTo?.trim() || null),
    references: list(references).map((r) => line(r) ?? ''),
    headers,
    attachments: listed.map((attachment) => ({
      // A NUL cannot be stored as text (docs/api.md §6); a sender's odd filename must not cost the mail.
      filename: attachment.filename?.slice(0, MAX_FILENAME_CHARS).replaceAll('\u0000', '\uFFFD') ?? null,
      content_type: safeContentType(attachment.contentType),
      size: attachment.content.length,
      sha256: sha256(attachment.content),
    })),
  };
  data.truncated = cut;
  return {
    data,
    dedupeKey: dedupeKeyFor(messageId),
    attachmentBytes: listed.map((a) => a.content),
    fromMailboxes,
  };
}
