// Roost judged by clients no one here wrote (docs/mcp.md): the official MCP conformance suite
// (@modelcontextprotocol/conformance, every server scenario) against /mcp and an
// address-bound mcp_url, reached through 127.0.0.1 while the base URL says localhost; and
// MCP Inspector's command line with the transport docs/mcp.md tells people to give it.
// The scenarios of capabilities Roost does not offer are in one baseline file, with reasons.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from './helpers/ports.js';
import { createAddress, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const CONFORMANCE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const INSPECTOR = join(
  ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'inspector',
  'clients',
  'launcher',
  'build',
  'index.js',
);
const BASELINE = join(import.meta.dirname, 'mcp-conformance.expected-failures.yaml');

/** The scenario names the baseline lists. */
const expectedFailures = readFileSync(BASELINE, 'utf8')
  .split('\n')
  .map((line) => /^\s*-\s*([\w-]+)/.exec(line)?.[1])
  .filter((name): name is string => name !== undefined);

/** Why a listed scenario may fail: a capability Roost lacks, a tool only the reference server has, or no session. */
const EXPECTED_REASON = /-32601|Method not found|Unknown tool|not found|session ID/i;

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
  details?: { message?: string };
}

describe('the official MCP conformance suite and MCP Inspector', () => {
  let server: TestServer;
  let port: number;
  let address: CreatedAddress;
  const dirs: string[] = [];
  before(async () => {
    port = await freePort();
    server = await startTestServer('sqlite', {
      env: { PORT: String(port), ROOST_BASE_URL: `http://localhost:${port}` },
    });
    address = await createAddress(server.url);
  });
  after(async () => {
    await server.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  for (const endpoint of ['/mcp', 'the address-bound mcp_url'] as const) {
    it(`passes every applicable scenario on ${endpoint}, through 127.0.0.1 with a localhost base URL`, async () => {
      const path = endpoint === '/mcp' ? '/mcp' : `/mcp/${address.id}`;
      const out = mkdtempSync(join(tmpdir(), 'roost-conformance-'));
      dirs.push(out);
      const url = `http://127.0.0.1:${port}${path}`;
      const args = [CONFORMANCE, 'server', '--suite', 'all', '--url', url, '-o', out, '--expected-failures', BASELINE];
      // Exit 0: every failure is in the baseline, and every baseline entry still fails.
      const result = await run(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }).catch(
        (error: { code?: number; stdout?: string }) => error,
      );
      assert.ok(!('code' in result) || result.code === undefined, `conformance failed:\n${(result as any).stdout}`);

      const scenarios = new Map<string, Check[]>();
      for (const dir of readdirSync(out)) {
        const name = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
        scenarios.set(name, JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) as Check[]);
      }
      assert.ok(scenarios.size >= 32, `ran ${scenarios.size} scenarios`);
      for (const name of ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection']) {
        const checks = scenarios.get(name) ?? [];
        assert.ok(
          checks.some((check) => check.status === 'SUCCESS'),
          name,
        );
        assert.ok(!checks.some((check) => check.status === 'FAILURE' || check.status === 'WARNING'), name);
      }
      // The expected failures fail for the reason the baseline gives, not for another.
      for (const name of expectedFailures) {
        for (const check of scenarios.get(name) ?? []) {
          if (check.status !== 'FAILURE' && check.status !== 'WARNING') continue;
          const said = `${check.errorMessage ?? ''} ${check.details?.message ?? ''}`;
          assert.match(said, EXPECTED_REASON, `${name}: ${said}`);
        }
      }
    });
  }

  /** MCP Inspector's CLI, keeping its files (catalog, storage) in `home`, not the user's. */
  const inspectorIn =
    (home: string) =>
    (...args: string[]) =>
      run(process.execPath, [INSPECTOR, '--cli', ...args], {
        env: { ...process.env, HOME: home, MCP_INSPECTOR_SECRET_STORE: 'memory' },
      });
  let home: string;
  before(() => {
    home = mkdtempSync(join(tmpdir(), 'roost-inspector-'));
    dirs.push(home);
  });

  it('the mcpServers entry of docs/mcp.md, as written, works in MCP Inspector', async () => {
    const doc = readFileSync(join(ROOT, 'docs', 'mcp.md'), 'utf8');
    const entry = [...doc.matchAll(/```json\n([\s\S]*?)```/g)]
      .map((block) => block[1])
      .find((text) => text.includes('"headers"'));
    assert.ok(entry, 'docs/mcp.md shows an mcpServers entry with headers');
    // Only the example's address, token and port are replaced: the rest is the doc's own text.
    const written = entry
      .replace(/http:\/\/localhost:3000\/mcp\/addr_\w+/, `http://localhost:${port}/mcp/${address.id}`)
      .replace('roost_read_…', address.token);
    const config = join(home, 'mcp-servers.json');
    writeFileSync(config, written);
    const result = await inspectorIn(home)(
      '--config',
      config,
      '--server',
      'roost',
      '--method',
      'tools/call',
      '--tool-name',
      'get_return_address',
    );
    const called = JSON.parse(result.stdout);
    assert.equal(called.isError ?? false, false, JSON.stringify(called));
    assert.equal(called.structuredContent.address.id, address.id);
  });

  it('MCP Inspector (CLI, --transport http) lists the tools and calls one, as docs/mcp.md says', async () => {
    const inspector = inspectorIn(home);
    const url = `http://127.0.0.1:${port}/mcp/${address.id}`;
    const auth = `Authorization: Bearer ${address.token}`;
    // The two commands of docs/mcp.md, as written there.
    const listed = JSON.parse(
      (await inspector(url, '--transport', 'http', '--header', auth, '--method', 'tools/list')).stdout,
    );
    assert.ok(listed.tools.some((tool: { name: string }) => tool.name === 'poll_events'));
    const polled = JSON.parse(
      (
        await inspector(
          url,
          '--transport',
          'http',
          '--header',
          auth,
          '--method',
          'tools/call',
          '--tool-name',
          'poll_events',
          '--tool-arg',
          'after=0',
        )
      ).stdout,
    );
    assert.equal(polled.isError ?? false, false, JSON.stringify(polled));
    assert.deepEqual(polled.structuredContent, { events: [], next_cursor: 0, has_more: false, latest_sequence: 0 });
  });
});
