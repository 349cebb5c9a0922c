// `pg.loadOnnx`: ONNX models imported into pixelgrad and run on the current runtime's device
// (WebGPU, WebGL2 or the wasm CPU). Inputs and outputs are named as in the model.
import { currentRuntime, wasm } from './runtime.js';
import { release } from './instance.js';
import { PixelgradError } from './errors.js';
import { cancelledError, onAbort, signalOption, throwIfAborted } from './signal.js';
import { Tensor, deviceTensor, registry } from './tensor.js';
import { download, getModel, parseUrl, putModel } from './storage.js';

async function bytesOf(source) {
  if (typeof URL !== 'undefined' && source instanceof URL) source = source.href;
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (typeof source === 'string') {
    if (source.startsWith('indexeddb://')) {
      const { name } = parseUrl(source, 'loadOnnx');
      const rec = await getModel(name);
      if (!rec) throw new Error(`loadOnnx: no model named '${name}' in IndexedDB`);
      if (rec.format !== 'onnx') throw new Error(`loadOnnx: '${name}' in IndexedDB is a pixelgrad model, not ONNX (use pg.loadModel)`);
      return rec.bytes;
    }
    let r;
    try {
      r = await fetch(source);
    } catch (e) {
      throw new Error(`loadOnnx: fetching ${source} failed: ${e && e.message ? e.message : e}`);
    }
    if (!r.ok) throw new Error(`loadOnnx: fetching ${source} gave HTTP ${r.status}`);
    return new Uint8Array(await r.arrayBuffer());
  }
  throw new Error('loadOnnx: source must be an ArrayBuffer, a Uint8Array, a URL or \'indexeddb://name\'');
}

/** @typedef {import('./index.js').OnnxModel} DeclaredOnnxModel index.d.ts's OnnxModel, which this class implements. */

