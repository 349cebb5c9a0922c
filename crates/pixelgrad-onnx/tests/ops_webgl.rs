//! Every per-operator fixture on the WebGL2 backend (headless EGL; Mesa llvmpipe without a GPU),
//! and the pretrained PP-OCR text direction classifier.

mod common;

use pixelgrad_core::Device;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn webgl() -> Device {
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context (Debian: libegl-mesa0 libgles2)"))
}

#[test]
fn every_operator_case_matches_onnxruntime_on_webgl() {
    common::check_all(&webgl(), "ops", |_| true);
}

#[test]
fn pretrained_classifier_matches_onnxruntime_on_webgl() {
    common::check_all(&webgl(), "models", |c| c.name == "ppocr_cls");
}

/// The small quantised models (MLP, CNN and the PP-OCR classifier, QDQ and QOperator): within
/// one output quantisation step of onnxruntime's int8 result, same argmax.
#[test]
fn quantized_models_match_onnxruntime_on_webgl() {
    common::check_all(&webgl(), "models", |c| c.tags.iter().any(|t| t == "int8") && !c.name.starts_with("squeezenet"));
}
