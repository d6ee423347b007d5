// The inspector shows an address's callbacks (docs/inspector.md): status, key, label, a
// person's question and answer, read again when a callback event arrives, and a button
// that narrows the event list to one callback's events — in real Chromium.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSuite } from './helpers/browser.js';
import { request } from './helpers/http.js';
import { APPEARS_MS, browserSkip, DESKTOP, inspectUrl, showsSequences, watch } from './inspector-browser.js';

const post = (url: string, body: unknown) =>
  request('', 'POST', url, { rawBody: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

describe('the inspector shows callbacks', { skip: browserSkip }, () => {
  const suite = browserSuite();

  const create = async (body: unknown) =>
    (
      await request(suite.server.url, 'POST', `/api/v1/addresses/${suite.address.id}/callbacks`, {
        token: suite.address.token,
        body,
      })
    ).body.callback;

  it('lists them with status, key, label, question and answer, and filters the events by one', async () => {
    const job = await create({ key: 'job-1', label: 'Render' });
    const ask = await create({ key: 'ask-1', human: { question: 'Ship it?', options: ['Yes', 'No'] } });
    await request(suite.server.url, 'POST', suite.address.inbox, { body: { data: 'unrelated' } });
    await post(job.url, { done: true });
    const context = await suite.browser.newContext({ viewport: DESKTOP });
    try {
      const page = await context.newPage();
      const seen = watch(page);
      await page.goto(inspectUrl(suite.server, suite.address, { token: suite.address.token }));
      await page.waitForSelector('[data-sequence="2"]', { timeout: APPEARS_MS });
      const jobRow = page.locator(`[data-callback="${job.id}"]`);
      await jobRow.waitFor({ timeout: APPEARS_MS });
      assert.match(await jobRow.innerText(), /completed\s+job-1\s+Render/i);
      assert.match(await page.locator(`[data-callback="${ask.id}"]`).innerText(), /waiting\s+ask-1\s+— Ship it\?/i);

      // The person answers: the event arrives live, and the callbacks are read again.
      assert.equal((await post(ask.url, { answer: 'Yes' })).status, 202);
      await page.waitForSelector(`[data-callback="${ask.id}"] .answer`, { timeout: APPEARS_MS });
      assert.equal(await page.locator(`[data-callback="${ask.id}"] .answer`).innerText(), 'Yes');

      // The callback filter is the API's: the server reads the callback's events.
      const reads = seen.urls.length;
      await jobRow.getByRole('button').click();
      assert.deepEqual(await showsSequences(page, [2]), [2]);
      const read = seen.urls.slice(reads).find((url) => url.includes('/events?'));
      assert.equal(read && new URL(read).searchParams.get('callback'), job.id);
      await jobRow.getByRole('button', { name: 'Show all events' }).click();
      assert.deepEqual(await showsSequences(page, [3, 2, 1]), [3, 2, 1]);
    } finally {
      await context.close();
    }
  });
});
