// Whether one JSON value contains another, as PostgreSQL's jsonb @> decides it: an object
// contains an object whose keys it has with contained values, an array contains an array
// whose every element it contains, and scalars contain what equals them. Used by a
// callback's complete_when (docs/api.md §3.6); bounded by the depth both values were
// checked against when they were accepted.
export function jsonContains(value: unknown, pattern: unknown): boolean {
  if (pattern === null || typeof pattern !== 'object') return value === pattern;
  if (Array.isArray(pattern)) {
    if (!Array.isArray(value)) return false;
    return pattern.every((wanted) => value.some((element) => jsonContains(element, wanted)));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const object = value as Record<string, unknown>;
  return Object.entries(pattern as Record<string, unknown>).every(
    ([key, wanted]) => Object.hasOwn(object, key) && jsonContains(object[key], wanted),
  );
}
