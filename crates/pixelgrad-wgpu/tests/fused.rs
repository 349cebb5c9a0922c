//! Fused kernels change no result beyond rounding: the conformance training workloads (MLP
//! and CNN, every optimizer) trained with fusion on and off on WebGPU (lavapipe in CI), as
//! replayed steps, end with the same parameters within `steps::FUSED_VS_UNFUSED`, and the
//! fused steps launch fewer kernels (`steps::fused_matches_unfused`).

use pixelgrad_conformance::steps;
use pixelgrad_core::Device;
use pixelgrad_nn::presets::Preset;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

const STEPS: usize = 6;

fn device(fuse: bool) -> Device {
    Device::new(WgpuBackend::new(WgpuOptions { fuse, ..WgpuOptions::default() }).expect("a WebGPU adapter (Mesa lavapipe in CI)"))
}

fn compare(preset: Preset) {
    let counts = steps::fused_matches_unfused(&device, preset, STEPS).unwrap();
    for (opt, fused, unfused) in counts {
        eprintln!("{preset:?}/{opt}: {fused} passes per step fused, {unfused} unfused");
    }
}

#[test]
fn mlp_fused_equals_unfused_for_every_optimizer() {
    compare(Preset::Mlp);
}

#[test]
fn cnn_fused_equals_unfused_for_every_optimizer() {
    compare(Preset::Cnn);
}
