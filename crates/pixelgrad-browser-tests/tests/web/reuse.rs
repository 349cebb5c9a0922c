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

/// Step plans in the page: from the fifth step of a repeated training step on, nothing is
/// allocated, compiled or bound and every launch is replayed (one submission / flush per
/// step), and the parameters equal those of the same steps run without plans, bit for bit.
async fn check_plan(kind: BackendKind) {
    use pixelgrad_conformance::steps::{self, Replay};
    use pixelgrad_nn::presets::Preset;
    let dev = device_of_kind(kind).await.unwrap_or_else(|e| panic!("no {} device: {e}", kind.as_str()));
    for (preset, opt) in [(Preset::Mlp, "adam"), (Preset::Cnn, "sgd")] {
        let what = format!("{} {preset:?}/{opt}", dev.name());
        let run = steps::run(&dev, preset, opt, 8, Replay::Plan).unwrap_or_else(|e| panic!("{what}: {e}"));
        log(&format!("{what} plan counters, last step: {:?}", run.counters.last()));
        if let Err(e) = steps::check_replayed(&run.counters, &what) {
            panic!("{e}\n{:?}", run.counters);
        }
        let eager = steps::run(&dev, preset, opt, 8, Replay::Eager).unwrap_or_else(|e| panic!("{what}: {e}"));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (x, y) in run.params.iter().zip(&eager.params) {
            a.push(x.to_vec_async().await.unwrap_or_else(|e| panic!("{what}: {e}")));
            b.push(y.to_vec_async().await.unwrap_or_else(|e| panic!("{what}: {e}")));
        }
        if let Err(e) = steps::same_bits(&a, &b, &what) {
            panic!("{e}");
        }
    }
}

#[wasm_bindgen_test]
async fn webgpu_replayed_steps_allocate_compile_and_bind_nothing() {
    check_plan(BackendKind::WebGpu).await;
}

#[wasm_bindgen_test]
async fn webgl_replayed_steps_allocate_compile_and_bind_nothing() {
    check_plan(BackendKind::WebGl).await;
}
