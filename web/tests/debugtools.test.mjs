// The debugging and teaching tools of issue 18 in headless Chromium: `rt.crossCheck` on every
// browser backend (passes against the f64 reference; an injected wrong kernel result fails and
// names the tensor and op), `model.layouts()` (textures on WebGL, buffers on WebGPU), and fit
// pacing (`maxStepsPerSecond` gives bit-identical weights and takes at least 0.9x the expected
// time — a lower bound only; step-through through `onBatchEnd` returning 'step').
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';
import { newPage, cspViolations } from './harness.mjs';

const { inPage, ctx } = apiPage();

for (const backend of ['webgpu', 'webgl', 'webgl1', 'cpu']) {
  test(`${backend}: crossCheck passes, and an injected fault fails naming the tensor and op`, async () => {
    const r = await inPage(async (pg, backend) => {
      const rt = await pg.init({ backend });
      const ok = await rt.crossCheck({ layers: [4, 6, 3], steps: 3 });
      const bad = await rt.crossCheck({ layers: [4, 6, 3], steps: 2, injectFault: 'sigmoid' });
      let err = null;
      try {
        await rt.crossCheck({ layer: [4] });
      } catch (e) {
        err = e.message;
      }
      return { ok, bad, err, backend: rt.backend };
    }, backend);
    assert.equal(r.backend, backend);
    assert.equal(r.ok.passed, true, r.ok.summary);
    assert.equal(r.ok.rows.length, 3 * 14);
    assert.ok(r.ok.rows.every((row) => row.pass && row.maxAbs <= row.tolAbs + row.tolRel * 1e3));
    assert.equal(r.bad.passed, false);
    assert.equal(r.bad.firstFailure.tensor, 'layer1.act', r.bad.summary);
    assert.equal(r.bad.firstFailure.op, 'sigmoid');
    assert.match(r.bad.summary, /layer1\.act.*sigmoid/);
    assert.match(r.err, /unknown option 'layer'/);
  });
}

test('layouts: WebGL textures (4 elements per texel), WebGPU buffers, CPU host memory', async () => {
  const r = await inPage(async (pg) => {
    const out = {};
    for (const backend of ['webgl', 'webgpu', 'cpu']) {
      const rt = await pg.init({ backend });
      const model = pg.sequential([pg.layers.dense({ units: 30, inputShape: [10], activation: 'relu' }), pg.layers.dense({ units: 3 })]);
      model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
      await model.fit(pg.tensor(new Float32Array(40), [4, 10]), pg.tensor([0, 1, 2, 0], [4]), { epochs: 1, batchSize: 4 });
      out[backend] = rt.layouts(model);
    }
    return out;
  });
  const w = (rows) => rows.find((x) => x.name.endsWith('weight') && x.elements === 300);
  const gl = w(r.webgl);
  assert.ok(gl, JSON.stringify(r.webgl));
  assert.equal(gl.memory, 'texture');
  assert.equal(gl.used, 75); // 300 elements / 4 per texel
  assert.equal(gl.allocated, gl.width * gl.height);
  assert.ok(gl.allocated >= 75 && gl.bytes === gl.allocated * (gl.format === 'RGBA32F' ? 16 : 8), JSON.stringify(gl));
  assert.match(gl.layout, /row-major fold/);
  const gpu = w(r.webgpu);
  assert.equal(gpu.memory, 'buffer');
  assert.equal(gpu.used, 300);
  assert.ok(gpu.bytes >= 1200);
  assert.equal(w(r.cpu).memory, 'host');
  // Adam's moments are live tensors of the model too
  assert.ok(r.webgl.some((x) => x.name.startsWith('m/')), JSON.stringify(r.webgl.map((x) => x.name)));
});

