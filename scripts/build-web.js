// Bundles the inspector page (src/web) into dist/web with esbuild: one script and one
// stylesheet, named by content hash so that they can be cached forever, and a manifest
// that tells the server (src/http/routes/inspect.ts) their names. Prints their gzipped size.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'web');

rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
const result = await build({
  entryPoints: { inspector: join(root, 'src', 'web', 'main.tsx') },
  bundle: true,
  format: 'esm',
  target: 'es2022',
  platform: 'browser',
  minify: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  legalComments: 'none',
  metafile: true,
  outdir,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
const script = outputs.find((name) => name.endsWith('.js'));
const style = outputs.find((name) => name.endsWith('.css'));
if (!script || !style) throw new Error(`esbuild produced ${outputs.join(', ')}; expected one .js and one .css`);
const gzipped = [script, style].reduce((sum, name) => sum + gzipSync(readFileSync(join(outdir, name))).length, 0);
writeFileSync(join(outdir, 'manifest.json'), `${JSON.stringify({ script, style, gzipped_bytes: gzipped }, null, 2)}\n`);
console.log(`inspector page: ${script} + ${style}, ${(gzipped / 1024).toFixed(1)} KiB gzipped`);
