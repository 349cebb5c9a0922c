// TypeScript declarations of the `pixelgrad` package (hand-written; the wasm-bindgen
// declarations in pixelgrad_web.d.ts describe internals).

/**
 * `webgl1`: WebGL1 (`getContext('webgl')`) with OES_texture_float and a float render target
 * (or, named explicitly, half-float textures on a device that renders only those),
 * for devices without WebGL2: GLSL ES 1.00 programs; trains the MLP presets and conv nets with
 * the results of `webgl` up to f32 rounding; pixels come in through the host
 * (`fromPixelsBytes`; `fromPixelsSource` is refused); tensors up to 2^22 elements, matmul K up
 * to 65536 (beyond either, a typed error).
 * `auto` tries webgpu, webgl, webgl1, cpu in that order.
 */
export type BackendName = 'webgpu' | 'webgl' | 'webgl1' | 'cpu';

export interface InitOptions {
  /** 'auto' (default): webgpu, then webgl, then webgl1, then cpu; software GPUs are skipped unless allowSoftware. */
  backend?: 'auto' | BackendName;
  /** Let 'auto' pick software rasterisers (SwiftShader, llvmpipe, lavapipe). */
  allowSoftware?: boolean;
  /** Where to fetch pixelgrad_web_bg.wasm from (default: next to index.js). */
  wasmUrl?: string | URL;
  /**
   * 'low' (WebGL only, for tests): the precision-limited mode of some phones, RGBA16F storage and
   * mediump fragment shaders. Init runs a short training check (48-64-2 sigmoid MSE SGD) against
   * the f32 CPU and refuses the backend, with the measured losses, if the loss does not go down
   * (`report.precisionCheck` holds them otherwise).
   */
  precision?: 'default' | 'low';
  /**
   * A test mode for 'webgl' and 'webgl1': the backend's GLSL precision emulation, to see on a
   * desktop GPU what a low-end device does. 'half' rounds every value a shader computes or
   * writes to half precision (and clamps it to half's range), as fragment shaders with only
   * `mediump` do; 'no-highp' makes the backend see no `highp` float, so it refuses to start as
   * on such a device. `report.emulatedPrecision` says which is on; kept across recoveries.
   */
  emulatePrecision?: 'half' | 'no-highp';
  /**
   * Caps the device checks before every primitive (`Device::set_limits`): a result of more
   * than `maxElements` elements (default 2^28, 1 GiB of f32) or a primitive estimated at more
   * than `maxOpWork` steps of work (default 2^36) is refused with kind 'budget' before
   * anything is allocated or launched, so a hostile model or input (a `[32768, 1] + [1, 32768]`
   * broadcast, a huge matrix product) cannot exhaust the tab; a size past 2^32 elements, which
   * wasm32 cannot count, is kind 'shape'. Kept across recoveries and crash restarts.
   */
  limits?: { maxElements?: number; maxOpWork?: number };
  /**
   * A `GPUDevice` the page already has (three.js, a video pipeline), for the WebGPU backend to
   * compute on instead of opening its own (backend 'webgpu', or 'auto', which then tries only
   * WebGPU on it; its self-test runs on it). pixelgrad never destroys it and sets its
   * `onuncapturederror` (listen with addEventListener). `rt.gpuDevice` is it;
   * `report.sharedDevice` is true. After a loss of that device the runtime's recovery starts a
   * device of its own (`report.sharedDevice` false): call `init({ device })` with the page's
   * new device to share again.
   */
  device?: GPUDevice;
  /**
   * With 'auto': the model you will train (its layers, as given to `pg.sequential`). Every
   * backend that passes its checks is started and a few training steps of this model are timed
   * on each (4 warm-up steps, then 300 ms of timed steps in all); the fastest is kept and the
   * timings are in `report.measured`. The choice is cached in localStorage per model, batch size
   * and device (adapter or renderer), so later page loads start at once.
   */
  measure?: { layers: LayerConfig[]; batchSize?: number; loss?: string };
  /**
   * Threads for the CPU backend's kernels: 'all' (default: navigator.hardwareConcurrency; 1
   * when `backend` names a GPU backend, whose readbacks are slower on the threaded build) or a
   * count from 1 to 64. More than one needs a cross-origin isolated page (served with
   * `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`)
   * and the package's threaded build (`pixelgrad_web_threads_bg.wasm`); otherwise, and with 1,
   * the single-threaded build runs, and `report.threads` says why. Chosen once, when the module
   * loads (the first `init` or `loadWasm`).
   */
  threads?: number | 'all';
}

/** How many threads the CPU backend's kernels use, and why (`report.threads`). */
export interface ThreadsReport {
  /** Threads the CPU kernels split work over now (the page's own thread and the workers). */
  count: number;
  /** The module loaded: 'threaded' (wasm threads on Web Workers) or 'single'. */
  build: 'threaded' | 'single';
  /** The threads asked for (`init({ threads })`, 'all' resolved to navigator.hardwareConcurrency). */
  requested: number;
  /** Whether the page is cross-origin isolated (SharedArrayBuffer available). */
  isolated: boolean;
  /** Why this build and count, e.g. that the page is not cross-origin isolated. */
  reason: string;
}

/** One backend's timing by `init({ measure })`. */
export interface BackendTiming {
  backend: BackendName;
  /** The untimed warm-up steps (compiles, pools, step plans). */
  warmMs: number;
  /** Mean time of one timed training step, loss readback included. */
  stepMs: number;
  steps: number;
}

export interface BackendTry {
  backend: BackendName;
  ok: boolean;
  /** Why it was refused, or what was started. */
  reason: string;
}

/** A backend's capabilities, measured when it started (`rt.report.caps`). */
export interface BackendCaps {
  /** Runs a convolution as one op (the CPU); elsewhere im2col + matmul. */
  conv: boolean;
  /** Stores 8-bit tensors and computes on them (`matmul_i8`, `narrow8`). */
  int8: boolean;
  /** Stores 8-bit tensors, at least to widen them (true wherever `int8` is; also WebGL1). */
  int8Storage: boolean;
  /** The kernel of packed 8-bit products, e.g. 'dot4I8Packed', 'unpacked-i32', 'cpu-i32'; null where not named. */
  int8Kernel: string | null;
  /** Stores half-precision tensors. */
  f16Storage: boolean;
  /** WebGPU: whether the adapter offers `shader-f16`; null on other backends. */
  shaderF16: boolean | null;
  /** A matmul reads an f16 operand directly (WebGPU). */
  f16Matmul: boolean;
  /** The arithmetic of such a matmul, e.g. 'f32 (f16 weights read directly)'; null where `f16Matmul` is false. */
  f16MatmulArithmetic: string | null;
  /** Narrows f32 to f16 storage (mixed-precision training keeps activations in f16). */
  narrowF16: boolean;
  /** Why the device computes or stores below f32 (RGBA16F, mediump, an emulation), or null at full precision. */
  reducedPrecision: string | null;
  /**
   * Mantissa bits a stored f32 tensor keeps, measured at start on WebGL (`1 + 2^-k` uploaded
   * into a tensor texture and read back): 23 with RGBA32F textures, 10 with RGBA16F; 23 on the
   * CPU and WebGPU (IEEE f32 buffers).
   */
  storageMantissaBits: number;
  /** How the backend computes f32 arithmetic. */
  arithmetic: ArithmeticPrecision;
  /** Mantissa bits of that arithmetic: 23 for f32; on WebGL measured at start by a fragment program (fract(1 + 2^-k) / 2^-k), not the driver's statement; 10 emulated. */
  arithmeticMantissaBits: number;
  /** The largest texture side (WebGL's MAX_TEXTURE_SIZE or the forced smaller one, WebGPU's maxTextureDimension2D); null on the CPU. */
  maxTextureSide: number | null;
  /** The most elements one f32 tensor may hold, from the backend's limits (`init({ limits })` may lower it further). */
  maxTensorElements: number;
  /** Whether training is expected to be reliable here, decided from the measured precisions. */
  training: TrainingVerdict;
  /** Why `training` is what it is, naming the measured bits. */
  trainingReason: string;
}

