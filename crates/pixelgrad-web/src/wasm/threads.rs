//! The CPU backend's threads as JavaScript sees them (`web/js/threads.js`). In the threaded
//! build (wasm atomics, shared memory) the loader starts Web Workers that instantiate this
//! module on the same memory and call [`cpu_worker_loop`]; in the single-threaded build the
//! CPU kernels run on the caller's thread and [`cpu_threads`] is 1.

use wasm_bindgen::prelude::*;

/// How many threads the CPU kernels split work over now: the caller plus the registered
/// workers (1 in the single-threaded build, or before the workers started).
#[wasm_bindgen(js_name = cpuThreads)]
pub fn cpu_threads() -> usize {
    pixelgrad::cpu::threads::threads()
}

/// True in the threaded build (one that can run workers on its shared memory).
#[wasm_bindgen(js_name = threadedBuild)]
pub fn threaded_build() -> bool {
    cfg!(target_feature = "atomics")
}

/// This instance's memory (shared in the threaded build), handed to the workers.
#[wasm_bindgen(js_name = wasmMemory)]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// A worker's whole life (threaded build): registers with the CPU pool and serves its jobs;
/// never returns (returns at once past the pool's size limit, `pixelgrad_cpu::threads::MAX_WORKERS`).
#[cfg(target_feature = "atomics")]
#[wasm_bindgen(js_name = cpuWorkerLoop)]
pub fn cpu_worker_loop() {
    pixelgrad::cpu::threads::worker_loop()
}

/// A worker's [`cpu_worker_loop`] trapped (threaded build): the page's thread, waiting for the
/// chunk that worker held, panics, and the runtime replaces the instance.
#[cfg(target_feature = "atomics")]
#[wasm_bindgen(js_name = cpuWorkerFailed)]
pub fn cpu_worker_failed() {
    pixelgrad::cpu::threads::worker_failed()
}

/// Chunks of kernel work the workers ran (threaded build; 0 in the other): a test hook that
/// shows the work was shared, reached through the glue (not part of the package's API).
#[wasm_bindgen(js_name = cpuWorkerChunks)]
pub fn cpu_worker_chunks() -> usize {
    #[cfg(target_feature = "atomics")]
    return pixelgrad::cpu::threads::worker_chunks();
    #[cfg(not(target_feature = "atomics"))]
    0
}
