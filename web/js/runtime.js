// Backend selection and the current runtime. `init` tries backends in order and records why
// each one was refused; the Rust side (`Runtime.webgpu/webgl/cpu`) only starts a given backend
// and runs its precision self-test.
import { PixelgradError } from './errors.js';
import { plan, threadsReport } from './threads.js';
import { currentInstance, instanceLostError, isTrap, loadWasm, noteTrap, onReplaced, ready, release, replaceFailure, settle, wasm, wasmLoaded } from './instance.js';
import { chooseBackend, measureSpec } from './measure.js';
import { lostError, lostReason, recoverRuntime, restartAfterCrash, simulateLoss, watch } from './recovery.js';
import { checkDevice } from './shareddevice.js';
import { start } from './backends.js';

// `wasm` is the current instance's glue (a live binding: it changes when a crashed instance is
// replaced, instance.js); `loadWasm` loads the module once.
export { loadWasm, wasm, wasmLoaded };

const BACKENDS = ['webgpu', 'webgl', 'webgl1', 'cpu'];

let current = null;

/** @typedef {import('./index.js').Runtime} DeclaredRuntime index.d.ts's Runtime, which this class implements. */

/**
 * A started backend. Replaced (and retired) by the next `pg.init`.
 * @implements {DeclaredRuntime}
 */