/** The arithmetic of a backend: 'f32' (CPU, WebGPU), WebGL's 'highp' or 'mediump', or the half emulation. */
export type ArithmeticPrecision = 'f32' | 'highp' | 'mediump' | 'emulated-half';

/**
 * 'reliable': full f32 storage and arithmetic. 'reliable-with-half-measures': half precision
 * (10 mantissa bits) in storage or arithmetic; training works through the half-precision
 * optimizer path, loss scaling and the precision check against the CPU. 'inference-only':
 * fewer bits than a half.
 */
export type TrainingVerdict = 'reliable' | 'reliable-with-half-measures' | 'inference-only';

export interface RuntimeReport {
  /** Every backend attempted, in order. */
  tried: BackendTry[];
  /** Adapter (WebGPU) or unmasked renderer (WebGL) description. */
  adapter: string;
  selfTest: { maxRelError: number };
  name: string;
  /** Tensor storage format: 'f32', 'RGBA32F' or 'RGBA16F'. */
  format: string;
  software: boolean;
  warnings: string[];
  /**
   * What the backend measured when it started (the engine's `Backend::caps`); taken again from
   * the new backend after every recovery.
   */
  caps: BackendCaps;
  /**
   * One entry per recovery from a context/device loss or a crash: the backend lost, the one
   * started, what was tried; `crash`: the panic message when a crash of the wasm instance
   * (not the device) caused it.
   */
  recoveries?: { lost: BackendName; backend: BackendName; tried: BackendTry[]; crash?: string }[];
  /** With `precision: 'low'`: the training check's mean losses before/after, here and on the f32 CPU. */
  precisionCheck?: { steps: number; device: number[]; cpu: number[]; deviceDrop: number; cpuDrop: number };
  /** How `init({ measure })` chose: the backend, every candidate's timing, and whether it came from the cache. */
  measured?: { backend: BackendName; timings: BackendTiming[]; cached: boolean };
  /** The precision emulation `init({ emulatePrecision })` turned on (a test mode), if any. */
  emulatedPrecision?: 'half' | 'no-highp';
  /**
   * WebGPU: how the last video frame given to `fromPixels` reached the GPU: 'direct'
   * (copyExternalImageToTexture from the frame) or 'canvas' (drawn onto a 2D canvas first: on
   * software adapters, after the direct-copy probe failed on this device, and on adapters where
   * a direct copy was followed by a device loss before). `probe`: the state of the probe (the
   * first direct copy on each device, inside a validation error scope): 'pending', 'running',
   * 'passed', 'failed', or 'skipped' on a software adapter.
   */
  videoInput?: { path: 'direct' | 'canvas'; reason: string; probe: 'pending' | 'running' | 'passed' | 'failed' | 'skipped' };
  /**
   * WebGPU: how the last `drawHeatmap` drew: 'gpu' (a render pass into a WebGPU canvas
   * context, nothing read back) or 'readback' (the 8-bit image put on a 2D canvas).
   */
  overlay?: { path: 'gpu' | 'readback'; reason: string };
  /** WebGPU: whether the runtime computes on the page's own GPUDevice (`init({ device })`). */
  sharedDevice?: boolean;
  /** The CPU backend's threads (set by every backend: the CPU kernels also serve host-side work). */
  threads: ThreadsReport;
}

/**
 * Device memory of a runtime (`rt.memory()`, `rt.trim()`), in bytes, and counters since start.
 * WebGL textures are sized on a grid of 8 steps per octave (nearby tensor sizes share one
 * texture size, at most 1/8 more texels); WebGPU buffers on power-of-two size classes (8 per
 * octave above 1 MiB).
 */
export interface MemoryInfo {
  /** Every byte of device memory the backend holds: `liveBytes + pooledBytes`. */
  bytesInUse: number;
  /** Held by live tensors and step plans. */
  liveBytes: number;
  /** Free buffers / textures kept for reuse (and, on WebGPU, some waiting for in-flight work). */
  pooledBytes: number;
  /** The pool's budget: `pooledBytes` stays at or under it once in-flight work is done (0 on the CPU backend). */
  poolBudget: number;
  allocations: number;
  compiles: number;
  launches: number;
  submissions: number;
  readbacks: number;
}

export declare class Runtime {
  /** The backend in use. */
  readonly backend: BackendName;
  readonly report: RuntimeReport;
  /** The device's caps (`init({ limits })`), checked before every primitive. */
  readonly limits: { maxElements: number; maxOpWork: number };
  /**
   * WebGPU: the GPUDevice the runtime computes on (the page's own after `init({ device })`);
   * buffers for `pg.fromGPUBuffer` must come from it. `undefined` on other backends.
   */
  readonly gpuDevice: GPUDevice | undefined;
  /** WebGL2: the runtime's WebGL2RenderingContext (textures for `pg.fromTexture` come from it); `undefined` elsewhere. */
  readonly glContext: WebGL2RenderingContext | undefined;
  /**
   * WebGL2: the texture layout of a float32 tensor of `shape`: `pg.fromTexture` reads the
   * first `width` x `height` texels of its texture, 4 elements per texel, row-major.
   */
  textureLayout(shape: number[]): TextureLayout;
  /** Backend counters: device bytes held now, and what was allocated, compiled, launched,
   *  submitted and read back since start (see `MemoryInfo`). */
  memory(): MemoryInfo;
  /**
   * Frees the device memory the backend's pools keep for reuse (`pooledBytes` becomes 0 once
   * in-flight work is done; WebGPU awaits it first). Memory of live tensors and of step plans
   * stays. Resolves to `memory()` afterwards.
   *
   * ```js
   * for (const img of images) await model.run(img);   // many sizes
   * const m = await rt.trim();
   * console.log(m.pooledBytes, m.liveBytes);           // 0, what the model holds
   * ```
   */
  trim(): Promise<MemoryInfo>;
  /**
   * The most bytes of free buffers / textures the pools keep for reuse (default 256 MiB; 0
   * keeps none). Past it the least recently returned are freed, so memory stays bounded
   * however many input sizes a model sees. Not negative, not NaN.
   */
  setPoolBudget(bytes: number): void;
  /**
   * Trains a tiny fully connected network (same seeded weights and data) for a few SGD steps
   * on this backend and on the f64 CPU reference, reads back every intermediate of every step
   * and compares element by element (the engine of `pixelgrad check`).
   *
   * ```js
   * const rt = await pg.init({ backend: 'webgl' });
   * const r = await rt.crossCheck({ layers: [4, 4, 2], steps: 3 });
   * console.log(r.passed, r.summary);          // true 'PASS: 42 tensors over 3 steps ...'
   * if (!r.passed) console.log(r.firstFailure.tensor, r.firstFailure.op);
   * ```
   */
  crossCheck(options?: CrossCheckOptions): Promise<CrossCheckReport>;
  /** The layout table of `model`'s live tensors: same as `model.layouts()`. */
  layouts(model: Sequential): LayoutRow[];
  /** Why the device is gone (WebGL context loss, WebGPU device loss), or null while it works. */
  readonly lost: string | null;
  /**
   * Test hook: loses the device as a browser or driver would. WebGL: `WEBGL_lose_context`,
   * restored after `restoreAfterMs` (default 50; null: never). WebGPU: `device.destroy()`.
   * `permanent`: the backend does not start again; recovery moves on to the next in the auto order.
   */
  simulateContextLoss(options?: { restoreAfterMs?: number | null; permanent?: boolean }): void;
  /**
   * After a loss: the same backend started again (else the next in the auto order), in this
   * runtime. After a crash of the wasm instance the runtime restarts its backend on a fresh
   * instance by itself (synchronously on cpu, webgl and webgl1; WebGPU asynchronously: until
   * then synchronous calls throw kind 'instanceLost' and async ones wait); `recover()` then
   * resolves once that is done.
   */
  recover(): Promise<{ backend: BackendName; tried: BackendTry[] }>;
}

