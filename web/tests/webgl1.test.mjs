// WebGL1: a page where WebGL2 (and WebGPU) are unavailable picks the `webgl1` backend under
// `auto`, runs the op checks below against host arithmetic and trains the digits MLP to the
// CPU's losses and accuracy with the same seed. Headless Chromium's WebGL1 context is
// SwiftShader (a software rasteriser), so `allowSoftware` lets `auto` take it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

// Before any page script: no WebGPU, and getContext('webgl2') returns null (as on a device
// with WebGL1 only); getContext('webgl') is left alone.
const { inPage } = apiPage({
  initScript: () => {
    try {
      Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
    } catch {
      // no WebGPU to hide
    }
    for (const C of [globalThis.HTMLCanvasElement, globalThis.OffscreenCanvas]) {
      if (!C) continue;
      const orig = C.prototype.getContext;
      C.prototype.getContext = function getContext(kind, ...rest) {
        if (kind === 'webgl2') return null;
        return orig.call(this, kind, ...rest);
      };
    }
  },
});

test('auto picks webgl1 when webgl2 is unavailable and says why at each step', async () => {
  const r = await inPage(async (pg) => {
    const rt = await pg.init({ backend: 'auto', allowSoftware: true });
    return { backend: rt.backend, tried: rt.report.tried, name: rt.report.name, err: rt.report.selfTest.maxRelError, format: rt.report.format };
  });
  assert.equal(r.backend, 'webgl1', JSON.stringify(r.tried));
  assert.deepEqual(r.tried.map((t) => [t.backend, t.ok]), [['webgpu', false], ['webgl', false], ['webgl1', true]]);
  assert.match(r.tried[0].reason, /navigator\.gpu is missing/);
  assert.match(r.tried[1].reason, /getContext\("webgl2"\) returned null/);
  assert.match(r.tried[2].reason, /^webgl1 \(/);
  assert.match(r.name, /^webgl1 \(/);
  assert.equal(r.format, 'RGBA32F');
  assert.ok(r.err < 1e-4, `self-test error ${r.err}`);
});

test('webgl1: op checks against host arithmetic (matmul, elementwise, reductions, softmax)', async () => {
  const r = await inPage(async (pg) => {
    const rt = await pg.init({ backend: 'webgl1', allowSoftware: true });
    // matmul of a [5, 7] by a [7, 3] on resident inputs, odd sizes on purpose.
    const a = Array.from({ length: 35 }, (_, i) => Math.sin(i) * 2);
    const b = Array.from({ length: 21 }, (_, i) => Math.cos(i * 0.7));
    const prod = Array.from(await pg.matmul(pg.tensor(new Float32Array(a), [5, 7]), pg.tensor(new Float32Array(b), [7, 3])).data());
    // A dense layer with softmax: predict runs matmul, add (broadcast), and softmax (exp, max
    // and sum reductions) on the device.
    const m = pg.sequential([pg.layers.dense({ units: 4, inputShape: [3], activation: 'softmax' })], { seed: 3 });
    const x = [[0.5, -1, 2], [3, 0.25, -0.75]];
    const probs = Array.from(await m.predict(pg.tensor(x)).data());
    return { backend: rt.backend, a, b, prod, probs };
  });
  assert.equal(r.backend, 'webgl1');
  for (let i = 0; i < 5; i++) {
    for (let j = 0; j < 3; j++) {
      let want = 0;
      for (let k = 0; k < 7; k++) want += Math.fround(r.a[i * 7 + k]) * Math.fround(r.b[k * 3 + j]);
      assert.ok(Math.abs(r.prod[i * 3 + j] - want) < 1e-5, `matmul [${i}, ${j}]: ${r.prod[i * 3 + j]} vs ${want}`);
    }
  }
  assert.equal(r.probs.length, 8);
  for (const row of [0, 1]) {
    const p = r.probs.slice(row * 4, row * 4 + 4);
    assert.ok(p.every((v) => v > 0 && v < 1), JSON.stringify(p));
    assert.ok(Math.abs(p.reduce((s, v) => s + v, 0) - 1) < 1e-5, `softmax row ${row} sums to ${p}`);
  }
});

test('webgl1: the digits MLP trains like the CPU with the same seed', async () => {
  const r = await inPage(async (pg) => {
    const run = async (backend) => {
      const rt = await pg.init({ backend, allowSoftware: true });
      const d = pg.data.digits();
      const model = pg.sequential([
        pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }),
        pg.layers.dense({ units: 10 }),
      ], { seed: 11 });
      model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
      const x = pg.tensor(d.train.x, [d.train.n, 64]);
      const y = pg.tensor(d.train.y, [d.train.n]);
      const losses = [];
      await model.fit(x, y, { epochs: 3, batchSize: 64, shuffle: true, seed: 7, readEvery: 1, onBatchEnd: (step, logs) => losses.push(logs.loss) });
      const ev = await model.evaluate(pg.tensor(d.test.x, [d.test.n, 64]), pg.tensor(d.test.y, [d.test.n]));
      return { backend: rt.backend, losses, accuracy: ev.accuracy };
    };
    return { gl: await run('webgl1'), cpu: await run('cpu') };
  });
  assert.equal(r.gl.backend, 'webgl1');
  assert.equal(r.cpu.backend, 'cpu');
  assert.ok(r.gl.losses.length >= 50, `${r.gl.losses.length} logged losses`);
  assert.equal(r.gl.losses.length, r.cpu.losses.length);
  for (let i = 0; i < 50; i++) {
    const [a, b] = [r.gl.losses[i], r.cpu.losses[i]];
    assert.ok(Math.abs(a - b) / Math.abs(b) < 1e-3, `step ${i + 1}: loss ${a} on webgl1, ${b} on cpu`);
  }
  assert.ok(Math.abs(r.gl.accuracy - r.cpu.accuracy) <= 0.005, `accuracy ${r.gl.accuracy} on webgl1, ${r.cpu.accuracy} on cpu`);
  assert.ok(r.gl.accuracy > 0.9, `accuracy ${r.gl.accuracy}`);
});
