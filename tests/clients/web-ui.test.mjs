// The web page (GET /, http/ui/) in a real browser: Debian's Chromium driven by puppeteer-core
// against the real server. A reply streams in token by token, Stop cancels it (the server counts
// the 499), HTML from the user and from the model stays text, the console swaps and rolls back
// with the admin key and is refused without it, the Models view shows each version's state, no
// request leaves the origin and no console error appears. Each view's screenshot is written to
// BITNET_TEST_OUTPUT (CTest sets it to the build tree).
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { startServer, call, API_KEY, MODEL } from './harness.mjs';

const ADMIN_KEY = 'web-admin-key-123';
const CHROMIUM = process.env.BITNET_CHROMIUM ?? '/usr/bin/chromium';
const OUT = process.env.BITNET_TEST_OUTPUT ?? mkdtempSync(join(tmpdir(), 'bitnet-web-ui-'));

let server;
let browser;
let page;
const requests = [];     // every URL the page asked for
const auth = new Map();  // path -> the Authorization header the page sent
const consoleErrors = []; // console errors and uncaught exceptions of the page

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: run make deps (Debian's chromium)`);
  mkdirSync(OUT, { recursive: true });
  server = await startServer(['--admin-api-keys', ADMIN_KEY]);
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 800 });
  page.on('request', (r) => {
    requests.push(r.url());
    auth.set(new URL(r.url()).pathname, r.headers().authorization);
  });
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));
  // The key a user typed into this tab earlier (the page keeps it in sessionStorage only).
  await page.evaluateOnNewDocument((key) => sessionStorage.setItem('bitnet.api-key', key), API_KEY);
  await page.goto(`${server.origin}/#chat`, { waitUntil: 'networkidle0' });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/// Types a message and sends it; resolves to the reply's turn once it stopped streaming.
async function sendMessage(text) {
  const before = await page.$$eval('.turn.assistant', (xs) => xs.length);
  await page.locator('aria/Message').fill(text);
  await page.locator('aria/Send').click();
  await page.waitForFunction((n) => {
    const turns = document.querySelectorAll('.turn.assistant');
    return turns.length > n && !turns[turns.length - 1].classList.contains('streaming');
  }, { timeout: 60_000 }, before);
  return page.$$eval('.turn.assistant', (xs) => {
    const t = xs[xs.length - 1];
    return { text: t.querySelector('.content').textContent, stats: t.querySelector('.stats').textContent };
  });
}

async function setField(id, value) {
  await page.$eval(`#${id}`, (e, v) => {
    e.value = v;
    e.dispatchEvent(new Event('input', { bubbles: true }));
  }, value);
}

async function shot(name) {
  await page.screenshot({ path: join(OUT, `web-ui-${name}.png`), fullPage: true });
}

test('the page loads with its navigation and controls named for assistive technology', async () => {
  for (const name of ['Chat', 'Models', 'Metrics', 'Cluster'])
    assert.ok(await page.$(`aria/${name}[role="link"]`), `navigation ${name}`);
  for (const name of ['Send', 'Stop'])
    assert.ok(await page.$(`aria/${name}[role="button"]`), `button ${name}`);
  assert.ok(await page.$('aria/Message[role="textbox"]'));
  const models = await page.$$eval('#chat-model option', (os) => os.map((o) => o.value));
  assert.deepEqual(models, [MODEL]);
});

test('a streamed reply appears token by token, with its first-token time and rate', async () => {
  await page.evaluate(() => {
    window.__lengths = [];
    new MutationObserver(() => {
      const turns = document.querySelectorAll('.turn.assistant.streaming .content');
      if (turns.length) window.__lengths.push(turns[turns.length - 1].textContent.length);
    }).observe(document.getElementById('transcript'), { subtree: true, childList: true, characterData: true });
  });
  await setField('chat-max-tokens', '120');
  await setField('chat-seed', '7');
  await setField('chat-extra', '{"ignore_eos": true}');
  const reply = await sendMessage('Tell me a fortune.');
  const lengths = await page.evaluate(() => window.__lengths);
  const grew = [...new Set(lengths.filter((n) => n > 0))];
  assert.ok(grew.length >= 3, `the reply grew in ${grew.length} steps (${lengths})`);
  assert.ok(grew.at(-1) <= reply.text.length);
  assert.match(reply.stats, /first token \d+ ms/);
  assert.match(reply.stats, /[\d.]+ tokens\/s/);
  assert.match(reply.stats, /120 tokens/);
  assert.match(reply.stats, /length/);
  // The key went as a Bearer token, and never into storage that outlives the tab.
  assert.equal(auth.get('/v1/chat/completions'), `Bearer ${API_KEY}`);
  assert.equal(await page.evaluate(() => Object.keys(localStorage).some((k) => k.includes('key'))), false);
  await shot('chat');
});

