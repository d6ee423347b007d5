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
import { utf8Headers } from './header-charset.js';

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
  /** Present only when the MIME structure could not be parsed; the headers are read, `text` is the body as sent. */
  parse_error?: string;
  /** Present when the structure is malformed but was read somehow (how is said here). */
  parse_warning?: string;
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

/** A line that only draws a rule (Outlook's `-----` or `_____` above the quoted message). */
const RULE = /^\s*([-_=*~]\s*){3,}$/;
/** What may follow a bare `--` and still be the message: a code, not a signature. */
const CODE_LINE = /^\s*(\d{4,10}|\d{3}[- ]\d{3}|[A-Z0-9]{2,6}-[A-Z0-9]{2,6}|(?=[A-Z]*\d)[A-Z0-9]{4,10})\s*$/;

const DASHES_KEPT = 'roost-kept-dashes-5f1c9a';

/**
 * email-reply-parser's maintained rules, and Roost's own for what they miss: a code after a
 * bare `--` is kept; an attribution line in any language (a line ending in a colon right
 * above the quoted text, as `2026年11月23日(月) 9:14 … :`) and trailing rules go.
 */
function replyText(text: string | null, parser: InstanceType<typeof import('email-reply-parser').default>) {
  if (text === null) return null;
  const lines = text.split('\n');
  const dashes = lines.findLastIndex((line) => line.trim() === '--');
  if (dashes >= 0) {
    const after = lines.slice(dashes + 1).filter((line) => line.trim() !== '');
    // Hidden from the parser behind a stand-in, and put back after.
    if (after.length === 1 && CODE_LINE.test(after[0])) lines[dashes] = DASHES_KEPT;
  }
  let reply: string;
  try {
    reply = parser.parseReply(lines.join('\n')).replaceAll(DASHES_KEPT, '--');
  } catch {
    return text.trim();
  }
  const kept = reply.trimEnd().split('\n');
  for (;;) {
    const last = kept.at(-1);
    if (last === undefined) break;
    if (last.trim() === '' || RULE.test(last)) {
      kept.pop();
      continue;
    }
    if (/[:：]\s*$/.test(last) && quotedBelow(text.split('\n'), last)) {
      kept.pop();
      continue;
    }
    break;
  }
  return kept.join('\n').trim();
}

/** Whether `line` occurs in `lines` with `>`-quoted text right below it (blank lines aside). */
function quotedBelow(lines: string[], line: string): boolean {
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== line) continue;
    const next = lines.slice(i + 1).find((l) => l.trim() !== '');
    if (next?.trimStart().startsWith('>')) return true;
  }
  return false;
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

const PARSER_OPTIONS = {
  // The text of an HTML-only message is made below from the capped HTML: converting a
  // hostile 10 MiB of HTML costs seconds, converting the bounded part does not.
  skipImageLinks: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  skipHtmlToText: true,
};
/** Header bytes read again when the whole message could not be parsed (mailparser stops at 1 MiB). */
const MAX_FALLBACK_HEADER_BYTES = 512 * 1024;

/** Where the header block ends (the blank line's first byte), or the message's length. */
function headerEnd(raw: Buffer): number {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf < 0) return lf < 0 ? raw.length : lf + 1;
  return lf < 0 || crlf < lf ? crlf + 2 : lf + 1;
}

/** The header block alone, cut after the last whole field that fits. */
function headersOnly(raw: Buffer): { message: Buffer; cut: boolean } {
  const end = headerEnd(raw);
  let block = raw.subarray(0, Math.min(end, MAX_FALLBACK_HEADER_BYTES));
  const cut = end > MAX_FALLBACK_HEADER_BYTES;
  if (cut) {
    // Back to the end of the last whole field: a line break followed by a new field's name.
    const text = block.toString('latin1');
    let at = text.lastIndexOf('\n');
    while (at > 0 && (text[at + 1] === ' ' || text[at + 1] === '\t' || at + 1 === text.length))
      at = text.lastIndexOf('\n', at - 1);
    block = block.subarray(0, at + 1);
  }
  // The fields with no body: what made the parser give up (the parts) is not read again.
  return { message: Buffer.concat([block, Buffer.from('\r\n')]), cut };
}

/** A multipart message whose boundary is in single quotes (`boundary='x'`), written as meant. */
function unquotedBoundary(raw: Buffer): Buffer | null {
  const end = headerEnd(raw);
  const head = raw.subarray(0, end).toString('latin1');
  const fixed = head.replace(
    /^(content-type:[^\n]*(?:\n[ \t][^\n]*)*?\bboundary\s*=\s*)'([^'\r\n]{1,200})'/im,
    '$1"$2"',
  );
  return fixed === head ? null : Buffer.concat([Buffer.from(fixed, 'latin1'), raw.subarray(end)]);
}

const UUENCODED = /^(x-)?uu(encode|encoded|e)?$/i;

/**
 * Decodes a uuencoded body (`begin 644 name` … `end`); null when it is not one. Bounded by
 * the message: output is at most three quarters of the input.
 */
