//! The whole conformance suite (`pixelgrad-conformance`, 21 op families forward and backward)
//! in the page, on WebGPU, WebGL2 and the CPU backend compiled to wasm (WebGL1 has its own page:
//! `tests/webgl1.rs`), each against the f64
//! reference backend running in the same page, with the native tolerances. Reads are async
//! (`Read::Async`): WebGPU in the browser cannot block. One test per backend and family, e.g.
//! `conformance::webgpu::matmul`. The families of one backend share one device
//! ([`shared_device`]; natively each gets a fresh one): fresh GPU devices per family, which
//! nothing in the page destroys, killed the page after the suite.

use pixelgrad_browser_tests::browser::shared_device;
use pixelgrad_core::{BackendKind, Device, Result};

async fn webgpu() -> Result<Device> {
    shared_device(BackendKind::WebGpu).await
}

async fn webgl() -> Result<Device> {
    shared_device(BackendKind::WebGl).await
}

async fn cpu() -> Result<Device> {
    shared_device(BackendKind::Cpu).await
}

pixelgrad_conformance::conformance_tests_async!(webgpu, super::webgpu, wasm_bindgen_test::wasm_bindgen_test);
pixelgrad_conformance::conformance_tests_async!(webgl, super::webgl, wasm_bindgen_test::wasm_bindgen_test);
pixelgrad_conformance::conformance_tests_async!(cpu, super::cpu, wasm_bindgen_test::wasm_bindgen_test);