export type PixelgradErrorKind =
  | 'invalid' | 'shape' | 'backend' | 'limit' | 'unavailable' | 'deviceLost' | 'disposed' | 'wouldBlock'
  | 'backendMismatch' | 'autodiff' | 'io' | 'budget' | 'cancelled' | 'panic' | 'instanceLost' | 'quota'
  | 'deviceMismatch';

/**
 * Every error the package throws or rejects with: the engine's message unchanged, plus its
 * fields as data.
 *
 * ```js
 * try { model.predict(pg.tensor(new Float32Array(20), [2, 10])); }
 * catch (e) { if (e instanceof pg.PixelgradError) console.log(e.kind, e.op, e.shapes, e.backend); }
 * ```
 */
export declare class PixelgradError extends Error {
  constructor(message: string, fields?: { kind?: string; op?: string; shapes?: number[][]; backend?: string });
  /**
   * 'invalid' (bad argument), 'shape', 'backend', 'limit', 'unavailable', 'deviceLost',
   * 'disposed', 'wouldBlock', 'backendMismatch', 'autodiff', 'io';
   * 'budget': over a cap (`init({ limits })`) or a run's `maxWork`, refused before anything
   * was allocated or launched (the message says which setting raises it);
   * 'cancelled': stopped by an AbortSignal (`cause` is the signal's reason);
   * 'panic': the wasm instance crashed during this call (a bug: `panicMessage` is the Rust
   * panic message); it was discarded and the next call runs on a fresh instance;
   * 'instanceLost': the object (tensor, model, ONNX model, checkpoint) belonged to an instance
   * discarded after a crash; create it again;
   * 'quota': IndexedDB refused a write because the site's storage quota is used up.
   */
  readonly kind: PixelgradErrorKind | string;
  /** The operation, e.g. 'fit', 'predict', 'matmul' ('' where none). */
  readonly op: string;
  /** Input shapes involved (empty where none). */
  readonly shapes: number[][];
  /** The backend's name ('' where none). */
  readonly backend: string;
  /** Kinds 'panic' and 'instanceLost': the Rust panic message (or the trap) of the crash. */
  readonly panicMessage?: string;
  /** Kind 'cancelled': the AbortSignal's reason. */
  readonly cause?: unknown;
  /** `pg.init` when no backend could start: every backend tried and why it was refused. */
  readonly report?: { tried: BackendTry[] };
}

export interface CrossCheckOptions {
  /** Layer widths, input first (default [4, 4, 2]). */
  layers?: number[];
  /** Activation of every layer (default 'sigmoid'; the loss is MSE, the optimizer plain SGD). */
  activation?: 'sigmoid' | 'tanh' | 'relu';
  /** Steps compared (default 3), batch size (8), learning rate (0.5), seed (1). */
  steps?: number;
  batch?: number;
  lr?: number;
  seed?: number;
  /** Multiplies every tolerance (default 1). */
  toleranceScale?: number;
  /**
   * Test-only: corrupt results of one op on this backend, `'OP[@N][+OFFSET]'` (e.g. 'sigmoid',
   * 'matmul@2+0.5'; the N-th result counted from 0, offset default 0.01), to see the check
   * fail and name the tensor that op produced.
   */
  injectFault?: string;
}

/** One compared tensor of one step. */
export interface CrossCheckRow {
  /** 1-based step. */
  step: number;
  /** 'layer1.pre', 'layer1.act', 'loss', 'layer1.act.grad', 'layer2.weight.grad', 'layer2.bias' (updated) ... */
  tensor: string;
  /** The op that produced it, e.g. 'sigmoid', 'matmul + bias add', 'sgd update (p - lr·g)'. */
  op: string;
  shape: number[];
  /** Largest |got - ref|, largest |got - ref| / |ref| (null if not finite). */
  maxAbs: number | null;
  maxRel: number | null;
  worstIndex: number;
  /** Passes when |got - ref| <= tolAbs + tolRel * |ref| for every element. */
  tolAbs: number;
  tolRel: number;
  pass: boolean;
}

export interface CrossCheckReport {
  passed: boolean;
  /** One line: PASS, or the first failing tensor, its step, the op that produced it and the error. */
  summary: string;
  backend: string;
  reference: string;
  config: { layers: number[]; activation: string; steps: number; batch: number; lr: number; seed: number; toleranceScale: number };
  /** The first tensor (computation order, earliest step) outside its tolerance. */
  firstFailure: CrossCheckRow | null;
  rows: CrossCheckRow[];
}

/** One live tensor in device memory (`model.layouts()`). */
export interface LayoutRow {
  /** '0.weight', or optimizer state such as 'm/0.weight'. */
  name: string;
  shape: number[];
  elements: number;
  /** 'texture' (WebGL), 'buffer' (WebGPU) or 'host' (CPU); absent with the keys below if the backend does not say. */
  memory?: 'texture' | 'buffer' | 'host';
  /** Texture width x height in texels; for a buffer or host memory, its element slots x 1. */
  width?: number;
  height?: number;
  /** 'RGBA32F', 'RGBA16F', 'f32'. */
  format?: string;
  /** Texels (texture) or elements holding data, of `allocated`; the rest is padding. */
  used?: number;
  allocated?: number;
  /** e.g. 'row-major fold, 4 elements per texel'. */
  layout?: string;
  bytes?: number;
}

/** Starts (or switches) the backend. Objects of a replaced runtime throw when used. */
export declare function init(options?: InitOptions): Promise<Runtime>;
/**
 * Loads the wasm module without starting a backend (`wasmUrl`: where the .wasm is, or its bytes,
 * or a compiled module). A crash of the instance (a Rust panic) never leaves it in use: the
 * package swaps in a fresh instance of the same compiled module, for which it imports
 * `pixelgrad_web.js` once more (with a `?instance=N` query; keep that file next to
 * `index.js` when bundling).
 */
export declare function loadWasm(options?: { wasmUrl?: string | URL | ArrayBuffer | Uint8Array | WebAssembly.Module }): Promise<unknown>;
/**
 * Test-only, not part of the API (present in every build because the tests run the shipped
 * package): panics inside the wasm module with `message`, as a bug would. Throws (or with
 * `{ async: true }`, rejects) a PixelgradError of kind 'panic'; the next call runs on a fresh
 * instance and objects made before throw kind 'instanceLost'. `{ refuseSyncInstance: true }`:
 * the fresh instance is made asynchronously, as for a module too large to instantiate
 * synchronously.
 */
export declare function __testPanic(message?: string, options?: { async?: boolean; refuseSyncInstance?: boolean }): void | Promise<never>;
/** The current runtime, or null before init. */
export declare function runtime(): Runtime | null;

export declare const version: string;

export type TensorData = Float32Array | Int32Array | Uint8Array | Float64Array | number[];

export declare class Tensor {
  readonly shape: number[];
  readonly size: number;
  readonly rank: number;
  /** 'float16' / 'uint8' only for fromPixels results of that dtype. */
  readonly dtype: 'float32' | 'int32' | 'float16' | 'uint8';
  /** A copy of the values (device tensors are read without blocking). */
  data(): Promise<Float32Array | Int32Array>;
  array(): Promise<any>;
  /** Frees device memory now (a FinalizationRegistry also frees dropped tensors). */
  dispose(): void;
  /**
   * WebGPU: a new GPUBuffer (usage STORAGE | COPY_SRC | COPY_DST, exactly `4 * size` bytes,
   * at least 4) holding the float32 values, copied on the device (nothing is read back). The
   * caller owns it and destroys it; it outlives this tensor's `dispose()` and dies with the
   * device. An Error on other backends and for non-float32 tensors.
   */
  gpuBuffer(): GPUBuffer;
  /**
   * WebGL2: a new WebGLTexture of `rt.glContext` holding the float32 values in the backend's
   * layout (4 per texel, row-major, the first `size` values meaningful), copied by one
   * framebuffer blit (nothing is read back). The caller owns it (`gl.deleteTexture`); it
   * outlives this tensor's `dispose()` and dies with the context. An Error on other backends
   * (webgl1 included) and for non-float32 tensors.
   */
  texture(): TensorTexture;
}

