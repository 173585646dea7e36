// A real browser over HTTP/2: Debian's Chromium, headless, opens a page served over TLS by
// ssekit's h2_server example (on smol or on hyper), which opens ten EventSources to its own
// origin and holds them.
// Over HTTP/1.1 Chromium opens at most six connections per origin, so streams 7-10 would
// never start; over HTTP/2 (ALPN) all ten share one connection.
// usage: node check_browser_h2.mjs HTTPS_URL
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const [base] = process.argv.slice(2);
const ok = (what) => console.log('  ok:', what);
const profile = mkdtempSync(join(tmpdir(), 'ssekit-chromium-h2-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  timeout: 30000,
  ignoreHTTPSErrors: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic', '--ignore-certificate-errors'],
});
try {
  const page = context.pages()[0] ?? await context.newPage();
  await page.route('**/*', (route) => (new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort()));
  await page.goto(`${base}/`, { timeout: 10000 });
  await page.waitForFunction(() => window.finished === true, null, { timeout: 15000 });
  const counts = await page.evaluate(() => window.counts);
  assert.equal(counts.length, 10);
  assert.ok(counts.every((n) => n >= 3), JSON.stringify(counts));
  ok('ten EventSources to one origin each got their three events, all open at once');
  const stats = await page.evaluate(async () => (await fetch('/stats')).json());
  assert.ok(stats.max_open > 6, JSON.stringify(stats));
  ok(`the server held ${stats.max_open} streams open at once (HTTP/1.1 allows six per origin)`);
  assert.ok(stats.versions.every((v) => v === 'HTTP/2.0'), JSON.stringify(stats.versions));
  ok('every stream came over HTTP/2 (ALPN h2)');
  console.log('PASS browser-chromium-http2');
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