test('pacing: 20 steps/s gives bit-identical weights and takes at least 0.9x the expected time', async (t) => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const d = pg.data.digits();
    const n = 320;
    const train = async (opts) => {
      const model = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 3 });
      model.compile({ optimizer: pg.optimizers.sgd(0.1), loss: 'softmaxCrossEntropy' });
      const x = pg.tensor(d.train.x.subarray(0, n * 64), [n, 64]);
      const y = pg.tensor(d.train.y.subarray(0, n), [n]);
      const t0 = performance.now();
      await model.fit(x, y, { epochs: 1, batchSize: 16, seed: 5, ...opts });
      const ms = performance.now() - t0;
      const ws = await model.getWeights();
      const bits = {};
      for (const [k, t] of Object.entries(ws)) bits[k] = Array.from(new Uint32Array(Float32Array.from(await t.data()).buffer));
      return { ms, bits };
    };
    const fast = await train({});
    const slow = await train({ maxStepsPerSecond: 20 });
    // step-through: every callback asks for one more step; each step is then read alone
    const seen = [];
    await train({ readEvery: 5, onBatchEnd: (step) => { seen.push(step); return 'step'; } });
    // asking once: one single step, then back to every 5th
    const once = [];
    await train({ readEvery: 5, onBatchEnd: async (step) => { once.push(step); return once.length === 1 ? 'step' : undefined; } });
    let err = null;
    try {
      await train({ maxStepsPerSecond: 0 });
    } catch (e) {
      err = e.message;
    }
    return { fast, slow, seen, once, err };
  });
  assert.deepEqual(r.slow.bits, r.fast.bits);
  const steps = 320 / 16;
  t.diagnostic(`20 steps: ${r.fast.ms.toFixed(0)} ms unpaced, ${r.slow.ms.toFixed(0)} ms at 20 steps/s`);
  assert.ok(r.slow.ms >= 0.9 * (steps / 20) * 1000, `20 steps at 20/s took ${r.slow.ms} ms`);
  // readEvery 5 alone reads at steps 5, 10, 15, 20; 'step' makes every following step read
  assert.deepEqual(r.seen, Array.from({ length: 16 }, (_, i) => i + 5));
  assert.deepEqual(r.once, [5, 6, 11, 16, 20]);
  assert.match(r.err, /maxStepsPerSecond/);
});

test('demo: cross-check and layout buttons, speed slider, step-through', async () => {
  const demo = await newPage(ctx.browser);
  try {
    await demo.goto(`${ctx.server.url}/demo/?backend=cpu`, { waitUntil: 'load' });
    const waitFor = async (fn, arg) => {
      const h = await demo.waitForFunction(fn, arg, { timeout: 120_000 });
      await h.dispose();
      const err = await demo.evaluate(() => (document.body.dataset.state === 'error' ? document.body.dataset.lastError : ''));
      if (err) throw new Error(`demo reported an error: ${err}`);
    };
    const ready = () => document.body.dataset.state === 'ready' || document.body.dataset.state === 'error';
    await waitFor(ready);
    await demo.click('#cross-check');
    await waitFor(() => document.getElementById('debug-out').dataset.passed !== '' || document.body.dataset.state === 'error');
    assert.equal(await demo.$eval('#debug-out', (el) => el.dataset.passed), 'true');
    assert.match(await demo.$eval('#debug-out', (el) => el.textContent), /PASS: 42 tensors/);
    await demo.click('#layouts');
    await waitFor(() => Number(document.getElementById('debug-out').dataset.rows || 0) > 0 || document.body.dataset.state === 'error');
    assert.match(await demo.$eval('#debug-out', (el) => el.textContent), /0\.weight .*host/);

    await demo.$eval('#speed', (el) => {
      el.value = '5';
      el.dispatchEvent(new Event('input'));
    });
    assert.equal(await demo.$eval('#speed-label', (el) => el.textContent), '5/s');
    await demo.check('#stepthrough');
    await demo.click('#train');
    const stepAt = () => demo.$eval('#step-once', (b) => (b.disabled ? -1 : Number(b.dataset.step)));
    await waitFor(() => !document.getElementById('step-once').disabled || document.body.dataset.state === 'error');
    const first = await stepAt();
    assert.equal(first, 1);
    await demo.click('#step-once');
    await waitFor((s) => Number(document.getElementById('step-once').dataset.step) > s || document.body.dataset.state === 'error', first);
    assert.equal(await stepAt(), first + 1);
    assert.equal(await demo.$eval('#step', (el) => el.textContent), String(first + 1));
    await demo.click('#pause');
    await waitFor(ready);
    assert.equal(await demo.$eval('#step-once', (b) => b.disabled), true);
    assert.deepEqual(await cspViolations(demo), [], 'the debug tools run under the CSP');
  } finally {
    await demo.close();
  }
});