/** A tensor's texture (`tensor.texture()`) or the layout `pg.fromTexture` reads (`rt.textureLayout`). */
export interface TextureLayout {
  width: number;
  height: number;
  /** The GL internal format: RGBA32F (0x8814), or RGBA16F (0x881A) in the precision-limited mode. */
  internalFormat: number;
}
export interface TensorTexture extends TextureLayout {
  texture: WebGLTexture;
}

export type PixelSource = HTMLCanvasElement | OffscreenCanvas | ImageBitmap | ImageData | HTMLImageElement | HTMLVideoElement | VideoFrame;

export interface FromPixelsOptions {
  /** Output `[height, width]` (default: the source's size). */
  size?: [number, number];
  /** 'fill' (stretch, default), 'cover' (centre crop) or 'contain' (letterbox). */
  fit?: 'fill' | 'cover' | 'contain';
  /** 1 (luma, BT.601), 3 (RGB, default) or 4 (RGBA). */
  channels?: 1 | 3 | 4;
  /** 'nchw' → [1, C, H, W] (default, ONNX/PyTorch); 'nhwc' → [1, H, W, C]. */
  layout?: 'nchw' | 'nhwc';
  /** Per channel (or one number), in [0, 1] pixel units: value = (v / 255 - mean) / std. */
  mean?: number | number[];
  std?: number | number[];
  /** Letterbox colour of 'contain' per channel, in [0, 1] (default 0). */
  pad?: number | number[];
  /** Stretch the filter when shrinking: 'auto' (default: above 2×), 'always' / true, 'never' / false. */
  antialias?: 'auto' | 'always' | 'never' | boolean;
  /**
   * 'float32' (default); 'float16': the float32 values rounded to half precision (nearest,
   * ties to even) in f16 storage, on backends that store f16 results (WebGPU, CPU, WebGL2; an
   * Error in the webgl1 mode); 'uint8': the resampled pixel values 0..255, `floor(clamp(v * 255, 0, 255) + 0.5)`
   * of the float32 value `v` in [0, 1], in 8-bit storage (WebGPU, WebGL2, CPU; an Error in the webgl1 mode), with
   * `mean` / `std` an Error. float16 / uint8 tensors go to `data()` (exact values; Uint8Array
   * for uint8) and `onnxModel.run` (an input of that element type, widened exactly on the
   * device); other ops take float32.
   */
  dtype?: 'float32' | 'float16' | 'uint8';
}

/** Where the source landed in a fromPixels tensor. Source coordinate = (output - x) * scaleX + offsetX (and y). */
export interface PixelGeometry {
  x: number;
  y: number;
  width: number;
  height: number;
  scaleX: number;
  scaleY: number;
  offsetX: number;
  offsetY: number;
  sourceWidth: number;
  sourceHeight: number;
  antialiasX: boolean;
  antialiasY: boolean;
}

/** An image as a model input on the device, resized/cropped/letterboxed and normalised in one
 *  GPU pass (WebGPU: copyExternalImageToTexture; WebGL2: texSubImage2D; CPU: getImageData).
 *  Synchronous: the GPU work is queued. Throws an Error naming the problem for a tainted
 *  source, a video with no frame, a closed VideoFrame or bad options. */
export declare function fromPixels(source: PixelSource, options?: FromPixelsOptions): Tensor & { geometry: PixelGeometry };
/** Float32 device tensors (equal shapes but on `axis`, default 0) joined on the device, e.g.
 *  recorded `[1, ...]` inputs or features into a training set for `model.fit`. */
export declare function concat(tensors: Tensor[], axis?: number): Tensor;
/** One 4:2:0 frame as raw 8-bit planes: `y, u, v` (I420) or `y, uv` (NV12, interleaved
 *  chroma) with row strides (default: packed), or one buffer `data` with the planes'
 *  `layout` as `VideoFrame.copyTo` resolves it (`[{ offset, stride }, ...]`). */
export interface YuvFrame {
  format: 'I420' | 'NV12';
  width: number;
  height: number;
  y?: Uint8Array | Uint8ClampedArray | ArrayBuffer;
  u?: Uint8Array | Uint8ClampedArray | ArrayBuffer;
  v?: Uint8Array | Uint8ClampedArray | ArrayBuffer;
  uv?: Uint8Array | Uint8ClampedArray | ArrayBuffer;
  yStride?: number;
  uStride?: number;
  vStride?: number;
  data?: Uint8Array | ArrayBuffer;
  layout?: { offset: number; stride: number }[];
  /** `VideoColorSpace.matrix`: 'bt601' (default; also 'smpte170m', 'bt470bg') or 'bt709'. */
  matrix?: 'bt601' | 'smpte170m' | 'bt470bg' | 'bt709';
  /** `VideoColorSpace.fullRange` (default false: limited range, Y in 16..235). */
  fullRange?: boolean;
}
/** A raw I420 / NV12 frame as a model input on the device: converted to 8-bit RGB and
 *  preprocessed as fromPixels would that RGB image (the same options), no canvas and no
 *  readback. WebGPU and WebGL2 upload the samples and convert on the device; the CPU runtime
 *  and the webgl1 mode convert on the host. Throws an Error naming the problem for planes too
 *  small for the frame, an unknown format or matrix, or a zero-sized frame. */
export declare function fromYUV(frame: YuvFrame, options?: FromPixelsOptions): Tensor & { geometry: PixelGeometry };
/** fromPixels, awaiting the capture: on WebGPU and WebGL2 a video or an I420 / NV12
 *  `VideoFrame` (BT.601 or BT.709) is copied out in its own format (`VideoFrame.copyTo`) and
 *  converted by fromYUV, which skips the browser's RGBA copy of the frame; anything else takes
 *  fromPixels. Same result, up to one byte step of the browser's own YUV conversion. Faster
 *  where frames sit in CPU memory (software rendering); where they live on the GPU, copyTo
 *  reads them back, so measure. */
export declare function fromPixelsAsync(source: PixelSource, options?: FromPixelsOptions): Promise<Tensor & { geometry: PixelGeometry }>;
/**
 * WebGPU: a float32 tensor of `shape` from the first `4 * size` bytes of `buffer` (f32,
 * row-major), copied on the device (one copyBufferToBuffer, no readback). The buffer must be
 * an unmapped buffer of `rt.gpuDevice` with GPUBufferUsage.COPY_SRC; it stays the caller's
 * (reuse or destroy it once this resolves). Rejects with kind 'shape' (bad shape, buffer too
 * small), 'invalid' (usage, mapped, dtype other than 'float32', not WebGPU) or
 * 'deviceMismatch' (a buffer of another device, or destroyed).
 */
/**
 * WebGL2: a float32 tensor of `shape` from a WebGLTexture of `rt.glContext` in the layout
 * `rt.textureLayout(shape)` gives (a float format such as RGBA32F, at least that many texels),
 * copied by one framebuffer blit; the texture stays the caller's. An Error on other runtimes,
 * kind 'deviceMismatch' for a texture of another context or a deleted one.
 * pixelgrad tracks the GL state it sets: the import and export calls reset that tracking, so
 * make your own calls on `rt.glContext` right before them.
 */
export declare function fromTexture(texture: WebGLTexture, shape: number[]): Tensor;
export declare function fromGPUBuffer(buffer: GPUBuffer, shape: number[], dtype?: 'float32'): Promise<Tensor>;
/** Maps `[x0, y0, x1, y1]` in model-input pixels back onto the source. */
export declare function toSourceBox(box: [number, number, number, number], geometry: PixelGeometry): [number, number, number, number];