export function uudecode(encoded: Buffer): { bytes: Buffer; filename: string | null } | null {
  const text = encoded.toString('latin1');
  const begin = /^begin [0-7]{3,4} ?([^\r\n]*)\r?$/m.exec(text);
  if (!begin) return null;
  const out = Buffer.alloc(Math.ceil((text.length * 3) / 4));
  let length = 0;
  for (const line of text.slice((begin.index ?? 0) + begin[0].length).split(/\r?\n/)) {
    if (line.trim() === 'end') break;
    if (line === '') continue;
    const count = (line.charCodeAt(0) - 32) & 63;
    const sixBits = (i: number) => ((line.charCodeAt(i) || 32) - 32) & 63;
    for (let i = 1, made = 0; made < count; i += 4) {
      const a = sixBits(i);
      const b = sixBits(i + 1);
      const c = sixBits(i + 2);
      const d = sixBits(i + 3);
      for (const byte of [(a << 2) | (b >> 4), ((b & 15) << 4) | (c >> 2), ((c & 3) << 6) | d]) {
        if (made++ < count) out[length++] = byte & 255;
      }
    }
  }
  return { bytes: Buffer.from(out.subarray(0, length)), filename: begin[1].trim() || null };
}

/** Attachments sent with Content-Transfer-Encoding x-uuencode get their decoded bytes (mailparser keeps them encoded). */
function decodeUuencoded(attachments: ParsedMail['attachments']): void {
  for (const attachment of attachments) {
    const encoding = attachment.headers.get('content-transfer-encoding');
    if (typeof encoding !== 'string' || !UUENCODED.test(encoding.trim())) continue;
    const decoded = uudecode(attachment.content);
    if (!decoded) continue;
    attachment.content = decoded.bytes;
    attachment.size = decoded.bytes.length;
    attachment.filename ??= decoded.filename ?? undefined;
  }
}

/** The body as sent, for a reader when the MIME structure gave nothing. */
const bodyAsSent = (raw: Buffer) =>
  raw
    .subarray(headerEnd(raw))
    .toString('utf8')
    .replace(/^\r?\n/, '');

export async function parseEmail(raw: Buffer, limits: ParseLimits): Promise<ParsedEmail> {
  const { simpleParser } = await loadMailparser();
  // Header lines in a legacy charset are read as what they say, not as broken UTF-8.
  const readable = (await utf8Headers(raw)) ?? raw;
  let mail: ParsedMail;
  /** Why the MIME structure could not be read: parse_error, with the headers still read. */
  let failure: string | undefined;
  let warning: string | undefined;
  let headersCutShort = false;
  try {
    mail = await simpleParser(readable, PARSER_OPTIONS);
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
    try {
      const { message, cut } = headersOnly(readable);
      headersCutShort = cut;
      mail = await simpleParser(message, PARSER_OPTIONS);
    } catch {
      const data = unparsedEmail(failure);
      const text = capped(raw.toString('utf8'), limits.maxTextBytes);
      Object.assign(data, { text: text.value, truncated: text.cut });
      return { data, dedupeKey: undefined, attachmentBytes: [], fromMailboxes: 0 };
    }
  }
  const contentType = mail.headers.get('content-type') as { value?: string } | undefined;
  const empty = () => !mail.text && typeof mail.html !== 'string' && mail.attachments.length === 0;
  if (!failure && empty() && /^multipart\//i.test(contentType?.value ?? '')) {
    // A multipart message in which no part was found: its boundary never occurs as written.
    const repaired = unquotedBoundary(readable);
    const again = repaired ? await simpleParser(repaired, PARSER_OPTIONS).catch(() => null) : null;
    if (again && (again.text || typeof again.html === 'string' || again.attachments.length > 0)) {
      mail = again;
      warning = 'the multipart boundary is written in single quotes; it was read without them';
    } else {
      warning = `a ${contentType?.value ?? 'multipart'} message with no part found (its boundary does not occur); text is the body as sent`;
    }
  }
  decodeUuencoded(mail.attachments);
  const { default: EmailReplyParser } = await loadReplyParser();
  const { headers, cut: headersCut } = headerMap(mail.headerLines);
  const html = capped(typeof mail.html === 'string' ? mail.html : null, limits.maxHtmlBytes);
  let derivedText: string | null = null;
  if (!mail.text && html.value !== null) {
    const { htmlToText } = await loadHtmlToText();
    // A table's cells stay apart ("Cell A   Cell B"), not run together.
    derivedText = htmlToText(html.value, {
      wordwrap: false,
      limits: { maxDepth: 64 },
      selectors: [{ selector: 'table', format: 'dataTable' }],
    });
  }
  const asSent = failure !== undefined || (warning !== undefined && empty()) ? bodyAsSent(raw) : null;
  const text = capped(asSent ?? derivedText ?? mail.text ?? null, limits.maxTextBytes);
  const listed = mail.attachments.slice(0, MAX_ATTACHMENTS);
  const fromHeaders = (mail.headerLines ?? []).filter((h) => h.key === 'from').length;
  const fromMailboxes = fromHeaders > 1 ? fromHeaders : addresses(mail.from).length;
  let cut = text.cut || html.cut || headersCut || headersCutShort || listed.length < mail.attachments.length;
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
  if (failure !== undefined) data.parse_error = `${failure}; the headers were read, the message is whole at raw.url`;
  if (warning !== undefined) data.parse_warning = warning;
  return {
    data,
    dedupeKey: dedupeKeyFor(messageId),
    attachmentBytes: listed.map((a) => a.content),
    fromMailboxes,
  };
}
