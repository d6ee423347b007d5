// Runs before `npm start` in a clone (package.json's prestart skips it where there is no
// src/, as in the published package, which ships dist/): builds dist/ when it is missing or
// older than the sources, so that `npm ci && npm start` works on a fresh clone (README.md)
// without an install-time build.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const STAMP = 'dist/cli.js';

/** The newest modification time under `dir`, in milliseconds. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

if (!existsSync(STAMP) || newest('src') > statSync(STAMP).mtimeMs) {
  execFileSync('npm', ['run', 'build'], { stdio: 'inherit' });
}
