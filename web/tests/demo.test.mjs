// The live training demo (web/demo/) end to end in headless Chromium: train on the CPU backend
// (fast) and briefly on WebGL2, watch the chart and the weight canvas, draw a digit with the
// mouse, teach it a different label until the prediction follows, save and load the model,
// and check that nothing is fetched after the demo has loaded.
//
//   cd web && node --test tests/demo.test.mjs      (needs web/pkg: cargo xtask build-wasm)
//
// PIXELGRAD_DEMO_ROOT serves another folder holding demo/ and pkg/ (e.g. a stub package).

import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, launchBrowser, newPage, webRoot, cspViolations } from './harness.mjs';
import { pngVariance } from './demo-png.mjs';
import { downsample } from '../demo/pad.js';
import { idxKind } from '../demo/files.js';
import { softmaxIfLogits, replayIndices } from '../demo/util.js';

const root = process.env.PIXELGRAD_DEMO_ROOT || webRoot;
const artifacts = path.join(webRoot, 'test-artifacts');

/** Opens the demo with `query`, waits until it is ready; returns a request log split at ready. */
async function openDemo(browser, url, query) {
  const page = await newPage(browser);
  const requests = { beforeReady: [], afterReady: [], ready: false };
  // On the context, not the page: it sees the worker's fetches too.
  const onRequest = (r) => {
    if (r.url().startsWith('data:')) return;
    (requests.ready ? requests.afterReady : requests.beforeReady).push(r.url());
  };
  browser.on('request', onRequest);
  await page.goto(`${url}/demo/?${query}`, { waitUntil: 'load' });
  await waitState(page, ['ready'], 120_000);
  requests.ready = true;
  return { page, requests, detach: () => browser.off('request', onRequest) };
}

/** Waits until body[data-state] is one of `states`; fails at once with the page's error. */
async function waitState(page, states, timeout = 120_000) {
  const h = await page.waitForFunction(
    (s) => s.includes(document.body.dataset.state) || document.body.dataset.state === 'error',
    states,
    { timeout },
  );
  await h.dispose();
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state === 'error' && !states.includes('error')) {
    const err = await page.evaluate(() => document.body.dataset.lastError);
    throw new Error(`demo reported an error: ${err}`);
  }
}

const attr = (page, sel, name) => page.$eval(sel, (el, n) => el.dataset[n] ?? '', name);
const num = async (page, sel, name) => Number(await attr(page, sel, name));

/** Waits until a numeric data attribute exceeds `min` (no error state allowed meanwhile). */
async function waitAbove(page, sel, name, min, timeout = 120_000) {
  const h = await page.waitForFunction(
    ([s, n, m]) => Number(document.querySelector(s).dataset[n] || 0) > m || document.body.dataset.state === 'error',
    [sel, name, min],
    { timeout },
  );
  await h.dispose();
  const err = await page.evaluate(() => (document.body.dataset.state === 'error' ? document.body.dataset.lastError : ''));
  if (err) throw new Error(`demo reported an error: ${err}`);
  return num(page, sel, name);
}

/** Trains until the chart has more than `points` points and `epochs` epochs, then pauses. */
async function trainFor(page, points, epochs = 0) {
  await page.click('#train');
  await waitAbove(page, '#chart', 'points', points);
  if (epochs > 0) {
    await page.waitForFunction((e) => Number(document.getElementById('epoch').textContent) >= e || document.body.dataset.state !== 'training', epochs, { timeout: 120_000 });
  }
  if (!(await page.$eval('#pause', (b) => b.disabled))) await page.click('#pause');
  await waitState(page, ['ready']);
}

/** Variance of the weight canvas as shown on screen (it belongs to the worker, so no readback). */
async function weightVariance(page) {
  return pngVariance(await page.locator('#weights').screenshot());
}

/** Draws a "7"-like stroke on the pad with the mouse. */
async function drawSeven(page) {
  await page.locator('#pad').scrollIntoViewIfNeeded();
  const b = await page.locator('#pad').boundingBox();
  const p = (fx, fy) => [b.x + fx * b.width, b.y + fy * b.height];
  await page.mouse.move(...p(0.25, 0.2));
  await page.mouse.down();
  await page.mouse.move(...p(0.75, 0.2), { steps: 8 });
  await page.mouse.move(...p(0.42, 0.85), { steps: 10 });
  await page.mouse.up();
}

/** The latest prediction `{ id, label, probs }` once one newer than `afterId` has arrived. */
async function prediction(page, afterId = 0) {
  await waitAbove(page, '#prediction', 'id', afterId, 60_000);
  return {
    id: await num(page, '#prediction', 'id'),
    label: Number(await attr(page, '#prediction', 'label')),
    probs: JSON.parse(await attr(page, '#prediction', 'probs')),
  };
}

