// `pg.sequential`: a Keras/TF.js-style model over the Rust `Model`. The training loop is in
// fit.js: batches are gathered on the host, each step only records device work, and loss and
// accuracy sums are read back (asynchronously) every `readEvery` steps; between batches the
// loop yields to the event loop so a page stays responsive.
import { currentRuntime, wasm } from './runtime.js';
import { release } from './instance.js';
import { Tensor, deviceTensor, registry, targetsOf } from './tensor.js';
import { optimizers } from './layers.js';
import { allModels, deleteModel, download, getModel, parseUrl, putModel } from './storage.js';
import { fitLoop, positiveInt, restoreModel, takeCheckpoint, yieldNow } from './fit.js';

function optimizerOf(o) {
  if (o === undefined) return optimizers.adam(1e-3);
  if (typeof o === 'string') {
    if (!optimizers[o]) throw new Error(`compile: unknown optimizer '${o}' (${Object.keys(optimizers).join(', ')})`);
    return optimizers[o]();
  }
  if (!o || typeof o.name !== 'string') throw new Error('compile: optimizer must be pg.optimizers.adam(lr) / sgd(lr) or a name');
  return o;
}

/** @typedef {import('./index.js').Sequential} DeclaredSequential index.d.ts's Sequential, which this class implements. */

/** @implements {DeclaredSequential} */
export class Sequential {
  /** @internal Use `pg.sequential`. */
  constructor(layerConfigs, opts = {}) {
    if (!Array.isArray(layerConfigs)) throw new Error('sequential: expects an array of layers, e.g. [pg.layers.dense({ units: 10, inputShape: [64] })]');
    this._layers = layerConfigs.map((l) => ({ ...l }));
    this._seed = Number.isInteger(opts.seed) ? opts.seed : 0;
    this._inner = null;
    this._rt = null;
    this._compile = null;
    this._disposed = false;
    this._fitting = false;
    /** Set to true (e.g. in a callback) to stop `fit` after the current batch. */
    this.stopTraining = false;
    this._net('sequential'); // build now so config errors surface at once
  }

  /** @internal The Rust model, built on the current runtime at first use. */
  _net(what) {
    if (this._disposed) throw new Error(`${what}: the model was disposed`);
    if (!this._inner) {
      const rt = currentRuntime(what);
      // `onnx` layers carry an OnnxModel: the config names it by index, its bytes go alongside
      const onnx = [];
      const layers = this._layers.map((l, i) => {
        if (l.type !== 'onnx') return l;
        const m = l.model;
        if (!m || !(m._bytes instanceof Uint8Array)) throw new Error(`${what}: layer ${i} (onnx) needs { model: await pg.loadOnnx(...) }`);
        onnx.push(m._bytes);
        return { ...l, model: onnx.length - 1 };
      });
      this._inner = new wasm.Model(rt._inner, JSON.stringify({ layers, seed: this._seed }), onnx);
      this._rt = rt;
      this._gen = rt._gen;
      if (registry) registry.register(this, this._inner, this);
    }
    this._rt._check(what, this._gen);
    return this._inner;
  }

  /** @internal The layer config as saved. */
  _config() {
    return { layers: this._layers, seed: this._seed };
  }

  /**
   * The layout table of the model's live tensors (parameters, buffers, optimizer state):
   * `[{ name, shape, elements, memory, width, height, format, used, allocated, layout, bytes }]`.
   */
  layouts() {
    return JSON.parse(this._net('layouts').layouts());
  }

  /** The runtime's backend this model lives on. */
  get backend() {
    return this._rt ? this._rt.backend : null;
  }

  /** Sample shape the model takes, e.g. `[784]` or `[28, 28, 1]`. */
  get inputShape() {
    return Array.from(this._net('inputShape').inputShape);
  }

  /**
   * `{ optimizer, loss, metrics, precision }`. A new compile resets the optimizer's state.
   * `precision: 'mixed'` trains with f16 activations and gradients, f32 master weights and a
   * dynamic loss scale decided on the device; where the backend cannot (WebGL today), training
   * stays f32 and `model.precision` says why. Default `'f32'`.
   */
  compile(opts = {}) {
    const net = this._net('compile');
    const optimizer = optimizerOf(opts.optimizer);
    const loss = opts.loss || 'softmaxCrossEntropy';
    const precision = opts.precision || 'f32';
    if (precision !== 'f32' && precision !== 'mixed') throw new Error(`compile: precision must be 'f32' or 'mixed', got '${precision}'`);
    net.compile(optimizer.name, optimizer.learningRate, optimizer.momentum || 0, loss);
    net.setPrecision(precision);
    this._compile = { optimizer: { ...optimizer }, loss, metrics: opts.metrics || ['accuracy'], precision };
  }