test('HTML typed by the user and HTML the model writes stay text', async () => {
  const typed = '<img src="/typed.png" onerror="window.__pwned = 1"><b>bold?</b>';
  const written = '<script>window.__pwned = 2</script><img src="/model.png" onerror="window.__pwned = 3">';
  // A new conversation: the last one's history fills most of this model's 256-token context.
  await page.locator('aria/New chat').click();
  assert.equal(await page.$$eval('#transcript li', (xs) => xs.length), 0);
  await setField('chat-max-tokens', '200');
  // guided_choice makes the model write exactly this markup.
  await setField('chat-extra', JSON.stringify({ guided_choice: [written] }));
  const reply = await sendMessage(typed);
  assert.equal(reply.text, written);
  assert.match(reply.stats, /stop$/);
  // Both conversations are kept in this browser, the newest first.
  const kept = await page.evaluate(() => JSON.parse(localStorage.getItem('bitnet.conversations')));
  assert.equal(kept.length, 2);
  assert.equal(kept[0].messages[1].content, written);
  const users = await page.$$eval('.turn.user .content', (xs) => xs.map((x) => x.textContent));
  assert.equal(users.at(-1), typed);
  assert.equal(await page.$$eval('#transcript img, #transcript script, #transcript b', (xs) => xs.length), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.ok(!requests.some((u) => u.endsWith('/typed.png') || u.endsWith('/model.png')), 'no markup was loaded');
  await setField('chat-extra', '');
});

test('a tool call and a structured reply are shown as such', async () => {
  await page.locator('aria/New chat').click();
  const tiny = { type: 'object', properties: { c: { enum: ['x', 'y'] } }, required: ['c'], additionalProperties: false };
  await setField('chat-max-tokens', '64');
  await setField('chat-tools', JSON.stringify([{ type: 'function', function: { name: 'pick', parameters: tiny } }]));
  await setField('chat-extra', JSON.stringify({ tool_choice: { type: 'function', function: { name: 'pick' } } }));
  await sendMessage('Pick one.');
  const call = await page.$eval('.turn.assistant:last-of-type .tool-call', (e) => ({
    label: e.querySelector('.label').textContent, args: e.querySelector('pre').textContent }));
  assert.equal(call.label, 'tool call: pick');
  assert.ok(['x', 'y'].includes(JSON.parse(call.args).c), call.args);
  await setField('chat-tools', '');
  await setField('chat-extra', '');
  await setField('chat-schema', JSON.stringify(tiny));
  const reply = await sendMessage('Answer in JSON.');
  assert.ok(['x', 'y'].includes(JSON.parse(reply.text).c), reply.text);
  const box = await page.$eval('.turn.assistant:last-of-type .structured', (e) => ({
    label: e.querySelector('.label').textContent, pretty: e.querySelector('pre').textContent }));
  assert.equal(box.label, 'structured output (JSON)');
  assert.deepEqual(JSON.parse(box.pretty), JSON.parse(reply.text));
  await setField('chat-schema', '');
});

test('Stop ends the stream and the server counts the cancel', async () => {
  // A model slow enough (about 100M parameters, one thread) that a long reply is still streaming
  // when Stop is pressed.
  const dir = mkdtempSync(join(tmpdir(), 'bitnet-web-stop-'));
  const model = join(dir, 'small.gguf');
  const made = spawnSync(process.env.BITNET_MODEL_TOOL, ['make', '--shape', 'small', '--seed', '2', '-o', model], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const slow = await startServer([], { model });
  const tab = await browser.newPage();
  const errors = [];
  tab.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  tab.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  try {
    await tab.evaluateOnNewDocument((key) => sessionStorage.setItem('bitnet.api-key', key), API_KEY);
    await tab.goto(`${slow.origin}/#chat`, { waitUntil: 'networkidle0' });
    await tab.$eval('#chat-max-tokens', (e) => { e.value = '1000'; });
    // A random model's tokens are mostly pieces that print nothing: the regex keeps them letters.
    await tab.$eval('#chat-extra', (e) => { e.value = '{"guided_regex": "[a-z ]+"}'; });
    await tab.locator('aria/Message').fill('Go on for a while.');
    await tab.locator('aria/Send').click();
    await tab.waitForFunction(() => document.querySelector('.turn.assistant.streaming .content')?.textContent.length > 0,
      { timeout: 60_000 });
    await tab.locator('aria/Stop').click();
    await tab.waitForFunction(() => !document.querySelector('.turn.assistant.streaming'), { timeout: 30_000 });
    const stats = await tab.$eval('.turn.assistant:last-of-type .stats', (e) => e.textContent);
    assert.match(stats, /stopped/);
    assert.equal(await tab.$eval('#send', (b) => b.disabled), false);
    // The server saw the client leave: counted as 499 on the route, and logged.
    let cancelled = false;
    for (let i = 0; i < 100 && !cancelled; i++) {
      const text = await (await fetch(`${slow.origin}/metrics`)).text();
      cancelled = /bitnet_requests_total\{[^}]*route="\/v1\/chat\/completions"[^}]*status="499"[^}]*\} [1-9]/.test(text) ||
                  /bitnet_requests_total\{[^}]*status="499"[^}]*route="\/v1\/chat\/completions"[^}]*\} [1-9]/.test(text);
      if (!cancelled) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(cancelled, 'no 499 for the chat route in /metrics');
    assert.match(slow.log(), /499 client_closed/);
    assert.deepEqual(errors, []);
  } finally {
    await tab.close();
    await slow.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

/// The Models view's rows of `alias`: [{version, state}].
async function versions(alias) {
  return page.$$eval(`section.model[data-alias="${alias}"] table.versions tr[data-version]`,
    (rows) => rows.map((r) => ({ version: r.dataset.version, state: r.dataset.state, shown: r.children[1].textContent })));
}

async function confirmDialog() {
  await page.waitForSelector('dialog#confirm[open]');
  await page.locator('aria/Confirm').click();
}

async function statusLine(pattern) {
  await page.waitForFunction((re) => new RegExp(re).test(document.getElementById('models-status').textContent),
    { timeout: 30_000 }, pattern.source);
  return page.$eval('#models-status', (e) => e.textContent);
}

test('the Models view shows each version with its state', async () => {
  await page.locator('aria/Models[role="link"]').click();
  await page.waitForSelector(`section.model[data-alias="${MODEL}"] tr[data-version]`);
  const rows = await versions(MODEL);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].state, 'ready');
  assert.equal(rows[0].shown, 'ready (serving)');
});