/** The `k` largest values along the last axis and their indices (float32), on the device; ties in index order, NaN last. */
export declare function topk(x: Tensor, k: number): { values: Tensor; indices: Tensor };
/** Softmax along `axis` (default -1), on the device. */
export declare function softmax(x: Tensor, axis?: number): Tensor;
/** Greedy NMS on the device: `[maxOutputs]` selected box indices (float32), -1 after the last. */
export declare function nonMaxSuppression(boxes: Tensor, scores: Tensor, options?: { maxOutputs?: number; iouThreshold?: number; scoreThreshold?: number }): Tensor;
/** `[N, C, H, W]` → `[N, C, h, w]`, half-pixel bilinear (antialias 'never' by default: upsampling masks and heatmaps). */
export declare function resizeBilinear(x: Tensor, size: [number, number], options?: { antialias?: 'auto' | 'always' | 'never' }): Tensor;

/**
 * Draws a map [h, w] on a canvas, colour-mapped on the device ('diverging' | 'heat' | 'mask';
 * overlay stretches it over the canvas). On a 2D canvas the 8-bit image is read back; on a
 * WebGPU canvas context (`canvas.getContext('webgpu')`) or a GPUTexture of `rt.gpuDevice`
 * (2d, RENDER_ATTACHMENT, rgba8unorm / bgra8unorm (-srgb), rgba16float or rgba32float) on the
 * webgpu runtime, one render pass draws it on the device and nothing is read back (a canvas
 * context is configured with `rt.gpuDevice` unless it already is, and takes the map's size
 * without overlay; a texture keeps its size; texels are sampled nearest; overlay alpha-blends
 * over what the target holds). A WebGPU canvas on a software adapter is an error (it destroys
 * the WebGPU instance on SwiftShader); a target of another device is kind 'deviceMismatch'.
 * `report.overlay` says which path the last call took.
 */
export declare function drawHeatmap(x: Tensor, canvas: HTMLCanvasElement | OffscreenCanvas | GPUCanvasContext | GPUTexture, options?: { colormap?: 'diverging' | 'heat' | 'mask'; range?: [number, number]; overlay?: boolean }): Promise<void>;
/** Draws boxes [N, 4] (model-input corners) on a canvas, mapped back through `geometry`; resolves to the number drawn. */
export declare function drawBoxes(canvas: HTMLCanvasElement | OffscreenCanvas, boxes: Tensor | number[] | number[][], options?: { geometry?: PixelGeometry; keep?: Tensor | number[]; labels?: string[]; color?: string; lineWidth?: number }): Promise<number>;

/** Options of `tensor`: `check: true` rejects NaN and infinities. */
export interface TensorOptions {
  check?: boolean;
}
/**
 * A tensor as TF.js makes them: a number, a typed array, an array of numbers or nested arrays
 * (`[[1, 2], [3, 4]]` is `[2, 2]`). Throws for ragged arrays, non-numbers, sizes that are not
 * positive integers, and `data` that does not fill `shape`.
 */
export declare function tensor(data: TensorData | NestedArray, shape?: number[], options?: TensorOptions): Tensor;
export declare function tensor(data: TensorData | NestedArray, options: TensorOptions): Tensor;
export type NestedArray = number | ArrayLike<number> | NestedArray[];
/** `a @ b` on the device (`[m, k] x [k, n]`, or batched); host tensors are uploaded once and
 *  stay resident; the result lives on the device. */
export declare function matmul(a: Tensor, b: Tensor): Tensor;

export type Activation = 'linear' | 'relu' | 'leakyRelu' | 'sigmoid' | 'tanh' | 'gelu' | 'softmax';

export interface LayerConfig {
  readonly type: string;
  readonly [key: string]: unknown;
}

export declare const layers: {
  dense(c: { units: number; activation?: Activation; inputShape?: number[]; trainable?: boolean }): LayerConfig;
  /** NHWC: inputShape [h, w, c]. padding 'same' needs an odd kernel and strides 1. */
  conv2d(c: {
    filters: number;
    kernelSize: number | [number, number];
    strides?: number | [number, number];
    padding?: 'valid' | 'same';
    activation?: Activation;
    inputShape?: number[];
    trainable?: boolean;
  }): LayerConfig;
  maxPooling2d(c?: { poolSize?: number | [number, number]; strides?: number | [number, number] }): LayerConfig;
  flatten(c?: { inputShape?: number[] }): LayerConfig;
  dropout(c: { rate: number }): LayerConfig;
  batchNormalization(c?: { inputShape?: number[]; trainable?: boolean }): LayerConfig;
  activation(c: { activation: Activation; inputShape?: number[] }): LayerConfig;
  /** Token ids `[seq]` (float32 whole numbers below `inputDim`) -> `[seq, outputDim]`. */
  embedding(c: { inputDim: number; outputDim: number; inputShape?: number[]; trainable?: boolean }): LayerConfig;
  /** Learned positions added to `[seq, width]`; `sequenceLength` >= seq. */
  positionEmbedding(c: { sequenceLength: number; inputShape?: number[]; trainable?: boolean }): LayerConfig;
  /** Over the last axis; epsilon defaults to 1e-3. */
  layerNormalization(c?: { epsilon?: number; inputShape?: number[]; trainable?: boolean }): LayerConfig;
  /** Over the last axis; epsilon defaults to 1e-6. */
  rmsNormalization(c?: { epsilon?: number; inputShape?: number[]; trainable?: boolean }): LayerConfig;
  /** Self-attention over `[seq, width]`; `numHeads` a multiple of `numKeyValueHeads`. */
  multiHeadAttention(c: {
    numHeads: number;
    numKeyValueHeads?: number;
    keyDim?: number;
    useBias?: boolean;
    useCausalMask?: boolean;
    rotaryMaxWavelength?: number;
    dropout?: number;
    inputShape?: number[];
    trainable?: boolean;
  }): LayerConfig;
  /** A pre-norm transformer block over `[seq, width]` (causal by default). */
  transformerBlock(c: {
    numHeads: number;
    intermediateDim: number;
    numKeyValueHeads?: number;
    activation?: 'gelu' | 'swiglu';
    normalization?: 'layerNormalization' | 'rmsNormalization';
    epsilon?: number;
    dropout?: number;
    useCausalMask?: boolean;
    rotaryMaxWavelength?: number;
    inputShape?: number[];
    trainable?: boolean;
  }): LayerConfig;
  /** An imported ONNX model (or its part up to `output`) as a layer; `trainable: false` freezes it. */
  onnx(config: { model: OnnxModel; output?: string; input?: string; inputShape?: number[]; trainable?: boolean; activation?: Activation }): LayerConfig;
};

export interface OptimizerConfig {
  readonly name: OptimizerName;
  readonly learningRate: number;
  readonly momentum?: number;
}

/** The engine's optimizer names (the CLI's `--optimizer`). */
export type OptimizerName = 'adam' | 'adamw' | 'sgd' | 'momentum' | 'nesterov' | 'rmsprop';

export declare const optimizers: {
  adam(learningRate?: number): OptimizerConfig;
  /** Adam with decoupled weight decay 0.01. */
  adamw(learningRate?: number): OptimizerConfig;
  sgd(learningRate?: number, momentum?: number): OptimizerConfig;
  /** SGD with momentum 0.9. */
  momentum(learningRate?: number): OptimizerConfig;
  /** SGD with Nesterov momentum 0.9. */
  nesterov(learningRate?: number): OptimizerConfig;
  rmsprop(learningRate?: number): OptimizerConfig;
};

export type LossName = 'softmaxCrossEntropy' | 'meanSquaredError' | 'sigmoidCrossEntropy';

export interface CompileOptions {
  optimizer?: OptimizerConfig | OptimizerName;
  loss?: LossName;
  metrics?: string[];
  /**
   * 'f32' (default) or 'mixed': f16 activations and gradients, f32 master weights, a dynamic
   * loss scale decided on the device. Where the backend cannot (webgl1, or webgl with
   * precision 'low'), training stays f32 and `model.precision.fallback` says why.
   */
  precision?: 'f32' | 'mixed';
}

export interface PrecisionInfo {
  requested: 'f32' | 'mixed';
  precision: 'f32' | 'mixed';
  /** Why `precision` differs from `requested`; null when it does not. */
  fallback: string | null;
}

