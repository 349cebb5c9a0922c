// Module worker for recovery.test.mjs: a WebGL2 context (OffscreenCanvas) or WebGPU device lost
// in the middle of `fit` inside a worker, where the demo trains.
import * as pg from '/pkg/index.js';

self.onmessage = async (e) => {
  const { backend } = e.data;
  try {
    const rt = await pg.init({ backend });
    const d = pg.data.digits();
    const n = 600;
    const x = pg.tensor(d.train.x.subarray(0, n * 64), [n, 64]);
    const y = pg.tensor(d.train.y.subarray(0, n), [n]);
    const model = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 1 });
    model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
    const losses = [];
    const h = await model.fit(x, y, {
      epochs: 3, batchSize: 20, checkpointEvery: 20,
      onBatchEnd: (s) => {
        if (s === 50 && losses.length === 0) rt.simulateContextLoss();
      },
      onDeviceLost: (info) => losses.push({ step: info.step, checkpointStep: info.checkpointStep, backend: info.backend, lostBackend: info.lostBackend }),
    });
    self.postMessage({ backend: rt.backend, lost: rt.lost, losses, epochs: h.history.loss.length, loss: h.history.loss });
  } catch (err) {
    self.postMessage({ error: err && err.message ? err.message : String(err) });
  }
};