test('a swap and a rollback from the console: refused without the admin key, done with it', async () => {
  const original = (await versions(MODEL))[0].version;
  await setField('load-alias', MODEL);
  await setField('load-path', process.env.BITNET_MODEL);
  await setField('load-version', 'v2');

  // Without the admin key (nor a user key standing in for it) the server refuses.
  const errorsBefore = consoleErrors.length;
  await setField('admin-key', '');
  await page.locator('aria/Load').click();
  await confirmDialog();
  assert.match(await statusLine(/^Load .*: refused/), /refused, 401/);
  await setField('admin-key', API_KEY);
  await page.locator(`aria/Roll back ${MODEL}`).click();
  await confirmDialog();
  assert.match(await statusLine(/^Roll back .*: refused/), /refused, 403/);
  // The browser reports each refused fetch as a console error: those two, and nothing else.
  const refusals = consoleErrors.splice(errorsBefore);
  assert.equal(refusals.length, 2, refusals.join('\n'));
  for (const e of refusals) assert.match(e, /status of 40[13]/);

  // Cancelling the confirmation sends nothing.
  await setField('admin-key', ADMIN_KEY);
  const sent = requests.length;
  await page.locator('aria/Load').click();
  await page.waitForSelector('dialog#confirm[open]');
  await page.locator('aria/Cancel').click();
  assert.match(await statusLine(/cancelled/), /cancelled/);
  assert.equal(requests.slice(sent).filter((u) => u.includes('/v1/models/load')).length, 0);

  await page.locator('aria/Load').click();
  await confirmDialog();
  await statusLine(/^Load .*: accepted/);
  await page.waitForFunction((alias) => [...document.querySelectorAll(`section.model[data-alias="${alias}"] tr[data-version="v2"]`)]
    .some((r) => r.children[1].textContent === 'ready (serving)'), { timeout: 60_000 }, MODEL);
  let detail = await (await call(server, 'GET', `/v1/models/${MODEL}`)).json();
  assert.equal(detail.version, 'v2');

  await page.locator(`aria/Roll back ${MODEL}`).click();
  await confirmDialog();
  await statusLine(/Roll back.*accepted/);
  await page.waitForFunction((alias, v) => [...document.querySelectorAll(`section.model[data-alias="${alias}"] tr[data-version="${v}"]`)]
    .some((r) => r.children[1].textContent === 'ready (serving)'), { timeout: 60_000 }, MODEL, original);
  detail = await (await call(server, 'GET', `/v1/models/${MODEL}`)).json();
  assert.equal(detail.version, original);
  const states = Object.fromEntries((await versions(MODEL)).map((r) => [r.version, r.state]));
  assert.equal(states[original], 'ready');
  assert.ok(['draining', 'standby', 'unloaded'].includes(states.v2), `v2 is ${states.v2}`);
  await shot('models');
});

