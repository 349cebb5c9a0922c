// Starting one backend by name: the WebGPU adapter and the WebGL canvases, the software-
// rasteriser refusal under auto, the precision self-test and the low-precision training check.
// Below both the runtime (runtime.js, which chooses among backends) and crash/loss recovery
// (recovery.js, which starts the same backend again), so neither imports the other.
import { release, wasm } from './instance.js';
import { withSharedDevice } from './shareddevice.js';

function describeAdapter(info) {
  if (!info) return '';
  return [info.vendor, info.architecture, info.device, info.description].filter((s) => s).join(' ').trim();
}

async function startWebGpu(auto, allowSoftware, device) {
  const gpu = globalThis.navigator && globalThis.navigator.gpu;
  if (!gpu) throw new Error('navigator.gpu is missing (no WebGPU in this browser or context)');
  const adapter = device ? null : await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!device && !adapter) throw new Error('navigator.gpu.requestAdapter() returned no adapter');
  // `requestAdapterInfo` and `isFallbackAdapter`: older browsers' forms of `adapter.info`.
  const old = /** @type {{ requestAdapterInfo?: () => Promise<GPUAdapterInfo>, isFallbackAdapter?: boolean }} */ (/** @type {unknown} */ (adapter || {}));
  const info = device ? device.adapterInfo || null : adapter.info || (old.requestAdapterInfo ? await old.requestAdapterInfo() : null);
  const desc = describeAdapter(info);
  const fallback = !!(old.isFallbackAdapter || (info && info.isFallbackAdapter));
  // The list of software rasterisers and the self-test bound are the engine's (one copy, in
  // pixelgrad_core::backend), asked through the loaded module.
  if (auto && !allowSoftware && (fallback || wasm.isSoftwareRenderer(desc))) {
    throw new Error(
      `adapter '${desc || 'fallback adapter'}' is a software rasteriser, slower than the wasm CPU backend; ` +
        "use init({ backend: 'webgpu' }) or allowSoftware: true to use it",
    );
  }
  // a page's own device (`init({ device })`: shareddevice.js), or one of the backend's
  const inner = device ? await withSharedDevice(device, () => wasm.Runtime.webgpu()) : await wasm.Runtime.webgpu();
  if (auto && !allowSoftware && inner.software) {
    const a = inner.adapter;
    release(inner);
    throw new Error(`adapter '${a}' is a software rasteriser, slower than the wasm CPU backend; use init({ backend: 'webgpu' }) or allowSoftware: true`);
  }
  return { inner, adapter: desc || inner.adapter, software: fallback || wasm.isSoftwareRenderer(desc) || inner.software, sharedDevice: !!device };
}

function newCanvas() {
  if (typeof document !== 'undefined' && document.createElement) return document.createElement('canvas');
  if (typeof OffscreenCanvas !== 'undefined') return new OffscreenCanvas(1, 1);
  throw new Error('no canvas: neither document nor OffscreenCanvas exists in this context');
}

function startWebGl(auto, allowSoftware, reuse = {}) {
  const canvas = reuse.canvas || newCanvas();
  const gl = reuse.gl || canvas.getContext('webgl2', { antialias: false, depth: false, stencil: false, alpha: true, powerPreference: 'high-performance' });
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
  const inner = reuse.emulate
    ? wasm.Runtime.webglEmulated(gl, false, reuse.emulate)
    : reuse.low
      ? wasm.Runtime.webglLowPrecision(gl)
      : wasm.Runtime.webgl(gl);
  return { inner, adapter: renderer || inner.adapter, keep: canvas, gl, software: wasm.isSoftwareRenderer(renderer) || inner.software };
}

