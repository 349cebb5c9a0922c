// Page module for threads.test.mjs: one workload on the CPU backend, run once per page so the
// test can compare the threaded build (a cross-origin isolated page) with the single-threaded
// one. Sizes are chosen so every threaded path runs: elementwise outputs past the pool's
// minimum (2^15 elements), matrix products split by rows (m >= 128) and batched products
// split by batch.
import * as pg from '/pkg/index.js';

/** Deterministic values in [-1, 1). */
function values(n, seed) {
  const v = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = s / 2 ** 31 - 1;
  }
  return v;
}

export async function run(opts) {
  let rt;
  try {
    rt = await pg.init({ backend: 'cpu', ...opts });
  } catch (e) {
    return { error: e.message, kind: e.kind };
  }
  const d = pg.data.digits();
  const n = 512;
  const x = pg.tensor(d.train.x.slice(0, n * 64), [n, 64]);
  const y = pg.tensor(d.train.y.slice(0, n), [n]);
  const model = pg.sequential([pg.layers.dense({ units: 512, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 7 });
  model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
  const h = await model.fit(x, y, { epochs: 2, batchSize: 256, seed: 3 });
  const weights = {};
  for (const [k, w] of Object.entries(await model.getWeights())) weights[k] = Array.from(await w.data());
  const logits = Array.from(await model.predict(x).data());
  const product = Array.from(await pg.matmul(pg.tensor(values(384 * 320, 1), [384, 320]), pg.tensor(values(320 * 448, 2), [320, 448])).data());
  const batched = Array.from(await pg.matmul(pg.tensor(values(8 * 64 * 96, 3), [8, 64, 96]), pg.tensor(values(8 * 96 * 80, 4), [8, 96, 80])).data());
  // Test hook: chunks the workers ran, read from the loaded build's glue (instance 0).
  const glue = rt.report.threads.build === 'threaded' ? await import('/pkg/pixelgrad_web_threads.js') : await import('/pkg/pixelgrad_web.js');
  const workerChunks = glue.cpuWorkerChunks();
  return { workerChunks, threads: rt.report.threads, loss: h.history.loss, weights, logits, product, batched };
}
