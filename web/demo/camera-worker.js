// The camera demo's trainer: a module Worker with its own pixelgrad runtime. The page sends the
// recorded samples (the fromPixels inputs, read back once when recorded) and, when one is
// loaded, the ONNX backbone's bytes; the worker trains the head with model.fit (the page stays
// responsive and keeps predicting) and sends the trained weights back, which the page sets on
// its own copy of the head. Messages: page → worker `init {backend, allowSoftware}`, `onnx
// {bytes}`, `train {x, y, n, shape, classes, epochs}`; worker → page `ready {backend}`,
// `epoch {epoch, logs}`, `trained {history, weights}`, `error {message}`.
import * as pg from '../pkg/index.js';
import { headLayers } from './camera-head.js';

let onnx = null;
let head = null;
const post = (m, t) => self.postMessage(m, t || []);

const handlers = {
  async init(m) {
    const rt = await pg.init({ backend: m.backend, allowSoftware: m.allowSoftware });
    post({ type: 'ready', backend: rt.backend });
  },
  async onnx(m) {
    if (onnx) onnx.dispose();
    onnx = await pg.loadOnnx(m.bytes);
    post({ type: 'onnx' });
  },
  async train(m) {
    if (head) head.dispose();
    head = pg.sequential(headLayers(pg, onnx, m.shape, m.classes), { seed: 1 });
    head.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
    const x = pg.tensor(m.x, [m.n, ...m.shape]);
    const y = pg.tensor(m.y, [m.n]);
    const h = await head.fit(x, y, {
      epochs: m.epochs,
      batchSize: 16,
      seed: 3,
      onEpochEnd: (epoch, logs) => post({ type: 'epoch', epoch, logs }),
    });
    x.dispose();
    y.dispose();
    const w = await head.getWeights();
    const weights = {};
    const transfer = [];
    for (const [name, t] of Object.entries(w)) {
      weights[name] = await t.data();
      transfer.push(weights[name].buffer);
    }
    post({ type: 'trained', history: h.history, weights }, transfer);
  },
};

let chain = Promise.resolve();
self.onmessage = ({ data }) => {
  chain = chain.then(async () => {
    try {
      await handlers[data.type](data);
    } catch (e) {
      post({ type: 'error', job: data.type, message: e && e.message ? e.message : String(e) });
    }
  });
};
