// The precision-limited mode (issue 17, item 5): `init({ backend: 'webgl', precision: 'low' })`
// stores tensors in RGBA16F and compiles fragment shaders in mediump, as some phones do. Init
// runs a training check against the f32 CPU: either training still reduces the loss there (and
// then a JS fit of the seed network on float targets does too), or init refuses the backend
// with the measured reason. Never a silently flat loss.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

test('webgl precision low: training reduces the loss, or init refuses with the measured reason', async () => {
  const r = await inPage(async (pg) => {
    let rt;
    try {
      rt = await pg.init({ backend: 'webgl', precision: 'low' });
    } catch (e) {
      return { refused: true, pg: e instanceof pg.PixelgradError, message: e.message, tried: e.report && e.report.tried };
    }
    // the seed network through fit on float targets, here and in f32 on the CPU
    const n = 64;
    const x = pg.tensor(Float32Array.from({ length: n * 48 }, (_, i) => ((i * 31) % 23) / 23), [n, 48]);
    const y = pg.tensor(Float32Array.from({ length: n * 2 }, (_, i) => (i % 2 ? 0.3 : 0.1 + (0.8 * (Math.floor(i / 2) % 4)) / 3)), [n, 2]);
    const model = pg.sequential([
      pg.layers.dense({ units: 64, inputShape: [48], activation: 'sigmoid' }),
      pg.layers.dense({ units: 2, activation: 'sigmoid' }),
    ], { seed: 3 });
    model.compile({ optimizer: pg.optimizers.sgd(0.5), loss: 'meanSquaredError' });
    const h = await model.fit(x, y, { epochs: 4, batchSize: 1, shuffle: false });
    const format = rt.report.format;
    const warnings = rt.report.warnings;
    const check = rt.report.precisionCheck;
    await pg.init({ backend: 'cpu' });
    const ref = pg.sequential([
      pg.layers.dense({ units: 64, inputShape: [48], activation: 'sigmoid' }),
      pg.layers.dense({ units: 2, activation: 'sigmoid' }),
    ], { seed: 3 });
    ref.compile({ optimizer: pg.optimizers.sgd(0.5), loss: 'meanSquaredError' });
    const hRef = await ref.fit(x, y, { epochs: 4, batchSize: 1, shuffle: false });
    let wrong = null;
    try {
      await pg.init({ backend: 'webgpu', precision: 'low' });
    } catch (e) {
      wrong = { pg: e instanceof pg.PixelgradError, message: e.message };
    }
    return { refused: false, format, warnings, check, loss: h.history.loss, cpuLoss: hRef.history.loss, stopped: h.stopped || null, wrong };
  });
  process.stderr.write(`[precision low] ${JSON.stringify(r)}\n`);
  if (r.refused) {
    assert.ok(r.pg, 'a PixelgradError');
    assert.match(r.message, /precision 'low' \(RGBA16F, mediump\): \d+ SGD steps .* lower the loss by -?[\d.]+ % here .* but by [\d.]+ % in f32/);
    return;
  }
  assert.equal(r.format, 'RGBA16F');
  assert.ok(r.warnings.some((w) => /mediump forced/.test(w)), JSON.stringify(r.warnings));
  assert.ok(r.check.deviceDrop > 0 && r.check.deviceDrop >= 0.5 * r.check.cpuDrop, JSON.stringify(r.check));
  assert.equal(r.stopped, null);
  assert.ok(r.loss.every(Number.isFinite));
  assert.ok(r.loss.every((l, i) => i === 0 || l < r.loss[i - 1]), `loss goes down every epoch: ${r.loss}`);
  const drop = (l) => (l[0] - l[3]) / l[0];
  assert.ok(drop(r.loss) >= 0.5 * drop(r.cpuLoss), `low precision lowers the loss by ${drop(r.loss)}, f32 on the CPU by ${drop(r.cpuLoss)}`);
  assert.ok(r.wrong && r.wrong.pg && /a WebGL mode/.test(r.wrong.message), JSON.stringify(r.wrong));
});

// Mixed-precision training (issue 14): `compile({ precision: 'mixed' })` trains the digits MLP
// with f16 activations and gradients and a device-side loss scale on webgpu, cpu and webgl
// (WebGL2: f16 copies drawn into RGBA16UI textures), reaching the f32 run's accuracy; on webgl1
// (no integer textures, so no f16 results) it trains f32 and `model.precision` says why.
test('compile precision mixed: the digits MLP matches f32, or reports the f32 fallback', async () => {
  const r = await inPage(async (pg) => {
    const out = {};
    for (const backend of ['webgpu', 'cpu', 'webgl', 'webgl1']) {
      await pg.init({ backend });
      const d = pg.data.digits();
      const x = pg.tensor(d.train.x, [d.train.n, 64]);
      const y = pg.tensor(d.train.y, [d.train.n]);
      const xt = pg.tensor(d.test.x, [d.test.n, 64]);
      const yt = pg.tensor(d.test.y, [d.test.n]);
      const acc = {};
      let info = null;
      let scale = null;
      for (const precision of ['f32', 'mixed']) {
        const model = pg.sequential([
          pg.layers.dense({ units: 64, inputShape: [64], activation: 'relu' }),
          pg.layers.dense({ units: 10 }),
        ], { seed: 4 });
        model.compile({ optimizer: pg.optimizers.adam(3e-3), loss: 'softmaxCrossEntropy', precision });
        await model.fit(x, y, { epochs: 5, batchSize: 32, shuffle: true, seed: 2 });
        acc[precision] = (await model.evaluate(xt, yt)).accuracy;
        if (precision === 'mixed') {
          info = model.precision;
          scale = await model.lossScale();
        }
      }
      let bad = null;
      try {
        pg.sequential([pg.layers.dense({ units: 2, inputShape: [4] })]).compile({ optimizer: 'sgd', precision: 'bf16' });
      } catch (e) {
        bad = e.message;
      }
      out[backend] = { acc, info, scale, bad };
    }
    return out;
  });
  process.stderr.write(`[precision mixed] ${JSON.stringify(r)}\n`);
  for (const backend of ['webgpu', 'cpu', 'webgl', 'webgl1']) {
    const { acc, info, scale, bad } = r[backend];
    assert.ok(acc.f32 > 0.9, `${backend}: f32 accuracy ${acc.f32}`);
    assert.ok(Math.abs(acc.f32 - acc.mixed) <= 0.005 + 1e-6, `${backend}: f32 ${acc.f32}, mixed ${acc.mixed}`);
    assert.equal(info.requested, 'mixed');
    assert.match(bad, /precision must be 'f32' or 'mixed'/);
    if (backend === 'webgl1') {
      assert.equal(info.precision, 'f32', JSON.stringify(info));
      assert.match(info.fallback, /f16/);
      assert.equal(scale, null);
    } else {
      assert.equal(info.precision, 'mixed', `${backend}: ${JSON.stringify(info)}`);
      assert.equal(info.fallback, null);
      assert.ok(scale.scale > 0 && scale.skippedSteps >= 0, JSON.stringify(scale));
    }
  }
});