/** An RGBA image `w` x `h` with the rectangle [x0, x1) x [y0, y1) white (the pad's ink). */
function inkRect(w, h, x0, y0, x1, y1) {
  const data = new Uint8ClampedArray(w * h * 4);
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) data.set([255, 255, 255, 255], (y * w + x) * 4);
  return { width: w, height: h, data };
}

test('demo helpers: drawing downsampling, IDX detection, softmax, replay picks', () => {
  // A 40x80 bar anywhere on the pad: for 8x8 its height fills the grid, 4 columns wide, centred,
  // each covered cell fully on (as a fully inked 4x4 block is 16/16 in the UCI digits).
  const d = downsample(inkRect(280, 280, 100, 150, 140, 230), 8);
  const cols = [...Array(8).keys()].map((x) => d[3 * 8 + x]);
  assert.deepEqual(cols.map((v) => Math.round(v * 100) / 100), [0, 0, 1, 1, 1, 1, 0, 0]);
  assert.equal(d.filter((v) => v > 0).length, 32);
  // MNIST: fits 20x20 and sits on its centre of mass (13.5, 13.5) → rows 4..23.
  const m = downsample(inkRect(280, 280, 0, 0, 280, 140), 28);
  const rows = [...Array(28).keys()].filter((y) => m[y * 28 + 14] > 0);
  assert.equal(rows.length, 10);
  assert.ok(Math.abs((rows[0] + rows[rows.length - 1]) / 2 - 13.5) <= 1, `rows ${rows}`);
  assert.equal(downsample(inkRect(10, 10, 0, 0, 0, 0), 8).some((v) => v !== 0), false);

  assert.equal(idxKind(new Uint8Array([0, 0, 8, 3, 0]).buffer), 'images');
  assert.equal(idxKind(new Uint8Array([0, 0, 8, 1]).buffer), 'labels');
  assert.equal(idxKind(new Uint8Array([0x1f, 0x8b, 8, 0]).buffer), null);

  const p = softmaxIfLogits([1, 2, 3]);
  assert.ok(Math.abs(p.reduce((a, b) => a + b) - 1) < 1e-6 && p[2] > p[1] && p[1] > p[0]);
  assert.deepEqual(Array.from(softmaxIfLogits([0.25, 0.75])), [0.25, 0.75]);
  const r = replayIndices(100, 20, 7);
  assert.equal(new Set(r).size, 20);
  assert.ok(r.every((i) => i >= 0 && i < 100));
  assert.deepEqual(replayIndices(100, 20, 7), r);
  assert.equal(replayIndices(5, 20, 1).length, 5);
});