// WebGL1 (`getContext('webgl')`) for browsers and devices without WebGL2: the backend's
// GLSL ES 1.00 mode. Tensors are float textures (OES_texture_float) or, on a device that renders
// only half floats, half-float ones (OES_texture_half_float + EXT_color_buffer_half_float, with
// the optimizers' half measures); which one renders is checked on the Rust side by really
// rendering into it (the extension strings alone are not trusted). Under auto a device with
// half floats only is left to the CPU, as WebGL2 without EXT_color_buffer_float is.
function startWebGl1(auto, allowSoftware, reuse = {}) {
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
  if (!gl.getExtension('OES_texture_float')) {
    if (auto) throw new Error('no OES_texture_float (tensors are float textures; half floats are too imprecise for auto)');
    if (!gl.getExtension('OES_texture_half_float')) {
      throw new Error('no OES_texture_float and no OES_texture_half_float (tensors are float or half-float textures)');
    }
  }
  const inner = reuse.emulate ? wasm.Runtime.webglEmulated(gl, true, reuse.emulate) : wasm.Runtime.webgl1(gl);
  return { inner, adapter: renderer || inner.adapter, keep: canvas, gl, software: wasm.isSoftwareRenderer(renderer) || inner.software };
}

/** Refuses (and frees) a started backend whose self-test error is over the bound, under auto. */
function checkSelfTest(started, auto) {
  const err = started.inner.maxRelError;
  const tol = wasm.selfTestTolerance();
  if (auto && !(err <= tol)) {
    release(started.inner);
    throw new Error(`self-test max relative error ${Number(err).toExponential(2)} exceeds ${tol}`);
  }
  return started;
}

/** Starts a backend that starts synchronously (cpu, webgl, webgl1). */
function startSync(name, auto, allowSoftware, reuse) {
  let started;
  if (name === 'webgl') started = startWebGl(auto, allowSoftware, reuse);
  else if (name === 'webgl1') started = startWebGl1(auto, allowSoftware, reuse);
  else if (name === 'cpu') started = { inner: wasm.Runtime.cpu(), adapter: 'wasm32 CPU' };
  else throw new Error(`backend ${name} starts asynchronously`);
  return started;
}

/** Starts backend `name`: under `auto`, refusing software rasterisers unless `allowSoftware`. */
export async function start(name, auto, allowSoftware, reuse) {
  const started = name === 'webgpu' ? await startWebGpu(auto, allowSoftware, reuse && reuse.device) : startSync(name, auto, allowSoftware, reuse);
  if (reuse && reuse.low) started.precisionCheck = await lowPrecisionCheck(started.inner);
  return checkSelfTest(started, auto);
}

/**
 * The precision-limited mode's training check (crates/pixelgrad-web/src/wasm/precision.rs):
 * refuses the backend, with the measured losses, unless the seed network's loss goes down on
 * the device by at least half as much as on the f32 CPU.
 */
async function lowPrecisionCheck(inner) {
  let c;
  try {
    c = await inner.trainingCheck();
  } catch (e) {
    release(inner);
    throw e;
  }
  const drop = (l) => (l[0] - l[1]) / l[0];
  const check = { steps: c.steps, device: Array.from(c.device), cpu: Array.from(c.cpu), deviceDrop: drop(c.device), cpuDrop: drop(c.cpu) };
  if (!(check.deviceDrop > 0 && check.deviceDrop >= 0.5 * check.cpuDrop)) {
    release(inner);
    const pct = (v) => `${(100 * v).toFixed(2)} %`;
    throw new Error(
      `precision 'low' (RGBA16F, mediump): ${check.steps} SGD steps of the 48-64-2 sigmoid MSE network lower the loss by ` +
        `${pct(check.deviceDrop)} here (${check.device[0].toPrecision(4)} -> ${check.device[1].toPrecision(4)}) but by ${pct(check.cpuDrop)} ` +
        'in f32 on the CPU: updates or gradients are lost at this precision, so training would stall; use the default precision',
    );
  }
  return check;
}

/** @internal Starts backend `name` as asked by name (recovery; `reuse`: a restored WebGL canvas). */
export function startBackend(name, reuse) {
  return start(name, false, true, reuse);
}

/**
 * @internal `startBackend` for the backends that start synchronously (cpu, webgl, webgl1 at
 * the default precision), so that the call right after a crash runs on them; null for the
 * others.
 */
export function startBackendSync(name, reuse = {}) {
  if (name === 'webgpu' || reuse.low) return null;
  return checkSelfTest(startSync(name, false, true, reuse), false);
}
