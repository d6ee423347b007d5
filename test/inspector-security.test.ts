// The inspector against the two leaks found in it: an email's HTML that makes the browser
// open a connection to a host of the sender's choosing (a tracking beacon with the viewer's
// address and time, even when the page's policy refuses the request itself), and "copy as
// curl" text that a shell would expand. Real Chromium, real SMTP, real shells.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { APPEARS_MS, browserSkip, DESKTOP, inspectUrl, launch, offline, sendMail, watch } from './inspector-browser.js';

declare const document: any;

/** A TCP listener that counts connections: any connection at all is the leak. */
async function countingListener(): Promise<{ server: Server; origin: string; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.on('error', () => {});
    socket.end('HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
  };
}

/** Every way an HTML message may make a browser reach out: loads, hints, links, forms, CSS. */
function beaconHtml(origin: string): string {
  return (
    `<html><head><meta http-equiv="refresh" content="5;url=${origin}/refresh">` +
    `<base href="${origin}/base/">` +
    `<link rel="dns-prefetch" href="${origin}"><link rel="preconnect" href="${origin}">` +
    `<link rel="prefetch" href="${origin}/prefetch"><link rel="stylesheet" href="${origin}/css">` +
    `<link rel="modulepreload" href="${origin}/module.js"><link rel="icon" href="${origin}/favicon.ico">` +
    `<style>@import url(${origin}/import.css); .bg{background:url(${origin}/bg.png)}</style>` +
    `<style>@font-face{font-family:x;src:url(${origin}/font.woff)} .set{background:image-set("${origin}/set.png" 1x)}</style></head>` +
    `<body background="${origin}/body.png"><h1 id="heading">Your invoice</h1>` +
    `<iframe src="${origin}/frame"></iframe><frameset><frame src="${origin}/frame2"></frameset>` +
    `<object data="${origin}/object"></object><embed src="${origin}/embed">` +
    `<img src="${origin}/pixel.gif" width="1" height="1"><img srcset="${origin}/1x.png 1x, ${origin}/2x.png 2x">` +
    `<picture><source srcset="${origin}/pic.webp"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></picture>` +
    `<video poster="${origin}/poster.png" src="${origin}/video.mp4"></video><audio src="${origin}/a.mp3"></audio>` +
    `<div class="bg" style="background-image:url('${origin}/inline.png')">styled</div>` +
    `<div style="background:u\\72l(${origin}/escaped.png)">escaped</div>` +
    `<svg><image href="${origin}/svg.png"/><a href="${origin}/svglink"><text>svg</text></a></svg>` +
    `<table background="${origin}/table.png"><tr><td>cell</td></tr></table>` +
    `<input type="image" src="${origin}/input.png" alt="go"><img src="data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'><image href='${origin}/in-svg.png'/></svg>">` +
    `<form action="${origin}/form" method="post"><input name="q" value="1"><button id="go">Send</button>` +
    `<button id="go2" formaction="${origin}/formaction">Send 2</button></form>` +
    `<p><a id="out" href="${origin}/link" ping="${origin}/ping">Pay now</a> ` +
    `<a id="top" href="${origin}/top" target="_top">open</a> <area href="${origin}/area"></p>` +
    `</body></html>`
  );
}