export class Runtime {
  constructor(inner, report, keepAlive, gl) {
    this._inner = inner;
    this._keep = keepAlive; // the canvas of a WebGL context must outlive the context
    this._keepGl = gl || null;
    this._retiredBy = null;
    this._gen = 0; // bumped by each recovery from a lost device or a crash (recovery.js)
    this._history = [inner.backend];
    this._genInst = [currentInstance()]; // the wasm instance of each generation
    this._limits = null; // init({ limits }), applied again after each restart
    watch(this, keepAlive, gl);
    /** `webgpu`, `webgl`, `webgl1` or `cpu`. */
    this.backend = inner.backend;
    /** `{ tried: [{ backend, ok, reason }], adapter, selfTest: { maxRelError }, ... }` */
    this.report = report;
  }
  /**
   * The backend's counters: `{ bytesInUse, liveBytes, pooledBytes, poolBudget, allocations,
   * compiles, launches, submissions, readbacks }`. `bytesInUse` is the device memory held now:
   * `liveBytes` (tensors, step plans) plus `pooledBytes` (free buffers/textures kept for reuse,
   * at most `poolBudget` once in-flight work is done); the others count since start (a
   * training step after warm-up adds no allocations or compiles).
   */
  memory() {
    this._check('runtime.memory');
    return this._inner.memory();
  }
  /**
   * Frees the pooled device memory (`pooledBytes`) nothing uses; live tensors and step plans
   * keep theirs. WebGPU first awaits the GPU's in-flight work. Resolves to `memory()` after.
   */
  async trim() {
    this._check('runtime.trim');
    return this._inner.trim();
  }
  /**
   * WebGPU: the GPUDevice the runtime computes on (the page's own after `init({ device })`):
   * buffers for `pg.fromGPUBuffer` come from it, `tensor.gpuBuffer()` returns buffers of it.
   * `undefined` on other backends.
   */
  get gpuDevice() {
    this._check('runtime.gpuDevice');
    return this.backend === 'webgpu' ? this._inner.gpuDevice : undefined;
  }
  /** WebGL2: the runtime's WebGL2RenderingContext (for `pg.fromTexture`); `undefined` on other backends. */
  get glContext() {
    this._check('runtime.glContext');
    return this.backend === 'webgl' ? this._keepGl : undefined;
  }
  /**
   * WebGL2: `{ width, height, internalFormat }` of the texture a float32 tensor of `shape` has
   * (4 elements per texel, row-major): the layout `pg.fromTexture` reads.
   */
  textureLayout(shape) {
    this._check('runtime.textureLayout');
    if (this.backend !== 'webgl') throw new Error(`runtime.textureLayout: the ${this.backend} runtime has no WebGL2 textures`);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0 && d < 2 ** 32)) {
      throw new Error(`runtime.textureLayout: shape must be an array of whole numbers >= 0, got ${JSON.stringify(shape)}`);
    }
    return this._inner.textureLayout(Uint32Array.from(shape));
  }
  /** Sets the most bytes of free memory the pools keep for reuse (default 256 MiB; 0: none). */
  setPoolBudget(bytes) {
    this._check('runtime.setPoolBudget');
    this._inner.setPoolBudget(bytes);
  }
  /**
   * Trains a tiny network for a few steps here and on the f64 CPU reference and compares every
   * intermediate (see index.d.ts): resolves to `{ passed, summary, firstFailure, rows, ... }`.
   */
  async crossCheck(opts = {}) {
    this._check('runtime.crossCheck');
    return JSON.parse(await this._inner.crossCheck(JSON.stringify(opts === undefined ? {} : opts)));
  }
  /** The layout table of `model`'s live tensors (`model.layouts()`). */
  layouts(model) {
    this._check('runtime.layouts');
    if (!model || typeof model.layouts !== 'function') throw new Error('runtime.layouts: pass a model, e.g. rt.layouts(model)');
    return model.layouts();
  }
  /** Why the device is gone (context or device loss), or null while it works. */
  get lost() {
    return lostReason(this);
  }
  /**
   * Test hook: loses the device as a browser or driver would (WebGL: WEBGL_lose_context,
   * restored after `restoreAfterMs`, default 50, `null` never; WebGPU: `device.destroy()`).
   * `permanent: true`: the backend does not come back, recovery takes the next in the auto order.
   */
  simulateContextLoss(opts) {
    this._check('simulateContextLoss');
    simulateLoss(this, opts);
  }
  /**
   * After a loss: starts the same backend again (else the next in the auto order) in this
   * runtime; resolves to `{ backend, tried }`. `fit` and `model.restore()` call it themselves.
   */
  async recover() {
    // a lost device is what this is for: only a replaced runtime or a crashed instance refuse
    if (!this.lost || this._retiredBy) this._check('recover');
    if (!this.lost) return { backend: this.backend, tried: [] };
    return recoverRuntime(this);
  }
  /**
   * The device's caps, checked before every primitive: `{ maxElements, maxOpWork }`
   * (`init({ limits })`; defaults 2^28 elements and 2^36 steps of work per op).
   */
  get limits() {
    this._check('runtime.limits');
    return this._inner.limits();
  }
  /** @internal Sets the device's caps (`init({ limits })`), kept for restarts. */
  _setLimits(limits) {
    if (limits === undefined || limits === null) return;
    if (typeof limits !== 'object') throw new PixelgradError('pg.init: limits must be { maxElements?, maxOpWork? }');
    const unknown = Object.keys(limits).filter((k) => k !== 'maxElements' && k !== 'maxOpWork');
    if (unknown.length) throw new PixelgradError(`pg.init: unknown limits ${unknown.join(', ')} (maxElements, maxOpWork)`);
    const now = this._inner.limits();
    const want = { maxElements: limits.maxElements ?? now.maxElements, maxOpWork: limits.maxOpWork ?? now.maxOpWork };
    this._inner.setLimits(want.maxElements, want.maxOpWork);
    this._limits = want;
  }
  /** @internal Frees the wasm runtime (once). */
  _freeInner() {
    if (this._innerFreed === this._inner) return;
    this._innerFreed = this._inner;
    release(this._inner);
  }
  /** @internal Swaps in a backend started by recovery; objects of older generations refuse. */
  _swap(started, info) {
    this._freeInner();
    this._inner = started.inner;
    this._keep = started.keep;
    this._keepGl = started.gl || null;
    this._gen += 1;
    this._history.push(started.inner.backend);
    this._genInst.push(currentInstance());
    this.backend = started.inner.backend;
    const entry = { lost: info.lost, backend: this.backend, tried: info.tried };
    if (info.crash) entry.crash = info.crash;
    const recoveries = [...(this.report.recoveries || []), entry];
    // The backend started now measured its own capabilities (a restored context may differ).
    const caps = JSON.parse(started.inner.capsJson);
    this.report = { ...this.report, adapter: started.adapter, name: started.inner.name, format: started.inner.format, caps, recoveries };
    // recovery starts a device of its own: a shared one (`init({ device })`) is not taken again
    if (this.report.sharedDevice !== undefined || this.backend === 'webgpu') this.report.sharedDevice = this.backend === 'webgpu' && !!started.sharedDevice;
    watch(this, started.keep, started.gl);
    if (this._limits) this._inner.setLimits(this._limits.maxElements, this._limits.maxOpWork);
  }
  /**
   * Throws if a later `pg.init` replaced this runtime, if its device is lost, or if `gen` (the
   * generation an object was made on) is older than the runtime's.
   */
  _check(what, gen) {
    // An object of a crashed instance, or this runtime before its backend is started again.
    const inst = this._genInst[gen === undefined ? this._gen : gen];
    if (inst && inst.dead) {
      if (gen !== undefined && gen !== this._gen) throw instanceLostError(inst, what);
      if (gen === undefined && !this._retiredBy) throw restartError(this, inst, what);
      throw instanceLostError(inst, what);
    }
    if (gen !== undefined && gen !== this._gen && !this._retiredBy) throw lostError(this, what, gen);
    if (!this._retiredBy && this.backend !== 'cpu' && this.lost) throw lostError(this, what);
    if (this._retiredBy) {
      throw new Error(
        `${what}: this object belongs to the ${this.backend} runtime, which pg.init() has replaced by ${this._retiredBy}; ` +
          'create it again (or pg.loadModel a saved model) on the new runtime',
      );
    }
  }
}

