// The filters of a read (docs/api.md §4.3), from a query string (HTTP, the CLI) or from an
// object (MCP, the client), checked and bounded before they reach the page query: a
// malformed or oversized one is a 400 naming its parameter.
import { storableString } from '../storage/json-contains.js';
import type { EventFilter } from '../storage/storage.js';
import { errors } from './errors.js';
import { jsonDepthExceeds } from './json-depth.js';

/** The filters as a request names them. */
export interface FilterParams {
  /** Comma-separated in a query; a list or a comma-separated text in an object. */
  type?: string | readonly string[];
  source?: string;
  callback?: string;
  /** JSON text in a query; a JSON value (or its text) in an object. */
  data_contains?: unknown;
  body_contains?: unknown;
}

export const FILTER_LIMITS = {
  /** Type patterns in one filter. */
  types: 20,
  /** Characters of a type pattern, a source or a callback id or key. */
  text: 200,
  /** Bytes of the JSON text of data_contains or body_contains. */
  jsonBytes: 4096,
  /** Nesting of that JSON. */
  jsonDepth: 16,
};

const bad = (name: string, rule: string) => errors.invalidFilter({ name, rule });

function text(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > FILTER_LIMITS.text || !storableString(value))
    throw bad(name, `it must be a text of 1 to ${FILTER_LIMITS.text} characters.`);
  return value;
}

function types(value: unknown): string[] {
  const list = typeof value === 'string' ? value.split(',') : value;
  if (!Array.isArray(list) || list.length === 0 || list.length > FILTER_LIMITS.types)
    throw bad(
      'type',
      `give 1 to ${FILTER_LIMITS.types} comma-separated types, each exact or ending in * for a prefix.`,
    );
  return list.map((pattern: unknown) => {
    const checked = text('type', typeof pattern === 'string' ? pattern.trim() : pattern);
    if (checked.slice(0, -1).includes('*') || checked.includes(','))
      throw bad('type', 'a * may only end a pattern (stripe.payment_intent.*), and a type holds no comma.');
    return checked;
  });
}

/** The JSON text of a containment filter, normalised (as stored: JSON.stringify of its value). */
function contained(name: string, value: unknown, fromQuery: boolean): string {
  let parsed = value;
  if (typeof value === 'string' && (fromQuery || looksLikeJson(value))) {
    if (Buffer.byteLength(value) > FILTER_LIMITS.jsonBytes)
      throw bad(name, `its JSON text must be at most ${FILTER_LIMITS.jsonBytes} bytes.`);
    try {
      parsed = JSON.parse(value);
    } catch {
      throw bad(name, 'it must be JSON (URL-encoded in a query), e.g. {"status":"succeeded"}.');
    }
  }
  if (parsed === undefined) throw bad(name, 'it must be a JSON value.');
  const normalised = JSON.stringify(parsed);
  if (normalised === undefined || Buffer.byteLength(normalised) > FILTER_LIMITS.jsonBytes)
    throw bad(name, `its JSON text must be at most ${FILTER_LIMITS.jsonBytes} bytes.`);
  if (jsonDepthExceeds(parsed, FILTER_LIMITS.jsonDepth))
    throw bad(name, `it may nest at most ${FILTER_LIMITS.jsonDepth} levels.`);
  if (/\\u0000|\\ud[89a-f]/i.test(normalised))
    throw bad(name, 'it holds U+0000 or half of a surrogate pair, which no stored event holds.');
  return normalised;
}

/** Over MCP and in the client a value is JSON already; a text that reads as an object or array is taken as its JSON. */
const looksLikeJson = (value: string) => /^\s*[[{]/.test(value);

/**
 * The storage filter of a request's filters (without unacked, which the caller adds);
 * undefined when it has none. `fromQuery`: containment filters are JSON texts.
 */
export function eventFilter(params: FilterParams, fromQuery: boolean): EventFilter | undefined {
  const filter: EventFilter = {};
  if (params.type !== undefined) filter.types = types(params.type);
  if (params.source !== undefined) filter.source = text('source', params.source);
  if (params.callback !== undefined) filter.callback = text('callback', params.callback);
  if (params.data_contains !== undefined)
    filter.dataContains = contained('data_contains', params.data_contains, fromQuery);
  if (params.body_contains !== undefined)
    filter.bodyContains = contained('body_contains', params.body_contains, fromQuery);
  return Object.keys(filter).length > 0 ? filter : undefined;
}