describe('an email in the inspector opens no connection anywhere', { skip: browserSkip }, () => {
  let server: TestServer;
  let browser: Browser;
  let beacon: Awaited<ReturnType<typeof countingListener>>;
  let control: Awaited<ReturnType<typeof countingListener>>;

  before(async () => {
    server = await startTestServer('sqlite', { smtp: { port: 0, dnsResolver: offline } });
    browser = await launch();
    beacon = await countingListener();
    control = await countingListener();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    beacon?.server.close();
    control?.server.close();
  });

  it('shows the HTML with every loading or navigating element and attribute removed, links as text, and zero connections after opening and clicking', async () => {
    const address = await createAddress(server.url, { name: 'beacons' });
    await sendMail(server, address.email, {
      from: 'billing@shop.example',
      subject: 'Your invoice',
      text: 'Your invoice is attached.',
      html: beaconHtml(beacon.origin),
    });
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    const seen = watch(page);
    await page.goto(inspectUrl(server, address, { token: address.token }));
    await page.click('[data-sequence="1"] button', { timeout: APPEARS_MS });
    const frame = page.frameLocator('iframe.email-html');
    assert.equal(await frame.locator('#heading').textContent(), 'Your invoice');
    // What reached the frame: nothing that loads or navigates, the links' targets as text.
    const left = await frame.locator('html').evaluate((root: any) => ({
      tags: [...root.querySelectorAll('iframe,frame,object,embed,link,meta,base,form,svg,video,audio,source,area')]
        .map((el: any) => el.tagName.toLowerCase())
        // The page's own policy element is the one meta allowed.
        .filter((tag: string, i: number, all: string[]) => !(tag === 'meta' && all.indexOf('meta') === i)),
      attributes: [...root.querySelectorAll('*')].flatMap((el: any) =>
        [...el.attributes]
          .filter(
            (a: any) =>
              /^(src|href|srcset|background|ping|poster|action|formaction|data|xlink:href)$/i.test(a.name) &&
              // An image inside the message itself is kept.
              !(el.tagName === 'IMG' && a.name === 'src' && a.value.startsWith('data:image/gif;base64,')),
          )
          .map((a: any) => `${el.tagName.toLowerCase()} ${a.name}`),
      ),
      styles: [...root.querySelectorAll('style,[style]')]
        .map((el: any) => (el.tagName === 'STYLE' ? el.textContent : el.getAttribute('style')))
        .filter((css: string) => /url|image-set|@import|\\/i.test(css)),
      inlineImages: root.querySelectorAll('img[src^="data:"]').length,
      text: root.querySelector('body').textContent,
    }));
    assert.deepEqual(left.tags, []);
    assert.deepEqual(left.attributes, []);
    assert.deepEqual(left.styles, []);
    assert.equal(left.inlineImages, 1);
    assert.ok(left.text.includes('Pay now'), left.text);
    assert.ok(left.text.includes(`${beacon.origin}/link`), 'a link shows where it points, as text');
    // Click where the links, buttons and form were.
    for (const target of ['#out', '#top', '#go', '#go2', '#heading']) await frame.locator(target).click();
    await frame.locator('#out').dblclick();

    // The same markup, unsanitized and pointed at the control listener, reaches it in this
    // browser: the constructs above are live ones, and once the control has been reached the
    // inspector's frame has had as long to reach the beacon.
    const plain = await context.newPage();
    await plain.setContent(beaconHtml(control.origin));
    await plain.waitForFunction(() => document.readyState === 'complete');
    for (let i = 0; control.connections() === 0 && i < 200; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(control.connections() > 0, 'the unsanitized HTML reaches its host: the check can see a connection');
    assert.equal(beacon.connections(), 0, 'the inspector opened a connection to the host named in the mail');
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(seen.dialogs, []);
    await context.close();
  });
});

describe('"copy as curl" is quoted for a POSIX shell', { skip: browserSkip }, () => {
  let server: TestServer;
  let browser: Browser;
  let address: CreatedAddress;
  let page: Page;
  const hostile = `it's !! $(touch /tmp/roost-curl-pwned) \`id\` "q" \\ $HOME`;

  before(async () => {
    server = await startTestServer('sqlite');
    browser = await launch();
    address = await createAddress(server.url, { name: 'curl' });
    const raw = await request(server.url, 'POST', `${address.inbox}?raw=1&type=${encodeURIComponent(hostile)}`, {
      rawBody: '{"a":1}',
      headers: { 'content-type': 'application/json', 'x-note': hostile },
    });
    assert.equal(raw.status, 202, raw.text);
    assert.equal(
      (await deliver(address.inbox, { type: hostile, source: hostile, data: { note: hostile } })).status,
      202,
    );
    // Without the inbox URL in the fragment the command names $INBOX_URL for the shell to fill.
    page = await (await browser.newContext({ viewport: DESKTOP })).newPage();
    await page.goto(inspectUrl(server, address, { token: address.token }));
    await page.waitForSelector('[data-sequence="2"]', { timeout: APPEARS_MS });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const copied = async (sequence: number) => {
    await page.click(`[data-sequence="${sequence}"] button`);
    await page.click('[data-action="curl"]');
    return (await page.textContent('.curl pre'))!;
  };

  for (const [shell, args] of [
    ['sh', ['-s']],
    // Bash reading commands as a person types them: with history, where "!!" would expand.
    ['bash with history expansion', ['--norc', '--noprofile', '-s']],
  ] as const) {
    it(`runs in ${shell} and stores the same type, source and bytes again, nothing expanded`, async () => {
      for (const sequence of [1, 2]) {
        const command = await copied(sequence);
        const before = (await listEvents(server.url, address)).body.events.length;
        const script = shell === 'sh' ? command : `set -o history -o histexpand\n${command}\n`;
        const child = promisify(execFile)(args[0] === '-s' ? 'sh' : 'bash', [...args], {
          env: { ...process.env, INBOX_URL: address.inbox },
        });
        child.child.stdin!.end(script);
        await child;
        const events = (await listEvents(server.url, address)).body.events;
        assert.equal(events.length, before + 1, 'one more event');
        const again = events.at(-1);
        const original = events[sequence - 1];
        assert.equal(again.type, hostile);
        if (sequence === 1) {
          assert.equal(again.data.body_base64, original.data.body_base64);
          assert.equal(again.data.headers['x-note'], hostile);
        } else {
          assert.deepEqual(again.data, original.data);
          assert.equal(again.source, hostile);
        }
      }
    });
  }
});
