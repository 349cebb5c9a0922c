//! Every per-operator fixture on the CPU backend against onnxruntime.

mod common;

#[test]
fn every_operator_case_matches_onnxruntime_on_cpu() {
    let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
    common::check_all(&dev, "ops", |_| true);
}
