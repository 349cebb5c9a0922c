//! Every per-operator fixture on the WebGPU backend (Mesa lavapipe without a GPU), and the
//! pretrained PP-OCR models plus three light architectures (the native GPU run of whole models).

mod common;

use pixelgrad_core::Device;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

fn wgpu() -> Device {
    Device::new(WgpuBackend::new(WgpuOptions::default()).expect("a WebGPU adapter (Debian: mesa-vulkan-drivers gives lavapipe)"))
}

#[test]
fn every_operator_case_matches_onnxruntime_on_wgpu() {
    common::check_all(&wgpu(), "ops", |_| true);
}

#[test]
fn models_match_onnxruntime_on_wgpu() {
    let keep = ["ppocr_cls", "ppocr_det", "squeezenet", "shufflenet", "resnet50"];
    common::check_all(&wgpu(), "models", |c| keep.contains(&c.name.as_str()));
}

/// The models quantised by onnxruntime's `quantize_static` (QDQ and QOperator): within one
/// output quantisation step of onnxruntime's int8 result, same argmax.
#[test]
fn quantized_models_match_onnxruntime_on_wgpu() {
    common::check_all(&wgpu(), "models", |c| c.tags.iter().any(|t| t == "int8"));
}
