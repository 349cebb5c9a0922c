// Threads for the CPU backend: which build to load, and its Web Workers.
//
// The package ships two builds of the module: `pixelgrad_web_bg.wasm` (one thread, runs
// everywhere) and, when built with `cargo xtask build-wasm --threads`,
// `pixelgrad_web_threads_bg.wasm` (wasm threads: shared memory and atomics). The threaded one
// needs SharedArrayBuffer, which browsers only give a cross-origin isolated page (served with
// `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`).
// `init({ threads })` chooses: a count, or 'all' (the default: navigator.hardwareConcurrency,
// except for a GPU backend asked for by name, which gets one thread); 1 loads the
// single-threaded build. Whatever was decided, and why, is `rt.report.threads`.
//
// In the threaded build the page's own thread is one of the CPU kernels' threads: it never
// blocks (browsers forbid that on the main thread) but takes chunks of each kernel's work
// itself while `count - 1` workers take the rest (crates/pixelgrad-cpu/src/threads.rs). Each
// worker (threads-worker.js) instantiates the same compiled module on the same memory.

let decision = null; // { build: 'threaded' | 'single', requested, reason }
let workers = [];

function hardwareThreads() {
  const n = typeof navigator !== 'undefined' ? Number(navigator.hardwareConcurrency) : NaN;
  return Number.isInteger(n) && n > 0 ? n : 1;
}

/** True when this page may share memory with workers (cross-origin isolated, SharedArrayBuffer). */
export function isolated() {
  return typeof SharedArrayBuffer !== 'undefined' && typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated === true;
}

/**
 * Which build to load for `opts.threads` (validated: a positive integer or 'all'):
 * `{ build, requested, reason }`.
 */
export function plan(opts = {}) {
  // A GPU backend asked for by name runs its kernels on the GPU: the single-threaded build
  // then, unless threads are asked for. The threaded build's asynchronous calls (every
  // readback) go through wasm-bindgen's multi-threaded executor, which made small WebGL
  // training steps 2-4x slower in the browser bench (bench/notes/2026-12-07-threaded-build-on-gpu.md).
  const gpu = opts.backend === 'webgpu' || opts.backend === 'webgl' || opts.backend === 'webgl1';
  if (opts.threads === undefined && gpu) {
    return { build: 'single', requested: 1, reason: `the ${opts.backend} backend runs its kernels on the GPU (threads apply to the cpu backend; pass threads to load the threaded build anyway)` };
  }
  const t = opts.threads === undefined ? 'all' : opts.threads;
  if (t !== 'all' && !(Number.isInteger(t) && t >= 1 && t <= 64)) {
    throw new Error(`pg.init: threads must be 'all' or an integer from 1 to 64 (got ${String(t)})`);
  }
  const requested = t === 'all' ? hardwareThreads() : t;
  if (t === 1) return { build: 'single', requested, reason: 'threads: 1 was asked for' };
  if (!isolated()) {
    return {
      build: 'single',
      requested,
      reason: 'the page is not cross-origin isolated (no SharedArrayBuffer): serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp for threads',
    };
  }
  if (requested === 1) return { build: 'single', requested, reason: 'navigator.hardwareConcurrency is 1' };
  if (opts.wasmUrl !== undefined) return { build: 'single', requested, reason: 'wasmUrl names a single-threaded module' };
  return { build: 'threaded', requested, reason: t === 'all' ? `all ${requested} hardware threads (navigator.hardwareConcurrency)` : `threads: ${requested} was asked for` };
}

/** Records what the loader did (`plan`'s answer, or a fallback with its reason). */
export function decided(d) {
  decision = d;
}

/**
 * Starts `count - 1` workers on glue `ns` (threaded build, already instantiated) sharing its
 * memory; resolves when they serve the CPU pool. Workers of an earlier instance are ended.
 */
export async function startWorkers(ns, module, glueUrl, count) {
  stopWorkers();
  if (!ns.threadedBuild || !ns.threadedBuild()) return;
  const memory = ns.wasmMemory();
  const url = new URL('./threads-worker.js', import.meta.url);
  const started = [];
  for (let i = 1; i < count; i++) {
    const w = new Worker(url, { type: 'module', name: `pixelgrad-cpu-${i}` });
    workers.push(w);
    started.push(
      new Promise((resolve, reject) => {
        w.onmessage = ({ data }) => (data && data.ok ? resolve(undefined) : reject(new Error(`a CPU worker could not start: ${data && data.error}`)));
        w.onerror = (e) => reject(new Error(`a CPU worker could not start: ${e.message || 'error'}`));
      }),
    );
    w.postMessage({ module, memory, glue: glueUrl });
  }
  await Promise.all(started);
  // Each worker posts before it enters the pool: wait (briefly) until all have registered.
  for (let i = 0; i < 200 && ns.cpuThreads() < count; i++) await new Promise((r) => setTimeout(r, 5));
}

/** Ends the workers (a discarded instance's, or before new ones start). */
export function stopWorkers() {
  for (const w of workers) w.terminate();
  workers = [];
}

/**
 * `rt.report.threads`: `{ count, build, requested, isolated, reason }` (`opts`: this init's
 * options; threads are chosen once, when the module loads, so a later different request is
 * noted in `reason`).
 */
export function threadsReport(ns, opts = {}) {
  const d = decision || { build: 'single', requested: 1, reason: 'not loaded' };
  const count = ns && ns.cpuThreads ? ns.cpuThreads() : 1;
  let reason = d.reason;
  if (opts.threads !== undefined && plan(opts).requested !== d.requested) {
    reason += `; threads: ${String(opts.threads)} was asked for after the module had loaded (threads are chosen by the first init or loadWasm)`;
  }
  return { count, build: d.build, requested: d.requested, isolated: isolated(), reason };
}
