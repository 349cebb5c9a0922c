//! Shared checks of mixed-precision training (`pixelgrad_core::mixed`, `pixelgrad_nn::mixed`)
//! that every backend's tests run on their own device.

use pixelgrad_core::{mixed_precision, Counters, Device, Tensor};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{fit, FitOptions, History, NoCallbacks, Samples};
use pixelgrad_nn::{Mode, Module, OptimizerKind, Precision};

/// Bytes the graph of one training forward pass (a 16-image digits-sized batch through
/// `preset`) keeps for backward: `(f32, inside a mixed-precision scope)`.
pub fn graph_bytes(dev: &Device, preset: Preset) -> (u64, u64) {
    let m = ModelSpec { preset, input: [1, 8, 8], classes: 10 }.build(dev, 3).expect("model");
    let x = Tensor::rand_uniform(dev, [16, 1, 8, 8], 0.0, 1.0, 9).expect("input");
    let y = Tensor::from_vec(dev, &(0..16).map(|i| (i % 10) as f32).collect::<Vec<_>>(), [16]).expect("labels");
    let bytes = |mixed: bool| {
        let _g = mixed.then(mixed_precision);
        preset.loss().compute(&m.forward(&x, Mode::Train).expect("forward"), &y).expect("loss").graph_bytes()
    };
    (bytes(false), bytes(true))
}

/// One digits MLP training run (6 epochs of Adam, fixed seeds) on a fresh device from
/// `make_dev`: final test accuracy, the history and the device's counters.
pub fn digits_mlp(make_dev: &dyn Fn() -> Device, precision: Precision) -> (f32, History, Counters) {
    let split = pixelgrad_data::digits_split(0.2, 7).expect("digits");
    let shape = [1usize, 8, 8];
    let d = make_dev();
    let tr = Samples::new(split.train.images(), &shape, split.train.labels()).expect("train set");
    let te = Samples::new(split.test.images(), &shape, split.test.labels()).expect("test set");
    let m = ModelSpec { preset: Preset::Mlp, input: shape, classes: 10 }.build(&d, 11).expect("model");
    let mut opt = OptimizerKind::parse("adam").expect("adam").build(0.003);
    let opts = FitOptions { epochs: 6, batch_size: 32, seed: 5, precision, checkpoint_every: Some(0), ..Default::default() };
    let h = fit(&m, opt.as_mut(), Preset::Mlp.loss(), &d, tr, Some(te), &opts, &mut NoCallbacks).expect("fit");
    (h.epochs.last().expect("an epoch").test_accuracy.expect("accuracy"), h, d.counters())
}

/// The digits MLP trained mixed reaches the f32 run's test accuracy within half a point, runs
/// mixed (no fallback) and replays its step plans on GPU backends (`replays`). Panics with
/// the numbers otherwise; returns a line describing the run.
pub fn assert_mixed_matches_f32(what: &str, make_dev: &dyn Fn() -> Device, replays: bool) -> String {
    let (a32, _, _) = digits_mlp(make_dev, Precision::F32);
    let (a16, h, c) = digits_mlp(make_dev, Precision::Mixed);
    let r = h.mixed.expect("a mixed report");
    assert_eq!((r.precision, r.fallback.as_deref()), ("mixed", None), "{what}");
    assert!(a32 > 0.9 && (a32 - a16).abs() * 100.0 <= 0.5 + 1e-4, "{what}: f32 {a32}, mixed {a16}");
    if replays {
        assert!(c.replayed > c.launches / 2, "{what}: mixed steps did not replay their plans: {c:?}");
    }
    format!(
        "{what} digits mlp: f32 {a32:.4}, mixed {a16:.4}, scale {}, {} skipped, {} of {} launches replayed",
        r.final_scale, r.skipped_steps, c.replayed, c.launches
    )
}
