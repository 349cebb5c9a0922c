//! Browser smoke tests for pixelgrad's GPU backends.
//!
//! The tests in `tests/web.rs` run in headless Chromium through `wasm-bindgen-test`: each builds
//! a WebGPU or WebGL2 backend in the page, runs a matmul and one SGD step of a small MLP on it,
//! runs the same on the CPU backend (compiled to wasm, in the same page) and compares the numbers.
//! `scripts/browser-tests.sh` at the repository root installs the tools and runs them.
//!
//! The backend-independent parts live here so that they also run natively (CPU against CPU) in
//! `cargo test -p pixelgrad-browser-tests`:
//! - [`compare`]: elementwise comparison with a relative + absolute tolerance and a readable report,
//! - [`smoke`]: the workloads (matmul, one training step), reading results with `to_vec_async`
//!   (WebGPU in the browser cannot read synchronously).
//! - `browser` (wasm only): creating the WebGPU and WebGL2 devices in the page.

pub mod compare;
pub mod smoke;

#[cfg(target_arch = "wasm32")]
pub mod browser;
