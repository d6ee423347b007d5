// Roost as operators and newcomers meet it, through the built package (run `npm run build`
// first; `npm test` does): `npm start` stopped by a process manager's SIGTERM, an old Node
// told what it needs, `roost/client` without the server, the tarball's contents, and a
// misspelt variable named at start.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.js';
import { SERVE_NODE_FLAGS } from '../src/node-flags.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NODE_BIN = dirname(process.execPath);
const SENTENCE = /^Roost needs Node\.js 22 or later \(this is 20\.x\)\. Install .*nodejs\.org/m;

/** Whether something accepts TCP connections on the port. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Every descendant process of `pid` (from /proc), so that none outlives the test. */
function descendants(pid: number): number[] {
  const out = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout;
  const children = out.split('\n').filter(Boolean).map(Number);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

describe('npm start under a process manager', () => {
  it('SIGTERM to npm stops the service: nothing is left holding the port', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-npm-start-'));
    const npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        PATH: `${NODE_BIN}:${process.env.PATH ?? ''}`,
        HOME: process.env.HOME ?? dir,
        PORT: '0',
        ROOST_SMTP_PORT: '0',
        ROOST_DB: join(dir, 'roost.db'),
        ROOST_SMPT_PORT: '2526',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let left: number[] = [];
    try {
      const port = await new Promise<number>((resolve, reject) => {
        npm.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const line = output.split('\n').find((l) => l.includes('Roost listening'));
          if (line) resolve(Number(new URL(JSON.parse(line).http as string).port));
        });
        npm.once('exit', (code) => reject(new Error(`npm start exited ${code} before listening:\n${output}`)));
      });
      // The misspelt variable is named at start, with the one it resembles.
      assert.match(output, /ROOST_SMPT_PORT is not a Roost setting.*did you mean ROOST_SMTP_PORT\?/);
      left = descendants(npm.pid!);
      assert.equal(await accepting(port), true);
      // The service runs with the launcher's Node flags (src/node-flags.ts), first in NODE_OPTIONS.
      const served = left.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('dist/cli.js'));
      assert.ok(served, `no dist/cli.js process under npm:\n${output}`);
      const environ = readFileSync(`/proc/${served}/environ`, 'utf8').split('\0');
      const nodeOptions = environ.find((v) => v.startsWith('NODE_OPTIONS='));
      assert.ok(nodeOptions?.startsWith(`NODE_OPTIONS=${SERVE_NODE_FLAGS.join(' ')}`), nodeOptions);
      const exited = once(npm, 'exit');
      npm.kill('SIGTERM');
      await exited;
      // Whatever npm started has ended with it: the port is free.
      const alive = left.filter((pid) => existsSync(`/proc/${pid}`));
      assert.deepEqual(alive, [], `processes left running after npm exited:\n${output}`);
      assert.equal(await accepting(port), false, 'the port is still held');
    } finally {
      for (const pid of [npm.pid!, ...left]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Node 20: ROOST_TEST_OLD_NODE (.ci/run provides it), else /usr/bin/node when the machine's is 20. */
const oldNode = (() => {
  const candidate = process.env.ROOST_TEST_OLD_NODE ?? '/usr/bin/node';
  if (!existsSync(candidate)) return undefined;
  const version = execFileSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  return version.startsWith('20.') ? candidate : undefined;
})();

describe('an older Node.js', () => {
  it(
    oldNode
      ? `Node 20 (${oldNode}) prints the sentence and exits 1`
      : 'skipped: no Node 20 (ROOST_TEST_OLD_NODE, /usr/bin/node)',
    { skip: oldNode === undefined && process.env.CI !== 'true' },
    () => {
      assert.ok(oldNode, 'CI provides Node 20 in ROOST_TEST_OLD_NODE (.ci/run)');
      const run = spawnSync(oldNode, ['dist/cli.js', 'serve'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', PORT: '0', ROOST_SMTP_PORT: '0', ROOST_DB: '/nonexistent/roost.db' },
      });
      assert.equal(run.status, 1, run.stderr);
      assert.match(run.stderr, SENTENCE);
      assert.doesNotMatch(run.stderr, /Segmentation|at file:/);
    },
  );

  it('a Node that reports 20.x gets the sentence before any native module loads', () => {
    // The version is faked before the entry loads; an addon loaded before the check would
    // show in the dlopen record.
    const preload = `
      Object.defineProperty(process.versions, 'node', { value: '20.19.0' });
      const dlopen = process.dlopen;
      process.dlopen = (module, file, ...rest) => {
        process.stderr.write('dlopen ' + file + '\\n');
        return dlopen(module, file, ...rest);
      };`;
    for (const entry of ['dist/cli.js', 'dist/index.js']) {
      const run = spawnSync(
        process.execPath,
        ['--import', `data:text/javascript,${encodeURIComponent(preload)}`, entry, 'serve'],
        { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', PORT: '0', ROOST_SMTP_PORT: '0' } },
      );
      assert.equal(run.status, 1, `${entry}: ${run.stderr}`);
      assert.match(run.stderr, SENTENCE, entry);
      assert.doesNotMatch(run.stderr, /dlopen/, entry);
    }
  });
});

const SERVER_PACKAGES = ['fastify', 'better-sqlite3', 'smtp-server', 'pg', 'pino', 'prom-client'];

/** The packages under node_modules that importing `specifier` resolves, in a fresh Node. */
function packagesLoadedBy(specifier: string): { packages: string[]; exports: string[] } {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = [];
    registerHooks({ resolve(s, c, next) { const r = next(s, c); urls.push(r.url); return r; } });
    const module = await import(${JSON.stringify(specifier)});
    const packages = urls.map((u) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(u)?.[1]).filter(Boolean);
    process.stdout.write(JSON.stringify({ packages: [...new Set(packages)], exports: Object.keys(module) }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return JSON.parse(out) as { packages: string[]; exports: string[] };
}

describe('the roost/client entry', () => {
  it('loads the client and none of the server: no fastify, better-sqlite3, smtp-server, pg, pino, prom-client', () => {
    const client = packagesLoadedBy('roost/client');
    assert.ok(client.exports.includes('RoostClient'), client.exports.join(', '));
    assert.ok(client.exports.includes('fromCredentials'));
    assert.deepEqual(
      client.packages.filter((p) => SERVER_PACKAGES.includes(p)),
      [],
    );
    // The package's main entry, which also starts servers, does load them: the check above can tell.
    const main = packagesLoadedBy('roost');
    assert.ok(main.packages.includes('fastify'), main.packages.join(', '));
  });

  it('declares its types, and its type declarations name no server module', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, { types?: string; default?: string }>;
    };
    const entry = pkg.exports['./client'];
    assert.ok(entry?.types && entry.default);
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const [, from] of text.matchAll(/from '([^']+)'/g)) {
        if (from.startsWith('.')) visit(join(dirname(file), from.replace(/\.js$/, '.d.ts')));
        else assert.ok(!SERVER_PACKAGES.includes(from), `${file} refers to ${from}`);
      }
    };
    visit(join(ROOT, entry.types));
    assert.ok(seen.size > 3, [...seen].join(', '));
  });
});

describe('the published package', () => {
  it('ships the built service, its types and docs, and no sources, tests, benchmarks, CI or source maps', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, PATH: `${NODE_BIN}:${process.env.PATH ?? ''}` },
      }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const files = packed[0].files.map((f) => f.path);
    for (const needed of [
      'package.json',
      'README.md',
      'bin/roost.js',
      'dist/cli.js',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/client-entry.js',
      'dist/client-entry.d.ts',
      'dist/web/manifest.json',
      'docs/scale-out.md',
    ])
      assert.ok(files.includes(needed), `${needed} is missing from the tarball`);
    const stray = files.filter((f) => /^(src|test|bench|scripts|\.ci)\/|\.map$/.test(f));
    assert.deepEqual(stray, []);
  });

  it('asks for no build when it is installed, and its bin runs as a command', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      bin: Record<string, string>;
    };
    // npm runs these for whoever installs the tarball; the build belongs before packing.
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      assert.equal(pkg.scripts[hook], undefined, `scripts.${hook}`);
    assert.match(pkg.scripts.prepack, /build/);
    const bin = join(ROOT, pkg.bin.roost);
    assert.match(readFileSync(bin, 'utf8'), /^#!\/usr\/bin\/env node\n/);
    const version = execFileSync(process.execPath, [bin, '--version'], { cwd: tmpdir(), encoding: 'utf8' });
    assert.equal(version.trim(), JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  });
});

describe('configuration names', () => {
  it('an unknown ROOST_ variable is a warning naming the closest known one; known and test variables are not', () => {
    const config = loadConfig({
      ROOST_SMPT_PORT: '2526',
      ROOST_MAX_BODY_BYTE: '1MiB',
      ROOST_SMTP_PORT: '0',
      ROOST_URL: 'http://x',
      ROOST_TEST_DATABASE_URL: 'postgres://x',
      OTHER: '1',
    });
    assert.deepEqual(config.warnings, [
      'ROOST_MAX_BODY_BYTE is not a Roost setting and is ignored; did you mean ROOST_MAX_BODY_BYTES? (README.md § Configuration)',
      'ROOST_SMPT_PORT is not a Roost setting and is ignored; did you mean ROOST_SMTP_PORT? (README.md § Configuration)',
    ]);
  });
});
