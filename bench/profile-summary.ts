// Summarises a V8 .cpuprofile (node --cpu-prof, or `npm run bench -- --profile DIR`) as
// self time by function, by module, and inclusive time of Roost's own functions, so that
// the top of a profile can be read in a terminal:
//   node --import tsx bench/profile-summary.ts FILE.cpuprofile [N]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, top = '40'] = process.argv.slice(2);
if (!file) {
  console.error('usage: profile-summary FILE.cpuprofile [N]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const keyOf = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url
    ? `${url
        .replace(/^.*node_modules\//, '')
        .replace(/^file:\/\/.*?\/(src|bench)\//, '$1/')
        .replace(/^\.cache\/roost-bench\//, '')}:${lineNumber + 1}`
    : '';
  return `${functionName || '(anonymous)'} ${where}`;
};
const selfUs = new Map<string, number>();
// Inclusive time: a sample counts once for every distinct function on its stack.
const totalByKey = new Map<string, number>();
let totalUs = 0;
profile.samples.forEach((id, i) => {
  const node = byId.get(id)!;
  const key = keyOf(node);
  const dt = profile.timeDeltas[i] ?? 0;
  selfUs.set(key, (selfUs.get(key) ?? 0) + dt);
  totalUs += dt;
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const k = keyOf(byId.get(at)!);
    if (!seen.has(k)) totalByKey.set(k, (totalByKey.get(k) ?? 0) + dt);
    seen.add(k);
  }
});
console.log(`total ${(totalUs / 1000).toFixed(0)} ms sampled`);
for (const [key, us] of [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
  console.log(`${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${key}`);
}

// The same by package/module, to see which layer the time goes to.
const byModule = new Map<string, number>();
for (const [key, us] of selfUs) {
  const where = key.split(' ').slice(1).join(' ');
  const module =
    where.startsWith('src/') || where.startsWith('bench/')
      ? where.replace(/:\d+$/, '')
      : where.split('/')[0] || key.split(' ')[0];
  byModule.set(module, (byModule.get(module) ?? 0) + us);
}
console.log('\nby module:');
for (const [module, us] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
  console.log(`${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${module}`);
}

console.log('\ninclusive, functions of src/:');
for (const [key, us] of [...totalByKey]
  .filter(([k]) => / src\//.test(k))
  .sort((a, b) => b[1] - a[1])
  .slice(0, 25)) {
  console.log(`${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${key}`);
}
