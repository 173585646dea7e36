// A real browser: Debian's Chromium, headless, driven by playwright-core, opens a page served
// by ssekit's interop_server; the page's own EventSource records every event. Asserted event
// by event: multi-line data, non-ASCII text, custom event types, ids, `retry:`, a server-side
// disconnect, the browser's own reconnect with Last-Event-ID and the replay of what it
// missed, and keep-alive comments on the wire that never surface as events.
// usage: node check_browser.mjs INTEROP_URL EXPECTED_JSON
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const [base, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readFileSync(expectedPath, 'utf8'));
const run = `browser-${process.pid}`;
const ok = (what) => console.log('  ok:', what);
const profile = mkdtempSync(join(tmpdir(), 'ssekit-chromium-'));

const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  timeout: 30000,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic'],
});
try {
  const version = context.browser()?.version() ?? 'unknown';
  const page = context.pages()[0] ?? await context.newPage();
  // Only 127.0.0.1 may be reached.
  await page.route('**/*', (route) => (new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort()));
  await page.goto(`${base}/#${run}`, { timeout: 10000 });
  await page.waitForFunction(() => window.finished === true, null, { timeout: 15000 });
  const received = await page.evaluate(() => window.received);
  const errors = await page.evaluate(() => window.errors);
  console.log(`  (Chromium ${version})`);
  for (let i = 0; i < expected.length; i++) {
    assert.deepEqual(received[i], expected[i], `event ${i + 1}`);
  }
  assert.equal(received.length, expected.length);
  ok('events 1-6 exactly: multi-line data, non-ASCII, custom types, ids, nothing extra');
  assert.equal(errors, 1);
  ok('one error event: the server-side disconnect after event 3');
  const log = (await (await fetch(`${base}/log?run=${run}`)).json()).connections;
  assert.deepEqual(log.map((c) => c.last_event_id), [null, '3']);
  ok('the browser reconnected by itself with Last-Event-ID: 3 and got the missed 4 and 5, then 6');
  const gap = log[1].gap_ms;
  // Not before retry: 700 asks (the point); the upper bound only catches a reconnect that never came.
  assert.ok(gap >= 600 && gap <= 6000, `reconnect gap ${gap} ms`);
  ok(`the reconnect honoured retry: 700 (gap ${gap} ms)`);
  // The same stream read raw by the page: keep-alive comments are on the wire between events.
  const raw = await page.evaluate(async (r) => (await fetch(`/events?run=${r}`)).text(), `${run}-raw`);
  const between = raw.split('id: 1\n')[1].split('id: 3\n')[0];
  assert.ok((between.match(/^: ping\n/gm) || []).length >= 2, raw);
  assert.ok(!between.includes(': ping\n\n'), 'keep-alive comments carry no blank line');
  ok('keep-alive comments were on the wire between the events the EventSource got (and none surfaced)');
  console.log('PASS browser-chromium');
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
