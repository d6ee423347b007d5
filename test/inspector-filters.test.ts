// The inspector's type and source filters are the API's read filters (docs/api.md §4.3): in
// real Chromium against a real Roost holding 300 events, a filter finds an event the page
// would not otherwise look for, says where the server's bounded scan stopped and loads more
// from there, and the live stream follows the same filter.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createAddress, deliver, listEvents, type CreatedAddress } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import {
  APPEARS_MS,
  applyFilter,
  browserSkip,
  DESKTOP,
  inspectUrl,
  launch,
  showsSequences,
  watch,
} from './inspector-browser.js';

const EVENTS = 300;
/** The server's scan bound for this test: 300 events take three filtered reads. */
const SCAN = 100;

describe('the inspector filters through the API', { skip: browserSkip }, () => {
  let server: TestServer;
  let browser: Browser;
  let address: CreatedAddress;
  let context: BrowserContext;
  let page: Page;
  let seen: ReturnType<typeof watch>;

  before(async () => {
    server = await startTestServer('sqlite', { env: { ROOST_FILTER_SCAN_EVENTS: String(SCAN) } });
    browser = await launch();
    address = await createAddress(server.url, { name: 'Three hundred events' });
    // The one event of its type is the first; another match lies past two scans.
    for (let i = 1; i <= EVENTS; i++) {
      const type = i === 1 ? 'needle.first' : i === 250 ? 'needle.late' : 'hay.bale';
      const source = i === 1 ? 'barn' : 'https';
      const sent = await deliver(address.inbox, { type, source, data: { n: i } });
      assert.equal(sent.status, 202, sent.text);
    }
    context = await browser.newContext({ viewport: DESKTOP });
    page = await context.newPage();
    seen = watch(page);
    await page.goto(inspectUrl(server, address, { token: address.token }));
    await page.waitForSelector(`[data-sequence="${EVENTS}"]`, { timeout: APPEARS_MS });
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await server?.close();
  });

  const filteredReads = (name: string) =>
    seen.urls.filter((url) => url.includes('/events?') && new URL(url).searchParams.has(name));

  it('a type typed into the filter is asked of the API and finds the first event', async () => {
    await applyFilter(page, 'type', 'needle.first');
    assert.deepEqual(await showsSequences(page, [1]), [1]);
    const reads = filteredReads('type');
    assert.ok(reads.length > 0, 'the page read GET …/events with the type filter');
    assert.equal(new URL(reads[0]).searchParams.get('type'), 'needle.first');
    // The stream follows the filter.
    const streams = seen.urls.filter((url) => url.includes('/events/stream?'));
    assert.equal(new URL(streams.at(-1)!).searchParams.get('type'), 'needle.first');
    assert.equal(seen.errors.length, 0, seen.errors.join('\n'));
  });

  it('says where the scan stopped, and "load more" continues until the end', async () => {
    // The previous filter's page shows the same row and the same scan bound: wait for this
    // filter's own read, or the checks below could pass on what is about to be replaced.
    const read = page.waitForResponse(
      (response) =>
        response.url().includes('/events?') && new URL(response.url()).searchParams.get('type') === 'needle.*',
    );
    await applyFilter(page, 'type', 'needle.*');
    await read;
    assert.deepEqual(await showsSequences(page, [1]), [1]);
    await page.waitForSelector('.scan-limited', { timeout: APPEARS_MS });
    assert.match((await page.textContent('.scan-limited'))!, new RegExp(`stopped searching at #${SCAN} of #${EVENTS}`));
    await page.click('[data-action="load-more"]');
    await page.waitForSelector(`.scan-limited:has-text("#${2 * SCAN} of")`, { timeout: APPEARS_MS });
    assert.deepEqual(await showsSequences(page, [1]), [1]);
    await page.click('[data-action="load-more"]');
    assert.deepEqual(await showsSequences(page, [250, 1]), [250, 1]);
    await page.waitForSelector('.scan-limited', { state: 'detached', timeout: APPEARS_MS });
    assert.match((await page.textContent('.filters .count'))!, /^2 of 2 matching events$/);
  });

  it('new events arrive live only when they match the filter', async () => {
    assert.equal((await deliver(address.inbox, { type: 'hay.bale' })).status, 202);
    assert.equal((await deliver(address.inbox, { type: 'needle.live' })).status, 202);
    // #302 arriving means the stream has passed #301, which it did not show.
    assert.deepEqual(await showsSequences(page, [EVENTS + 2, 250, 1]), [EVENTS + 2, 250, 1]);
  });

  it('"acknowledge everything up to" under a filter acknowledges the events it hides too', async () => {
    await page.click('[data-sequence="250"] button');
    await page.click('[data-action="ack-up-to"]');
    await page.waitForSelector('[data-sequence="250"] .badge.acked', { timeout: APPEARS_MS });
    // Every event up to #250 is acknowledged, the hay the filter hides included; none after it.
    for (const after of [0, 100, 200, 300]) {
      const events = (await listEvents(server.url, address, `after=${after}&limit=100`)).body.events;
      const wrong = events.filter((event: any) => Boolean(event.acknowledged_at) !== event.sequence <= 250);
      assert.deepEqual(
        wrong.map((event: any) => event.sequence),
        [],
      );
    }
    assert.match((await page.textContent('.notice'))!, /Acknowledged 250 events up to #250/);
    await page.keyboard.press('Escape');
  });

  it('a refused filter shows the message of the API; a source filter is asked of the API too; clearing the filters shows every event again', async () => {
    await applyFilter(page, 'type', 'needle*first');
    // The notice of the acknowledgement before it is replaced by the refusal.
    await page.waitForSelector('.notice:has-text("Invalid filter")', { timeout: APPEARS_MS });
    assert.match((await page.textContent('.notice'))!, /Invalid filter "type"/);
    await applyFilter(page, 'type', '');
    await applyFilter(page, 'source', 'barn');
    assert.deepEqual(await showsSequences(page, [1]), [1]);
    assert.equal(new URL(filteredReads('source').at(-1)!).searchParams.get('source'), 'barn');
    await applyFilter(page, 'source', '');
    await page.waitForSelector(`[data-sequence="${EVENTS + 2}"]`, { timeout: APPEARS_MS });
    await page.waitForSelector('[data-sequence="2"]', { timeout: APPEARS_MS });
    assert.equal((await page.$$('[data-sequence]')).length, EVENTS + 2);
  });
});
