// The inspector as a person uses it, in real Chromium against a real Roost with thirty
// varied events: the detail in view wherever the row was (desktop and phone) with focus
// moved to it and back, acknowledgements made elsewhere shown live, a first-event guide on
// an empty address, binary bodies in hex, token errors from the link, previews, filters and
// export, GET /, and axe-core finding no serious or critical violation in light and dark.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createAddress, deliver, listEvents, request, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
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
  shoot,
  showsSequences,
  watch,
} from './inspector-browser.js';

// page.evaluate callbacks run in the browser, whose globals this Node-typed file does not see.
declare const document: any, window: any, axe: any;

const AXE_SCRIPT = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
/** The bound for an acknowledgement made elsewhere to show. */
const ACK_SHOWS_MS = 3_000;
const BINARY = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x81, 0x1b, 0x00, 0xc3, 0x28, 0xa0, 0xa1, 0xf0, 0x28, 0x8c, 0xbc]);

/** Whether the element's box lies within the window, top and bottom. */
const inViewport = (page: Page, selector: string) =>
  page.$eval(selector, (element: any) => {
    const box = element.getBoundingClientRect();
    return {
      top: box.top,
      bottom: box.bottom,
      height: window.innerHeight,
      inside: box.top >= 0 && box.bottom <= window.innerHeight,
    };
  });

/** axe-core at its defaults on the page as it is: no serious or critical violation. */
async function audit(page: Page, what: string): Promise<void> {
  if (!(await page.evaluate(() => typeof axe !== 'undefined'))) await page.addScriptTag({ path: AXE_SCRIPT });
  const result = await page.evaluate(() => axe.run(document));
  const bad = result.violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id} (${v.impact}): ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
  assert.deepEqual(bad, [], what);
}

/** The row whose button holds the focus, if one does. */
const focusedRow = (page: Page) =>
  page.evaluate(() => document.activeElement?.closest('[data-sequence]')?.getAttribute('data-sequence') ?? null);
/** The focused row once focus has come back to `sequence` (the page moves it after its render), else the one focused. */
const focusReturnsTo = (page: Page, sequence: string) =>
  page
    .waitForFunction(
      (wanted) => document.activeElement?.closest('[data-sequence]')?.getAttribute('data-sequence') === wanted,
      sequence,
      { timeout: 5_000 },
    )
    .then(
      () => sequence,
      () => focusedRow(page),
    );