/** @implements {DeclaredOnnxModel} */
export class OnnxModel {
  /** @internal Use `pg.loadOnnx`. */
  constructor(inner, rt, bytes, external = false) {
    this._inner = inner;
    this._rt = rt;
    this._gen = rt._gen; // the runtime generation (device, wasm instance) it lives on
    this._bytes = bytes;
    this._external = external; // its weights came from externalData files (not in _bytes)
    this._disposed = false;
    this._inputs = JSON.parse(inner.inputs());
    this._outputs = JSON.parse(inner.outputs());
    if (registry) registry.register(this, inner, this);
  }
  /** @internal */
  _check(what) {
    if (this._disposed) throw new Error(`${what}: the ONNX model was disposed`);
    this._rt._check(what, this._gen);
  }
  /** `[{ name, shape, dtype }]`; dynamic sizes are their names (or null). */
  get inputs() {
    return this._inputs.map((i) => ({ ...i, shape: i.shape && i.shape.slice() }));
  }
  get outputs() {
    return this._outputs.map((i) => ({ ...i, shape: i.shape && i.shape.slice() }));
  }
  /** The runtime's backend the model runs on. */
  get backend() {
    return this._rt.backend;
  }
  /**
   * What computes in which precision and how the weights are held: `{ precision ('f32',
   * 'int8' or 'mixed'), precisionGroups, path, weightStorage, weightBytes, deviceWeightBytes, deviceTableBytes (the QLinearAdd / QLinearMul lookup tables), activationStorage ('8-bit': quantised activations that outlive the next node are kept in 8-bit tensors; 'f32' in the WebGL1 mode), activationBytes (the most bytes the values between nodes held at once in the last run that walked the graph), arithmetic (how the matrix products compute on the float weights: 'f32', or with f16 weights 'f32 (f16 weights read directly)' on WebGPU GPUs, 'f32 (widened)' elsewhere), shaderF16 (whether the WebGPU adapter offers f16 arithmetic; null elsewhere) }`.
   */
  get info() {
    this._check('onnxModel.info');
    return JSON.parse(this._inner.info());
  }
  /**
   * Runs the model: `feeds` maps input names to `pg` tensors (float32; int32 tensors for
   * integer inputs). Resolves to `{ outputName: Tensor }` (device tensors; read with `data()`).
   * Options: `signal` (an AbortSignal: the run stops before its next primitive and rejects
   * with kind 'cancelled'; already aborted: rejects at once), `maxWork` (the most estimated
   * steps of work the run's primitives may add up to; over it, kind 'budget').
   */
  /** @param {{ signal?: AbortSignal, maxWork?: number }} [opts] */
  async run(feeds, opts = {}) {
    this._check('onnx.run');
    if (!feeds || typeof feeds !== 'object') throw new Error('onnx.run: expects an object { inputName: tensor }');
    if (!opts || typeof opts !== 'object') throw new PixelgradError('onnx.run: options must be an object { signal?, maxWork? }');
    const signal = signalOption(opts.signal, 'onnx.run');
    const maxWork = opts.maxWork ?? undefined;
    if (maxWork !== undefined && !(Number.isSafeInteger(maxWork) && maxWork >= 1)) {
      throw new PixelgradError(`onnx.run: maxWork must be a positive whole number of steps, got ${maxWork}`);
    }
    throwIfAborted(signal, 'onnx.run', 'before it started');
    // one cancel token per run, set from the signal's abort event (checked by the run before
    // each primitive; an abort while integer inputs are read still stops it before it starts)
    const cancel = new wasm.CancelHandle();
    const off = onAbort(signal, () => cancel.cancel());
    let outs;
    try {
      for (const [name, t] of Object.entries(feeds)) {
        if (!(t instanceof Tensor)) throw new Error(`onnx.run: input '${name}' must be a pg tensor`);
        const info = this._inputs.find((i) => i.name === name);
        if (t.dtype === 'int32') {
          const dtype = info ? info.dtype : 'int64';
          this._inner.feedInts(name, Int32Array.from(await t._hostValues('onnx.run')), t.shape, dtype);
        } else {
          this._inner.feed(name, t._onDevice(this._rt, 'onnx.run'));
        }
      }
      outs = await this._inner.run(maxWork, cancel);
    } catch (e) {
      if (e && e.kind === 'cancelled' && signal) throw cancelledError(signal, 'onnx.run', 'while it ran');
      throw e;
    } finally {
      off();
      release(cancel);
    }
    const result = {};
    this._outputs.forEach((o, k) => {
      result[o.name] = deviceTensor(outs[k], this._rt);
    });
    return result;
  }
  /**
   * Generates token ids after `promptIds` with the model's decoder (Hugging Face's ONNX
   * layout; the key/value cache stays on the device, one row of logits is read back per
   * token). Options: `maxTokens` (16), `temperature` (0: greedy), `topK`, `topP`, `stop`
   * (token ids), `seed`, `useCache` (true), `onToken(token)` (called as each token comes;
   * `false` stops), `signal` (AbortSignal). Resolves to `{ tokens, stopped, stopToken, cached,
   * steps, prefillMs, decodeMs, tokensPerSecond, decodeTokensPerSecond }`.
   */
  /** @param {ArrayLike<number>} promptIds @param {import('./index.js').OnnxGenerateOptions} [opts] */
  async generate(promptIds, opts = {}) {
    this._check('onnx.generate');
    if (!opts || typeof opts !== 'object') throw new PixelgradError('onnx.generate: options must be an object');
    if (promptIds == null || typeof promptIds.length !== 'number') {
      throw new PixelgradError('onnx.generate: promptIds must be an array of token ids');
    }
    const prompt = Array.from(promptIds, (t) => {
      if (!(Number.isInteger(t) && t >= 0 && t <= 0xffffffff)) {
        throw new PixelgradError(`onnx.generate: promptIds must hold token ids (whole numbers ≥ 0), got ${t}`);
      }
      return t;
    });
    const { onToken, signal: sig, ...rest } = opts;
    if (onToken !== undefined && typeof onToken !== 'function') throw new PixelgradError('onnx.generate: onToken must be a function');
    const signal = signalOption(sig, 'onnx.generate');
    throwIfAborted(signal, 'onnx.generate', 'before it started');
    const cancel = new wasm.CancelHandle();
    const off = onAbort(signal, () => cancel.cancel());
    // after each token: the next task, so the page draws it and an abort can land
    const between = () => new Promise((r) => setTimeout(r, 0));
    try {
      const json = await this._inner.generate(Uint32Array.from(prompt), JSON.stringify(rest), onToken ?? null, between, cancel);
      return JSON.parse(json);
    } catch (e) {
      if (e && e.kind === 'cancelled' && signal) throw cancelledError(signal, 'onnx.generate', 'while it ran');
      throw e;
    } finally {
      off();
      release(cancel);
    }
  }
  /** Stores the model's bytes: `indexeddb://name` (for `pg.loadOnnx`) or `downloads://name.onnx`. */
  async save(url) {
    this._check('onnx.save');
    if (this._external) throw new Error('onnx.save: this model keeps its weights in externalData files, which save would leave out');
    const { scheme, name } = parseUrl(url, 'onnx.save');
    if (scheme === 'downloads') {
      download(this._bytes, name.endsWith('.onnx') ? name : `${name}.onnx`);
    } else {
      await putModel({ name, bytes: this._bytes, format: 'onnx', savedAt: new Date().toISOString(), backend: this._rt.backend });
    }
    return { url, bytes: this._bytes.length };
  }
  /** Frees the model's weights on the device. */
  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    if (registry) registry.unregister(this);
    release(this._inner);
  }
}

