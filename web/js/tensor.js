// Tensors of the JS API. `pg.tensor(data, shape)` keeps its values on the host (training data
// is batched and shuffled on the host, then uploaded batch by batch); `model.predict` returns a
// tensor that lives on the runtime's device and is read with the async `data()`.
import { release } from './instance.js';
import { currentRuntime } from './runtime.js';
import { copyOut } from './gpucopy.js';
import { textureOut } from './gltexture.js';

/** @internal Frees wasm objects whose JS wrapper was garbage-collected without dispose(). */
export const registry = typeof FinalizationRegistry !== 'undefined' ? new FinalizationRegistry((inner) => release(inner)) : null;

function product(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function checkShape(shape, what) {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d > 0)) {
    throw new Error(`${what}: shape must be an array of positive integers, got ${JSON.stringify(shape)}`);
  }
}

/** @typedef {import('./index.js').Tensor} DeclaredTensor index.d.ts's Tensor, which this class implements. */

/** @implements {DeclaredTensor} */
export class Tensor {
  /** @internal Use `pg.tensor`. */
  constructor(host, shape, dtype, device, runtime) {
    this._host = host;
    this._shape = shape;
    this._dtype = dtype;
    this._dev = device || null;
    this._rt = runtime || null;
    this._gen = runtime ? runtime._gen : undefined; // the device generation it lives on
    this._disposed = false;
    if (this._dev && registry) registry.register(this, this._dev, this);
  }
  /** Dimensions, e.g. `[n, 784]`. */
  get shape() {
    return this._shape.slice();
  }
  /** Number of elements. */
  get size() {
    return product(this._shape);
  }
  /** `float32` or `int32`; `float16` / `uint8` for `pg.fromPixels` results of that dtype. */
  get dtype() {
    return this._dtype;
  }
  get rank() {
    return this._shape.length;
  }
  /** @internal */
  _check(what) {
    if (this._disposed) throw new Error(`${what}: the tensor was disposed`);
    if (this._rt) this._rt._check(what, this._gen);
  }
  /** The values (a copy): Float32Array, Int32Array for int32 tensors, Uint8Array for uint8. */
  async data() {
    this._check('tensor.data');
    if (this._host) return this._host.slice();
    const v = await this._dev.data();
    return this._dtype === 'uint8' ? Uint8Array.from(v) : v;
  }
  /** Nested arrays, like TF.js `array()`. */
  async array() {
    const d = await this.data();
    const nest = (off, dims) => {
      if (dims.length === 0) return d[off];
      const step = product(dims.slice(1));
      return Array.from({ length: dims[0] }, (_, i) => nest(off + i * step, dims.slice(1)));
    };
    return nest(0, this._shape);
  }
  /**
   * @internal This tensor's values on `rt`'s device: the device tensor itself, or an upload of
   * the host values made once and kept (so repeated ops on the same inputs upload nothing).
   */
  _onDevice(rt, what) {
    this._check(what);
    if (this._dev) {
      if (this._rt !== rt) throw new Error(`${what}: the tensor belongs to another runtime`);
      return this._dev;
    }
    rt._check(what);
    if (!this._upload || this._upload.rt !== rt || this._upload.gen !== rt._gen) {
      this._dropUpload();
      const inner = rt._inner.upload(this._host instanceof Float32Array ? this._host : new Float32Array(this._host), this._shape);
      this._upload = { rt, inner, gen: rt._gen };
      if (registry) registry.register(this, inner, this._upload);
    }
    return this._upload.inner;
  }
  /** @internal */
  _dropUpload() {
    if (!this._upload) return;
    if (registry) registry.unregister(this._upload);
    release(this._upload.inner);
    this._upload = null;
  }
  /** Frees the device memory (if any) now; the tensor cannot be used afterwards. */
  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    this._dropUpload();
    this._host = null;
    if (this._dev) {
      if (registry) registry.unregister(this);
      release(this._dev);
      this._dev = null;
    }
  }
  /**
   * WebGPU: a new GPUBuffer holding the float32 values (copied on the device; the caller owns
   * and destroys it; gpucopy.js).
   */
  gpuBuffer() {
    const what = 'tensor.gpuBuffer';
    this._check(what);
    const rt = this._rt || currentRuntime(what);
    if (rt.backend !== 'webgpu') throw new Error(`${what}: the ${rt.backend} runtime has no GPUBuffer: GPU buffers are a WebGPU feature`);
    if (this._dtype !== 'float32') throw new Error(`${what}: a ${this._dtype} tensor; gpuBuffer exports float32 tensors`);
    return copyOut(rt, this._onDevice(rt, what));
  }
  /**
   * WebGL2: `{ texture, width, height, internalFormat }`, a new WebGLTexture of `rt.glContext`
   * with the values in the backend's layout (copied on the device; the caller deletes it;
   * gltexture.js).
   */
  texture() {
    const what = 'tensor.texture';
    this._check(what);
    const rt = this._rt || currentRuntime(what);
    if (rt.backend !== 'webgl') throw new Error(`${what}: the ${rt.backend} runtime has no WebGL2 textures: textures in and out are a WebGL2 feature`);
    if (this._dtype !== 'float32') throw new Error(`${what}: a ${this._dtype} tensor; texture() exports float32 tensors`);
    return textureOut(rt, this._onDevice(rt, what));
  }
  /** @internal The host values (reads device tensors back). */
  async _hostValues(what) {
    this._check(what);
    if (this._host) return this._host;
    return this._dev.data();
  }
}

