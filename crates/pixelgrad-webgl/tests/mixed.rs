//! Mixed-precision training on WebGL2 (Mesa llvmpipe natively): the f16 copies the graph
//! keeps (drawn into RGBA16UI textures by `Op::NarrowF16`), the digits MLP against f32
//! training from the same seed, and step plans replaying mixed steps. The `webgl1` mode has
//! no f16 results: training there reports the f32 fallback; under the RGBA16F fallback the
//! tensors are halves already and mixed training is the loss scale on them.

use pixelgrad_conformance::mixed::{assert_mixed_matches_f32, graph_bytes};
use pixelgrad_core::{mixed_precision_available, Device};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{OptimizerKind, Precision};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn backend(opts: WebGlOptions) -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { self_test: false, ..opts }).expect("headless WebGL (EGL) context")
}

#[test]
fn the_graph_keeps_f16_copies_on_webgl2() {
    let d = Device::new(backend(WebGlOptions::default()));
    assert!(mixed_precision_available(&d));
    for preset in [Preset::Mlp, Preset::Cnn] {
        let (b32, b16) = graph_bytes(&d, preset);
        eprintln!("webgl2 {preset:?}: graph {b16} bytes mixed, {b32} f32 ({:.3}x)", b16 as f64 / b32 as f64);
        assert!(b16 > 0 && b16 as f64 <= 0.6 * b32 as f64, "{preset:?}: {b16} bytes mixed, {b32} f32");
    }
}

#[test]
fn mixed_digits_mlp_matches_f32_on_webgl2_and_replays_its_steps() {
    eprintln!("{}", assert_mixed_matches_f32("webgl2", &|| Device::new(backend(WebGlOptions::default())), true));
}

/// Where f16 results are not offered mixed training runs in f32 and says so (`webgl1`, whose
/// f32 tensors are true f32), or, where every f32 tensor is already a half (RGBA16F), runs
/// the dynamic loss scale there, starting at most at 2^10 (`HALF_STORAGE_MAX_SCALE`: the
/// scaled loss is a half too) and skipping no step of this run.
#[test]
fn mixed_training_without_narrow_f16_runs_f32_or_scales_the_halves() {
    let split = pixelgrad_data::digits_split(0.2, 7).unwrap();
    let shape = [1usize, 8, 8];
    for opts in [WebGlOptions { webgl1: true, ..Default::default() }, WebGlOptions { force_half_float: true, ..Default::default() }] {
        let d = Device::new(backend(opts.clone()));
        assert!(!mixed_precision_available(&d), "{opts:?}");
        let tr = Samples::new(&split.train.images()[..64 * 64], &shape, &split.train.labels()[..64]).unwrap();
        let m = ModelSpec { preset: Preset::Mlp, input: shape, classes: 10 }.build(&d, 11).unwrap();
        let mut opt = OptimizerKind::parse("adam").unwrap().build(0.003);
        let fo =
            FitOptions { epochs: 1, batch_size: 32, seed: 5, precision: Precision::Mixed, checkpoint_every: Some(0), ..Default::default() };
        let h = fit(&m, opt.as_mut(), Preset::Mlp.loss(), &d, tr, None, &fo, &mut NoCallbacks).unwrap();
        let r = h.mixed.unwrap();
        if opts.webgl1 {
            assert_eq!(r.precision, "f32", "{opts:?}");
            assert!(r.fallback.is_some(), "{opts:?}");
        } else {
            assert_eq!((r.precision, r.fallback.clone(), r.skipped_steps), ("mixed", None, 0), "{opts:?}");
            assert!(r.final_scale <= pixelgrad_nn::mixed::HALF_STORAGE_MAX_SCALE, "{r:?}");
        }
    }
}
