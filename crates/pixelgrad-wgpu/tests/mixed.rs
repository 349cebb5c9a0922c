//! Mixed-precision training on WebGPU (Mesa lavapipe in CI): the f16 copies the graph keeps,
//! the digits MLP against f32 training from the same seed, and step plans replaying mixed
//! steps (the shared checks of `pixelgrad_conformance::mixed`).

mod common;

use pixelgrad_conformance::mixed::{assert_mixed_matches_f32, graph_bytes};
use pixelgrad_core::{mixed_precision_available, Device};
use pixelgrad_nn::presets::Preset;

#[test]
fn the_graph_keeps_f16_copies_on_webgpu() {
    let d = Device::new(common::backend());
    assert!(mixed_precision_available(&d));
    for preset in [Preset::Mlp, Preset::Cnn] {
        let (b32, b16) = graph_bytes(&d, preset);
        assert!(b16 > 0 && b16 as f64 <= 0.6 * b32 as f64, "{preset:?}: {b16} bytes mixed, {b32} f32");
    }
}

#[test]
fn mixed_digits_mlp_matches_f32_on_webgpu_and_replays_its_steps() {
    eprintln!("{}", assert_mixed_matches_f32("webgpu", &|| Device::new(common::backend()), true));
}
