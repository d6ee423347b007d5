// GET /inspect/{addressId}: the inspector page, where a person watches an address's events
// in a browser; GET /: a short page saying what this service is, for a person who opens its
// bare URL; and GET /assets/{file}: the inspector's script and stylesheet, built from src/web into
// dist/web by `npm run build`. The page is the same static shell for every address (it reads
// the id from its own URL and the token from its fragment or form), so nothing sent to the
// server is ever reflected into it. Every byte it shows comes from strangers: the headers
// below keep it from running anything but its own script.
import { existsSync, readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors } from '../../core/errors.js';
import { htmlPage } from '../html-page.js';

/** dist/web, from src/http/routes (tests through tsx) as from dist/http/routes (the build). */
const WEB_DIR = new URL('../../../dist/web/', import.meta.url);

interface Manifest {
  script: string;
  style: string;
}

interface Asset {
  body: Buffer;
  type: string;
}

/**
 * `style-src 'unsafe-inline'` is for the HTML of an email, shown in a sandboxed srcdoc frame
 * that inherits this policy: its own styles apply, while the page itself never holds markup
 * from event data. Images may be data: URLs only, so a message cannot call home.
 */
export const INSPECTOR_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function setSecurityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', INSPECTOR_CSP)
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cross-origin-resource-policy', 'same-origin');
}

function pageHtml(manifest: Manifest): string {
  return htmlPage(
    `<meta name="color-scheme" content="light dark">
<title>Roost inspector</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/${manifest.style}">
<script type="module" src="/assets/${manifest.script}"></script>`,
    '<div id="app"><noscript>The inspector needs JavaScript.</noscript></div>',
  );
}

/** GET /: static, names no address and reflects nothing from the request. */
const HOME_HTML = htmlPage(
  `<meta name="color-scheme" content="light dark">
<title>Roost: return addresses for software agents</title>
<link rel="icon" href="data:,">
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 42rem; margin: 8vh auto; padding: 0 16px; }
code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.9em; }
a { color: LinkText; }
</style>`,
  `<main>
<h1>Roost</h1>
<p>This service gives short-lived software agents a <strong>return address</strong>: an email
address, a secret inbox URL that other services POST to, and a durable, ordered queue of the
events that arrive, read with a token over REST, Server-Sent Events, MCP or a command line.
A person watches an address's events at <code>/inspect/{address id}</code>, with its token.</p>
<h2>Start here</h2>
<ul>
<li><a href="/llms.txt">/llms.txt</a>: how to use it, in one page, for agents and people
(create an address, deliver, read, acknowledge, email, MCP).</li>
<li><a href="/api/v1/openapi.json">/api/v1/openapi.json</a>: the REST interface, as OpenAPI 3.1.</li>
<li><code>POST /api/v1/addresses</code> creates an address; its response holds the token and
the inbox URL, shown once.</li>
</ul>
<p>The documentation (<code>docs/</code>: the interface reference, webhooks and streaming,
email, MCP, the inspector, the command line) comes with the service's source.</p>
</main>`,
);

/** Its one style sheet is inline; nothing else may load or run. */
const HOME_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The built page, or undefined when `npm run build` has not built it. */
function loadBuiltPage(): { html: string; assets: Map<string, Asset> } | undefined {
  const manifestUrl = new URL('manifest.json', WEB_DIR);
  if (!existsSync(manifestUrl)) return undefined;
  const manifest = JSON.parse(readFileSync(manifestUrl, 'utf8')) as Manifest;
  const assets = new Map<string, Asset>([
    [
      manifest.script,
      { body: readFileSync(new URL(manifest.script, WEB_DIR)), type: 'text/javascript; charset=utf-8' },
    ],
    [manifest.style, { body: readFileSync(new URL(manifest.style, WEB_DIR)), type: 'text/css; charset=utf-8' }],
  ]);
  return { html: pageHtml(manifest), assets };
}

export async function inspectRoutes(app: FastifyInstance): Promise<void> {
  const built = loadBuiltPage();
  const notBuilt = () => errors.inspectorNotBuilt();

  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    setSecurityHeaders(reply)
      .header('content-security-policy', HOME_CSP)
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(HOME_HTML),
  );

  app.get('/inspect/:addressId', { schema: { hide: true } }, async (_request, reply) => {
    if (!built) throw notBuilt();
    // Revalidated each time: the page names the current fingerprinted assets.
    return setSecurityHeaders(reply)
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(built.html);
  });

  // Only the files of the manifest are served: a name is a key, never a path.
  app.get<{ Params: { file: string } }>('/assets/:file', { schema: { hide: true } }, async (request, reply) => {
    const asset = built?.assets.get(request.params.file);
    if (!asset) throw errors.assetNotFound();
    return setSecurityHeaders(reply)
      .header('cache-control', 'public, max-age=31536000, immutable')
      .type(asset.type)
      .send(asset.body);
  });
}
