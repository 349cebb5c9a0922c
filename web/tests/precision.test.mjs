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
