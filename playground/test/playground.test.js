// The playground page in a real browser (Debian's chromium through playwright-core) against a
// real `nucleus serve` (SmolLM2, one thread): generate with a seed, open a token's step (both
// distributions drawn, summing sensibly, the chosen token marked, the chain's counts), change
// top-k and regenerate (the divergence marker), a field error in the API's words, a broken
// grammar's error at its line and column, a grammar's allowed-token counts, and the server line.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { chromium } = require('playwright-core');

const root = path.resolve(__dirname, '..', '..');
const targetDir = process.env.CARGO_TARGET_DIR ? path.resolve(root, process.env.CARGO_TARGET_DIR) : path.join(root, 'target');
const binary = path.join(targetDir, 'release', 'nucleus');
const shots = process.env.UPDATE_SCREENSHOTS ? path.join(root, 'docs') : path.join(targetDir, 'playground-screenshots');

let server;
let base;
let browser;
let page;
const pageErrors = [];

/** Starts `nucleus serve` on a free port and resolves with its base URL once it listens. */
function startServer() {
  if (!fs.existsSync(binary)) {
    throw new Error(`${binary} is missing: build it with cargo build --release -p nucleus`);
  }
  server = spawn(binary, ['serve', '--port', '0', '-t', '1', '--parallel', '2', '-c', '4096'], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error('nucleus serve did not start in 120 s:\n' + log)), 120000);
    const onData = (d) => {
      log += d;
      const m = /listening on (http:\/\/[0-9.:]+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    server.stdout.on('data', onData);
    server.stderr.on('data', onData);
    server.on('exit', (code) => { clearTimeout(timer); reject(new Error(`nucleus serve exited (${code}):\n${log}`)); });
  });
}

before(async () => {
  base = await startServer();
  fs.mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  await page.goto(base + '/');
});

after(async () => {
  if (browser) await browser.close();
  if (server) { server.removeAllListeners('exit'); server.kill('SIGKILL'); }
});

async function generate(button) {
  await page.click(button);
  await page.waitForSelector('#output[data-done="true"] .tok', { timeout: 60000 });
  await page.waitForFunction(() => !document.getElementById('generate').disabled, null, { timeout: 60000 });
}

async function setField(name, value) {
  await page.fill('#f-' + name, String(value));
}

