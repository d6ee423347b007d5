// Debian's Chromium under playwright-core, as every browser test launches it.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