/**
 * A typed array (a view that is not a DataView).
 * @param {unknown} x
 * @returns {x is ArrayLike<number> & ArrayBufferView}
 */
function isTypedArray(x) {
  return ArrayBuffer.isView(x) && !(x instanceof DataView);
}

/**
 * Shape and flat values of nested arrays (`[[1, 2], [3, 4]]` -> `[2, 2]`), as TF.js infers
 * them. Ragged rows, empty rows, non-numbers and mixed nesting are errors naming the position.
 */
function flatten(data, what) {
  const shape = [];
  for (let d = data; Array.isArray(d) || isTypedArray(d); d = d[0]) {
    shape.push(d.length);
    if (d.length === 0) break;
  }
  const out = [];
  const walk = (v, depth, at) => {
    const nested = Array.isArray(v) || isTypedArray(v);
    if (depth === shape.length) {
      if (nested) throw new Error(`${what}: element ${at} is an array, but elements at this depth are numbers (ragged array)`);
      if (typeof v !== 'number' && typeof v !== 'boolean') {
        throw new Error(`${what}: element ${at} is ${v === null ? 'null' : typeof v}, not a number`);
      }
      out.push(Number(v));
      return;
    }
    if (!nested) throw new Error(`${what}: element ${at} is a number, but the array's shape is [${shape.join(', ')}] (ragged array)`);
    if (v.length !== shape[depth]) {
      throw new Error(`${what}: element ${at} has length ${v.length}, expected ${shape[depth]} (ragged array; shape [${shape.join(', ')}])`);
    }
    for (let k = 0; k < v.length; k++) walk(v[k], depth + 1, `${at}[${k}]`);
  };
  walk(data, 0, 'x');
  return { shape, values: out };
}

/**
 * A tensor, as TF.js makes them: `data` is a number, a typed array, an array of numbers or
 * nested arrays (shape inferred); `shape` (optional) must hold exactly that many values and
 * positive whole sizes. Int32Array data makes an int32 tensor (class labels); anything else
 * float32. `{ check: true }` also rejects NaN and infinities. Every bad input is an Error.
 */
export function tensor(data, shape, opts) {
  const what = 'pg.tensor';
  if (data instanceof Tensor) throw new Error(`${what}: data is already a tensor`);
  if (shape !== undefined && shape !== null && !Array.isArray(shape) && typeof shape === 'object' && opts === undefined) {
    opts = shape;
    shape = undefined;
  }
  const isTyped = isTypedArray(data);
  let values;
  let inferred;
  if (typeof data === 'number') {
    values = [data];
    inferred = [];
  } else if (isTyped && !Array.isArray(data)) {
    values = data;
    inferred = [data.length];
  } else if (Array.isArray(data)) {
    const f = flatten(data, what);
    values = f.values;
    inferred = f.shape;
  } else {
    throw new Error(`${what}: data must be a number, a typed array or (nested) arrays of numbers, got ${data === null ? 'null' : typeof data}`);
  }
  if (shape === undefined || shape === null) {
    shape = inferred;
  } else {
    checkShape(shape, what);
  }
  if (shape.some((d) => d === 0)) throw new Error(`${what}: shape [${shape.join(', ')}] has a zero size; tensors need at least one value`);
  const need = product(shape);
  if (values.length !== need) {
    throw new Error(`${what}: ${values.length} values do not fit shape [${shape.join(', ')}], which needs ${need}`);
  }
  if (opts && opts.check) {
    for (let k = 0; k < values.length; k++) {
      if (!Number.isFinite(values[k])) throw new Error(`${what}: value ${k} is ${values[k]} (check: true rejects NaN and infinities)`);
    }
  }
  if (data instanceof Int32Array) return new Tensor(Int32Array.from(data), shape.slice(), 'int32');
  // A copy (the caller may reuse its array); `slice` and the typed-array constructor copy
  // in bulk, where `Float32Array.from` walks an iterator (8 ns per value in V8).
  const f = values instanceof Float32Array ? values.slice() : new Float32Array(values);
  return new Tensor(f, shape.slice(), 'float32');
}

/** @internal A tensor wrapping a device tensor of `runtime`. */
export function deviceTensor(inner, runtime, dtype = 'float32') {
  return new Tensor(null, Array.from(inner.shape), dtype, inner, runtime);
}

/**
 * @internal The targets for `n` samples as given: `{ values: Float32Array, shape }` with
 * `shape` `[n]` (class indices) or `[n, ...]` (one-hot, probability or any float targets).
 * Nothing is converted here; the model checks them against its output and loss.
 */
export async function targetsOf(y, n, what) {
  if (!(y instanceof Tensor)) throw new Error(`${what}: targets must be a pg.tensor, got ${typeof y}`);
  const s = y.shape;
  if (!(s.length >= 1 && s[0] === n)) {
    throw new Error(`${what}: targets of shape [${s.join(', ')}] do not match ${n} samples (class indices [${n}] or targets [${n}, outputs])`);
  }
  const v = await y._hostValues(what);
  return { values: v instanceof Float32Array ? v : new Float32Array(v), shape: s };
}