describe('the inspector as a person uses it', { skip: browserSkip }, () => {
  let server: TestServer;
  let browser: Browser;
  let address: CreatedAddress;
  /** Sequence of each kind of event in the fixture. */
  const at: Record<string, number> = {};

  before(async () => {
    server = await startTestServer('sqlite', { smtp: { port: 0, dnsResolver: offline } });
    browser = await launch();
    address = await createAddress(server.url, { name: 'Thirty events' });
    for (let i = 1; i <= 30; i++) {
      let sent;
      if (i === 5) {
        sent = await request(server.url, 'POST', `${address.inbox}?raw=1&type=upload.binary`, {
          rawBody: BINARY,
          headers: { 'content-type': 'application/octet-stream' },
        });
      } else if (i === 7) {
        sent = await request(server.url, 'POST', `${address.inbox}?raw=1&type=sms.received`, {
          rawBody: 'From=%2B15550100&Body=Reply+YES+to+confirm',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
      } else if (i % 4 === 0) {
        sent = await request(server.url, 'POST', `${address.inbox}?raw=1&type=github.pull_request`, {
          rawBody: JSON.stringify({ action: 'opened', number: i, pull_request: { title: `Fix #${i}` } }),
          headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request' },
        });
      } else {
        sent = await deliver(address.inbox, {
          type: i % 3 === 0 ? 'deploy.finished' : 'order.created',
          data: { id: `ord_${i}`, status: i % 2 ? 'paid' : 'pending', amount: i * 100, lines: [{ sku: 'a' }] },
        });
      }
      assert.equal(sent.status, 202, sent.text);
    }
    await sendMail(server, address.email, {
      from: '"Build Bot" <bot@ci.example>',
      subject: 'Build 42 passed',
      text: 'All tests passed.',
    });
    // Mail is stored once parsed: wait for it as the 31st event.
    for (let tries = 0; tries < 200; tries++) {
      if ((await listEvents(server.url, address)).body.events.length === 31) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const events = (await listEvents(server.url, address)).body.events;
    for (const event of events) at[event.type] ??= event.sequence;
    const ack = await request(server.url, 'POST', `/api/v1/addresses/${address.id}/events/${events[1].id}/ack`, {
      token: address.token,
    });
    assert.equal(ack.status, 200, ack.text);
    assert.equal(at['email.received'], 31);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const openPage = async (options: { viewport: typeof DESKTOP; dark?: boolean; fragment?: Record<string, string> }) => {
    const context = await browser.newContext({
      viewport: options.viewport,
      colorScheme: options.dark ? 'dark' : 'light',
      isMobile: options.viewport === PHONE,
      hasTouch: options.viewport === PHONE,
      // axe is injected as a script of its own, which the page's policy would refuse.
      bypassCSP: true,
    });
    const page = await context.newPage();
    const seen = watch(page);
    await page.goto(inspectUrl(server, address, options.fragment ?? { token: address.token, inbox: address.inbox }));
    await page.waitForSelector('[data-sequence="31"]', { timeout: APPEARS_MS });
    return { context, page, seen };
  };

  for (const [name, viewport] of [
    ['desktop 1280×900', DESKTOP],
    ['phone 390×844', PHONE],
  ] as const) {
    it(`on a ${name}, scrolling down and opening #12 shows its detail in view, focused; closing goes back to the row`, async () => {
      const { context, page } = await openPage({ viewport });
      const row = page.locator('[data-sequence="12"] button');
      await row.scrollIntoViewIfNeeded();
      assert.ok((await page.evaluate(() => window.scrollY)) > 200, 'the list was scrolled to reach #12');
      await row.click();
      await page.waitForSelector('[data-detail-sequence="12"]');
      const head = await inViewport(page, '.detail-head');
      assert.ok(head.inside, `the detail's header is at ${head.top}–${head.bottom} in a window ${head.height} high`);
      assert.ok((await inViewport(page, '[data-action="ack"]')).inside, 'and its buttons too');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'detail-heading');
      // On a phone the sheet covers the list and the address, which leave the tab order.
      assert.equal(await page.getAttribute('.list-pane', 'inert'), viewport === PHONE ? '' : null);
      await page.click('.detail-head button:has-text("Close")');
      assert.equal(await focusReturnsTo(page, '12'), '12');
      assert.ok((await inViewport(page, '[data-sequence="12"] button')).inside, 'the row is in view again');
      // The keyboard does the same: Enter opens, Escape closes, focus comes back.
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      await page.waitForSelector('[data-detail-sequence="11"]');
      assert.ok((await inViewport(page, '.detail-head')).inside);
      await page.keyboard.press('Escape');
      assert.equal(await focusReturnsTo(page, '11'), '11');
      await context.close();
    });
  }

  it('shows a binary body as its size and hex, never as U+FFFD', async () => {
    const { context, page } = await openPage({ viewport: DESKTOP });
    const sequence = at['upload.binary'];
    await page.click(`[data-sequence="${sequence}"] button`);
    const detail = (await page.textContent('.detail'))!;
    assert.ok(!detail.includes('\uFFFD'), 'no replacement character in the detail');
    assert.ok(!(await page.textContent('.events'))!.includes('\uFFFD'), 'nor in the list');
    assert.match((await page.textContent('[data-binary]'))!, /Binary: 15 bytes .*application\/octet-stream/);
    assert.match((await page.textContent('pre.hex'))!, /^00000000 {2}00 ff fe 80 81 1b 00 c3 28 a0 a1 f0 28 8c bc/);
    assert.match((await page.textContent(`[data-sequence="${sequence}"]`))!, /binary, 15 B/);
    await context.close();
  });

  it('shows the request line of a raw capture, previews in the rows and plural-correct counts', async () => {
    const { context, page } = await openPage({ viewport: DESKTOP });
    const pull = at['github.pull_request'];
    assert.match((await page.textContent(`[data-sequence="${pull}"] .preview`))!, /^POST action: opened · number: 4$/);
    assert.equal(await page.textContent('[data-sequence="31"] .preview'), '“Build 42 passed” from Build Bot');
    assert.equal(await page.textContent('[data-sequence="1"] .preview'), 'status: paid · id: ord_1 · amount: 100');
    assert.match((await page.textContent(`[data-sequence="${at['sms.received']}"] .preview`))!, /Body: Reply YES/);
    await page.click(`[data-sequence="${pull}"] button`);
    const line = (await page.textContent('[data-request-line]'))!;
    assert.equal(line, `POST /api/v1/inbox/${address.id}/••••••••?raw=1&type=github.pull_request`);
    assert.ok(!line.includes(address.inbox.split('/').at(-1)!), 'the inbox secret is not shown');
    const counts = await page.$$eval('.json-count', (spans) => spans.map((span) => span.textContent!.trim()));
    assert.ok(counts.includes('1 key'), counts.join(' | '));
    assert.ok(!counts.some((count) => /^1 (keys|items)$/.test(count)), counts.join(' | '));
    await context.close();
  });

  it('filters by type, source and text, and exports the shown events as JSON lines', async () => {
    const { context, page } = await openPage({ viewport: DESKTOP });
    await applyFilter(page, 'source', 'email');
    assert.deepEqual(await showsSequences(page, [31]), [31]);
    await applyFilter(page, 'source', '');
    await applyFilter(page, 'type', 'order.created');
    const all = (await listEvents(server.url, address)).body.events;
    const orders = all.filter((event: any) => event.type === 'order.created');
    await showsSequences(page, orders.map((event: any) => event.sequence).reverse());
    await page.fill('input[name=text]', '"pending"');
    const expected = orders
      .filter((event: any) => event.data.status === 'pending')
      .map((event: any) => event.sequence)
      .reverse();
    const shown = await showsSequences(page, expected);
    assert.deepEqual(shown, expected);
    assert.ok(shown.length > 2);
    assert.match(
      (await page.textContent('.filters .count'))!,
      new RegExp(`^${shown.length} of ${orders.length} matching events$`),
    );
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-action="export"]')]);
    const lines = readFileSync(await download.path(), 'utf8')
      .trimEnd()
      .split('\n');
    assert.deepEqual(
      lines.map((line) => JSON.parse(line).sequence),
      shown,
    );
    assert.equal(JSON.parse(lines[0]).address_id, address.id);
    await page.fill('input[name=text]', 'no such text anywhere');
    assert.match(
      (await page.textContent('.list-pane'))!,
      new RegExp(`None of the ${orders.length} loaded events matches these filters`),
    );
    await context.close();
  });

  // axe-core's rules at their defaults, on the list and on a detail, light and dark, desktop and phone.
  for (const viewport of [DESKTOP, PHONE])
    for (const dark of [false, true]) {
      const name = `${viewport === DESKTOP ? 'desktop' : 'phone'}-${dark ? 'dark' : 'light'}`;
      it(`axe-core finds no serious or critical violation: ${name}, list and detail`, async () => {
        const { context, page, seen } = await openPage({ viewport, dark });
        await audit(page, `${name} list`);
        await shoot(page, `${name}-list`);
        // A selected, acknowledged row (acknowledged in before()) is the case that failed contrast.
        await page.click('[data-sequence="2"] button');
        await page.waitForSelector('[data-sequence="2"] .badge.acked', { state: 'attached' });
        await audit(page, `${name} JSON detail, its row selected`);
        await page.click('.detail-head button:has-text("Close")');
        await page.click(`[data-sequence="${at['github.pull_request']}"] button`);
        await page.waitForSelector('[data-request-line]');
        await audit(page, `${name} raw capture detail`);
        await shoot(page, `${name}-detail`);
        assert.deepEqual(seen.errors, []);
        await context.close();
      });
    }
});

describe('an acknowledgement made elsewhere shows on the page', { skip: browserSkip }, () => {
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

  it('updates the row from an `ack` message on the stream (the stream answered by the test)', async () => {
    const address = await createAddress(server.url, { name: 'acks, page side' });
    assert.equal((await deliver(address.inbox, { type: 'job.done' })).status, 202);
    const event = (await listEvents(server.url, address)).body.events[0];
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    // The stream as the server will send it: the event, then its acknowledgement.
    await page.route('**/events/stream?*', (route) =>
      route.fulfill({
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' },
        body:
          `id: 1\ndata: ${JSON.stringify(event)}\n\n` +
          `event: ack\ndata: ${JSON.stringify({ id: event.id, sequence: 1, acknowledged_at: '2026-11-26T09:00:00.000Z' })}\n\n` +
          // One that names an event the page does not hold, and one that is not JSON: both ignored.
          `event: ack\ndata: {"id":"evt_nope","sequence":99,"acknowledged_at":"2026-11-26T09:00:00.000Z"}\n\n` +
          `event: ack\ndata: not json\n\n`,
      }),
    );
    await page.goto(inspectUrl(server, address, { token: address.token }));
    await page.waitForSelector('[data-sequence="1"] .badge.acked', { timeout: APPEARS_MS });
    await page.click('[data-sequence="1"] button');
    assert.equal(await page.textContent('[data-action="ack"]'), 'Acknowledged');
    assert.deepEqual(await sequences(page), [1]);
    await context.close();
  });

  it('updates the row within 3 s when the agent acknowledges through the API', async () => {
    const address = await createAddress(server.url, { name: 'acks, end to end' });
    assert.equal((await deliver(address.inbox, { type: 'job.done' })).status, 202);
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    await page.goto(inspectUrl(server, address, { token: address.token }));
    await page.waitForSelector('[data-sequence="1"] .badge.new', { timeout: APPEARS_MS });
    const event = (await listEvents(server.url, address)).body.events[0];
    const acked = await request(server.url, 'POST', `/api/v1/addresses/${address.id}/events/${event.id}/ack`, {
      token: address.token,
    });
    assert.equal(acked.status, 200, acked.text);
    try {
      await page.waitForSelector('[data-sequence="1"] .badge.acked', { timeout: ACK_SHOWS_MS });
    } finally {
      await context.close();
    }
  });
});

describe('an address with no events, and links that carry a bad token', { skip: browserSkip }, () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  before(async () => {
    server = await startTestServer('sqlite', { smtp: { port: 0, dnsResolver: offline } });
    browser = await launch();
    context = await browser.newContext({ viewport: DESKTOP, bypassCSP: true });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('tells how to send a first event without the inbox URL: a placeholder and where to find it, the email address', async () => {
    const address = await createAddress(server.url, { name: 'empty' });
    const page = await context.newPage();
    await page.goto(inspectUrl(server, address, { token: address.token }));
    await page.waitForSelector('[data-empty]', { timeout: APPEARS_MS });
    const text = (await page.textContent('.list-pane'))!;
    for (const part of [
      'No events yet',
      'curl -sS -X POST "$INBOX_URL"',
      'endpoints.inbox_url',
      'response that created this address',
      address.email,
      'appears here as it arrives',
    ])
      assert.ok(text.includes(part), `${part} in: ${text}`);
    assert.ok(!text.includes('No events match'));
    await audit(page, 'the empty state');
    await shoot(page, 'desktop-empty');
    await page.close();
  });

  it('with the inbox URL, shows a command that works: run in sh, its event appears on the page', async () => {
    const address = await createAddress(server.url, { name: 'empty, with inbox' });
    const page = await context.newPage();
    await page.goto(inspectUrl(server, address, { token: address.token, inbox: address.inbox }));
    await page.waitForSelector('[data-empty]', { timeout: APPEARS_MS });
    const command = (await page.textContent('.empty-state pre'))!;
    assert.ok(command.includes(`'${address.inbox}'`), command);
    const shell = promisify(execFile)('sh', ['-s']);
    shell.child.stdin!.end(command);
    await shell;
    await page.waitForSelector('[data-sequence="1"]', { timeout: APPEARS_MS });
    assert.match((await page.textContent('[data-sequence="1"]'))!, /hello/);
    assert.equal(await page.$('[data-empty]'), null);
    await page.close();
  });

  for (const [fragment, said] of [
    [{ token: 'roost_read_abc' }, /malformed/],
    [{ token: '' }, /empty/],
    [{ tokn: 'roost_read_x' }, /no token/],
  ] as const) {
    it(`shows why the link's token is refused: #${new URLSearchParams(fragment).toString()}`, async () => {
      const address = await createAddress(server.url, { name: 'bad link' });
      const page = await context.newPage();
      await page.goto(`${server.url}/inspect/${address.id}#${new URLSearchParams(fragment).toString()}`);
      await page.waitForSelector('form.token-form');
      assert.match((await page.textContent('form.token-form [role=alert]'))!, said);
      assert.equal(new URL(page.url()).hash, '', 'the fragment is wiped all the same');
      await audit(page, 'the token form');
      await page.close();
    });
  }
});

describe('GET / says what the service is', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(() => server?.close());

  it('answers a small HTML page linking to /llms.txt and the OpenAPI document, under a strict policy', async () => {
    const home = await request(server.url, 'GET', '/');
    assert.equal(home.status, 200);
    assert.match(home.headers.get('content-type')!, /^text\/html/);
    assert.match(home.text, /return address/);
    assert.match(home.text, /href="\/llms.txt"/);
    assert.match(home.text, /href="\/api\/v1\/openapi.json"/);
    assert.doesNotMatch(home.text, /<script/);
    assert.match(home.headers.get('content-security-policy')!, /default-src 'none'/);
    assert.equal(home.headers.get('x-content-type-options'), 'nosniff');
    // The links lead somewhere.
    assert.equal((await request(server.url, 'GET', '/llms.txt')).status, 200);
    assert.equal((await request(server.url, 'GET', '/api/v1/openapi.json')).status, 200);
  });
});
