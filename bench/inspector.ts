// The inspector page's latency in a real browser (Debian's Chromium, playwright-core):
//  - live: from a delivery's 202 to its row in the page, next to the same delivery's
//    arrival at a bare SSE reader in Node (the baseline: the stream without the page);
//  - replay: from opening the page to the last row of a full queue (1,000 events) shown.
// Roost runs as `npm start` runs it (dist/cli.js), in its own process.
//
//   npm run build && node --import tsx bench/inspector.ts [--trials 30]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { percentile } from './load.js';
import { ROOT } from './processes.js';

// page.evaluate callbacks run in the browser, whose globals this Node-typed file does not see.
declare const document: any, window: any, MutationObserver: any;

const { values } = parseArgs({ options: { trials: { type: 'string', default: '30' } } });
const trials = Number(values.trials);
const QUEUE = 1000;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const dir = mkdtempSync(join(tmpdir(), 'roost-bench-inspector-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const roost = spawn(process.execPath, [join(ROOT, 'dist', 'cli.js'), 'serve'], {
  env: {
    ...process.env,
    PORT: String(port),
    ROOST_SMTP_PORT: '0',
    ROOST_DB: join(dir, 'roost.db'),
    LOG_LEVEL: 'warn',
    ROOST_CREATE_RATE: '1000/sec',
  },
  stdio: 'ignore',
});
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
});

async function create(): Promise<{ id: string; token: string; inbox: string }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(`${base}/api/v1/addresses`, { method: 'POST' });
      const body = (await res.json()) as any;
      return {
        id: body.address.id,
        token: body.credentials.read_token,
        inbox: `${base}${new URL(body.endpoints.inbox_url).pathname}`,
      };
    } catch (error) {
      if (attempt > 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function deliver(inbox: string, n: number): Promise<number> {
  const res = await fetch(inbox, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'bench.tick', data: { n } }),
  });
  await res.arrayBuffer();
  if (res.status !== 202) throw new Error(`delivery answered ${res.status}`);
  return Date.now();
}

/** A bare SSE reader: the wall-clock time each sequence arrived. */
async function sseReader(address: { id: string; token: string }, seen: Map<number, number>, stop: AbortSignal) {
  const res = await fetch(`${base}/api/v1/addresses/${address.id}/events/stream`, {
    headers: { authorization: `Bearer ${address.token}` },
    signal: stop,
  });
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body!) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      for (const match of buffer.matchAll(/^id: (\d+)$/gm))
        if (!seen.has(Number(match[1]))) seen.set(Number(match[1]), Date.now());
      buffer = buffer.slice(buffer.lastIndexOf('\n') + 1);
    }
  } catch {
    // aborted at the end
  }
}

const summary = (label: string, values: number[]) =>
  `${label.padEnd(28)} p50 ${percentile(values, 50).toFixed(0).padStart(4)} ms   p95 ${percentile(values, 95).toFixed(0).padStart(4)} ms   max ${Math.max(
    ...values,
  )
    .toFixed(0)
    .padStart(4)} ms`;

try {
  // Live.
  const live = await create();
  const page = await browser.newPage();
  await page.goto(`${base}/inspect/${live.id}#token=${live.token}`);
  await page.waitForSelector('[data-state="live"]');
  await page.evaluate(() => {
    const shown: Record<number, number> = {};
    window.__shown = shown;
    new MutationObserver(() => {
      for (const row of document.querySelectorAll('[data-sequence]')) {
        const sequence = Number(row.getAttribute('data-sequence'));
        shown[sequence] ??= Date.now();
      }
    }).observe(document.body, { childList: true, subtree: true });
  });
  const bare = new Map<number, number>();
  const stop = new AbortController();
  void sseReader(live, bare, stop.signal);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const accepted: number[] = [];
  for (let n = 1; n <= trials; n++) {
    accepted[n] = await deliver(live.inbox, n);
    await page.waitForSelector(`[data-sequence="${n}"]`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const shown = (await page.evaluate(() => window.__shown)) as Record<number, number>;
  stop.abort();
  const pageLatency: number[] = [];
  const bareLatency: number[] = [];
  for (let n = 1; n <= trials; n++) {
    pageLatency.push(shown[n] - accepted[n]);
    bareLatency.push((bare.get(n) ?? NaN) - accepted[n]);
  }

  // Replay of a full queue.
  const full = await create();
  for (let n = 1; n <= QUEUE; n += 50)
    await Promise.all(Array.from({ length: 50 }, (_, i) => deliver(full.inbox, n + i)));
  const replay = await browser.newPage();
  const opened = Date.now();
  await replay.goto(`${base}/inspect/${full.id}#token=${full.token}`);
  await replay.waitForSelector(`[data-sequence="${QUEUE}"]`, { timeout: 60_000 });
  await replay.waitForFunction((count) => document.querySelectorAll('[data-sequence]').length === count, QUEUE);
  const replayMs = Date.now() - opened;

  console.log(`inspector, ${trials} live deliveries, one at a time (202 → shown):`);
  console.log(summary('  page (Chromium)', pageLatency));
  console.log(summary('  bare SSE reader (baseline)', bareLatency));
  console.log(
    `  ratio of medians: ${(percentile(pageLatency, 50) / Math.max(1, percentile(bareLatency, 50))).toFixed(1)}×`,
  );
  console.log(`inspector, open → all ${QUEUE} events of a full queue shown: ${replayMs} ms`);
} finally {
  await browser.close();
  roost.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
