// Tensors of the JS API. `pg.tensor(data, shape)` keeps its values on the host (training data
// is batched and shuffled on the host, then uploaded batch by batch); `model.predict` returns a
// tensor that lives on the runtime's device and is read with the async `data()`.

/** @internal Frees wasm objects whose JS wrapper was garbage-collected without dispose(). */
export const registry = typeof FinalizationRegistry !== 'undefined' ? new FinalizationRegistry((inner) => {
  try {
    inner.free();
  } catch {
    // already freed
  }
}) : null;

function product(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function checkShape(shape, what) {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new Error(`${what}: shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
  }
}

export class Tensor {
  /** @internal Use `pg.tensor`. */
  constructor(host, shape, dtype, device, runtime) {
    this._host = host;
    this._shape = shape;
    this._dtype = dtype;
    this._dev = device || null;
    this._rt = runtime || null;
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
  /** `float32` or `int32`. */
  get dtype() {
    return this._dtype;
  }
  get rank() {
    return this._shape.length;
  }
  /** @internal */
  _check(what) {
    if (this._disposed) throw new Error(`${what}: the tensor was disposed`);
    if (this._rt) this._rt._check(what);
  }
  /** The values (a copy): Float32Array, or Int32Array for int32 tensors. */
  async data() {
    this._check('tensor.data');
    if (this._host) return this._host.slice();
    return this._dev.data();
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
    if (!this._upload || this._upload.rt !== rt) {
      this._dropUpload();
      const inner = rt._inner.upload(this._host instanceof Float32Array ? this._host : Float32Array.from(this._host), this._shape);
      this._upload = { rt, inner };
      if (registry) registry.register(this, inner, this._upload);
    }
    return this._upload.inner;
  }
  /** @internal */
  _dropUpload() {
    if (!this._upload) return;
    if (registry) registry.unregister(this._upload);
    try {
      this._upload.inner.free();
    } catch {
      // already freed
    }
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
      try {
        this._dev.free();
      } catch {
        // already freed
      }
      this._dev = null;
    }
  }
  /** @internal The host values (reads device tensors back). */
  async _hostValues(what) {
    this._check(what);
    if (this._host) return this._host;
    return this._dev.data();
  }
}

/**
 * A tensor from `data` (a typed array or an array of numbers) and `shape` (default
 * `[data.length]`). Int32Array data makes an int32 tensor (class labels); anything else float32.
 */
export function tensor(data, shape) {
  if (data instanceof Tensor) throw new Error('pg.tensor: data is already a tensor');
  const isTyped = ArrayBuffer.isView(data) && !(data instanceof DataView);
  if (!isTyped && !Array.isArray(data)) {
    throw new Error(`pg.tensor: data must be a typed array or an array of numbers, got ${data === null ? 'null' : typeof data}`);
  }
  if (shape === undefined) shape = [data.length];
  checkShape(shape, 'pg.tensor');
  const need = product(shape);
  if (data.length !== need) {
    throw new Error(`pg.tensor: ${data.length} values do not fit shape [${shape.join(', ')}], which needs ${need}`);
  }
  if (data instanceof Int32Array) return new Tensor(Int32Array.from(data), shape.slice(), 'int32');
  const f = Float32Array.from(data);
  return new Tensor(f, shape.slice(), 'float32');
}

/** @internal A tensor wrapping a device tensor of `runtime`. */
export function deviceTensor(inner, runtime) {
  return new Tensor(null, Array.from(inner.shape), 'float32', inner, runtime);
}

/**
 * @internal Class indices (Float32Array) for `n` samples from `y`: an int/float tensor `[n]` of
 * whole numbers, or one-hot (any `[n, C]`, argmax per row).
 */
export async function labelsOf(y, n, what) {
  if (!(y instanceof Tensor)) throw new Error(`${what}: labels must be a pg.tensor, got ${typeof y}`);
  const s = y.shape;
  const v = await y._hostValues(what);
  if (s.length === 1 && s[0] === n) return Float32Array.from(v);
  if (s.length === 2 && s[0] === n && s[1] > 0) {
    const c = s[1];
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      let best = 0;
      for (let j = 1; j < c; j++) if (v[i * c + j] > v[i * c + best]) best = j;
      out[i] = best;
    }
    return out;
  }
  throw new Error(`${what}: labels of shape [${s.join(', ')}] do not match ${n} samples (expects class indices [${n}] or one-hot [${n}, classes])`);
}
