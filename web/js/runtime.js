// Backend selection and the current runtime. `init` tries backends in order and records why
// each one was refused; the Rust side (`Runtime.webgpu/webgl/cpu`) only starts a given backend
// and runs its precision self-test.
import initWasm, * as wasm from './pixelgrad_web.js';

export { wasm };

const BACKENDS = ['webgpu', 'webgl', 'webgl1', 'cpu'];

let wasmReady = null;
let loaded = false;
let current = null;

/** True once `init` (or `loadWasm`) has loaded the module. */
export function wasmLoaded() {
  return loaded;
}

/** Loads and instantiates the wasm module once (`wasmUrl` overrides where it is fetched from). */
export function loadWasm(opts = {}) {
  if (!wasmReady) {
    wasmReady = initWasm(opts.wasmUrl ? { module_or_path: opts.wasmUrl } : undefined).then((m) => {
      loaded = true;
      return m;
    }, (e) => {
      wasmReady = null;
      throw new Error(`pixelgrad: could not load the wasm module: ${e && e.message ? e.message : e}`);
    });
  }
  return wasmReady;
}


/** A started backend. Replaced (and retired) by the next `pg.init`. */
export class Runtime {
  constructor(inner, report, keepAlive) {
    this._inner = inner;
    this._keep = keepAlive; // the canvas of a WebGL context must outlive the context
    this._retiredBy = null;
    /** `webgpu`, `webgl`, `webgl1` or `cpu`. */
    this.backend = inner.backend;
    /** `{ tried: [{ backend, ok, reason }], adapter, selfTest: { maxRelError }, ... }` */
    this.report = report;
  }
  /**
   * The backend's counters: `{ bytesInUse, allocations, compiles, launches, submissions,
   * readbacks }`. `bytesInUse` is what live tensors and the buffer/texture pools hold now; the
   * others count since start (a training step after warm-up adds no allocations or compiles).
   */
  memory() {
    this._check('runtime.memory');
    return this._inner.memory();
  }
  /** Throws if a later `pg.init` replaced this runtime. */
  _check(what) {
    if (this._retiredBy) {
      throw new Error(
        `${what}: this object belongs to the ${this.backend} runtime, which pg.init() has replaced by ${this._retiredBy}; ` +
          'create it again (or pg.loadModel a saved model) on the new runtime',
      );
    }
  }
}

/** The current runtime, or a clear error naming `what` when `init` has not run. */
export function currentRuntime(what) {
  if (!current) throw new Error(`${what}: call \`await pg.init()\` first`);
  return current;
}

function describeAdapter(info) {
  if (!info) return '';
  return [info.vendor, info.architecture, info.device, info.description].filter((s) => s).join(' ').trim();
}

async function startWebGpu(auto, allowSoftware) {
  const gpu = globalThis.navigator && globalThis.navigator.gpu;
  if (!gpu) throw new Error('navigator.gpu is missing (no WebGPU in this browser or context)');
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('navigator.gpu.requestAdapter() returned no adapter');
  const info = adapter.info || (adapter.requestAdapterInfo ? await adapter.requestAdapterInfo() : null);
  const desc = describeAdapter(info);
  const fallback = !!(adapter.isFallbackAdapter || (info && info.isFallbackAdapter));
  // The list of software rasterisers and the self-test bound are the engine's (one copy, in
  // pixelgrad_core::backend), asked through the loaded module.
  if (auto && !allowSoftware && (fallback || wasm.isSoftwareRenderer(desc))) {
    throw new Error(
      `adapter '${desc || 'fallback adapter'}' is a software rasteriser, slower than the wasm CPU backend; ` +
        "use init({ backend: 'webgpu' }) or allowSoftware: true to use it",
    );
  }
  const inner = await wasm.Runtime.webgpu();
  if (auto && !allowSoftware && inner.software) {
    const a = inner.adapter;
    inner.free();
    throw new Error(`adapter '${a}' is a software rasteriser, slower than the wasm CPU backend; use init({ backend: 'webgpu' }) or allowSoftware: true`);
  }
  return { inner, adapter: desc || inner.adapter, software: fallback || wasm.isSoftwareRenderer(desc) || inner.software };
}

function newCanvas() {
  if (typeof document !== 'undefined' && document.createElement) return document.createElement('canvas');
  if (typeof OffscreenCanvas !== 'undefined') return new OffscreenCanvas(1, 1);
  throw new Error('no canvas: neither document nor OffscreenCanvas exists in this context');
}