/** Why runtime `rt`, whose instance `inst` crashed, cannot be used yet. */
function restartError(rt, inst, what) {
  const e = instanceLostError(inst, what);
  if (rt._restarting) {
    e.message = `${what}: the ${rt.backend} backend is being started again on a fresh wasm instance after a crash (${e.panicMessage}); ` +
      'await rt.recover() (async calls wait on their own)';
  } else if (rt._restartFailed) {
    e.message = `${what}: no backend could be started again after a crash (${rt._restartFailed}); call pg.init() again or reload the page`;
  } else {
    const why = replaceFailure();
    if (why) e.message = `${what}: the wasm instance crashed (${e.panicMessage}) and no fresh one could be made (${why}); reload the page`;
    else if (ready()) {
      e.message = `${what}: the wasm instance crashed (${e.panicMessage}) and a fresh one is being made; ` +
        'await rt.recover() before synchronous calls (async calls wait on their own)';
    }
  }
  return e;
}

// A crashed instance was replaced: the current runtime starts its backend again on the fresh
// one (recovery.js), so `rt` keeps working; its old objects throw kind 'instanceLost'.
onReplaced((dead, fresh) => {
  if (!current || current._retiredBy || current._genInst[current._gen] !== dead) return null;
  return restartAfterCrash(current, dead, fresh);
});

/** The current runtime, or a clear error naming `what` when `init` has not run. */
export function currentRuntime(what) {
  if (!current) throw new Error(`${what}: call \`await pg.init()\` first`);
  // while its backend is started again after a crash, nothing may be made on it
  const inst = current._genInst[current._gen];
  if (inst && inst.dead) throw restartError(current, inst, what);
  return current;
}

/** Makes a started backend the current runtime (the one before it is retired). */
function adopt(s, tried, measured, limits, low, emulate, opts = {}) {
  const inner = s.inner;
  const report = {
    tried,
    adapter: s.adapter,
    selfTest: { maxRelError: inner.maxRelError },
    name: inner.name,
    format: inner.format,
    software: s.software === undefined ? inner.software : s.software,
    warnings: inner.warnings,
    caps: JSON.parse(inner.capsJson),
  };
  // the CPU kernels' threads (used by the cpu backend; threads.js)
  report.threads = threadsReport(wasm, opts);
  if (s.precisionCheck) report.precisionCheck = s.precisionCheck;
  if (inner.backend === 'webgpu') report.sharedDevice = !!s.sharedDevice;
  if (measured) report.measured = measured;
  if (emulate) report.emulatedPrecision = emulate;
  const rt = new Runtime(inner, report, s.keep, s.gl);
  /** @type {any} */ (rt)._low = low;
  /** @type {any} */ (rt)._emulate = emulate;
  try {
    rt._setLimits(limits);
  } catch (e) {
    rt._freeInner();
    throw e;
  }
  if (current) {
    current._retiredBy = rt.backend;
    // Models and tensors hold their own reference to the old device; this drops the runtime's.
    current._freeInner();
  }
  current = rt;
  return rt;
}