export interface Logs {
  loss: number;
  /** Absent where accuracy means nothing (MSE on float targets). */
  accuracy?: number;
  valLoss?: number;
  valAccuracy?: number;
}

export interface FitOptions {
  epochs?: number;
  batchSize?: number;
  shuffle?: boolean;
  seed?: number;
  /** Read loss/accuracy back every this many steps (default 10). */
  readEvery?: number;
  validationData?: [Tensor, Tensor];
  /**
   * Pacing for watching: at most this many steps per second (results are bit-identical to an
   * unpaced run; n steps take at least (n - 1) / rate seconds). A function is read before
   * every step (a live speed slider); undefined or Infinity from it means full speed.
   */
  maxStepsPerSecond?: number | (() => number | undefined);
  /**
   * After each read: step is the 1-based global step, logs are means since the last read.
   * Return (or resolve to) `'step'` to run one more step and read right after it (step-through
   * mode: resolve when the user clicks "step"); anything else goes back to `readEvery`.
   */
  onBatchEnd?(step: number, logs: Logs): void | 'step' | Promise<void | 'step'>;
  onEpochEnd?(epoch: number, logs: Logs): void | Promise<void>;
  callbacks?: { onBatchEnd?: FitOptions['onBatchEnd']; onEpochEnd?: FitOptions['onEpochEnd']; onDeviceLost?: FitOptions['onDeviceLost'] };
  /**
   * Host checkpoint (parameters, buffers, optimizer state) every this many steps; the most
   * steps a device loss redoes. Default: measured (checkpoints take at most 2 % of training
   * time, 20..2000 steps); 0: none (a loss then rejects fit).
   */
  checkpointEvery?: number;
  /** Stop at the first non-finite loss read back, with the last good checkpoint restored (default true). */
  stopOnNaN?: boolean;
  /** Fired once per context/device loss, after the backend was restarted and the checkpoint restored. */
  onDeviceLost?(info: DeviceLostInfo): void | Promise<void>;
  /** Recoveries allowed in one fit (default 5). */
  maxRecoveries?: number;
  /** 'indexeddb://name': write the last checkpoint and the loop state there every autosaveEvery steps and at the end. */
  autosave?: string;
  /**
   * Steps between autosaves (default 500). Turning autosave on asks the browser once per page
   * for persistent storage (`navigator.storage.persist()`); `History.storagePersisted` has
   * its answer. A save refused for lack of space rejects fit with kind 'quota'.
   */
  autosaveEvery?: number;
  /**
   * 'indexeddb://name': continue from that autosave (after a page reload) when there is one;
   * the model and schedule (samples, batchSize, epochs, seed, shuffle, readEvery) must match.
   */
  resume?: string;
  /**
   * Stops training: checked before every step (each step is one synchronous call, so an abort
   * takes effect at the next step); fit then rejects with kind 'cancelled' (`cause`: the
   * signal's reason) and the model keeps the weights of the last step done, usable as before.
   * Already aborted: rejects before the first step.
   */
  signal?: AbortSignal;
}

export interface DeviceLostInfo {
  /** Steps done when the loss was noticed. */
  step: number;
  /** The checkpoint training went back to; `redo` = step - checkpointStep steps are redone. */
  checkpointStep: number;
  redo: number;
  lostBackend: BackendName;
  reason: string;
  /** The backend training goes on with. */
  backend: BackendName;
  tried: BackendTry[];
  recoveryMs: number;
}

export interface History {
  /** No `accuracy` where it means nothing (MSE on float targets). */
  history: { loss: number[]; accuracy?: number[]; valLoss?: number[]; valAccuracy?: number[] };
  epoch: number[];
  /** The checkpoint interval used, checkpoints taken, their total time and size. */
  checkpoints: { every: number | null; taken: number; ms: number; bytes: number };
  /** One entry per recovered loss. */
  deviceLosses: DeviceLostInfo[];
  /** Present when stopOnNaN stopped training: the step of the read, and the checkpoint restored. */
  stopped?: { step: number; reason: string; restoredStep: number | null };
  /** With `resume`: the step training continued from, or null when there was no save. */
  resumedFrom?: number | null;
  /**
   * With `autosave`: the browser's answer to `navigator.storage.persist()` (asked once per
   * page); null where the API is missing or had not answered when fit ended.
   */
  storagePersisted?: boolean | null;
}

export interface Checkpoint {
  step: number;
  bytes: number;
  isFinite: boolean;
  /** Every parameter and buffer by name (copies). */
  weights(): Record<string, Float32Array>;
}

export declare class Sequential {
  /** Set true to stop fit after the current batch. */
  stopTraining: boolean;
  readonly backend: BackendName | null;
  readonly inputShape: number[];
  compile(options?: CompileOptions): void;
  /** The training precision asked for in `compile`, the one that runs, and why they differ. */
  readonly precision: PrecisionInfo;
  /** Mixed precision: the current loss scale and the steps skipped for f16 overflow (one readback); null in f32. */
  lossScale(): Promise<{ scale: number; skippedSteps: number } | null>;
  /** Every weight's name and shape, in layer order (nothing is read from the device). */
  weightInfo(): { name: string; shape: number[] }[];
  /**
   * x: [n, ...inputShape] (images NHWC); y, used as given: class indices [n], one-hot or
   * probability rows [n, classes], or float targets [n, outputs] (MSE, BCE regression). A
   * mismatch with the model's output or loss throws, naming both shapes. `x` may be a float32
   * device tensor of this runtime (fromPixels results, features, `pg.concat` of them): batches
   * are gathered on the device and x is never read back.
   */
  fit(x: Tensor, y: Tensor, options?: FitOptions): Promise<History>;
  /** Mean loss and accuracy; no `accuracy` where it means nothing (MSE on float targets). */
  evaluate(x: Tensor, y: Tensor, options?: { batchSize?: number }): Promise<{ loss: number; accuracy?: number }>;
  /** Outputs [n, classes] on the device; read with `await t.data()`. `x`: a host tensor or a device tensor (pg.fromPixels). */
  predict(x: Tensor): Tensor;
  summary(): string;
  /** Throws at once for a bad layer index; resolves when drawn. */
  drawWeights(layerIndex: number, canvas: HTMLCanvasElement | OffscreenCanvas): Promise<void>;
  /** Layer `layerIndex`'s output for `x`, on the device (user layout: [n, h, w, c] for image layers). */
  activations(x: Tensor, layerIndex: number): Tensor;
  /** Draws sample 0 of layer `layerIndex`'s output for `x` on `canvas` (colour-mapped on the device). */
  drawActivations(x: Tensor, layerIndex: number, canvas: HTMLCanvasElement | OffscreenCanvas): Promise<void>;
  /** 'indexeddb://name', 'downloads://name' (safetensors) or 'downloads://name.onnx'. */
  save(url: string): Promise<{ url: string; bytes: number }>;
  /** Copies parameters and optimizer state to host memory now; kept as `lastCheckpoint`. */
  checkpoint(): Promise<Checkpoint>;
  /** The last checkpoint (fit takes them every checkpointEvery steps and at its end), or null. */
  readonly lastCheckpoint: Checkpoint | null;
  /** Puts the last checkpoint back; after a device loss, restarts the backend and rebuilds the model first. */
  restore(checkpoint?: Checkpoint): Promise<{ step: number; backend: BackendName }>;
  dispose(): void;
  /** Every weight by name (`0.weight`, `1.running_mean`, ...) as host tensors. */
  getWeights(): Promise<Record<string, Tensor>>;
  /** Replaces weights by name (same shapes). */
  setWeights(weights: Record<string, Tensor | Float32Array>): Promise<void>;
  /** The model as ONNX bytes (input `input` `[N, ...inputShape]`, output `output`). */
  toOnnx(): Promise<Uint8Array>;
  /**
   * The layout table of the model's live tensors (parameters, buffers, optimizer state) on
   * its backend: texture or buffer size, texels used, layout, bytes.
   */
  layouts(): LayoutRow[];
}

