// The page a person answers a callback's question on (docs/api.md §3.6), in real Chromium
// on a phone-sized screen: it shows the question with one button per option and a comment
// box, works with JavaScript off, loads nothing but itself under its strict policy, a GET
// completes nothing, a button answers, a second answer is shown the first, an answer not
// among the options is 400, and axe-core finds no serious or critical violation.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserSuite } from './helpers/browser.js';
import { listEvents, request } from './helpers/http.js';
import { browserSkip, PHONE } from './inspector-browser.js';

// page.evaluate callbacks run in the browser, whose globals this Node-typed file does not see.
declare const document: any, window: any, axe: any;

const AXE_SCRIPT = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const QUESTION = 'Deploy <b>v2</b> to production & notify "ops"?';

describe('the callback question page in Chromium', { skip: browserSkip }, () => {
  const suite = browserSuite();

  async function question(options = ['Yes', 'No', 'Later'], allowComment = true) {
    const created = await request(suite.server.url, 'POST', `/api/v1/addresses/${suite.address.id}/callbacks`, {
      token: suite.address.token,
      body: { human: { question: QUESTION, options, allow_comment: allowComment } },
    });
    assert.equal(created.status, 201);
    return created.body.callback;
  }

  const state = async (id: string) =>
    (
      await request(suite.server.url, 'GET', `/api/v1/addresses/${suite.address.id}/callbacks/${id}`, {
        token: suite.address.token,
      })
    ).body;

  /** A phone-sized page, JavaScript off: the page must need none. Every request it makes is recorded. */
  async function phonePage(options: { bypassCSP?: boolean; javaScript?: boolean } = {}) {
    const context = await suite.browser.newContext({
      viewport: PHONE,
      isMobile: true,
      hasTouch: true,
      javaScriptEnabled: options.javaScript ?? false,
      bypassCSP: options.bypassCSP ?? false,
    });
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(`${r.method()} ${r.url()}`));
    return { context, page, requested };
  }

  it('GET shows the question, escaped, with one button per option, and completes nothing', async () => {
    const cb = await question();
    const { context, page, requested } = await phonePage();
    try {
      const response = await page.goto(cb.url);
      assert.equal(response?.status(), 200);
      const csp = response.headers()['content-security-policy'];
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /form-action 'self'/);
      assert.doesNotMatch(csp, /unsafe-inline|script-src/);
      assert.equal(await page.textContent('h1'), QUESTION);
      assert.deepEqual(await page.$$eval('button', (buttons: any[]) => buttons.map((b) => b.textContent)), [
        'Yes',
        'No',
        'Later',
      ]);
      assert.equal(await page.$$eval('textarea[name="comment"]', (t: any[]) => t.length), 1);
      // The style, allowed by its hash, applies; nothing else was fetched.
      const background = await page.$eval('button', (b: any) => window.getComputedStyle(b).backgroundColor);
      assert.equal(background, 'rgb(31, 79, 160)');
      assert.deepEqual(requested, [`GET ${cb.url}`]);
      // Readable on a phone: nothing wider than the screen.
      const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      assert.ok(widths[0] <= widths[1], `page ${widths[0]} px wide on a ${widths[1]} px screen`);
      const after = await state(cb.id);
      assert.equal(after.callback.status, 'waiting');
      assert.equal((await listEvents(suite.server.url, suite.address)).body.events.length, 0);
    } finally {
      await context.close();
    }
  });

  it('a button answers (with the comment); the page says what was recorded; a second answer is shown the first', async () => {
    const cb = await question();
    const { context, page } = await phonePage();
    try {
      await page.goto(cb.url);
      await page.fill('textarea[name="comment"]', 'after 18:00 <please>');
      await Promise.all([page.waitForNavigation(), page.click('button[value="Later"]')]);
      assert.match((await page.textContent('main')) ?? '', /Your answer was recorded:\s*Later/);
      assert.match((await page.textContent('main')) ?? '', /after 18:00 <please>/);
      const done = await state(cb.id);
      assert.equal(done.callback.status, 'completed');
      assert.equal(done.callback.human.answer, 'Later');
      assert.equal(done.callback.human.comment, 'after 18:00 <please>');
      assert.equal(done.body.answer, 'Later');
      assert.equal(done.body.comment, 'after 18:00 <please>');
      assert.ok(Date.parse(done.body.answered_at));
      const events = (await listEvents(suite.server.url, suite.address)).body.events;
      const delivery = events.find((e: { metadata: { callback_id: string } }) => e.metadata.callback_id === cb.id);
      assert.equal(delivery.type, 'callback.delivery');
      assert.deepEqual(delivery.data, done.body);

      // Back to the form (as a second person with the same link would), another button.
      await page.goto(cb.url);
      assert.match((await page.textContent('main')) ?? '', /already answered:\s*Later/);
      const second = await request('', 'POST', cb.url, {
        rawBody: 'answer=No',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      });
      assert.equal(second.status, 200);
      assert.match(second.text, /already answered/);
      assert.match(second.text, /Later/);
      assert.equal((await state(cb.id)).callback.human.answer, 'Later');
    } finally {
      await context.close();
    }
  });

  it('an answer not among the options, or none, is 400 and completes nothing', async () => {
    const cb = await question(['Approve', 'Reject'], false);
    for (const body of ['answer=Maybe', '', 'comment=hi']) {
      const res = await request('', 'POST', cb.url, {
        rawBody: body,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(res.status, 400, body);
    }
    const json = await request('', 'POST', cb.url, { body: { answer: 'Maybe' } });
    assert.equal(json.status, 400);
    assert.equal(json.body.error.code, 'invalid_request');
    assert.equal((await request('', 'POST', cb.url, { body: { answer: 'Approve', comment: 'x' } })).status, 400);
    assert.equal((await state(cb.id)).callback.status, 'waiting');
    const answered = await request('', 'POST', cb.url, { body: { answer: 'Approve' } });
    assert.equal(answered.status, 202);
    assert.deepEqual(answered.body, { duplicate: false, callback: { id: cb.id, status: 'completed' } });
  });

  async function audit(page: Page, what: string): Promise<void> {
    await page.addScriptTag({ path: AXE_SCRIPT });
    const result = await page.evaluate(() => axe.run(document));
    const bad = result.violations
      .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map((v: any) => `${v.id} (${v.impact}): ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
    assert.deepEqual(bad, [], what);
  }

  it('axe-core finds no serious or critical violation on the question and on the answer', async () => {
    const cb = await question();
    // axe is injected as a script of its own, which the page's policy would refuse.
    const { context, page } = await phonePage({ bypassCSP: true, javaScript: true });
    try {
      await page.goto(cb.url);
      await audit(page, 'the question');
      await Promise.all([page.waitForNavigation(), page.click('button[value="Yes"]')]);
      await audit(page, 'the answer recorded');
    } finally {
      await context.close();
    }
  });
});