/**
 * Starts a backend: `backend` is 'auto' (webgpu, webgl, webgl1, cpu in that order; software GPUs are
 * skipped unless `allowSoftware`), or a name, used whenever it starts. Calling it again
 * switches backend; objects of the previous runtime then refuse to be used.
 */
export async function init(opts = {}) {
  const backend = opts.backend || 'auto';
  const allowSoftware = !!opts.allowSoftware;
  if (backend !== 'auto' && !BACKENDS.includes(backend)) {
    throw new Error(`pg.init: unknown backend '${backend}' (auto, webgpu, webgl, webgl1, cpu)`);
  }
  const low = opts.precision === 'low';
  if (opts.precision !== undefined && !['low', 'default'].includes(opts.precision)) {
    throw new Error(`pg.init: unknown precision '${opts.precision}' ('default', or 'low': RGBA16F + mediump, webgl only)`);
  }
  if (low && backend !== 'webgl') throw new Error("pg.init: precision 'low' is a WebGL mode; use init({ backend: 'webgl', precision: 'low' })");
  // A test mode: the GLSL dialects' precision emulation (what a low-end device computes).
  const emulate = opts.emulatePrecision;
  if (emulate !== undefined) {
    if (!['half', 'no-highp'].includes(emulate)) {
      throw new Error(`pg.init: unknown emulatePrecision '${emulate}' ('half': every shader value rounded to half precision; 'no-highp': no highp float in fragment shaders)`);
    }
    if (backend !== 'webgl' && backend !== 'webgl1') {
      throw new Error("pg.init: emulatePrecision emulates a WebGL device; use init({ backend: 'webgl' or 'webgl1', emulatePrecision })");
    }
    if (low) throw new Error("pg.init: emulatePrecision and precision 'low' are two different test modes; choose one");
  }
  const spec = opts.measure === undefined ? null : measureSpec(opts.measure);
  // `device`: the page's GPUDevice, shared by the WebGPU backend (the only one it can serve)
  const device = opts.device === undefined ? undefined : checkDevice(opts.device);
  if (device && backend !== 'webgpu' && backend !== 'auto') throw new Error(`pg.init: device is a GPUDevice, for backend 'webgpu' (or 'auto'), not '${backend}'`);
  plan(opts); // a bad `threads` is refused even when the module is loaded already
  await loadWasm(opts);
  const auto = backend === 'auto';
  const tried = [];
  // With `measure`, auto starts every backend that passes its checks and times the model on
  // them (measure.js); WebGL1 is WebGL's fallback mode, not a candidate beside it.
  const candidates = [];
  for (const name of device ? ['webgpu'] : auto ? BACKENDS : [backend]) {
    if (spec && auto && name === 'webgl1' && candidates.some((c) => c.name === 'webgl')) continue;
    let s;
    try {
      s = await start(name, auto && !device, allowSoftware, { low, emulate, device });
    } catch (e) {
      tried.push({ backend: name, ok: false, reason: e && e.message ? e.message : String(e) });
      // a backend that crashed the instance while starting: the next one starts on a fresh one
      if (isTrap(e)) noteTrap(e);
      settle();
      continue;
    }
    const inner = s.inner;
    tried.push({ backend: name, ok: true, reason: `${inner.name}; self-test max relative error ${Number(inner.maxRelError).toExponential(1)}` });
    candidates.push({ name, adapter: s.adapter, inner, started: s });
    if (!spec || !auto) break;
  }
  if (candidates.length > 0) {
    let measured = null;
    let chosen = candidates[0];
    if (candidates.length > 1) {
      try {
        measured = await chooseBackend(wasm, candidates, spec);
      } catch (e) {
        for (const c of candidates) release(c.inner);
        throw e;
      }
      chosen = candidates.find((c) => c.name === measured.backend) || chosen;
      for (const c of candidates) {
        if (c === chosen) continue;
        release(c.inner);
        const t = tried.find((x) => x.backend === c.name);
        t.ok = false;
        t.reason = `slower on this model; ${t.reason}`;
      }
    }
    return adopt(chosen.started, tried, measured, opts.limits, low, emulate, opts);
  }
  const why = tried.map((t) => `${t.backend}: ${t.reason}`).join('; ');
  const err = /** @type {Error & { report?: { tried: object[] } }} */ (new Error(`pg.init: no backend could start (${why})`));
  err.report = { tried };
  throw err;
}