export declare function sequential(layers: LayerConfig[] | { layers: LayerConfig[]; seed?: number }, options?: { seed?: number }): Sequential;
export declare function loadModel(url: string): Promise<Sequential>;
export declare function listModels(): Promise<{ name: string; url: string; savedAt: string; bytes: number; backend: BackendName }[]>;
export declare function removeModel(url: string): Promise<void>;

/** An input or output of an ONNX model; dynamic sizes are their names (or null when unnamed). */
export interface OnnxValueInfo {
  name: string;
  shape: (number | string | null)[] | null;
  dtype: string;
}

/** An ONNX model imported into pixelgrad, running on the runtime's device. */
export declare class OnnxModel {
  readonly inputs: OnnxValueInfo[];
  readonly outputs: OnnxValueInfo[];
  readonly backend: BackendName;
  /** What computes in which precision and how the weights are held (device bytes: after a run). */
  readonly info: {
    precision: 'f32' | 'int8' | 'mixed';
    precisionGroups: { int8: Record<string, number>; f32: Record<string, number> };
    path: string;
    weightStorage: 'f32' | 'f16' | 'f16+f32';
    weightBytes: number;
    deviceWeightBytes: number;
    /** Device bytes of the QLinearAdd / QLinearMul lookup tables (64 KiB each in 8-bit storage), apart from the weights. */
    deviceTableBytes: number;
    /**
     * How quantised (uint8 / int8) activations that outlive the next node are kept: '8-bit'
     * tensors (a quarter of f32's memory), or 'f32' in the WebGL1 mode, which has no 8-bit
     * storage. The outputs are the same either way.
     */
    activationStorage: '8-bit' | 'f32';
    /** The most bytes the values passed between nodes held at once during the last run that walked the graph. */
    activationBytes: number;
    /**
     * How the matrix products (convolutions, Gemm, MatMul) compute on the float weights: 'f32'
     * with f32 weights; with f16 weights 'f32 (f16 weights read directly)' on WebGPU GPUs (no
     * widen pass), 'f32 (widened)' on WebGL, the CPU and CPU adapters (SwiftShader).
     */
    arithmetic: 'f32' | 'f32 (f16 weights read directly)' | 'f32 (widened)' | 'f16 products (shader-f16)';
    /** Whether the WebGPU adapter offers f16 arithmetic (`shader-f16`); null on the other backends. */
    shaderF16: boolean | null;
  } & Omit<OnnxInspection, 'inputs' | 'outputs'>;
  /**
   * Feeds inputs by name (float32 tensors; int32 tensors for integer inputs); outputs by name.
   * `signal`: an abort stops the run before its next primitive (it takes effect between awaits:
   * at the start, or where the run waits for a read-back) and rejects with kind 'cancelled';
   * already aborted, it rejects at once. `maxWork`: the most estimated steps of work (elements
   * written, multiply-adds, window taps) the run's primitives may add up to; beyond it the run
   * rejects with kind 'budget' before launching the primitive that would pass it. Other work
   * on the runtime while the run waits is not counted against it.
   */
  run(feeds: Record<string, Tensor>, options?: { signal?: AbortSignal; maxWork?: number }): Promise<Record<string, Tensor>>;
  /**
   * Generates token ids after `promptIds` (batch 1) with a decoder in Hugging Face's ONNX layout
   * (`input_ids`, optional `attention_mask` / `position_ids`, `past_key_values.N.key/value`,
   * `use_cache_branch` for a merged decoder; `logits`, `present.N.key/value`). The key/value
   * cache stays on the device (each run's presents are fed back as the next run's past, never
   * read); one row of logits (the last position's) is read back per token. A decoder without
   * past inputs recomputes the whole sequence every step. A model that is not such a decoder
   * rejects naming what is missing; a `maxTokens` whose cache would pass the device's element
   * cap rejects with kind 'budget' before anything runs.
   */
  generate(promptIds: ArrayLike<number>, options?: OnnxGenerateOptions): Promise<OnnxGeneration>;
  /** `indexeddb://name` (for `loadOnnx`) or `downloads://name.onnx`. */
  save(url: string): Promise<{ url: string; bytes: number }>;
  dispose(): void;
}

/** Options of `OnnxModel.generate`. */
export interface OnnxGenerateOptions {
  /** The most tokens to generate (default 16). */
  maxTokens?: number;
  /** 0 (default): greedy. Above 0: sample from softmax(logits / temperature). */
  temperature?: number;
  /** Sample among the `topK` most likely tokens (0, default: all; 1: greedy). */
  topK?: number;
  /** Sample among the smallest set of most likely tokens whose probabilities add up to `topP` (default 1). */
  topP?: number;
  /** Token ids that end the generation (the stop token is not in `tokens`). */
  stop?: number[];
  /** The sampler's seed (a whole number ≥ 0; default 0): the same seed gives the same tokens. */
  seed?: number;
  /** Keep the key/value cache on the device (default true); false recomputes the whole sequence every step. */
  useCache?: boolean;
  /** Called with each token as it comes (the page can draw it: generation yields to the event loop after each); returning `false` stops. */
  onToken?: (token: number) => boolean | void;
  /** Stops the generation at its next step; rejects with kind 'cancelled'. */
  signal?: AbortSignal;
}

/** What `OnnxModel.generate` resolves to. */
export interface OnnxGeneration {
  /** The generated token ids (not the prompt). */
  tokens: number[];
  /** Why it ended: `maxTokens`, a `stop` token (`stopToken`), or `onToken` returned false. */
  stopped: 'maxTokens' | 'stop' | 'onToken';
  stopToken: number | null;
  /** Whether the key/value cache was used. */
  cached: boolean;
  /** Runs of the model. */
  steps: number;
  /** Milliseconds of the first run (the prompt). */
  prefillMs: number;
  /** Milliseconds of the runs after the first. */
  decodeMs: number;
  /** Generated tokens per second, prefill included. */
  tokensPerSecond: number;
  /** Tokens per second of the runs after the first. */
  decodeTokensPerSecond: number;
}

/**
 * The files of a model's external data by the `location` the model names (e.g.
 * `{ 'model.onnx_data': 'https://.../model.onnx_data' }`): a URL to fetch or the bytes. A
 * location must be a relative path inside the model's folder; each tensor's offset and length
 * must lie inside its file. Everything lives in the wasm instance's memory (at most 4 GiB for
 * the model, its external data and the run together).
 */
export type OnnxExternalData = Record<string, ArrayBuffer | Uint8Array | string | URL>;

