//! Whole models on the CPU backend against onnxruntime: the architectures the `onnx` package
//! ships (constant weights), the pretrained PP-OCR text direction classifier on rendered text
//! (it must also get every orientation right) and the PP-OCR text detector.

mod common;

use pixelgrad_core::Device;

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

#[test]
fn light_architectures_match_onnxruntime() {
    common::check_all(&cpu(), "models", |c| c.tags.iter().any(|t| t == "light"));
}

#[test]
fn pretrained_ppocr_models_match_onnxruntime() {
    common::check_all(&cpu(), "models", |c| c.tags.iter().any(|t| t == "pretrained"));
}
