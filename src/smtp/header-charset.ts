// Headers in a legacy charset, written as raw bytes (a Subject in windows-1251 or latin-1,
// or ISO-2022-JP escape sequences) instead of RFC 2047 encoded words. The parser reads raw
// header bytes as UTF-8 (RFC 6532), which turns them into U+FFFD or leaves the escapes in.
// Such lines are decoded here with the charset the message declares, else with the one a
// detector (chardet) finds, and handed to the parser as UTF-8. The stored message is never
// changed: this copy is only for reading it.
import { isUtf8 } from 'node:buffer';
import { TextDecoder } from 'node:util';

let chardet: Promise<typeof import('chardet')> | undefined;
const loadChardet = () => (chardet ??= import('chardet'));

/** Bytes searched for the end of the header block and for a declared charset. */
const MAX_SCAN_BYTES = 4 * 1024 * 1024;
/** Bytes of 8-bit header text given to the detector (it needs a little; more costs time). */
const MAX_DETECT_BYTES = 16 * 1024;
const ESC = 0x1b;
// eslint-disable-next-line no-control-regex -- ESC starts the escape sequences of ISO-2022-JP
const ISO_2022_JP = /\x1b(\$[@B]|\([BJ])/;

/** The end of the header block: the index of the blank line's first byte, or -1. */
function headerEnd(raw: Buffer): number {
  const scan = raw.subarray(0, MAX_SCAN_BYTES);
  const crlf = scan.indexOf('\r\n\r\n');
  const lf = scan.indexOf('\n\n');
  if (crlf < 0) return lf < 0 ? -1 : lf + 1;
  return lf < 0 || crlf < lf ? crlf + 2 : lf + 1;
}

function decoderFor(charset: string | null | undefined): TextDecoder | null {
  if (!charset) return null;
  try {
    const decoder = new TextDecoder(charset.trim().toLowerCase());
    // UTF-8 is what the bytes failed to be; ASCII labels decode as windows-1252 in WHATWG.
    return decoder.encoding === 'utf-8' ? null : decoder;
  } catch {
    return null;
  }
}

/** The first charset the message declares: its Content-Type, else that of its first part. */
function declaredCharset(raw: Buffer, end: number): string | null {
  const text = raw.subarray(0, Math.min(raw.length, end + 64 * 1024)).toString('latin1');
  const match = /^content-type:[^\n]*(?:\n[ \t][^\n]*)*?charset\s*=\s*"?([\w.:-]{1,40})/im.exec(text);
  return match ? match[1] : null;
}

const needsDecoding = (line: Buffer) =>
  !isUtf8(line) || (line.includes(ESC) && ISO_2022_JP.test(line.toString('latin1')));

/**
 * The message with its non-UTF-8 header lines turned into UTF-8, or null when every header
 * line already is UTF-8 (the common case: nothing is copied).
 */
export async function utf8Headers(raw: Buffer): Promise<Buffer | null> {
  const end = headerEnd(raw);
  const block = raw.subarray(0, end < 0 ? Math.min(raw.length, MAX_SCAN_BYTES) : end);
  if (isUtf8(block) && !block.includes(ESC)) return null;
  const lines: Buffer[] = [];
  for (let start = 0; start < block.length;) {
    const next = block.indexOf(0x0a, start);
    const stop = next < 0 ? block.length : next + 1;
    lines.push(block.subarray(start, stop));
    start = stop;
  }
  const foreign = lines.filter(needsDecoding);
  if (foreign.length === 0) return null;
  let decoder: TextDecoder | null = null;
  const escaped = foreign.some((line) => line.includes(ESC) && ISO_2022_JP.test(line.toString('latin1')));
  if (escaped) decoder = decoderFor('iso-2022-jp');
  decoder ??= decoderFor(declaredCharset(raw, Math.max(end, 0)));
  if (!decoder) {
    const { detect } = await loadChardet();
    const sample = Buffer.concat(foreign.map((line) => line.subarray(line.indexOf(0x3a) + 1))).subarray(
      0,
      MAX_DETECT_BYTES,
    );
    decoder = decoderFor(detect(sample));
  }
  // windows-1252 decodes any byte: the last resort.
  const chosen = decoder ?? new TextDecoder('windows-1252');
  const converted = lines.map((line) => (needsDecoding(line) ? Buffer.from(chosen.decode(line), 'utf8') : line));
  return Buffer.concat([...converted, raw.subarray(block.length)]);
}
