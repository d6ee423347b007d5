// A browser MCP client on another origin (docs/mcp.md, "Browsers"): the official SDK client,
// bundled by esbuild, runs in a real Chromium page served from an origin listed in
// ROOST_MCP_ALLOWED_ORIGINS and drives Roost's tools across origins (CORS preflight, the
// Authorization header, the answers read); the same page from an origin not listed is refused.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { browserSkip, launch } from './helpers/browser.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// page.evaluate callbacks run in the browser, whose globals this Node-typed file does not see.
declare const window: any;

/** The SDK's browser client as one script that sets window.mcp. */
async function bundleClient(): Promise<string> {
  const result = await build({
    stdin: {
      contents:
        "import { Client } from '@modelcontextprotocol/sdk/client/index.js';\n" +
        "import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';\n" +
        'window.mcp = { Client, StreamableHTTPClientTransport };\n',
      resolveDir: import.meta.dirname,
      loader: 'js',
    },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}

describe('MCP from a browser page on another origin', { skip: browserSkip }, () => {
  let roost: TestServer;
  let pages: Server;
  let pagePort: number;
  let browser: Browser;

  before(async () => {
    const script = await bundleClient();
    pages = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(
        `<!doctype html><title>agent page</title><script>${script.replaceAll('</script', '<\\/script')}</script>`,
      );
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    pagePort = (pages.address() as AddressInfo).port;
    // Allowed: the page as 127.0.0.1; the same page as localhost is another origin, not allowed.
    roost = await startTestServer('sqlite', { env: { ROOST_MCP_ALLOWED_ORIGINS: `http://127.0.0.1:${pagePort}` } });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await roost?.close();
    await new Promise((resolve) => pages?.close(resolve));
  });

  /** Runs the SDK client in a page of `origin`: create over /mcp, then read over mcp_url with the header. */
  async function agentPage(origin: string) {
    const page = await browser.newPage();
    try {
      await page.goto(`${origin}/`);
      return await page.evaluate(async (roostUrl: string) => {
        const { Client, StreamableHTTPClientTransport } = window.mcp;
        try {
          const service = new Client({ name: 'browser-agent', version: '0.0.0' });
          await service.connect(new StreamableHTTPClientTransport(new URL('/mcp', roostUrl)));
          const created = (
            await service.callTool({ name: 'create_return_address', arguments: { name: 'from a page' } })
          ).structuredContent;
          await service.close();
          // The bound endpoint with the read token in the Authorization header: a preflighted request.
          const bound = new Client({ name: 'browser-agent', version: '0.0.0' });
          const boundUrl = new URL(new URL(created.endpoints.mcp_url).pathname, roostUrl);
          await bound.connect(
            new StreamableHTTPClientTransport(boundUrl, {
              requestInit: { headers: { Authorization: `Bearer ${created.credentials.read_token}` } },
            }),
          );
          const page = await bound.callTool({ name: 'poll_events', arguments: { after: 0 } });
          await bound.close();
          return { ok: true as const, id: created.address.id as string, page: page.structuredContent, error: '' };
        } catch (error) {
          return { ok: false as const, id: '', page: undefined, error: String(error) };
        }
      }, roost.url);
    } finally {
      await page.close();
    }
  }

  it('the SDK client in a page of an allowed origin creates an address and reads it with its token', async () => {
    const result = await agentPage(`http://127.0.0.1:${pagePort}`);
    assert.equal(result.ok, true, result.error);
    assert.match(result.id, /^addr_/);
    assert.deepEqual(result.page, { events: [], next_cursor: 0, has_more: false, latest_sequence: 0 });
  });

  it('the same page from an origin that is not allowed gets nothing', async () => {
    const result = await agentPage(`http://localhost:${pagePort}`);
    assert.equal(result.ok, false);
    assert.equal(result.id, '');
    assert.match(roost.logs(), /"statusCode":403/);
  });
});
