// The inspector page (GET /inspect/{id}) in a real browser: Debian's Chromium driven by
// playwright-core against a real Roost. Events delivered over HTTP and SMTP appear live,
// details open, acknowledging works, a view token gets a read-only page, and hostile
// payloads in every field neither run nor break the layout. The email and hostile-payload
// screenshots of docs/inspector.md are taken here (ROOST_TEST_SCREENSHOTS=docs writes them).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { INSPECTOR_CSP } from '../src/http/routes/inspect.js';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { ENGINES, engineSkipReason, startTestServer, type TestServer } from './helpers/server.js';
import {
  APPEARS_MS,
  applyFilter,
  browserSkip,
  DESKTOP,
  inspectUrl,
  launch,
  offline,
  PHONE,
  sendMail,
  sequences,
  showsSequences,
  shoot,
  watch,
} from './inspector-browser.js';

// page.evaluate callbacks run in the browser, whose globals this Node-typed file does not see.
declare const document: any, window: any, getComputedStyle: any;

describe('the inspector page is served with its safety headers and a small fingerprinted bundle', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(() => server?.close());

  it('answers /inspect/{id} with a static shell, a strict CSP and no inline script', async () => {
    const address = await createAddress(server.url, { name: 'headers' });
    assert.equal(address.response.endpoints.inspect_url, `${server.config.baseUrl}/inspect/${address.id}`);
    const page = await request(server.url, 'GET', `/inspect/${address.id}`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type')!, /^text\/html/);
    const csp = page.headers.get('content-security-policy')!;
    assert.equal(csp, INSPECTOR_CSP);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /default-src 'none'/);
    assert.doesNotMatch(csp, /unsafe-eval|script-src[^;]*unsafe-inline/);
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    // Every script is a file of ours; the HTML names the address nowhere (it is the same for all).
    const scripts = [...page.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    assert.match(scripts[0][1], /src="\/assets\/inspector-[A-Z0-9]+\.js"/);
    assert.equal(scripts[0][2], '');
    assert.doesNotMatch(page.text, new RegExp(address.id));
    const other = await request(server.url, 'GET', '/inspect/addr_unknown');
    assert.equal(other.text, page.text);
  });

  it('serves the assets fingerprinted and cacheable, under 100 KB gzipped together, and nothing else', async () => {
    const html = (await request(server.url, 'GET', '/inspect/addr_x')).text;
    const names = [...html.matchAll(/\/assets\/(inspector-[A-Z0-9]+\.(?:js|css))/g)].map((m) => m[1]);
    assert.equal(names.length, 2);
    let gzipped = 0;
    for (const name of names) {
      const res = await fetch(`${server.url}/assets/${name}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.match(res.headers.get('content-type')!, name.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      const body = Buffer.from(await res.arrayBuffer());
      assert.ok(body.length > 0);
      gzipped += gzipSync(body).length;
      assert.equal(gunzipSync(gzipSync(body)).length, body.length);
    }
    assert.ok(gzipped < 100 * 1024, `script + CSS are ${gzipped} bytes gzipped`);
    for (const path of ['/assets/manifest.json', '/assets/..%2Fcli.js', '/assets/inspector-NOPE.js']) {
      const res = await request(server.url, 'GET', path);
      assert.equal(res.status, 404, path);
      assert.equal(res.body.error.code, 'not_found', path);
    }
  });
});

for (const engine of ENGINES) {
  const skip = browserSkip || (await engineSkipReason(engine));
  describe(`the inspector in a browser, with a read token [${engine}]`, { skip }, () => {
    let server: TestServer;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let seen: ReturnType<typeof watch>;
    let address: CreatedAddress;
    const sockets = new Set<Socket>();

    before(async () => {
      server = await startTestServer(engine, { smtp: { port: 0, dnsResolver: offline } });
      server.roost.app.server.on('connection', (socket: Socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      });
      browser = await launch();
      context = await browser.newContext({ viewport: DESKTOP, colorScheme: 'light' });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
      page = await context.newPage();
      seen = watch(page);
      address = await createAddress(server.url, { name: 'Deploy callbacks', expires_in_seconds: 86_400 });
    });
    after(async () => {
      await browser?.close();
      await server?.close();
    });

    it('takes the token from the fragment, wipes it from the address bar, and never sends it in a URL', async () => {
      await page.goto(inspectUrl(server, address, { token: address.token, inbox: address.inbox }));
      await page.waitForSelector('[data-state="live"]', { timeout: APPEARS_MS });
      assert.equal(new URL(page.url()).hash, '');
      const stored = await page.evaluate(() => JSON.stringify(sessionStorage));
      assert.ok(stored.includes(address.token));
      assert.equal(await page.evaluate(() => localStorage.length), 0);
      assert.equal(await page.textContent('h1'), 'Deploy callbacks');
      assert.ok((await page.textContent('.address'))!.includes(address.email));
      // The inbox URL is masked until revealed.
      assert.equal(await page.getAttribute('[data-inbox]', 'data-inbox'), 'masked');
      assert.ok(!(await page.textContent('.address'))!.includes(address.inbox));
      await page.click('button:has-text("Reveal")');
      assert.equal(await page.textContent('[data-inbox]'), address.inbox);
      await page.click('button:has-text("Hide")');
      const clipboard = () => page.evaluate(() => (navigator as any).clipboard.readText() as Promise<string>);
      await page.click('.address dd:has([data-inbox]) button:has-text("Copy")');
      assert.equal(await clipboard(), address.inbox);
      await page.click(`.address dd:has-text("${address.email}") button:has-text("Copy")`);
      assert.equal(await clipboard(), address.email);
    });

    it('shows an event delivered over HTTP without a reload, with its fields', async () => {
      const sent = await deliver(
        address.inbox,
        {
          type: 'deploy.finished',
          data: { ok: true, build: { id: 42, steps: ['test', 'ship'] } },
          metadata: { env: 'prod' },
        },
        { 'idempotency-key': 'deploy-42' },
      );
      assert.equal(sent.status, 202);
      await page.waitForSelector('[data-sequence="1"]', { timeout: APPEARS_MS });
      const row = (await page.textContent('[data-sequence="1"]'))!;
      for (const part of ['#1', 'deploy.finished', 'https', 'new']) assert.ok(row.includes(part), `${part} in ${row}`);
      await page.click('[data-sequence="1"] button');
      const detail = (await page.textContent('.detail'))!;
      for (const part of ['deploy-42', 'env', 'prod', '"steps"', '"ship"', 'not yet'])
        assert.ok(detail.includes(part), part);
    });

    it('reproduces a raw capture with "copy as curl": same bytes, same headers', async () => {
      const body = '{"zen":"Design for failure.","hook_id":7}\n';
      const raw = await request(server.url, 'POST', `${address.inbox}?raw=1`, {
        rawBody: body,
        headers: { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-hub-signature-256': 'sha256=abc' },
      });
      assert.equal(raw.status, 202);
      await page.waitForSelector('[data-sequence="2"]', { timeout: APPEARS_MS });
      await page.click('[data-sequence="2"] button');
      const detail = (await page.textContent('.detail'))!;
      assert.ok(detail.includes('x-github-event') && detail.includes('sha256=abc'));
      const hex = (await page.textContent('pre.hex'))!;
      assert.match(hex, /^00000000 {2}7b 22 7a 65 6e 22/);
      await page.click('[data-action="curl"]');
      const command = (await page.textContent('.curl pre'))!;
      assert.ok(command.includes(address.inbox), 'the command uses the inbox URL the page was given');
      // Run it: the service stores the same bytes once more, as event 3.
      // Asynchronously: the server under test answers curl from this same process.
      await promisify(execFile)('bash', ['-c', command]);
      const page3 = await listEvents(server.url, address, 'after=2');
      assert.equal(page3.body.events.length, 1);
      const again = page3.body.events[0].data;
      assert.equal(Buffer.from(again.body_base64, 'base64').toString(), body);
      assert.equal(again.headers['x-github-event'], 'ping');
      assert.equal(again.headers['x-hub-signature-256'], 'sha256=abc');
      await page.waitForSelector('[data-sequence="3"]', { timeout: APPEARS_MS });
    });

    it('shows an email delivered over SMTP: sender, verdict, text, sandboxed HTML, attachments', async () => {
      await sendMail(server, address.email, {
        from: '"Build Bot" <bot@ci.example>',
        subject: 'Build 42 passed',
        text: 'All 118 tests passed.',
        html: '<h1 style="color:#0a0">Build 42 passed</h1><p>All <b>118</b> tests passed.</p>',
        attachments: [{ filename: 'report.txt', content: 'ok\n' }],
      });
      await page.waitForSelector('[data-sequence="4"]', { timeout: APPEARS_MS });
      await page.click('[data-sequence="4"] button');
      const detail = (await page.textContent('.detail'))!;
      for (const part of [
        'email.received',
        'Build Bot <bot@ci.example>',
        address.email,
        'Build 42 passed',
        'sender none',
        'All 118 tests passed.',
        'report.txt',
        '3 B',
      ])
        assert.ok(detail.includes(part), `${part} in the detail`);
      assert.equal(await page.getAttribute('iframe.email-html', 'sandbox'), '');
      const frame = page.frameLocator('iframe.email-html');
      assert.equal(await frame.locator('h1').textContent(), 'Build 42 passed');
      assert.equal(await page.$('[data-action="curl"]'), null, 'mail is not an HTTP request');
      await shoot(page, 'desktop-email', true);
    });

    it('acknowledges one event, then everything up to a later one', async () => {
      await page.click('[data-sequence="1"] button');
      await page.click('[data-action="ack"]');
      await page.waitForSelector('[data-sequence="1"] .badge.acked', { timeout: APPEARS_MS });
      let events = (await listEvents(server.url, address)).body.events;
      assert.ok(events[0].acknowledged_at);
      assert.ok(!events[1].acknowledged_at);
      await page.click('[data-sequence="3"] button');
      await page.click('[data-action="ack-up-to"]');
      await page.waitForSelector('[data-sequence="3"] .badge.acked', { timeout: APPEARS_MS });
      events = (await listEvents(server.url, address)).body.events;
      assert.deepEqual(
        events.map((event: any) => Boolean(event.acknowledged_at)),
        [true, true, true, false],
      );
      assert.ok((await page.textContent('.notice'))!.includes('Acknowledged 2 events'));
      await page.click('[data-sequence="1"] button');
    });

    it('filters by type and searches the loaded events', async () => {
      await applyFilter(page, 'type', 'email.received');
      assert.deepEqual(await showsSequences(page, [4]), [4]);
      await applyFilter(page, 'type', '');
      await showsSequences(page, [4, 3, 2, 1]);
      await page.fill('.filters input[name=text]', 'design for FAILURE');
      assert.deepEqual(await sequences(page), [3, 2]);
      await page.fill('.filters input[name=text]', '');
      assert.deepEqual(await sequences(page), [4, 3, 2, 1]);
    });

    it('moves through the list with the keyboard and closes the detail with Escape', async () => {
      await page.focus('[data-sequence="4"] button');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      assert.equal(await page.getAttribute('.detail', 'data-detail-sequence'), '2');
      await page.keyboard.press('Escape');
      assert.equal(await page.$('.detail'), null);
    });

    it('resumes after a dropped connection from the last sequence: nothing missed, nothing twice', async () => {
      const streamsBefore = seen.urls.filter((url) => url.includes('/events/stream')).length;
      // Cut every connection the browser holds to the server, the stream's included.
      for (const socket of sockets) socket.destroy();
      assert.equal((await deliver(address.inbox, { type: 'while.dropped' })).status, 202);
      await page.waitForSelector('[data-sequence="5"]', { timeout: APPEARS_MS });
      await page.waitForSelector('[data-state="live"]', { timeout: APPEARS_MS });
      assert.deepEqual(await sequences(page), [5, 4, 3, 2, 1]);
      const streams = seen.urls.filter((url) => url.includes('/events/stream'));
      assert.equal(streams.length, streamsBefore + 1, 'one reconnection');
      assert.match(streams.at(-1)!, /\/events\/stream\?after=4$/);
    });

    it('keeps the token in the tab across a reload', async () => {
      await page.reload();
      await page.waitForSelector('[data-sequence="5"]', { timeout: APPEARS_MS });
      assert.deepEqual(await sequences(page), [5, 4, 3, 2, 1]);
      const withToken = seen.urls.filter((url) => url.includes(address.token) || url.includes('roost_read_'));
      assert.deepEqual(withToken, [], 'no request URL carries the token');
      assert.deepEqual(seen.errors, []);
      assert.deepEqual(seen.dialogs, []);
    });

    it('works at phone width, in dark mode', async () => {
      const phone = await browser.newContext({ viewport: PHONE, colorScheme: 'dark', isMobile: true, hasTouch: true });
      const small = await phone.newPage();
      await small.goto(inspectUrl(server, address, { token: address.token, inbox: address.inbox }));
      await small.waitForSelector('[data-sequence="5"]', { timeout: APPEARS_MS });
      assert.ok(await small.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
      await small.click('[data-sequence="2"] button');
      assert.equal(await small.isVisible('.list-pane'), false, 'on a phone the detail takes the screen');
      assert.ok(await small.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
      const background = await small.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.notEqual(background, 'rgb(255, 255, 255)', 'dark mode');
      await phone.close();
    });

    it('deletes the address after a confirmation, and says so', async () => {
      await page.click('[data-action="delete"]');
      assert.equal(
        (await request(server.url, 'GET', `/api/v1/addresses/${address.id}`, { token: address.token })).status,
        200,
      );
      await page.click('[data-action="delete-confirm"]');
      await page.waitForSelector('.ended', { timeout: APPEARS_MS });
      assert.equal(
        (await request(server.url, 'GET', `/api/v1/addresses/${address.id}`, { token: address.token })).status,
        404,
      );
      assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    });
  });
}

describe('the inspector with a view token is read-only', { skip: browserSkip }, () => {
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    server = await startTestServer('sqlite');
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('hides every action but still follows the events live', async () => {
    const address = await createAddress(server.url, { name: 'shared view' });
    await deliver(address.inbox, { type: 'first' });
    const made = await request(server.url, 'POST', `/api/v1/addresses/${address.id}/view-tokens`, {
      token: address.token,
      body: { label: 'inspector test' },
    });
    assert.equal(made.status, 201, made.text);
    const viewToken = made.body.view_token.token as string;
    const context = await browser.newContext({ viewport: DESKTOP });
    const sentTokens = new Set<string>();
    context.on('request', (sent) => {
      if (sent.url().includes('/api/v1/')) sentTokens.add(sent.headers().authorization ?? '');
    });
    const page = await context.newPage();
    await page.goto(inspectUrl(server, address, { token: viewToken }));
    await page.waitForSelector('[data-sequence="1"]', { timeout: APPEARS_MS });
    assert.deepEqual([...sentTokens], [`Bearer ${viewToken}`], 'the page reads with the view token itself');
    assert.equal(await page.getAttribute('[data-mode]', 'data-mode'), 'view');
    assert.ok((await page.textContent('.badge.mode'))!.includes('read-only'));
    assert.equal(await page.$('[data-action="delete"]'), null);
    await page.click('[data-sequence="1"] button');
    assert.equal(await page.$('[data-action="ack"]'), null);
    assert.equal(await page.$('[data-action="ack-up-to"]'), null);
    assert.ok(await page.$('[data-action="curl"]'), 'reading actions stay');
    await deliver(address.inbox, { type: 'second' });
    await page.waitForSelector('[data-sequence="2"]', { timeout: APPEARS_MS });
    await context.close();
  });

  it('asks for a credential when none is given, and refuses a wrong one', async () => {
    const address = await createAddress(server.url, { name: 'form' });
    const page = await browser.newPage();
    await page.goto(`${server.url}/inspect/${address.id}`);
    await page.waitForSelector('form.token-form');
    await page.fill('#credential', 'roost_read_wrong');
    await page.click('form.token-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('form.token-form [role=alert]')?.textContent, null, {
      timeout: APPEARS_MS,
    });
    assert.match((await page.textContent('form.token-form [role=alert]'))!, /not valid|may not read/);
    // The whole creation response works too, and brings the inbox URL.
    await page.fill(
      '#credential',
      JSON.stringify({ ...address.response, endpoints: { ...address.response.endpoints, inbox_url: address.inbox } }),
    );
    await page.click('form.token-form button[type=submit]');
    await page.waitForSelector('[data-state="live"]', { timeout: APPEARS_MS });
    assert.equal(await page.getAttribute('[data-inbox]', 'data-inbox'), 'masked');
    await page.close();
  });
});

describe('hostile payloads in an inspector neither run nor break the layout', { skip: browserSkip }, () => {
  let server: TestServer;
  let browser: Browser;
  let canary: Server;
  let canaryUrl: string;
  const canaryHits: string[] = [];

  before(async () => {
    server = await startTestServer('sqlite', { smtp: { port: 0, dnsResolver: offline } });
    browser = await launch();
    // Stands for the rest of the internet: any request reaching it is a leak.
    canary = createServer((req, res) => {
      canaryHits.push(`${req.method} ${req.url}`);
      res.end('x');
    });
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    canaryUrl = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`;
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((resolve) => canary?.close(resolve));
  });

  it('shows script tags, event handlers, javascript: links, RTL overrides and a 10,000-character type as text', async () => {
    const address = await createAddress(server.url, { name: '<img src=x onerror="window.__pwned=1">' });
    const xss = `<img src=${canaryUrl}/img onerror="window.__pwned=1"><script>window.__pwned=1</script>`;
    const link = `<a href="javascript:window.__pwned=1">click</a>`;
    const rtl = 'invoice\u202Efdp.exe';
    assert.equal(
      (
        await deliver(
          address.inbox,
          {
            type: `${xss}${rtl}`,
            source: `<svg onload="window.__pwned=1">`,
            data: { html: xss, link, [xss]: [link, { deeper: `javascript:window.__pwned=1` }], rtl },
            metadata: { [xss]: link, rtl },
          },
          { 'idempotency-key': '<script>window.__pwned=1</script>' },
        )
      ).status,
      202,
    );
    assert.equal((await deliver(address.inbox, { type: 'T'.repeat(10_000), source: 'S'.repeat(5_000) })).status, 202);
    const raw = await request(server.url, 'POST', `${address.inbox}?raw=1&type=${encodeURIComponent(xss)}`, {
      rawBody: `<html><body onload="window.__pwned=1">${xss}${link}</body></html>`,
      headers: { 'content-type': 'text/html', 'x-evil': xss, 'x-long': 'h'.repeat(3000) },
    });
    assert.equal(raw.status, 202);
    await sendMail(server, address.email, {
      from: { name: `${xss}\u202E`, address: 'attacker@evil.example' },
      subject: `${xss} ${rtl}`,
      text: `${xss} ${link}`,
      html:
        `<html><head><meta http-equiv="refresh" content="0;url=${canaryUrl}/refresh">` +
        `<link rel="stylesheet" href="${canaryUrl}/css"><style>body{background:url(${canaryUrl}/bg)}</style></head>` +
        `<body onload="window.top.__pwned=1"><script>window.top.__pwned=1;fetch('${canaryUrl}/script')</script>` +
        `<h1>Totally safe</h1><img src="${canaryUrl}/pixel.png"><img src=x onerror="fetch('${canaryUrl}/onerror')">` +
        `<form action="${canaryUrl}/form" method="post"><input name="q" value="1"><button id="go">Send</button></form>` +
        `<a id="js" href="javascript:fetch('${canaryUrl}/jslink')">click</a>` +
        `<a id="out" href="${canaryUrl}/link" target="_top">out</a>` +
        `<iframe src="${canaryUrl}/frame"></iframe><object data="${canaryUrl}/object"></object></body></html>`,
      attachments: [{ filename: `${xss}.html`, content: xss, contentType: 'text/html' }],
    });

    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    const seen = watch(page);
    await page.goto(inspectUrl(server, address, { token: address.token }));
    await page.waitForSelector('[data-sequence="4"]', { timeout: APPEARS_MS });

    const noLeak = async () => {
      const pwned = await page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned);
      assert.equal(pwned, undefined, 'a payload ran');
      // The main document holds only our markup: one script of ours, no images, no handlers.
      const foreign = await page.evaluate(() => ({
        scripts: [...document.scripts].map((s) => s.src),
        images: document.images.length,
        handlers: [...document.querySelectorAll('*')].flatMap((el) =>
          [...el.attributes].filter((a) => a.name.startsWith('on')).map((a) => `${el.tagName} ${a.name}`),
        ),
        links: [...document.querySelectorAll('a')].map((a) => a.href),
        frames: [...document.querySelectorAll('iframe')].map((f) => f.getAttribute('sandbox')),
      }));
      assert.equal(foreign.scripts.length, 1);
      assert.match(foreign.scripts[0], /\/assets\/inspector-[A-Z0-9]+\.js$/);
      assert.equal(foreign.images, 0);
      assert.deepEqual(foreign.handlers, []);
      assert.deepEqual(foreign.links, []);
      for (const sandbox of foreign.frames) assert.equal(sandbox, '');
      assert.ok(
        await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
        'the page grew wider than the window',
      );
    };

    // The list shows the hostile strings as text, the overrides spelled out.
    const list = (await page.textContent('.events'))!;
    assert.ok(list.includes(`<img src=${canaryUrl}/img onerror="window.__pwned=1">`));
    assert.ok(list.includes('invoice⟨U+202E⟩fdp.exe'));
    assert.equal(await page.textContent('h1'), '<img src=x onerror="window.__pwned=1">');
    await noLeak();

    for (const sequence of [1, 2, 3, 4]) {
      await page.click(`[data-sequence="${sequence}"] button`);
      await page.waitForSelector(`[data-detail-sequence="${sequence}"]`);
      await noLeak();
    }
    assert.equal(await page.$$eval('.detail h1', (found) => found.length), 0, 'the HTML is only in the frame');
    const frame = page.frameLocator('iframe.email-html');
    assert.equal(await frame.locator('h1').textContent(), 'Totally safe');
    // Clicks inside the frame go nowhere: no script for javascript:, no forms, no navigation.
    await frame.locator('#js').click();
    await frame.locator('#go').click();
    await frame.locator('#out').click({ noWaitAfter: true });
    await page.setViewportSize(PHONE);
    await noLeak();
    await page.waitForTimeout(1000);
    assert.deepEqual(canaryHits, [], 'nothing may reach another origin');
    assert.deepEqual(seen.dialogs, []);
    assert.deepEqual(seen.errors, []);
    const elsewhere = seen.loaded.filter((url) => !url.startsWith(`${server.url}/`) && !url.startsWith('data:'));
    assert.deepEqual(elsewhere, []);
    await page.setViewportSize(DESKTOP);
    await page.click('[data-sequence="1"] button');
    await shoot(page, 'desktop-hostile');
    await context.close();
  });
});
