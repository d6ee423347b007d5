// What the inspector's browser tests share: Debian's Chromium under playwright-core, the
// address's page URL with its fragment, mail sent over real SMTP, and watching a page.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import type { Page } from 'playwright-core';
import type { CreatedAddress } from './helpers/http.js';
import type { TestServer } from './helpers/server.js';

export { CHROMIUM, browserSkip, launch } from './helpers/browser.js';
export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };
/** Generous: a live event shows well within a second; this bound only catches "never". */
export const APPEARS_MS = 10_000;

// Offline: every DNS question is answered "no such name", so mail authentication says none.
export const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};

export function inspectUrl(server: TestServer, address: CreatedAddress, fragment: Record<string, string>): string {
  return `${server.url}/inspect/${address.id}#${new URLSearchParams(fragment).toString()}`;
}

/** Watches a page for anything that would mean a payload ran: dialogs, errors, navigation. */
export function watch(page: Page) {
  const seen = { dialogs: [] as string[], errors: [] as string[], urls: [] as string[], loaded: [] as string[] };
  page.on('dialog', (dialog) => {
    seen.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('pageerror', (error) => seen.errors.push(error.message));
  page.on('request', (req) => seen.urls.push(req.url()));
  // Requests the browser refused itself (CSP) never leave it: `loaded` holds those that did.
  page.on('requestfinished', (req) => seen.loaded.push(req.url()));
  return seen;
}

export const sequences = (page: Page) =>
  page.$$eval('[data-sequence]', (rows) => rows.map((row) => Number(row.getAttribute('data-sequence'))));

export async function sendMail(server: TestServer, to: string, mail: SendMailOptions): Promise<void> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: server.roost.smtpPort!,
    secure: false,
    ignoreTLS: true,
    tls: { rejectUnauthorized: false },
  });
  await transport.sendMail({ ...mail, to });
  transport.close();
}

/** Where screenshots go: docs/inspector/ on request; otherwise they are taken and dropped. */
const SCREENSHOT_DIR =
  process.env.ROOST_TEST_SCREENSHOTS === 'docs' ? join(import.meta.dirname, '..', 'docs', 'inspector') : undefined;

export async function shoot(page: Page, name: string, fullPage = false): Promise<void> {
  if (SCREENSHOT_DIR) mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const image = await page.screenshot({ path: SCREENSHOT_DIR && join(SCREENSHOT_DIR, `${name}.png`), fullPage });
  assert.ok(image.length > 0);
}

/** Waits until the list shows exactly these sequences (a filter's reload is asynchronous), then returns them. */
export async function showsSequences(page: Page, expected: number[]): Promise<number[]> {
  await page
    .waitForFunction(
      (wanted) =>
        JSON.stringify(
          [...(globalThis as any).document.querySelectorAll('[data-sequence]')].map((row: any) =>
            Number(row.getAttribute('data-sequence')),
          ),
        ) === JSON.stringify(wanted),
      expected,
      { timeout: APPEARS_MS },
    )
    .catch(() => undefined);
  return sequences(page);
}

/** Types a server filter (type or source) into its box and applies it, as Enter does. */
export async function applyFilter(page: Page, name: 'type' | 'source', value: string): Promise<void> {
  await page.fill(`.filters input[name=${name}]`, value);
  await page.press(`.filters input[name=${name}]`, 'Enter');
}
