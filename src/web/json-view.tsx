// A JSON value as a collapsible tree of text: objects and arrays fold (<details>), deep
// levels start folded, and long collections show their first items only.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { plural, visible } from './format';

const OPEN_DEPTH = 2;
const FIRST_ITEMS = 200;

export function JsonView({ value }: { value: unknown }) {
  return (
    <div class="json">
      <JsonNode value={value} depth={0} />
    </div>
  );
}

function JsonNode({ value, depth, name }: { value: unknown; depth: number; name?: ComponentChildren }) {
  const label = name === undefined ? null : <span class="json-key">{name}: </span>;
  if (value === null || typeof value !== 'object') {
    return (
      <div class="json-leaf">
        {label}
        <Scalar value={value} />
      </div>
    );
  }
  const entries: Array<[string, unknown]> = Array.isArray(value)
    ? value.map((item, index) => [String(index), item])
    : Object.entries(value as Record<string, unknown>);
  const [open, bracket] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) {
    return (
      <div class="json-leaf">
        {label}
        {open}
        {bracket}
      </div>
    );
  }
  return (
    <details class="json-node" open={depth < OPEN_DEPTH}>
      <summary>
        {label}
        {open}
        <span class="json-count"> {plural(entries.length, Array.isArray(value) ? 'item' : 'key')} </span>
        {bracket}
      </summary>
      <Children entries={entries} depth={depth} quoteKeys={!Array.isArray(value)} />
    </details>
  );
}

function Children({
  entries,
  depth,
  quoteKeys,
}: {
  entries: Array<[string, unknown]>;
  depth: number;
  quoteKeys: boolean;
}) {
  const [all, setAll] = useState(false);
  const shown = all ? entries : entries.slice(0, FIRST_ITEMS);
  return (
    <div class="json-children">
      {shown.map(([key, item]) => (
        <JsonNode key={key} value={item} depth={depth + 1} name={quoteKeys ? JSON.stringify(key) : key} />
      ))}
      {shown.length < entries.length && (
        <button type="button" class="small" onClick={() => setAll(true)}>
          Show {entries.length - shown.length} more
        </button>
      )}
    </div>
  );
}

function Scalar({ value }: { value: unknown }) {
  if (typeof value === 'string') return <span class="json-string">{visible(JSON.stringify(value), Infinity)}</span>;
  if (typeof value === 'number') return <span class="json-number">{String(value)}</span>;
  if (typeof value === 'boolean') return <span class="json-boolean">{String(value)}</span>;
  return <span class="json-null">null</span>;
}
