// Where a process's JavaScript heap goes, by constructor: the self sizes of a heap snapshot's
// objects summed by type and name, or, given two snapshots, what the second holds more of
// (divided by `per`, e.g. the number of polls held in the second and not the first).
//
//   node --import tsx bench/heap-summary.ts holding.heapsnapshot [idle.heapsnapshot] [--per 10000] [--top 30]
//
// `npm run bench -- --only polls --heap-snapshots DIR` writes idle.heapsnapshot and
// holding.heapsnapshot. Native memory (sockets' libuv handles, the HTTP parser's state,
// kernel buffers) is not in a heap snapshot: RSS minus the heap's growth is its share.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Self sizes and counts by "type name" (closures by function name, objects by constructor). */
export function sizesByConstructor(file: string): Map<string, { bytes: number; count: number }> {
  const heap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = heap.snapshot.meta.node_fields;
  const types = heap.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const totals = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < heap.nodes.length; i += width) {
    const type = types[heap.nodes[i + typeAt]];
    let name = heap.strings[heap.nodes[i + nameAt]];
    // Strings and numbers are named by their content: group them by type alone.
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number') name = '';
    else if (name.length > 60) name = `${name.slice(0, 57)}...`;
    const key = `${type} ${name}`.trim();
    const entry = totals.get(key) ?? { bytes: 0, count: 0 };
    entry.bytes += heap.nodes[i + sizeAt];
    entry.count++;
    totals.set(key, entry);
  }
  return totals;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { per: { type: 'string', default: '1' }, top: { type: 'string', default: '30' } },
  });
  const [after, before] = positionals;
  const per = Number(values.per);
  const now = sizesByConstructor(after);
  const then = before ? sizesByConstructor(before) : new Map<string, { bytes: number; count: number }>();
  const rows = [...now].map(([key, { bytes, count }]) => ({
    key,
    bytes: bytes - (then.get(key)?.bytes ?? 0),
    count: count - (then.get(key)?.count ?? 0),
  }));
  rows.sort((a, b) => b.bytes - a.bytes);
  const total = rows.reduce((sum, r) => sum + r.bytes, 0);
  const unit = per === 1 ? 'bytes' : `bytes per ${per.toLocaleString('en-US')}`;
  console.log(
    `${before ? 'growth' : 'total'}: ${(total / per).toFixed(0)} ${unit === 'bytes' ? 'bytes' : 'bytes each'}`,
  );
  for (const r of rows.slice(0, Number(values.top))) {
    console.log(`${(r.bytes / per).toFixed(1).padStart(9)}  ${(r.count / per).toFixed(2).padStart(7)} ×  ${r.key}`);
  }
}
