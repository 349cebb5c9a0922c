// The public API's error boundary. Every public method and function is wrapped once, at load,
// so that:
//
// - an error thrown or rejected inside becomes a PixelgradError with the same message
//   (errors.js);
// - a wasm trap (`WebAssembly.RuntimeError`: a Rust panic or any other trap) marks the instance
//   dead and becomes a PixelgradError of kind 'panic' carrying the panic message; a call still
//   in flight on an instance that dies (a panic inside an asynchronous Rust call, whose promise
//   would never settle) rejects with that error too (instance.js);
// - before each call, a crashed instance is replaced by a fresh one (`settle`), and an async
//   call waits for the runtime's backend to be started on it where that is asynchronous
//   (WebGPU).
import { PixelgradError } from './errors.js';
import { currentInstance, crashError, inFlight, isTrap, noteTrap, ready, settle } from './instance.js';

function convert(e, rec, what) {
  if (isTrap(e) && rec) {
    noteTrap(e, rec);
    return crashError(rec, what);
  }
  return PixelgradError.from(e);
}

const AsyncFunction = (async () => {}).constructor;

/**
 * @template {Function} F
 * @param {F} f
 * @returns {F} `f` guarded, with the same signature
 */
function wrapFn(f) {
  const what = f.name || '';
  const isAsync = f instanceof AsyncFunction;
  const call = (self, args) => {
    const rec = currentInstance();
    let r;
    try {
      r = f.apply(self, args);
    } catch (e) {
      throw convert(e, rec, what);
    }
    if (r && typeof r.then === 'function') {
      if (!rec) return r.then(undefined, (e) => Promise.reject(convert(e, rec, what)));
      // Settles with `r`, or rejects with the crash error if `rec` dies first.
      return new Promise((resolve, reject) => {
        const entry = { what, reject };
        inFlight(rec).add(entry);
        r.then(
          (v) => {
            inFlight(rec).delete(entry);
            resolve(v);
          },
          (e) => {
            inFlight(rec).delete(entry);
            reject(convert(e, rec, what));
          },
        );
      });
    }
    return r;
  };
  /** @this {unknown} */
  function guarded(...args) {
    settle();
    const wait = isAsync ? ready() : null;
    if (wait) return wait.then(() => call(this, args));
    return call(this, args);
  }
  return /** @type {F} */ (/** @type {unknown} */ (guarded));
}

/**
 * Wraps every method and getter of `cls.prototype` (and the given static functions) so that an
 * error thrown or rejected inside becomes a PixelgradError with the same message. Applied once
 * at load, to the public classes.
 */
export function guardClass(cls) {
  const proto = cls.prototype;
  for (const key of Object.getOwnPropertyNames(proto)) {
    if (key === 'constructor' || key.startsWith('_')) continue;
    const d = Object.getOwnPropertyDescriptor(proto, key);
    if (typeof d.value === 'function') {
      Object.defineProperty(proto, key, { ...d, value: wrapFn(d.value) });
    } else if (typeof d.get === 'function') {
      Object.defineProperty(proto, key, { ...d, get: wrapFn(d.get) });
    }
  }
  return cls;
}

/** `f` whose errors (thrown or rejected) become PixelgradErrors. */
export const guard = wrapFn;

/**
 * A frozen copy of `obj` (a namespace like `layers`) with every function guarded.
 * @template {object} T
 * @param {T} obj
 * @returns {Readonly<T>}
 */
export function guardObject(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) out[k] = typeof v === 'function' ? wrapFn(v) : v;
  return /** @type {Readonly<T>} */ (Object.freeze(out));
}