test('generate, inspect a step, regenerate with another top-k, errors', async () => {
  // The server line comes from /v1/models and /metrics.
  await page.waitForFunction(() => /slots \d+\/2 busy/.test(document.getElementById('server').textContent), null, { timeout: 10000 });
  assert.match(await page.textContent('#server'), /smollm2 · slots \d\/2 busy · queue \d+ · [0-9.]+ tokens\/s/);

  // Defaults are llama.cpp's.
  assert.strictEqual(await page.inputValue('#f-temperature'), '0.8');
  assert.strictEqual(await page.inputValue('#f-top_k'), '40');
  assert.strictEqual(await page.inputValue('#f-min_p'), '0.05');

  await setField('seed', 42);
  await setField('max_tokens', 24);
  await generate('#generate');
  const count = await page.locator('#output .tok').count();
  assert.ok(count >= 2, `tokens: ${count}`);
  assert.match(await page.textContent('#run-info'), /seed 42 · \d+ tokens/);

  // Open a token's step: both distributions, the chosen token marked.
  let opened = -1;
  for (let i = 0; i < count && opened < 0; i++) {
    await page.locator('#output .tok').nth(i).click();
    if (await page.locator('#step .dist.post .bar-row.chosen').count()) opened = i;
  }
  assert.ok(opened >= 0, 'some step shows its chosen token among the post-chain candidates');
  const dist = (kind) => page.$$eval(`#step .dist.${kind} .bar-row`, (rows) => rows.map((r) => Number(r.dataset.p)));
  const raw = await dist('raw');
  const post = await dist('post');
  assert.strictEqual(raw.length, 10, 'ten raw candidates (trace_steps 10)');
  assert.ok(post.length >= 1 && post.length <= 10);
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  assert.ok(sum(raw) > 0 && sum(raw) <= 1 + 1e-4, `raw sum ${sum(raw)}`);
  assert.ok(sum(post) > 0 && sum(post) <= 1 + 1e-4, `post sum ${sum(post)}`);
  assert.ok(sum(post) >= sum(raw) - 1e-4, 'top-k, top-p, min-p and temperature 0.8 only sharpen');
  for (const xs of [raw, post]) assert.deepStrictEqual(xs, [...xs].sort((a, b) => b - a), 'best first');
  const chain = await page.$$eval('#step table.chain tr[data-sampler]', (rows) => rows.map((r) => [r.dataset.sampler, Number(r.dataset.candidates)]));
  assert.deepStrictEqual(chain[0], ['start', 49152]);
  assert.deepStrictEqual(chain.find(([n]) => n === 'top-k'), ['top-k', 40]);
  assert.match(await page.textContent('#step .stats'), /entropy [0-9.]+ nats/);
  assert.match(await page.textContent('#step .stats'), /surprisal [0-9.]+ bits/);
  // Keyboard: the selected token has focus; the right arrow opens the next step.
  if (opened + 1 < count) {
    await page.keyboard.press('ArrowRight');
    assert.match(await page.textContent('#step h2'), new RegExp(`^Token ${opened + 2}:`));
    await page.keyboard.press('ArrowLeft');
  }
  await page.screenshot({ path: path.join(shots, 'playground-step.png'), fullPage: true });

  // Regenerate with the same seed and top-k 15: the marker shows where the text first changes.
  await setField('top_k', 15);
  await generate('#regenerate');
  await page.waitForSelector('#divergence:not([hidden])');
  const at = await page.getAttribute('#divergence', 'data-divergence');
  assert.notStrictEqual(at, 'none', 'top-k 15 changes the seeded text');
  assert.match(await page.textContent('#divergence'), /First divergence at token \d+.*deterministic/s);
  const marked = await page.$$eval('#output .tok.diverged', (s) => s.map((x) => x.dataset.index));
  assert.deepStrictEqual(marked, [at]);
  assert.match(await page.textContent('#run-info'), /seed 42 ·/);
  await page.screenshot({ path: path.join(shots, 'playground-regenerate.png'), fullPage: true });

  // The same settings again: identical.
  await generate('#regenerate');
  assert.strictEqual(await page.getAttribute('#divergence', 'data-divergence'), 'none');

  // A value out of range: the API's own error, the field marked.
  await setField('temperature', 5);
  await page.click('#generate');
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.textContent('#error'), /Invalid 'temperature'.*2/);
  assert.strictEqual(await page.locator('.field.bad[data-field="temperature"]').count(), 1);
  assert.ok((await page.locator('#output .tok').count()) > 0, 'the previous run stays on the page');
  await setField('temperature', 0.8);

  // Reorder with the keyboard: temperature before top-k; the step's chain runs in that order.
  await page.focus('#order li[data-sampler="temperature"]');
  for (let i = 0; i < 5; i++) await page.keyboard.press('Alt+ArrowUp');
  const order = await page.$$eval('#order li', (ls) => ls.map((l) => l.dataset.sampler));
  assert.deepStrictEqual(order.slice(0, 5), ['penalties', 'dry', 'top_n_sigma', 'temperature', 'top_k']);
  await generate('#generate');
  await page.locator('#output .tok').first().click();
  const ran = await page.$$eval('#step table.chain tr[data-sampler]', (rows) => rows.map((r) => r.dataset.sampler));
  assert.ok(ran.indexOf('temp-ext') >= 0 && ran.indexOf('temp-ext') < ran.indexOf('top-k'), ran.join(' '));
  await page.click('#reset');
  assert.strictEqual(await page.inputValue('#f-top_k'), '40');
  await setField('seed', 42);
  await setField('max_tokens', 24);

  // A broken grammar: the error at its line and column, with the line and a caret.
  await page.check('input[name="constraint"][value="gbnf"]');
  await page.fill('#constraint', 'root ::= "yes" | "no"\nanswer ::= ( "a" | "b"');
  await page.click('#generate');
  await page.waitForSelector('#constraint-error:not([hidden])');
  const err = await page.textContent('#constraint-error');
  assert.match(err, /Invalid 'grammar'.*line 2, column \d+/);
  assert.match(await page.textContent('#constraint-error pre'), /2 \| answer ::= \( "a" \| "b"\n\s+\^/);
  await page.screenshot({ path: path.join(shots, 'playground-grammar-error.png'), fullPage: true });

  // A schema keyword the server cannot enforce: its JSON pointer, and that place in the text.
  await page.check('input[name="constraint"][value="schema"]');
  await page.fill('#constraint', '{\n  "type": "object",\n  "properties": {"a": {"type": "string", "pattern": "(?=x)"}}\n}');
  await page.click('#generate');
  await page.waitForSelector('#constraint-error:not([hidden])');
  assert.match(await page.textContent('#constraint-error'), /Invalid 'json_schema'.*#\/properties\/a/);
  assert.match(await page.textContent('#constraint-error pre'), /3 \| {3}"properties": \{"a"/);
  await page.check('input[name="constraint"][value="gbnf"]');

  // A working grammar: every step says how many tokens it allowed.
  await setField('top_k', 40);
  await page.fill('#constraint', 'root ::= ("red" | "green" | "blue") ", " [a-z ]+ "."');
  await generate('#generate');
  assert.strictEqual(await page.isHidden('#constraint-error'), true);
  await page.locator('#output .tok').first().click();
  const allowed = Number(await page.getAttribute('#step [data-allowed]', 'data-allowed'));
  assert.ok(allowed >= 3 && allowed < 49152, `allowed ${allowed}`);
  const text = await page.$$eval('#output .tok', (s) => s.map((x) => x.textContent).join(''));
  assert.match(text, /^(red|green|blue), /);

  // The 400s above are expected failed loads; nothing else went wrong in the page.
  assert.deepStrictEqual(pageErrors.filter((e) => !/status of 400/.test(e)), []);
});
