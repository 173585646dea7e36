// Node's `eventsource` package (a WHATWG-conformant EventSource) as a client of ssekit's
// interop_server: the reconnect scenario, asserted event by event, plus the reconnect itself
// (Last-Event-ID, the `retry:` delay) as the server saw it.
// usage: node check_eventsource.mjs INTEROP_URL EXPECTED_JSON
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';

const [base, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readFileSync(expectedPath, 'utf8'));
const run = `node-${process.pid}`;
const ok = (what) => console.log('  ok:', what);

const received = [];
let opens = 0;
let errors = 0;
await new Promise((resolve, reject) => {
  const timer = setTimeout(() => { es.close(); reject(new Error(`timed out; received ${JSON.stringify(received)}`)); }, 15000);
  const es = new EventSource(`${base}/events?run=${run}`);
  const record = (e) => {
    received.push({ type: e.type, data: e.data, lastEventId: e.lastEventId });
    if (e.type === 'done') { es.close(); clearTimeout(timer); resolve(); }
  };
  for (const t of ['message', 'greeting', 'custom.update', 'done']) es.addEventListener(t, record);
  es.onopen = () => { opens += 1; };
  es.onerror = () => { errors += 1; };
});

assert.deepEqual(received.slice(0, 3), expected.slice(0, 3));
ok('first connection: multi-line data, non-ASCII, custom types, ids (events 1-3), keep-alive comments ignored');
assert.deepEqual(received, expected);
ok('after the server-side disconnect: its own reconnect got the missed 4 and 5 replayed, then 6');
assert.equal(opens, 2);
assert.equal(errors, 1);
ok('two opens, one error (the disconnect)');
const log = (await (await fetch(`${base}/log?run=${run}`)).json()).connections;
assert.deepEqual(log.map((c) => c.last_event_id), [null, '3']);
ok("the reconnect sent Last-Event-ID: 3");
const gap = log[1].gap_ms;
// Not before retry: 700 asks (the point); the upper bound only catches a reconnect that never came.
assert.ok(gap >= 600 && gap <= 6000, `reconnect gap ${gap} ms`);
ok(`the reconnect honoured retry: 700 (gap ${gap} ms)`);
console.log('PASS node-eventsource');