  /** `{ requested, precision, fallback }`: the training precision asked for, the one that runs, and why they differ (null when they do not). */
  get precision() {
    return this._net('precision').precisionInfo();
  }

  /** Mixed precision: `{ scale, skippedSteps }` (one readback), or null when training is f32. */
  async lossScale() {
    const v = await this._net('lossScale').readLossScale();
    return v ? { scale: v[0], skippedSteps: v[1] } : null;
  }

  async _xy(x, y, what, allowDevice = false) {
    if (!(x instanceof Tensor)) throw new Error(`${what}: x must be a pg.tensor`);
    const n = x.shape[0];
    if (!(x.rank >= 2 && n > 0)) throw new Error(`${what}: x must have shape [n, ...features] with n > 0, got [${x.shape.join(', ')}]`);
    if (allowDevice && !x._host) {
      // A device tensor (pg.fromPixels results, features, pg.concat of them): batches are
      // gathered on the device; nothing of x is read back.
      if (x.dtype !== 'float32') throw new Error(`${what}: x must be float32, got ${x.dtype} (fromPixels with dtype 'float32')`);
      const xdev = x._onDevice(this._rt, what);
      const t = await targetsOf(y, n, what);
      return { n, xv: null, xdev, yv: t.values, yshape: t.shape, yper: t.values.length / n, sample: x.shape.slice(1) };
    }
    const xs = await x._hostValues(what);
    const xv = xs instanceof Float32Array ? xs : new Float32Array(xs);
    const t = await targetsOf(y, n, what);
    // per-sample target size: 1 for class indices [n], C for targets [n, C]
    return { n, xv, yv: t.values, yshape: t.shape, yper: t.values.length / n, sample: x.shape.slice(1) };
  }

  /**
   * Trains; resolves to `{ history: { loss, accuracy, valLoss?, valAccuracy? } }` (one number
   * per epoch; `x` a host tensor, or a device tensor of this runtime (fromPixels results or
   * features concatenated with `pg.concat`: batches are gathered on the device, x is never
   * read back; targets stay host values); no accuracy where it means nothing, i.e. MSE on float targets). `y` is used as
   * given: class indices `[n]`, one-hot or probability rows `[n, classes]`, or any float
   * targets `[n, outputs]` (MSE, BCE); a mismatch with the model's output or loss is an error. Options: epochs, batchSize, shuffle, seed, readEvery, validationData: [x, y],
   * onBatchEnd(step, logs) (after each read), onEpochEnd(epoch, logs); callbacks may also come
   * as `callbacks: { onBatchEnd, onEpochEnd }`. `maxStepsPerSecond` paces training for
   * watching (same results); `onBatchEnd` returning (or resolving to) `'step'` asks for one
   * more step and a read right after it (step-through mode). Reliability (fit.js): checkpointEvery,
   * stopOnNaN, onDeviceLost(info), maxRecoveries, autosave / autosaveEvery / resume.
   */
  async fit(x, y, opts = {}) {
    return fitLoop(this, x, y, opts);
  }

  /**
   * Copies parameters, buffers and optimizer state to host memory now and keeps it as the
   * model's last checkpoint (`fit` takes them every `checkpointEvery` steps on its own).
   * Resolves to `{ step, bytes, weights() }`.
   */
  async checkpoint() {
    return takeCheckpoint(this, this._lastCheckpoint ? this._lastCheckpoint.step : 0);
  }

  /** The last checkpoint (`{ step, bytes, weights(): { name: Float32Array } }`), or null. */
  get lastCheckpoint() {
    return this._lastCheckpoint || null;
  }

  /**
   * Puts the last checkpoint (or `checkpoint`) back into the model. After a context or device
   * loss this first restarts the runtime's backend (`rt.recover()`) and rebuilds the model on
   * it, so a model whose device was lost works again with the checkpoint's weights.
   */
  async restore(checkpoint) {
    return restoreModel(this, checkpoint);
  }

  /**
   * Mean loss and accuracy over `x`, `y` (inference mode): `{ loss, accuracy }`, without
   * `accuracy` where it means nothing (MSE on float targets). Targets as in `fit`.
   */
  async evaluate(x, y, opts = {}) {
    const net = this._net('evaluate');
    if (!this._compile) throw new Error('evaluate: the model is not compiled; call model.compile({ optimizer, loss }) first');
    const batchSize = positiveInt(opts.batchSize, 256, 'evaluate: batchSize');
    const { n, xv, yv, yshape, yper, sample } = await this._xy(x, y, 'evaluate');
    const per = xv.length / n;
    await net.readEval();
    for (let start = 0; start < n; start += batchSize) {
      const m = Math.min(n, start + batchSize) - start;
      net.evalStep(xv.subarray(start * per, (start + m) * per), [m, ...sample], yv.subarray(start * yper, (start + m) * yper), [m, ...yshape.slice(1)]);
      if (start + batchSize < n) await yieldNow();
    }
    const r = await net.readEval();
    const out = { loss: r[0] / r[2] };
    if (net.hasAccuracy(yshape)) out.accuracy = r[1] / r[2];
    return out;
  }

