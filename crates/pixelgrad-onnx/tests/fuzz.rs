//! Random per-operator cases from `scripts/onnx_fuzz.py` (onnxruntime's outputs) on every native
//! backend. Ignored by default: `bash scripts/onnx-diff-fuzz.sh [COUNT] [SEED]` makes the cases
//! and runs these with `PIXELGRAD_ONNX_CASES` set to their folder. Each case runs twice on one
//! session: the second run replays the first one's kernels where the backend records them.

mod common;

use std::path::PathBuf;

use pixelgrad_core::Device;

fn fuzz_cases() -> Vec<common::Case> {
    let dir = PathBuf::from(std::env::var("PIXELGRAD_ONNX_CASES").expect("PIXELGRAD_ONNX_CASES: a folder made by scripts/onnx_fuzz.py"));
    common::cases_in(&dir, "ops")
}

#[test]
#[ignore = "needs PIXELGRAD_ONNX_CASES (scripts/onnx-diff-fuzz.sh)"]
fn fuzz_cases_match_onnxruntime_on_cpu() {
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    common::check_cases(&dev, "fuzz", &fuzz_cases(), 2);
}

#[test]
#[ignore = "needs PIXELGRAD_ONNX_CASES (scripts/onnx-diff-fuzz.sh)"]
fn fuzz_cases_match_onnxruntime_on_wgpu() {
    let b =
        pixelgrad_wgpu::WgpuBackend::new(pixelgrad_wgpu::WgpuOptions::default()).expect("a WebGPU adapter (Debian: mesa-vulkan-drivers)");
    common::check_cases(&Device::new(b), "fuzz", &fuzz_cases(), 2);
}

#[test]
#[ignore = "needs PIXELGRAD_ONNX_CASES (scripts/onnx-diff-fuzz.sh)"]
fn fuzz_cases_match_onnxruntime_on_webgl() {
    let opts = pixelgrad_webgl::WebGlOptions { self_test: false, ..Default::default() };
    let b = pixelgrad_webgl::WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context (Debian: libegl-mesa0 libgles2)");
    common::check_cases(&Device::new(b), "fuzz", &fuzz_cases(), 2);
}