test('the Metrics view draws tokens/s, queues, KV use and latency percentiles', async () => {
  // The admin key's view: every tenant's figures (a user key reads only its own).
  await setField('admin-key', ADMIN_KEY);
  await page.locator('aria/Metrics[role="link"]').click();
  const caption = (title) => page.$eval(`figure[aria-label="${title}"] figcaption`, (e) => e.textContent);
  // One poll draws every chart; its first takes the histograms as they stand (the replies above).
  const latency = await (await page.waitForFunction(() => {
    const text = (t) => document.querySelector(`figure[aria-label="${t}"] figcaption`)?.textContent ?? '';
    const both = [text('Time to first token'), text('Inter-token latency')];
    return both.every((t) => /p50 \d/.test(t)) && both;
  }, { timeout: 30_000 })).jsonValue();
  assert.match(latency[0], /p50 [\d.]+ ms.*p90 [\d.]+ ms.*p99 [\d.]+ ms/);
  assert.match(latency[1], /p50 [\d.]+ ms/);
  assert.match(await caption('Tokens/s'), /generated [\d.]+/);
  assert.match(await caption('Queue depth'), /waiting \d+.*running \d+/);
  assert.match(await caption('KV cache use'), /used [\d.]+ %/);
  // The refusals of the test before are among the recent errors.
  const recent = await page.$$eval('#recent-errors li', (xs) => xs.map((x) => x.textContent));
  assert.ok(recent.some((t) => /refused|401|403/.test(t)), recent.join('\n'));
  // A few samples drawn, for the screenshot.
  await page.waitForSelector('figure[aria-label="Tokens/s"][data-samples="3"]', { timeout: 30_000 });
  await shot('metrics');
});

test('the Cluster view shows this node', async () => {
  await page.locator('aria/Cluster[role="link"]').click();
  await page.waitForFunction(() => document.querySelector('#cluster-info table'), { timeout: 30_000 });
  const text = await page.$eval('#cluster-info', (e) => e.textContent);
  assert.match(text, /single node/);
  assert.match(text, new RegExp(`${MODEL} \\S+ ready`));
  await shot('cluster');
});

test('no request left the origin, and the console stayed clean', async () => {
  const foreign = requests.filter((u) => !u.startsWith(`${server.origin}/`) && !u.startsWith('data:'));
  assert.deepEqual(foreign, []);
  assert.deepEqual(consoleErrors, []);
});

test('web_ui 0: the page and its files are 404, other clients still read the running line', async () => {
  const off = await startServer(['--web-ui', '0']);
  try {
    const html = await fetch(`${off.origin}/`, { headers: { accept: 'text/html' } });
    assert.equal(html.status, 404);
    assert.equal((await html.json()).error.code !== undefined, true);
    assert.equal((await fetch(`${off.origin}/ui/app.js`)).status, 404);
    const plain = await fetch(`${off.origin}/`);
    assert.equal(plain.status, 200);
    assert.equal(await plain.text(), 'bitnet-serve is running\n');
  } finally {
    await off.stop();
  }
});