function startWebGl(auto, allowSoftware) {
  const canvas = newCanvas();
  const gl = canvas.getContext('webgl2', { antialias: false, depth: false, stencil: false, alpha: true, powerPreference: 'high-performance' });
  if (!gl) throw new Error('getContext("webgl2") returned null (no WebGL2 in this browser or context)');
  const dbg = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = String(gl.getParameter(dbg ? dbg.UNMASKED_RENDERER_WEBGL : gl.RENDERER) || '');
  if (auto && !allowSoftware && wasm.isSoftwareRenderer(renderer)) {
    throw new Error(
      `renderer '${renderer}' is a software rasteriser, slower than the wasm CPU backend; ` +
        "use init({ backend: 'webgl' }) or allowSoftware: true to use it",
    );
  }
  if (auto && !gl.getExtension('EXT_color_buffer_float')) {
    throw new Error('no EXT_color_buffer_float (float textures cannot be rendered to; half floats are too imprecise for auto)');
  }
  const inner = wasm.Runtime.webgl(gl);
  return { inner, adapter: renderer || inner.adapter, keep: canvas, software: wasm.isSoftwareRenderer(renderer) || inner.software };
}

// WebGL1 (`getContext('webgl')`) for browsers and devices without WebGL2: the backend's
// GLSL ES 1.00 mode. OES_texture_float is required; float render targets are checked on the
// Rust side by really rendering into one (the extension strings alone are not trusted).
function startWebGl1(auto, allowSoftware) {
  const canvas = newCanvas();
  const gl = canvas.getContext('webgl', { antialias: false, depth: false, stencil: false, alpha: true, powerPreference: 'high-performance' });
  if (!gl) throw new Error('getContext("webgl") returned null (no WebGL in this browser or context)');
  const dbg = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = String(gl.getParameter(dbg ? dbg.UNMASKED_RENDERER_WEBGL : gl.RENDERER) || '');
  if (auto && !allowSoftware && wasm.isSoftwareRenderer(renderer)) {
    throw new Error(
      `renderer '${renderer}' is a software rasteriser, slower than the wasm CPU backend; ` +
        "use init({ backend: 'webgl1' }) or allowSoftware: true to use it",
    );
  }
  if (!gl.getExtension('OES_texture_float')) throw new Error('no OES_texture_float (tensors are float textures)');
  const inner = wasm.Runtime.webgl1(gl);
  return { inner, adapter: renderer || inner.adapter, keep: canvas, software: wasm.isSoftwareRenderer(renderer) || inner.software };
}

async function start(name, auto, allowSoftware) {
  let started;
  if (name === 'webgpu') started = await startWebGpu(auto, allowSoftware);
  else if (name === 'webgl') started = startWebGl(auto, allowSoftware);
  else if (name === 'webgl1') started = startWebGl1(auto, allowSoftware);
  else started = { inner: wasm.Runtime.cpu(), adapter: 'wasm32 CPU' };
  const err = started.inner.maxRelError;
  const tol = wasm.selfTestTolerance();
  if (auto && !(err <= tol)) {
    started.inner.free();
    throw new Error(`self-test max relative error ${Number(err).toExponential(2)} exceeds ${tol}`);
  }
  return started;
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
  await loadWasm(opts);
  const auto = backend === 'auto';
  const tried = [];
  for (const name of auto ? BACKENDS : [backend]) {
    let s;
    try {
      s = await start(name, auto, allowSoftware);
    } catch (e) {
      tried.push({ backend: name, ok: false, reason: e && e.message ? e.message : String(e) });
      continue;
    }
    const inner = s.inner;
    const reason = `${inner.name}; self-test max relative error ${Number(inner.maxRelError).toExponential(1)}`;
    tried.push({ backend: name, ok: true, reason });
    const report = {
      tried,
      adapter: s.adapter,
      selfTest: { maxRelError: inner.maxRelError },
      name: inner.name,
      format: inner.format,
      software: s.software === undefined ? inner.software : s.software,
      warnings: inner.warnings,
    };
    const rt = new Runtime(inner, report, s.keep);
    if (current) {
      current._retiredBy = rt.backend;
      // Models and tensors hold their own reference to the old device; this drops the runtime's.
      try {
        current._inner.free();
      } catch {
        // already freed
      }
    }
    current = rt;
    return rt;
  }
  const why = tried.map((t) => `${t.backend}: ${t.reason}`).join('; ');
  const err = new Error(`pg.init: no backend could start (${why})`);
  err.report = { tried };
  throw err;
}
