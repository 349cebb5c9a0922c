//! Browser smoke tests for pixelgrad's GPU backends.
//!
//! The tests in `tests/web/` run in headless Chromium through `wasm-bindgen-test`: the whole
//! conformance suite (`pixelgrad-conformance`, async reads) on WebGPU, WebGL2 and the CPU backend
//! compiled to wasm, each against the f64 reference in the same page; smoke tests (a matmul and
//! one SGD step of three models, against the CPU backend in the page); and a steady-state
//! training check per GPU backend (no allocation, no compile after warm-up).
//! `scripts/browser-tests.sh` at the repository root installs the tools and runs them.
//!
//! The backend-independent parts live here so that they also run natively (CPU against CPU) in
//! `cargo test -p pixelgrad-browser-tests`:
//! - [`compare`]: elementwise comparison with a relative + absolute tolerance and a readable report,
//! - [`smoke`]: the workloads (matmul, one training step), reading results with `to_vec_async`
//!   (WebGPU in the browser cannot read synchronously).
//! - [`reuse`]: a few SGD steps of a small MLP with the backend's counters recorded per phase;
//!   after two warm-up steps nothing may be allocated or compiled,
//! - `browser` (wasm only): creating the WebGPU and WebGL2 devices in the page.

pub mod compare;
pub mod reuse;
pub mod smoke;

#[cfg(target_arch = "wasm32")]
pub mod browser;