/** What `inspectOnnx` (and `OnnxModel.info`) tell of a model file, before anything runs. */
export interface OnnxInspection {
  irVersion: number;
  producer: string;
  /** Imported operator sets; domain '' is the default (ai.onnx). */
  opsets: { domain: string; version: number }[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  /** Nodes, subgraphs (If, Loop, Scan bodies) included. */
  nodes: number;
  /**
   * Every operator type used, with its count and the backends that run it (all or none);
   * `note`: how every backend runs it where that differs from what the file suggests (null
   * otherwise), e.g. MatMulNBits' packed weights: kept packed on cpu, webgpu and webgl2, f32
   * on webgl1.
   */
  operators: {
    domain: string;
    op: string;
    opset: number;
    count: number;
    supported: boolean;
    backends: Record<'cpu' | 'webgpu' | 'webgl', boolean>;
    note: string | null;
  }[];
  /** Initializer bytes by the element type the file stores them in ('float', 'float16', 'int8'...). */
  weightBytesByType: Record<string, { tensors: number; bytes: number }>;
  /**
   * The weights of com.microsoft `MatMulNBits` nodes: device bytes kept packed (the stored
   * blocks plus an f32 scale and zero point per block: cpu, webgpu, webgl2) and as f32
   * (webgl1).
   */
  packedWeights: { nodes: number; packedBytes: number; f32Bytes: number };
  /** External data files by location, with the bytes the model reads from each. */
  externalData: Record<string, number>;
  /** Whether the model loads; if not, `refused` says why (every unsupported operator, then the first other error). */
  loads: boolean;
  refused: string[];
}

/**
 * Loads an ONNX model: the file's bytes, a URL to fetch, or `indexeddb://name`. `externalData`:
 * the files holding its weights when it keeps them outside the .onnx file (such a model cannot
 * be `save`d).
 */
export declare function loadOnnx(
  source: ArrayBuffer | Uint8Array | string | URL,
  options?: { precision?: 'auto' | 'f32' | 'f16'; int8Activations?: '8bit' | 'f32'; externalData?: OnnxExternalData },
): Promise<OnnxModel>;

/** Describes an ONNX model without uploading or running it (what `pixelgrad inspect` prints). */
export declare function inspectOnnx(source: ArrayBuffer | Uint8Array | string | URL, options?: { externalData?: OnnxExternalData }): Promise<OnnxInspection>;

/** What `Tokenizer.encode` returns. */
export interface TokenizerEncoding {
  /** The token ids (special tokens included when asked for). */
  ids: number[];
  /** The tokens as the vocabulary spells them (`'##ing'`, `'Ġthe'`, `'▁the'`). */
  tokens: string[];
  /** Each token's `[start, end)` in UTF-16 code units of the text (`text.slice(start, end)`); `[0, 0]` for special tokens. */
  offsets: [number, number][];
}

/**
 * A Hugging Face tokenizer.json (WordPiece, BPE, Unigram or WordLevel model with its
 * normalizer, pre-tokenizer, post-processor and decoder), loaded by `pg.tokenizer`. Encodes and
 * decodes as the Python `tokenizers` package does on the same file. Errors: PixelgradErrors of
 * kind 'invalid' (op 'tokenizer.encode', 'tokenizer.decode', ...).
 */
export declare class Tokenizer {
  /** Tokens in the vocabulary, added tokens included (ids run from 0 to vocabSize - 1). */
  readonly vocabSize: number;
  /** `addSpecialTokens` (default true): the post-processor's tokens, e.g. `[CLS]` and `[SEP]`. */
  encode(text: string, options?: { addSpecialTokens?: boolean }): TokenizerEncoding;
  /**
   * The text of `ids`; `skipSpecialTokens` (default true) leaves special tokens out. An id that
   * names no token, a negative or fractional number throws (nothing is dropped silently).
   */
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
  /** The id of `token`, or undefined. */
  tokenToId(token: string): number | undefined;
  /** The token of `id`, or undefined. */
  idToToken(id: number): string | undefined;
  /** Frees its wasm memory; later calls throw. */
  dispose(): void;
}

/** Options of `pg.tokenizer`. */
export interface TokenizerOptions {
  /**
   * Where the tokenizer's wasm module is (a URL), or its bytes or the compiled module; by
   * default `pixelgrad_text_bg.wasm` next to `index.js` (`pixelgrad/pixelgrad_text_bg.wasm` is
   * exported for bundlers and Node). Used by the call that loads the module, the first one.
   */
  wasmUrl?: string | URL | ArrayBuffer | Uint8Array | WebAssembly.Module;
}

/**
 * Loads a tokenizer.json: its text, its UTF-8 bytes or the parsed object. The first call
 * fetches and instantiates the tokenizer's own wasm module (a separate, small module: the main
 * one is not needed, no `pg.init()`); later calls reuse it. Malformed JSON, an unknown model
 * type or a file the library cannot build rejects with a PixelgradError of kind 'invalid'
 * (op 'tokenizer'); a module that cannot be loaded with kind 'unavailable'.
 */
export declare function tokenizer(json: string | Uint8Array | ArrayBuffer | object, options?: TokenizerOptions): Promise<Tokenizer>;

export interface DataSplit {
  x: Float32Array;
  y: Int32Array;
  n: number;
}

export declare const data: {
  digits(): { train: DataSplit; test: DataSplit; inputShape: [64]; imageShape: [8, 8, 1]; classes: 10 };
  parseMnist(imagesBytes: Uint8Array | ArrayBuffer, labelsBytes: Uint8Array | ArrayBuffer): DataSplit & { imageShape: number[] };
};

/** Flower's LocalDpMod settings (sensitivity defaults to the clipping norm). */
export interface LocalDpOptions {
  epsilon: number;
  delta: number;
  clippingNorm: number;
  sensitivity?: number;
}

export type FlowerEvent =
  | { type: 'connected'; nodeId: string }
  | { type: 'received'; round: number; kind: string; bytes: number; stage: string | null }
  | { type: 'trained'; round: number; examples: number; loss: number; accuracy: number; updateNorm: number; clippedTo: number | null; noiseStd: number | null; seconds: number; secagg: boolean; epsilon: number | null; epsilonOwnNoise: number | null; delta: number | null }
  | { type: 'secaggStage'; round: number; stage: string; seconds: number }
  | { type: 'evaluated'; round: number; examples: number; loss: number; accuracy: number; weights: Uint8Array | null; shared: boolean }
  | { type: 'replied'; round: number; kind: string; bytes: number; stage: string | null }
  | { type: 'failed'; round: number; reason: string }
  | { type: 'finished'; rounds: number };

export interface FlowerJoinOptions {
  /** Origin of a page server that forwards /v1/fleet/* to a Flower SuperLink (e.g. location.origin). */
  server: string;
  model: Sequential;
  data: { train: DataSplit; test: DataSplit };
  onRound?: (r: { round: number; accuracy: number; loss: number; examples: number; train: FlowerEvent | null }) => void;
  onEvent?: (e: FlowerEvent) => void;
  signal?: AbortSignal;
  epochs?: number;
  batchSize?: number;
  lr?: number;
  seed?: number;
  localDp?: LocalDpOptions;
  /** Default true: the model takes each round's global parameters. */
  syncWeights?: boolean;
  /** The page's persistent key (pg.flower.nodeKey()); default a fresh key per join. */
  nodeKey?: FlowerNodeKey;
  /** Seconds one request may take, answer included (default 120). */
  timeout?: number;
  /** Most local epochs per round the server may ask for (default 100). */
  maxEpochs?: number;
  /** Most rounds the node trains (default 10000). */
  maxRounds?: number;
  /** Send updates only through Flower's SecAgg+ (the server's SecAggPlusWorkflow). */
  secagg?: boolean;
  /** With secagg: this node clips to clippingNorm and adds its share of the noise. */
  distributedDp?: { noiseMultiplier: number; clippingNorm: number; delta: number };
  /** The node's own privacy budget (epsilon at its DP mode's delta); rounds past it are refused. */
  maxEpsilon?: number;
  /** 'minimal' (default) or 'all': what replies carry besides the parameters. */
  shareMetrics?: 'minimal' | 'all';
}

/** A non-extractable P-256 node key kept in IndexedDB. */
export interface FlowerNodeKey {
  readonly name: string;
  /** SubjectPublicKeyInfo DER bytes of the public key. */
  readonly publicKey: Uint8Array;
  /** The public key as the OpenSSH line `flwr supernode register KEY.pub` takes. */
  readonly openssh: string;
  /** `SHA256:...`, as `ssh-keygen -lf` prints it. */
  readonly fingerprint: string;
  sign(bytes: Uint8Array): Promise<ArrayBuffer>;
}

export declare const flower: {
  /** This node's shards: Dirichlet(alpha) label shards of the training set (IID without alpha), IID parts of the test set. */
  partition<D extends { train: DataSplit; test: DataSplit }>(data: D, options: { index: number; count: number; alpha?: number; seed?: number }): D;
  join(options: FlowerJoinOptions): Promise<{ nodeId: string; runId: string; rounds: number; evaluations: number; bytesUp: number; bytesDown: number }>;
  /** The page's node key `name` (made on first use unless `create: false`, then null). */
  nodeKey(options?: { name?: string; create?: boolean }): Promise<FlowerNodeKey | null>;
  /** Deletes the stored node key; resolves to whether there was one. */
  forgetNodeKey(options?: { name?: string }): Promise<boolean>;
};
