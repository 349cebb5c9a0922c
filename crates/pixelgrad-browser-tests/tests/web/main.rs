//! Browser tests, run with `scripts/browser-tests.sh` (headless Chromium through
//! wasm-bindgen-test-runner):
//! - smoke tests here: a matmul and one SGD training step on WebGPU and on WebGL2, each compared
//!   with the CPU backend running in the same page;
//! - [`conformance`]: the conformance suite on webgpu, webgl and cpu against the f64 reference;
//! - [`reuse`]: steady-state training allocates and compiles nothing.
#![cfg(target_arch = "wasm32")]

mod conformance;
mod reductions;
mod reuse;

use pixelgrad_browser_tests::browser::{log, webgl_device, webgpu_device};
use pixelgrad_browser_tests::compare::{check_close, max_rel_error, Tolerance};
use pixelgrad_browser_tests::smoke::{compare_steps, matmul, max_update, train_cases, train_step, MATMUL_CASES};
use pixelgrad_core::{BackendKind, Device};
use pixelgrad_cpu::CpuBackend;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn cpu() -> Device {
    Device::new(CpuBackend::new())
}

/// Fails unless the device really is the expected backend (no silent CPU fallback can pass).
fn assert_kind(dev: &Device, kind: BackendKind) {
    assert_eq!(dev.kind(), kind, "expected a {} device, got {}", kind.as_str(), dev.name());
    log(&format!("device: {}", dev.name()));
}

async fn check_matmuls(dev: &Device) {
    let reference = cpu();
    for case in MATMUL_CASES {
        let got = matmul(dev, case).await.unwrap_or_else(|e| panic!("{case:?} on {}: {e}", dev.name()));
        let want = matmul(&reference, case).await.unwrap();
        log(&format!("{} {case:?}: max rel error {:e}", dev.kind().as_str(), max_rel_error(&got, &want)));
        if let Err(e) = check_close(&format!("matmul {case:?}"), &got, &want, Tolerance::MATMUL) {
            panic!("{} vs cpu: {e}", dev.name());
        }
    }
}

async fn check_train_steps(dev: &Device) {
    for case in train_cases() {
        let got = train_step(dev, &case).await.unwrap_or_else(|e| panic!("{} on {}: {e}", case.name, dev.name()));
        let want = train_step(&cpu(), &case).await.unwrap();
        log(&format!(
            "{} {}: loss {} -> {} (cpu {} -> {}), max update {}",
            dev.kind().as_str(),
            case.name,
            got.loss,
            got.loss_after,
            want.loss,
            want.loss_after,
            max_update(&got)
        ));
        assert!(max_update(&got) > 1e-4, "{}: the step did not change the weights on {}", case.name, dev.name());
        if let Err(e) = compare_steps(&got, &want, Tolerance::TRAIN) {
            panic!("{} on {} vs cpu:\n{e}", case.name, dev.name());
        }
    }
}

#[wasm_bindgen_test]
async fn webgpu_matmul_matches_cpu() {
    let dev = webgpu_device().await.expect("WebGPU backend (needs --enable-unsafe-webgpu --enable-unsafe-swiftshader)");
    assert_kind(&dev, BackendKind::WebGpu);
    check_matmuls(&dev).await;
}

#[wasm_bindgen_test]
async fn webgpu_training_step_matches_cpu() {
    let dev = webgpu_device().await.expect("WebGPU backend");
    assert_kind(&dev, BackendKind::WebGpu);
    check_train_steps(&dev).await;
}

#[wasm_bindgen_test]
async fn webgl_matmul_matches_cpu() {
    let dev = webgl_device().expect("WebGL2 backend (needs --use-angle=swiftshader)");
    assert_kind(&dev, BackendKind::WebGl);
    check_matmuls(&dev).await;
}

#[wasm_bindgen_test]
async fn webgl_training_step_matches_cpu() {
    let dev = webgl_device().expect("WebGL2 backend");
    assert_kind(&dev, BackendKind::WebGl);
    check_train_steps(&dev).await;
}

/// The reference itself runs in the page: guard against a CPU build that silently fails.
#[wasm_bindgen_test]
async fn cpu_reference_runs_in_the_page() {
    let dev = cpu();
    assert_kind(&dev, BackendKind::Cpu);
    let step = train_step(&dev, &train_cases()[0]).await.unwrap();
    assert!(step.loss.is_finite() && step.loss_after < step.loss, "{} -> {}", step.loss, step.loss_after);
}
