// Header text as a person would read it: unfolded, raw 8-bit bytes read as UTF-8 (RFC 6532)
// and RFC 2047 encoded words (=?charset?B|Q?…?=) decoded. Used for `data.headers`, where the
// parser's own structured values (dates, address objects) would lose the original text.
import { TextDecoder } from 'node:util';

const ENCODED_WORD = /=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=/g;
// Whitespace between two adjacent encoded words is not part of the text (RFC 2047 §6.2).
const BETWEEN_WORDS = /(=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)\s+(?==\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)/g;

function decoder(charset: string): TextDecoder | null {
  try {
    return new TextDecoder(charset.replace(/\*.*$/, '').toLowerCase());
  } catch {
    return null;
  }
}

function wordBytes(encoding: string, text: string): Buffer {
  if (encoding.toUpperCase() === 'B') return Buffer.from(text, 'base64');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '_') bytes.push(0x20);
    else if (c === '=' && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(c.charCodeAt(0) & 0xff);
  }
  return Buffer.from(bytes);
}

export function decodeEncodedWords(value: string): string {
  const joined = value.replace(BETWEEN_WORDS, '$1');
  // Adjacent words of one charset are decoded together: a multi-byte character may be
  // split across two of them.
  let out = '';
  let last = 0;
  let pending: { charset: string; bytes: Buffer[]; raw: string } | null = null;
  const flush = () => {
    if (!pending) return;
    const dec = decoder(pending.charset);
    out += dec ? dec.decode(Buffer.concat(pending.bytes)) : pending.raw;
    pending = null;
  };
  for (const match of joined.matchAll(ENCODED_WORD)) {
    const index = match.index ?? 0;
    if (index > last) {
      flush();
      out += joined.slice(last, index);
    }
    const charset = match[1].toLowerCase();
    const bytes = wordBytes(match[2], match[3]);
    if (pending && pending.charset === charset) {
      pending.bytes.push(bytes);
      pending.raw += match[0];
    } else {
      flush();
      pending = { charset, bytes: [bytes], raw: match[0] };
    }
    last = index + match[0].length;
  }
  flush();
  return out + joined.slice(last);
}

/** One raw header line ("Name: value", possibly folded, bytes as latin1) → its readable value. */
export function headerValue(line: string): string {
  const colon = line.indexOf(':');
  const raw = colon >= 0 ? line.slice(colon + 1) : line;
  const utf8 = Buffer.from(raw, 'latin1').toString('utf8');
  return decodeEncodedWords(utf8.replace(/\r?\n[ \t]+/g, ' ').trim());
}
