// Hints for agents: verification codes and links found in a message (`data.extracted`).
// They are guesses from the text, never followed or fetched — opening a magic link may
// spend it, and that is the reader's decision. The full message stays in `data`.

export interface ExtractedLink {
  url: string;
  /** The anchor text in the HTML part, when the link came from one. */
  text: string | null;
  /** action: looks like verify/confirm/sign-in/reset; unsubscribe: a way out; other. */
  kind: 'action' | 'unsubscribe' | 'other';
}

export interface Extracted {
  note: string;
  /** Likely one-time codes, most likely first. */
  codes: string[];
  links: ExtractedLink[];
}

export interface ExtractInput {
  subject: string | null;
  text: string | null;
  html: string | null;
  /** The List-Unsubscribe header, if any. */
  listUnsubscribe?: string | null;
}

const NOTE = 'hints only, guessed from the message text; links were not visited';
const MAX_CODES = 10;
const MAX_LINKS = 50;
// Hints come from the start of a message: codes and links sit near the top, and a bound
// keeps a hostile 10 MiB body from costing more than a normal one.
const MAX_SCAN_CHARS = 200_000;

const CODE_WORDS =
  /\b(code|codes|otp|passcode|pass code|pin|one[- ]time|verification|verify|confirm|confirmation|security|login|log-in|sign[- ]in|2fa|two[- ]factor|token|código|code de|Bestätigungscode|Code)\b/i;
// The same for scripts without spaces or outside \w, where \b never matches: Russian,
// Japanese, Chinese, Korean.
const CODE_WORDS_WIDE =
  /(код|пароль|подтвержд|верификац|確認コード|認証コード|認証番号|確認番号|コード|ワンタイム|パスワード|验证码|驗證碼|校验码|인증)/i;
// Digits (optionally split in two by a space or dash, as in "123 456") or a short mixed
// token with at least one digit and one capital letter ("K7Q-29X" is written as one).
const CODE_CANDIDATE =
  /(?<![\w./:#@-])(\d{4,8}|\d{3}[- ]\d{3}|(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9]{2,5}-?[A-Z0-9]{2,5})(?![\w/@]|\.\d|-\w)/g;
const ACTION_WORDS =
  /(verif|confirm|activat|magic|sign[-_ ]?in|signin|log[-_ ]?in|login|auth|token|reset|password|validate|approve|accept|invite|otp|one[-_]?time)/i;
const UNSUBSCRIBE_WORDS = /(unsubscribe|opt[-_ ]?out|email[-_ ]?preferences|manage[-_ ]?subscription)/i;
const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'`]+/gi;
// Each piece is bounded, and anchors are found piece by piece rather than with one
// pattern, so that unclosed tags cannot make the scan quadratic (or worse).
const A_TAG = /<a\b[^>]{0,2000}>/gi;
const HREF = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i;
const A_END = /<\/a\s*>/i;
const MAX_ANCHOR_TEXT = 2000;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[body.toLowerCase()] ?? whole;
  });
}

/** Drops <script> and <style> blocks; an unclosed one swallows the rest, as in a browser. */
function withoutScripts(html: string): string {
  const open = /<(script|style)\b/gi;
  let out = '';
  let from = 0;
  let match: RegExpExecArray | null;
  while ((match = open.exec(html))) {
    out += html.slice(from, match.index);
    const close = new RegExp(`</${match[1]}\\s*>`, 'gi');
    close.lastIndex = open.lastIndex;
    if (!close.exec(html)) return out;
    from = open.lastIndex = close.lastIndex;
  }
  return out + html.slice(from);
}

function htmlToText(html: string): string {
  return decodeEntities(
    withoutScripts(html)
      .replace(/<br\s*\/?>|<\/(p|div|tr|li|h\d)>/gi, '\n')
      .replace(/<[^<>]{0,2000}>/g, ' '),
  ).replace(/[ \t\u00a0]+/g, ' ');
}

function trimUrl(url: string): string {
  // Sentence punctuation after a bare URL is not part of it.
  return url.replace(/[.,;:!?)\]}>]+$/, '');
}

function isWebUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

function kindOf(url: string, text: string | null): ExtractedLink['kind'] {
  const haystack = `${text ?? ''} ${url}`;
  if (UNSUBSCRIBE_WORDS.test(haystack)) return 'unsubscribe';
  if (ACTION_WORDS.test(haystack)) return 'action';
  return 'other';
}

function findCodes(text: string): string[] {
  const found: Array<{ code: string; score: number; at: number }> = [];
  for (const line of text.split(/\n/)) {
    const nearWord = CODE_WORDS.test(line) || CODE_WORDS_WIDE.test(line);
    for (const match of line.matchAll(CODE_CANDIDATE)) {
      const code = match[1];
      const digitsOnly = /^\d+$/.test(code.replace(/[- ]/g, ''));
      // Without a code word nearby only a line holding nothing but the code counts
      // (the big number in the middle of a verification mail).
      const alone = line.trim() === code;
      if (!nearWord && !alone) continue;
      // Years and times of day are the usual false friends.
      if (/^(19|20)\d\d$/.test(code) && !alone) continue;
      const score = (nearWord ? 2 : 0) + (alone ? 2 : 0) + (digitsOnly ? 1 : 0);
      found.push({ code, score, at: found.length });
    }
  }
  found.sort((a, b) => b.score - a.score || a.at - b.at);
  return [...new Set(found.map((f) => f.code))].slice(0, MAX_CODES);
}

export function extractHints(full: ExtractInput): Extracted {
  const input = {
    ...full,
    text: full.text?.slice(0, MAX_SCAN_CHARS) ?? null,
    html: full.html?.slice(0, MAX_SCAN_CHARS) ?? null,
  };
  const links = new Map<string, ExtractedLink>();
  const add = (rawUrl: string, text: string | null) => {
    const url = trimUrl(decodeEntities(rawUrl.trim()));
    if (!isWebUrl(url) || links.size >= MAX_LINKS) return;
    const held = links.get(url);
    if (held) {
      if (!held.text && text) {
        held.text = text;
        held.kind = kindOf(url, text);
      }
      return;
    }
    links.set(url, { url, text, kind: kindOf(url, text) });
  };
  if (input.html) {
    const html = withoutScripts(input.html);
    for (const tag of html.matchAll(A_TAG)) {
      const href = HREF.exec(tag[0]);
      if (!href) continue;
      const after = (tag.index ?? 0) + tag[0].length;
      const rest = html.slice(after, after + MAX_ANCHOR_TEXT);
      const end = rest.search(A_END);
      const anchorText = end >= 0 ? htmlToText(rest.slice(0, end)).replace(/\s+/g, ' ').trim() : '';
      add(href[1] ?? href[2] ?? href[3] ?? '', anchorText || null);
    }
  }
  const plain = input.text ?? (input.html ? htmlToText(input.html) : '');
  for (const match of plain.matchAll(URL_IN_TEXT)) add(match[0], null);
  for (const match of (input.listUnsubscribe ?? '').matchAll(/<(https?:\/\/[^>]+)>/gi)) {
    const url = trimUrl(match[1]);
    if (isWebUrl(url) && !links.has(url) && links.size < MAX_LINKS)
      links.set(url, { url, text: null, kind: 'unsubscribe' });
  }
  // URLs are cut out before looking for codes: their digits are not codes.
  const codeText = `${input.subject ?? ''}\n${plain.replace(URL_IN_TEXT, ' ')}`;
  return { note: NOTE, codes: findCodes(codeText), links: [...links.values()] };
}
