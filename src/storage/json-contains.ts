// JSON containment as PostgreSQL's jsonb `@>` decides it, for the engine that has no such
// operator (SQLite calls these as functions; PostgreSQL uses its own). The property test in
// test/storage/json-contains.test.ts holds the two to the same answers.

/**
 * The value of a JSON text as PostgreSQL's jsonb would take it, or undefined where jsonb
 * refuses it: not JSON, or a string or key holding U+0000 or half of a surrogate pair.
 */
export function jsonbValue(text: unknown): unknown {
  if (typeof text !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  // Walked without recursion: a stored value may be deep.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') {
      if (!storableString(node)) return undefined;
    } else if (Array.isArray(node)) {
      stack.push(...(node as unknown[]));
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) {
        if (!storableString(key)) return undefined;
        stack.push(child);
      }
    }
  }
  return value;
}

/** Half of a surrogate pair, alone. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** No U+0000 and no half of a surrogate pair: what jsonb stores. */
export function storableString(text: string): boolean {
  return !text.includes('\u0000') && !LONE_SURROGATE.test(text);
}

const isContainer = (value: unknown): value is object => value !== null && typeof value === 'object';

/**
 * Whether `value` contains `wanted` as jsonb's `@>` says: an object contains an object whose
 * every key it has with a value containing that key's value; an array contains an array
 * whose every element it contains (as one of its scalars, or inside one of its containers
 * of the same kind); a scalar contains only an equal scalar. At the top level only, an
 * array also contains a scalar that is one of its elements.
 */
export function jsonContains(value: unknown, wanted: unknown): boolean {
  if (Array.isArray(value) && !isContainer(wanted)) return value.some((element) => scalarEquals(element, wanted));
  return contains(value, wanted);
}

function contains(value: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) {
    if (!Array.isArray(value)) return false;
    return wanted.every((element) =>
      isContainer(element)
        ? value.some((candidate) => isContainer(candidate) && contains(candidate, element))
        : value.some((candidate) => scalarEquals(candidate, element)),
    );
  }
  if (isContainer(wanted)) {
    if (!isContainer(value) || Array.isArray(value)) return false;
    const held = value as Record<string, unknown>;
    for (const [key, child] of Object.entries(wanted)) {
      if (!Object.hasOwn(held, key)) return false;
      const present = held[key];
      if (isContainer(child) ? !isContainer(present) || !contains(present, child) : !scalarEquals(present, child))
        return false;
    }
    return true;
  }
  return scalarEquals(value, wanted);
}

/** jsonb's equality of scalars: same kind and value (numbers by value: 1 and 1.0 are equal). */
function scalarEquals(a: unknown, b: unknown): boolean {
  if (isContainer(a) || isContainer(b)) return false;
  return a === b;
}

/** What body_contains looks in: data.body, or the JSON value its text holds when it is a string. */
export function bodyValue(data: unknown): unknown {
  if (!isContainer(data) || Array.isArray(data) || !Object.hasOwn(data, 'body')) return undefined;
  const body = (data as Record<string, unknown>).body;
  return typeof body === 'string' ? jsonbValue(body) : body;
}