test('live demo', { timeout: 240_000 }, async (t) => {
  const server = await startServer(root);
  const browser = await launchBrowser();
  t.after(async () => {
    await browser.close();
    await server.close();
  });

  await t.test('cpu: train, pause/resume, weights, teach a drawing, save/load, no requests', async () => {
    const { page, requests, detach } = await openDemo(browser, server.url, 'backend=cpu&epochs=200&lr=0.003');
    try {
      assert.equal(await attr(page, '#report', 'backend'), 'cpu');
      assert.equal(await num(page, '#chart', 'points'), 0);

      await trainFor(page, 3, 2);
      const points1 = await num(page, '#chart', 'points');
      const step1 = await num(page, '#step', 'step');
      assert.ok(points1 > 3, `chart points after training: ${points1}`);
      const acc = await waitAbove(page, '#test', 'accuracy', 0);
      assert.ok(acc > 0.5, `test accuracy after 2 epochs on digits: ${acc}`);
      // The chart draws training and validation loss and accuracy per epoch (Keras-style),
      // from each epoch's fit logs: every series has a point for each finished epoch.
      const epochsDone = Number(await page.evaluate(() => document.getElementById('epoch').textContent));
      assert.ok(epochsDone >= 2, `epochs finished: ${epochsDone}`);
      for (const key of ['epochLoss', 'epochAccuracy', 'epochValLoss', 'epochValAccuracy']) {
        assert.ok((await num(page, '#chart', `${key}Points`)) >= 2, `${key} points on the chart`);
      }
      const valLoss = await num(page, '#chart', 'epochValLoss');
      const valAcc = await num(page, '#chart', 'epochValAccuracy');
      assert.ok(valLoss > 0 && Number.isFinite(valLoss), `validation loss on the chart: ${valLoss}`);
      assert.ok(valAcc > 0.5 && valAcc <= 1, `validation accuracy on the chart: ${valAcc}`);

      // Resume continues the same model: the step counter keeps counting from where it paused.
      await trainFor(page, points1);
      assert.ok((await num(page, '#step', 'step')) > step1, 'resume continued the step count');

      const variance = await weightVariance(page);
      assert.ok(variance > 0, `weight canvas variance ${variance}`);
      const hidden = pngVariance(await page.locator('#hidden').screenshot());
      assert.ok(hidden > 0, `hidden-layer canvas variance ${hidden}`);

      await drawSeven(page);
      const before = await prediction(page);
      assert.equal(before.probs.length, 10);
      // Teach the runner-up class: a different label the drawing plausibly resembles.
      const ranked = before.probs.map((p, d) => [p, d]).sort((a, b) => b[0] - a[0]);
      const target = ranked[1][1];
      assert.notEqual(target, before.label);
      await page.selectOption('#label', String(target));
      let now = before;
      for (let i = 1; i <= 6 && now.label !== target; i++) {
        await page.click('#teach');
        await waitAbove(page, '#taught', 'count', i - 1);
        now = await prediction(page, now.id);
      }
      assert.equal(now.label, target, `prediction after teaching ${target}: ${now.label} (was ${before.label}); probs ${now.probs}`);

      // Save, then load: the loaded model is the taught one (same prediction for the drawing).
      await page.click('#save');
      await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('saved') || document.body.dataset.state === 'error', null, { timeout: 30_000 });
      await waitState(page, ['ready']);
      await page.click('#load');
      await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('loaded') || document.body.dataset.state === 'error', null, { timeout: 30_000 });
      await waitState(page, ['ready']);
      const loaded = await prediction(page, now.id);
      assert.equal(loaded.label, target, `prediction of the loaded model: ${loaded.label}`);
      assert.ok((await num(page, '#test', 'accuracy')) > 0.8, 'after teaching (with replay) and loading, the model still classifies the test set');

      fs.mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'demo.png'), fullPage: true });

      assert.deepEqual(requests.afterReady, [], 'no network requests after the demo loaded');
      assert.equal(await attr(page, '#net', 'count'), '0', 'the page indicator shows 0 requests');
      assert.deepEqual(await cspViolations(page), [], 'the demo runs under the CSP (web/server/static.mjs)');
      assert.equal(await page.evaluate(() => self.crossOriginIsolated), true);
    } finally {
      detach();
      await page.close();
    }
  });

  const mnistDir = path.resolve(webRoot, '..', '..', 'shared', 'data', 'mnist');
  const t10k = ['t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'].map((f) => path.join(mnistDir, f));
  await t.test('mnist: IDX files picked in the page train a 28x28 model', { skip: !t10k.every(fs.existsSync) && `no ${t10k[0]}` }, async () => {
    const { page, requests, detach } = await openDemo(browser, server.url, 'backend=cpu&epochs=1&batch=64');
    try {
      await page.check('input[name="data"][value="mnist"]');
      await page.setInputFiles('#mnist-files', t10k);
      await page.waitForFunction(() => document.getElementById('data-info').textContent.startsWith('mnist') || document.body.dataset.state === 'error', null, { timeout: 60_000 });
      await waitState(page, ['ready']);
      // Only the t10k pair was picked: the demo trains on it and keeps 1/7 for validation.
      assert.match(await page.textContent('#data-info'), /mnist: 8571 training and 1429 test images of 28x28x1/);
      await trainFor(page, 2);
      await drawSeven(page);
      const p = await prediction(page);
      assert.equal(p.probs.length, 10);
      assert.deepEqual(requests.afterReady, []);
    } finally {
      detach();
      await page.close();
    }
  });

  await t.test('errors from the worker are shown, and the page recovers', async () => {
    const page = await newPage(browser);
    try {
      await page.goto(`${server.url}/demo/?backend=cpu&lr=0`);
      await waitState(page, ['error']);
      const err = await page.evaluate(() => document.body.dataset.lastError);
      assert.match(err, /learning rate/i, `error shown: ${err}`);
      assert.match(await page.textContent('#status'), /error \(build\)/);
      await page.fill('#lr', '0.01');
      await page.click('#build');
      // The page stays in the error state until the new model is built.
      await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
      assert.equal(await attr(page, '#report', 'backend'), 'cpu');
    } finally {
      await page.close();
    }
  });

  await t.test('webgl: starts on WebGL2 and trains', async () => {
    const { page, requests, detach } = await openDemo(browser, server.url, 'backend=webgl&software=1&epochs=50');
    try {
      assert.equal(await attr(page, '#report', 'backend'), 'webgl');
      await trainFor(page, 2);
      assert.ok((await num(page, '#chart', 'points')) > 2);
      const variance = await weightVariance(page);
      assert.ok(variance > 0, `weight canvas variance on webgl ${variance}`);
      fs.mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: path.join(artifacts, 'demo-webgl.png'), fullPage: true });
      assert.deepEqual(requests.afterReady, []);
      assert.equal(await attr(page, '#net', 'count'), '0');
      assert.deepEqual(await cspViolations(page), []);
    } finally {
      detach();
      await page.close();
    }
  });
});
