// Debian's Chromium under playwright-core, as every browser test launches it, and the
// server, browser and address a page's suite starts with.
import { existsSync } from 'node:fs';
import { after, before } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { createAddress, type CreatedAddress } from './http.js';
import { startTestServer, type TestServer } from './server.js';

export const CHROMIUM = '/usr/bin/chromium';
// Under CI the browser tests always run (a missing browser fails them); elsewhere they say why not.
export const browserSkip =
  !existsSync(CHROMIUM) && process.env.CI !== 'true'
    ? `skipped: ${CHROMIUM} is missing (apt-get install -y --no-install-recommends chromium)`
    : false;

export async function launch(): Promise<Browser> {
  // Playwright gives every launch a fresh temporary profile (its own --user-data-dir).
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** For the suite around it: a server (SQLite), Chromium and one address, all closed after it. */
export function browserSuite(): { server: TestServer; browser: Browser; address: CreatedAddress } {
  const suite = {} as { server: TestServer; browser: Browser; address: CreatedAddress };
  before(async () => {
    suite.server = await startTestServer('sqlite');
    suite.browser = await launch();
    suite.address = await createAddress(suite.server.url);
  });
  after(async () => {
    await suite.browser?.close();
    await suite.server?.close();
  });
  return suite;
}
