// The camera demo's trainer: a module Worker with its own pixelgrad runtime. Recording a sample
// hands the worker the camera frame itself (a transferred VideoFrame); the worker runs
// pg.fromPixels on it and, with a backbone loaded, the frozen ONNX backbone, and keeps the
// result on its device: nothing is read back per sample. Training joins the kept samples on the
// device (pg.concat) and runs model.fit on that device tensor (batches gathered on the device);
// only the periodic loss is read, and the trained head's weights once at the end, which the page
// sets on its own copy of the head. Messages (each with the page's `seq`, echoed in the reply):
// page → worker `init {backend, allowSoftware}`, `onnx {bytes}`, `sample {id, y, frame, input}`,
// `forget {ids}`, `train {ids, y, shape, classes, epochs}`; worker → page `ready {backend}`,
// `onnx`, `sample {id, shape}`, `epoch {epoch, logs}`, `trained {history, weights}`,
// `error {message}`.
import * as pg from '../pkg/index.js';
import { trainedLayers } from './camera-head.js';

let onnx = null;
let features = null; // { key, model }: the frozen backbone (+ flatten) for one input shape
let head = null;
const samples = new Map(); // id → { x: device tensor [1, ...], y }
const post = (m, t) => self.postMessage(m, t || []);

function clearSamples() {
  for (const s of samples.values()) s.x.dispose();
  samples.clear();
}

/** The backbone's features model for input `shape` ([h, w, c]), built once per shape. */
function featuresFor(shape) {
  const key = shape.join('x');
  if (!features || features.key !== key) {
    if (features) features.model.dispose();
    features = { key, model: pg.sequential([pg.layers.onnx({ model: onnx, inputShape: shape, trainable: false }), pg.layers.flatten()], { seed: 1 }) };
  }
  return features.model;
}

const handlers = {
  async init(m) {
    const rt = await pg.init({ backend: m.backend, allowSoftware: m.allowSoftware });
    return { type: 'ready', backend: rt.backend };
  },
  async onnx(m) {
    clearSamples();
    if (features) features.model.dispose();
    features = null;
    if (onnx) onnx.dispose();
    onnx = await pg.loadOnnx(m.bytes);
    return { type: 'onnx' };
  },
  async sample(m) {
    let t;
    try {
      t = pg.fromPixels(m.frame, m.input);
    } finally {
      m.frame.close();
    }
    let x = t;
    if (onnx) {
      x = featuresFor(t.shape.slice(1)).predict(t);
      t.dispose();
    }
    samples.set(m.id, { x, y: m.y });
    return { type: 'sample', id: m.id, shape: x.shape };
  },
  async forget(m) {
    for (const id of m.ids) {
      const s = samples.get(id);
      if (s) s.x.dispose();
      samples.delete(id);
    }
    return { type: 'forgot' };
  },
  async train(m) {
    // The page's list is the truth: samples it dropped since they were recorded go.
    const keep = new Set(m.ids);
    for (const [id, s] of samples) {
      if (!keep.has(id)) {
        s.x.dispose();
        samples.delete(id);
      }
    }
    const kept = m.ids.map((id) => {
      const s = samples.get(id);
      if (!s) throw new Error(`sample ${id} was not recorded here`);
      return s;
    });
    const x = pg.concat(kept.map((s) => s.x), 0);
    const y = pg.tensor(Int32Array.from(kept, (s) => s.y), [kept.length]);
    if (head) head.dispose();
    head = pg.sequential(trainedLayers(pg, onnx, m.shape, x.shape[1], m.classes), { seed: 1 });
    head.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
    const h = await head.fit(x, y, {
      epochs: m.epochs,
      batchSize: 16,
      seed: 3,
      checkpointEvery: 0,
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
    return [{ type: 'trained', history: h.history, weights }, transfer];
  },
};

let chain = Promise.resolve();
self.onmessage = ({ data }) => {
  chain = chain.then(async () => {
    try {
      const r = await handlers[data.type](data);
      const [msg, transfer] = Array.isArray(r) ? r : [r, []];
      post({ ...msg, seq: data.seq }, transfer);
    } catch (e) {
      if (data.frame) data.frame.close?.();
      post({ type: 'error', job: data.type, seq: data.seq, message: e && e.message ? e.message : String(e) });
    }
  });
};
