// Module worker for worker.test.mjs: the same package as in a page, with WebGL2 through
// OffscreenCanvas and WebGPU through the worker's navigator.gpu.
import * as pg from '/pkg/index.js';

/** A panic inside the worker's instance: typed, old objects refuse, a new model trains. */
async function crash(backend) {
  const rt = await pg.init({ backend });
  const d = pg.data.digits();
  const x = pg.tensor(d.train.x, [d.train.n, 64]);
  const y = pg.tensor(d.train.y, [d.train.n]);
  const make = () => {
    const m = pg.sequential([pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 3 });
    m.compile({ optimizer: pg.optimizers.adam(1e-2) });
    return m;
  };
  const model = make();
  await model.fit(x, y, { epochs: 1, batchSize: 64 });
  const kindOf = async (f) => {
    try {
      await f();
      return null;
    } catch (err) {
      return err.kind;
    }
  };
  const panic = await kindOf(() => pg.__testPanic('worker boom'));
  const old = await kindOf(() => model.predict(x));
  const fresh = make();
  const h = await fresh.fit(x, y, { epochs: 3, batchSize: 64 });
  const ev = await fresh.evaluate(pg.tensor(d.test.x, [d.test.n, 64]), pg.tensor(d.test.y, [d.test.n]));
  return { backend: rt.backend, panic, old, accuracy: ev.accuracy, loss: h.history.loss, recoveries: (rt.report.recoveries || []).length };
}

self.onmessage = async (e) => {
  const { backend } = e.data;
  if (e.data.crash) {
    try {
      self.postMessage(await crash(backend));
    } catch (err) {
      self.postMessage({ error: err && err.message ? err.message : String(err) });
    }
    return;
  }
  try {
    if (backend === 'webgpu') {
      const adapter = self.navigator.gpu ? await self.navigator.gpu.requestAdapter() : null;
      if (!adapter) {
        self.postMessage({ skipped: 'no WebGPU adapter in this worker' });
        return;
      }
    }
    const rt = await pg.init({ backend });
    const d = pg.data.digits();
    const model = pg.sequential([
      pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }),
      pg.layers.dense({ units: 10 }),
    ]);
    model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
    const x = pg.tensor(d.train.x, [d.train.n, 64]);
    const y = pg.tensor(d.train.y, [d.train.n]);
    const xt = pg.tensor(d.test.x, [d.test.n, 64]);
    const yt = pg.tensor(d.test.y, [d.test.n]);
    let batches = 0;
    const h = await model.fit(x, y, { epochs: 3, batchSize: 64, seed: 3, onBatchEnd: () => batches++ });
    const ev = await model.evaluate(xt, yt);
    const probs = await model.predict(xt).data();
    const canvas = new OffscreenCanvas(1, 1);
    await model.drawWeights(0, canvas);
    await model.save(`indexeddb://worker-${backend}`);
    const m2 = await pg.loadModel(`indexeddb://worker-${backend}`);
    const ev2 = await m2.evaluate(xt, yt);
    self.postMessage({
      backend: rt.backend,
      adapter: rt.report.adapter,
      loss: h.history.loss,
      batches,
      ev,
      ev2,
      probs: probs.length,
      canvas: [canvas.width, canvas.height],
    });
  } catch (err) {
    self.postMessage({ error: err && err.message ? err.message : String(err) });
  }
};