/**
 * Loads an ONNX model on the current runtime. `source`: an ArrayBuffer or Uint8Array of the
 * .onnx file, a URL to fetch, or `indexeddb://name` (saved with `m.save`). `options.precision`:
 * how float weights are stored, `'auto'` (f16 for a float16 model), `'f32'` or `'f16'` (half
 * the bytes; WebGPU's matrix products read them directly, other operators widen them to f32;
 * the arithmetic stays f32, see `m.info.arithmetic`). `options.int8Activations` (quantised
 * models): `'8bit'` (default) keeps the quantised results that outlive the next node in 8-bit
 * tensors, a quarter of the memory; `'f32'` keeps them in f32, without the narrowing and
 * widening passes. The outputs are the same; `m.info.activationStorage` says which ran.
 */
export async function loadOnnx(source, options = {}) {
  const rt = currentRuntime('loadOnnx');
  const precision = options.precision ?? 'auto';
  if (!['auto', 'f32', 'f16'].includes(precision)) {
    throw new Error(`loadOnnx: precision '${precision}' (use 'auto', 'f32' or 'f16')`);
  }
  const acts = options.int8Activations ?? '8bit';
  if (!['8bit', 'f32'].includes(acts)) {
    throw new Error(`loadOnnx: int8Activations '${acts}' (use '8bit' or 'f32')`);
  }
  const bytes = await bytesOf(source);
  const files = await externalFiles(options.externalData, 'loadOnnx');
  let inner;
  try {
    inner = new wasm.OnnxModel(rt._inner, bytes, precision, files);
  } finally {
    files.free();
  }
  inner.setInt8Activations(acts === '8bit');
  return new OnnxModel(inner, rt, bytes, options.externalData != null && Object.keys(options.externalData).length > 0);
}

/**
 * The files of `externalData` (`{ location: url | bytes }`, each location as the model names
 * it) as the wasm binding's OnnxFiles: URLs fetched, bytes copied into wasm memory.
 */
async function externalFiles(externalData, what) {
  if (externalData != null && (typeof externalData !== 'object' || Array.isArray(externalData))) {
    throw new Error(`${what}: externalData must be an object { location: url | bytes }`);
  }
  const entries = Object.entries(externalData ?? {});
  const loaded = [];
  for (const [location, source] of entries) {
    try {
      loaded.push([location, await bytesOf(source)]);
    } catch (e) {
      throw new Error(`${what}: externalData '${location}': ${e && e.message ? e.message.replace(/^loadOnnx: /, '') : e}`);
    }
  }
  const files = new wasm.OnnxFiles();
  for (const [location, b] of loaded) files.add(location, b);
  return files;
}

/**
 * Describes an ONNX model without uploading or running it: inputs, outputs, opsets, the
 * operators used (subgraphs included) with their counts and the backends that run them, weight
 * bytes by stored type, external data files, whether it loads and, if not, why. Takes what
 * `loadOnnx` takes (`externalData` too); needs a runtime (the wasm module) but no device work.
 */
export async function inspectOnnx(source, options = {}) {
  currentRuntime('inspectOnnx');
  const bytes = await bytesOf(source);
  const files = await externalFiles(options.externalData, 'inspectOnnx');
  try {
    return JSON.parse(wasm.inspectOnnx(bytes, files));
  } finally {
    files.free();
  }
}
