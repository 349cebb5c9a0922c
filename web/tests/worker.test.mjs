// The package inside a module Web Worker: WebGL2 through OffscreenCanvas, the CPU backend, and
// WebGPU through the worker's navigator.gpu when it has an adapter. Each run trains the digits
// MLP, evaluates, predicts, draws weights on an OffscreenCanvas and round-trips IndexedDB. A
// panic inside the worker's wasm instance is recovered there as in a page (crash.test.mjs).
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage } from './harness.mjs';

let page;
let close;

before(async () => ({ page, close } = await openPage('tests/pages/worker.html', { ready: true })));
after(() => close?.());

for (const backend of ['webgl', 'cpu', 'webgpu']) {
  test(`worker: digits MLP on ${backend}`, async (t) => {
    const r = await page.evaluate((b) => window.runInWorker({ backend: b }), backend);
    if (r.skipped) {
      t.skip(r.skipped);
      return;
    }
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.backend, backend);
    assert.equal(r.loss.length, 3);
    assert.ok(r.loss[2] < r.loss[0], `loss ${r.loss}`);
    assert.ok(r.batches >= 3);
    assert.ok(r.ev.accuracy >= 0.9, `test accuracy ${r.ev.accuracy}`);
    assert.ok(Math.abs(r.ev2.accuracy - r.ev.accuracy) < 1e-9, 'reloaded model evaluates the same');
    assert.equal(r.probs, 3590);
    assert.ok(r.canvas[0] > 1 && r.canvas[1] > 1);
  });
}

for (const backend of ['cpu', 'webgl']) {
  test(`worker: a panic on ${backend} discards the instance and a new model trains`, async () => {
    const r = await page.evaluate((b) => window.runInWorker({ backend: b, crash: true }), backend);
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.backend, backend);
    assert.equal(r.panic, 'panic');
    assert.equal(r.old, 'instanceLost');
    assert.equal(r.recoveries, 1);
    assert.ok(r.accuracy >= 0.9, `accuracy after the crash ${r.accuracy}`);
  });
}
