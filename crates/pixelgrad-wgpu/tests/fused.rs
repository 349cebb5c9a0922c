//! Fused kernels change no result beyond rounding: the conformance training workloads (MLP
//! and CNN, every optimizer) trained with fusion on and off on WebGPU (lavapipe in CI), as
//! replayed steps, end with the same parameters within `steps::FUSED_VS_UNFUSED`, and the
//! fused steps launch fewer kernels.

use pixelgrad_conformance::steps::{self, Replay, OPTIMIZERS};
use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::presets::Preset;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

const STEPS: usize = 6;

fn device(fuse: bool) -> Device {
    Device::new(WgpuBackend::new(WgpuOptions { fuse, ..WgpuOptions::default() }).expect("a WebGPU adapter (Mesa lavapipe in CI)"))
}

fn read(ts: &[Tensor]) -> Vec<Vec<f32>> {
    ts.iter().map(|t| t.to_vec().unwrap()).collect()
}

fn compare(preset: Preset) {
    for opt in OPTIMIZERS {
        let what = format!("{preset:?}/{opt}");
        let fused = steps::run(&device(true), preset, opt, STEPS, Replay::Plan).unwrap();
        let plain = steps::run(&device(false), preset, opt, STEPS, Replay::Plan).unwrap();
        let per_step = |r: &steps::Run| r.counters[STEPS - 1].launches - r.counters[STEPS - 2].launches;
        let (f, u) = (per_step(&fused), per_step(&plain));
        eprintln!("{what}: {f} launches per step fused, {u} unfused");
        assert!(f < u, "{what}: fusion saved nothing ({f} vs {u} launches)");
        steps::close(&read(&fused.losses), &read(&plain.losses), steps::FUSED_VS_UNFUSED, &format!("{what} loss")).unwrap();
        steps::close(&read(&fused.params), &read(&plain.params), steps::FUSED_VS_UNFUSED, &what).unwrap();
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
