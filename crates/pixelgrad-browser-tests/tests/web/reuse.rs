//! Steady-state training on each GPU backend in the page: after two warm-up SGD steps of a
//! small MLP, no phase of a step (upload, forward, backward, update, loss read) may allocate a
//! buffer / texture or compile a kernel (`Backend::counters()`).

use pixelgrad_browser_tests::browser::{device_of_kind, log};
use pixelgrad_browser_tests::reuse::{check_steady, summary, train_with_counters, WARMUP_STEPS};
use pixelgrad_core::BackendKind;
use wasm_bindgen_test::*;

const STEPS: usize = 6;

async fn check(kind: BackendKind) {
    let dev = device_of_kind(kind).await.unwrap_or_else(|e| panic!("no {} device: {e}", kind.as_str()));
    let rec = train_with_counters(&dev, STEPS).await.unwrap_or_else(|e| panic!("training on {}: {e}", dev.name()));
    log(&format!("{} steady state: {}", kind.as_str(), summary(&rec)));
    assert!(rec.iter().all(|s| s.loss.is_finite()), "{}: non-finite loss: {}", dev.name(), summary(&rec));
    assert!(rec[STEPS - 1].loss < rec[0].loss, "{}: the loss did not fall: {}", dev.name(), summary(&rec));
    if let Err(e) = check_steady(&rec, WARMUP_STEPS) {
        panic!("{}: {e}\n{}", dev.name(), summary(&rec));
    }
}

#[wasm_bindgen_test]
async fn webgpu_training_steady_state_allocates_and_compiles_nothing() {
    check(BackendKind::WebGpu).await;
}

#[wasm_bindgen_test]
async fn webgl_training_steady_state_allocates_and_compiles_nothing() {
    check(BackendKind::WebGl).await;
}
