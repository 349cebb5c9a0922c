//! Fused kernels change no result beyond rounding: the conformance training workloads (MLP
//! and CNN, every optimizer) trained with fusion on and off on WebGL2 (llvmpipe through EGL in
//! CI), as replayed steps, end with the same parameters within `steps::FUSED_VS_UNFUSED`, and
//! the fused steps draw fewer times (`steps::fused_matches_unfused`).

use pixelgrad_conformance::steps;
use pixelgrad_core::Device;
use pixelgrad_nn::presets::Preset;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

const STEPS: usize = 6;

fn device(fuse: bool) -> Device {
    let opts = WebGlOptions { fuse, self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"))
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

/// Draws of one sum over `n` elements (the axis of a `[2, n]` tensor), and its result, on
/// WebGL2 or in the `webgl1` mode.
fn sum_draws(webgl1: bool, n: usize) -> (u64, Vec<f32>) {
    use pixelgrad_core::Tensor;
    let opts = WebGlOptions { webgl1, self_test: false, ..WebGlOptions::default() };
    let d = Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"));
    let data: Vec<f32> = (0..2 * n).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let x = Tensor::from_vec(&d, &data, [2, n]).unwrap();
    d.flush().unwrap();
    let before = d.counters().launches;
    let s = x.sum_axis(1, false).unwrap();
    d.flush().unwrap();
    let draws = d.counters().launches - before;
    (draws, s.to_vec().unwrap())
}

/// WebGL2 sums up to 1024 elements per fragment (one draw for a 1000-long axis, two up to
/// 2^20), WebGL1 keeps its constant group of 16 (three draws for 1000); all exact here
/// (whole numbers).
#[test]
fn reductions_take_the_fewest_draws_the_mode_allows() {
    for (webgl1, n, want) in [(false, 1000, 1), (false, 1024, 1), (false, 5000, 2), (false, 300_000, 2), (true, 1000, 3)] {
        let (draws, got) = sum_draws(webgl1, n);
        let exact: Vec<f32> = (0..2).map(|r| (0..n).map(|j| (((r * n + j) * 7) % 11) as f32 - 5.0).sum()).collect();
        assert_eq!(got, exact, "webgl1 {webgl1}, n {n}");
        assert_eq!(draws, want, "webgl1 {webgl1}, n {n}: draws");
    }
}