  /**
   * Outputs `[n, classes]` (logits for softmaxCrossEntropy) as a device tensor; read with
   * `await t.data()`. `x` is a host tensor (`pg.tensor`) or a device tensor of this runtime
   * (`pg.fromPixels(video, { size, layout: 'nhwc' })`: nothing is uploaded or read back).
   */
  predict(x) {
    const net = this._net('predict');
    if (!(x instanceof Tensor)) throw new Error('predict: x must be a pg.tensor');
    x._check('predict');
    if (!x._host) return deviceTensor(net.predictDevice(x._onDevice(this._rt, 'predict')), this._rt);
    const xv = x._host instanceof Float32Array ? x._host : new Float32Array(x._host);
    return deviceTensor(net.predict(xv, x.shape), this._rt);
  }

  /** A Keras-style table of layers, output shapes and parameter counts. */
  summary() {
    return this._net('summary').summary();
  }

  /**
   * Draws layer `layerIndex`'s weights (counting layers as listed in `sequential`) on `canvas`
   * (HTMLCanvasElement or OffscreenCanvas; resized to the image). Normalisation and colour map
   * run on the device. Throws at once for a bad index; the returned promise resolves when drawn.
   */
  drawWeights(layerIndex, canvas) {
    const net = this._net('drawWeights');
    if (!Number.isInteger(layerIndex) || layerIndex < 0) {
      throw new Error(`drawWeights: layer index must be a non-negative integer, got ${layerIndex} (the model has ${this._layers.length} layers)`);
    }
    net.checkLayer(layerIndex);
    if (!canvas || typeof canvas.getContext !== 'function') throw new Error('drawWeights: pass an HTMLCanvasElement or an OffscreenCanvas');
    return net.weightsImage(layerIndex).then((img) => {
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext('2d');
      if (!ctx) throw new Error('drawWeights: the canvas has no 2d context (is it already used for WebGL?)');
      ctx.putImageData(new ImageData(img.pixels, img.width, img.height), 0, 0);
    });
  }

  /**
   * Layer `layerIndex`'s output for `x` (counting layers as listed in `sequential`; a host or
   * device tensor `[n, ...inputShape]`), computed on the device in inference mode: a device
   * tensor in the user's layout (`[n, h, w, c]` for image layers).
   */
  activations(x, layerIndex) {
    const net = this._net('activations');
    if (!(x instanceof Tensor)) throw new Error('activations: x must be a pg tensor');
    if (!Number.isInteger(layerIndex) || layerIndex < 0) throw new Error(`activations: layer index must be a non-negative integer, got ${layerIndex}`);
    return deviceTensor(net.activations(x._onDevice(this._rt, 'activations'), layerIndex), this._rt);
  }

  /**
   * Draws sample 0 of layer `layerIndex`'s output for `x` on `canvas` (channels of an image
   * layer as tiles, a vector as a near-square grid; blue < 0 < red, white at 0, scaled by the
   * largest magnitude; colour-mapped on the device, only the small image is read back).
   * Resolves when drawn.
   */
  drawActivations(x, layerIndex, canvas) {
    const net = this._net('drawActivations');
    if (!(x instanceof Tensor)) throw new Error('drawActivations: x must be a pg tensor');
    if (!Number.isInteger(layerIndex) || layerIndex < 0) throw new Error(`drawActivations: layer index must be a non-negative integer, got ${layerIndex}`);
    if (!canvas || typeof canvas.getContext !== 'function') throw new Error('drawActivations: pass an HTMLCanvasElement or an OffscreenCanvas');
    return net.activationsImage(x._onDevice(this._rt, 'drawActivations'), layerIndex).then((img) => {
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext('2d');
      if (!ctx) throw new Error('drawActivations: the canvas has no 2d context (is it already used for WebGL?)');
      ctx.putImageData(new ImageData(img.pixels, img.width, img.height), 0, 0);
    });
  }

  /**
   * Every weight by name (`0.weight`, `0.bias`, `1.running_mean`, ...) as host tensors:
   * `{ name: Tensor }` (read asynchronously from the device).
   */
  async getWeights() {
    const net = this._net('getWeights');
    const info = JSON.parse(net.weightInfo());
    const values = await net.readWeights();
    const out = {};
    info.forEach((w, k) => {
      out[w.name] = new Tensor(values[k], w.shape, 'float32');
    });
    return out;
  }

