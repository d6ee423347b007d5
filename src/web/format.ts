// Turning event data into text for people: sizes, times, hex dumps, shell commands, and
// strings with their invisible direction controls made visible. Never into markup.
import type { RoostEvent } from './types';

const encoder = new TextEncoder();

export function eventSize(event: RoostEvent): number {
  return encoder.encode(JSON.stringify(event.data) ?? '').length;
}

/** "1 key", "2 keys": a count with its noun, singular for one. */
export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count.toLocaleString('en')} ${count === 1 ? noun : nouns}`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

// Bidi overrides, embeddings and isolates, and the zero-width marks: they can make text read
// in an order other than its bytes (a "trojan source"), so single-line fields show them.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** A string for a one-line field: direction controls spelled out, cut to `max` characters. */
export function visible(text: string, max = 300): string {
  const shown = text.replace(BIDI_CONTROLS, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase()}⟩`);
  return shown.length > max ? `${shown.slice(0, max)}… (${text.length} characters)` : shown;
}

export function decodeBase64(base64: string): Uint8Array {
  try {
    return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  } catch {
    return new Uint8Array();
  }
}

/** `xxd`-like: offset, 16 bytes in hex, the printable ASCII. */
export function hexDump(bytes: Uint8Array, limit: number): string {
  const lines: string[] = [];
  const end = Math.min(bytes.length, limit);
  for (let offset = 0; offset < end; offset += 16) {
    const row = bytes.subarray(offset, Math.min(offset + 16, end));
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join('\n');
}

/** POSIX shell single quotes: nothing inside is interpreted. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export interface RawCapture {
  content_type: string | null;
  headers: Record<string, string>;
  body: unknown;
  body_base64: string;
  method?: string;
  query?: string;
}

export function asRawCapture(event: RoostEvent): RawCapture | undefined {
  const data = event.data as Partial<RawCapture> | null;
  if (!data || typeof data !== 'object' || typeof data.body_base64 !== 'string') return undefined;
  if (!data.headers || typeof data.headers !== 'object') return undefined;
  return data as RawCapture;
}

// curl sets these itself from the command; sending the stored ones would contradict it.
const CURL_OWN_HEADERS = new Set(['host', 'content-length', 'expect']);

/**
 * A command that makes the same delivery again: a raw capture's exact bytes and headers, or
 * the CreateEvent body of an ordinary delivery. `inboxUrl` is the secret URL when known.
 */
export function curlCommand(event: RoostEvent, inboxUrl: string | undefined): string {
  // The placeholder stays a variable for the shell to fill; everything else is single-quoted,
  // so no `!`, `$` or backquote in an event's type is ever expanded.
  const quotedUrl = (query: string) =>
    inboxUrl ? shellQuote(inboxUrl + query) : `"$INBOX_URL"${query ? shellQuote(query) : ''}`;
  const raw = asRawCapture(event);
  if (raw) {
    const query = event.type === 'webhook.received' ? '?raw=1' : `?raw=1&type=${encodeURIComponent(event.type)}`;
    const headers = Object.entries(raw.headers)
      .filter(([name]) => !CURL_OWN_HEADERS.has(name.toLowerCase()))
      .map(([name, value]) => ` \\\n  -H ${shellQuote(`${name}: ${value}`)}`)
      .join('');
    return `printf %s ${shellQuote(raw.body_base64)} | base64 -d | curl -sS -X POST ${quotedUrl(query)}${headers} \\\n  --data-binary @-`;
  }
  const body = JSON.stringify({
    type: event.type,
    source: event.source,
    data: event.data,
    ...(event.metadata ? { metadata: event.metadata } : {}),
  });
  const key = event.dedupe_key ? ` \\\n  -H ${shellQuote(`Idempotency-Key: ${event.dedupe_key}`)}` : '';
  return `curl -sS -X POST ${quotedUrl('')} \\\n  -H 'content-type: application/json'${key} \\\n  --data-binary ${shellQuote(body)}`;
}

/**
 * Attributes for a box whose content may scroll (a long line, a hex dump): reachable by
 * keyboard, and named for a screen reader.
 */
export const scrollable = (label: string) => ({ tabIndex: 0, role: 'region' as const, 'aria-label': label });