  /** Every weight's name and shape (`[{ name, shape }]`, in layer order), read from nothing. */
  weightInfo() {
    return JSON.parse(this._net('weightInfo').weightInfo());
  }

  /**
   * Replaces weights by name: `{ name: Tensor | Float32Array }` (shapes must match; a
   * Float32Array takes the weight's shape). Unknown names are an error; nothing is set then.
   */
  async setWeights(weights) {
    const net = this._net('setWeights');
    if (!weights || typeof weights !== 'object') throw new Error('setWeights: expects an object { name: tensor }');
    const info = new Map(JSON.parse(net.weightInfo()).map((w) => [w.name, w.shape]));
    const plan = [];
    for (const [name, v] of Object.entries(weights)) {
      if (!info.has(name)) throw new Error(`setWeights: the model has no weight '${name}' (it has ${[...info.keys()].join(', ')})`);
      if (v instanceof Tensor) plan.push([name, Float32Array.from(await v._hostValues('setWeights')), v.shape]);
      else if (v instanceof Float32Array) plan.push([name, v, info.get(name)]);
      else throw new Error(`setWeights: weight '${name}' must be a pg tensor or a Float32Array`);
    }
    for (const [name, data, shape] of plan) net.setWeight(name, data, shape);
  }

  /** The model as ONNX bytes (input `input` `[N, ...inputShape]`, output `output`). */
  async toOnnx() {
    return this._net('toOnnx').toOnnx();
  }

  /**
   * `indexeddb://name` (weights + config + compile options), `downloads://name` (a .safetensors
   * file) or `downloads://name.onnx` (an ONNX file, see `toOnnx`).
   */
  async save(url) {
    const net = this._net('save');
    const { scheme, name } = parseUrl(url, 'save');
    if (scheme === 'downloads' && name.endsWith('.onnx')) {
      const onnx = await net.toOnnx();
      download(onnx, name);
      return { url, bytes: onnx.length };
    }
    if (this._layers.some((l) => l.type === 'onnx')) {
      throw new Error("save: a model with imported onnx layers saves as ONNX: save('downloads://name.onnx') or toOnnx()");
    }
    const config = this._config();
    const meta = { format: 'pixelgrad-web', config: JSON.stringify(config) };
    if (this._compile) meta.compile = JSON.stringify(this._compile);
    const bytes = await net.toBytes(JSON.stringify(meta));
    if (scheme === 'downloads') {
      download(bytes, name.endsWith('.safetensors') ? name : `${name}.safetensors`);
    } else {
      await putModel({ name, bytes, config, compile: this._compile, savedAt: new Date().toISOString(), backend: this._rt.backend });
    }
    return { url, bytes: bytes.length };
  }

  /** Frees the model's device memory; it cannot be used afterwards. */
  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    if (this._lastCheckpoint) release(this._lastCheckpoint._host);
    this._lastCheckpoint = null;
    if (this._inner) {
      if (registry) registry.unregister(this);
      release(this._inner);
      this._inner = null;
    }
  }
}

/** A model from layer configs (`pg.layers.*`), or `{ layers: [...] }`. Needs `pg.init()` first. */
export function sequential(config, opts = {}) {
  const layerList = Array.isArray(config) ? config : config && config.layers;
  return new Sequential(layerList, { seed: (config && config.seed) ?? opts.seed });
}

/** Restores a model saved with `save('indexeddb://name')`, compiled as it was, on the current runtime. */
export async function loadModel(url) {
  const { scheme, name } = parseUrl(url, 'loadModel');
  if (scheme !== 'indexeddb') throw new Error("loadModel: only 'indexeddb://name' can be loaded");
  currentRuntime('loadModel');
  const rec = await getModel(name);
  if (!rec) throw new Error(`loadModel: no model named '${name}' in IndexedDB (pg.listModels() lists them)`);
  if (rec.format === 'onnx') throw new Error(`loadModel: '${name}' is an ONNX model; load it with pg.loadOnnx('${url}')`);
  const m = new Sequential(rec.config.layers, { seed: rec.config.seed });
  m._net('loadModel').loadBytes(rec.bytes);
  if (rec.compile) m.compile(rec.compile);
  return m;
}

/** Models saved in IndexedDB: `[{ name, url, savedAt, bytes, backend }]`. */
export async function listModels() {
  const all = await allModels();
  return all.map((r) => ({ name: r.name, url: `indexeddb://${r.name}`, savedAt: r.savedAt, bytes: r.bytes.length, backend: r.backend }));
}

/** Deletes a model saved in IndexedDB. */
export async function removeModel(url) {
  const { name } = parseUrl(url, 'removeModel');
  await deleteModel(name);
}
