//! Steady-state training steps on WebGL, checked through `Backend::counters()` for a small MLP
//! and a small CNN, each with SGD and Adam.
//!
//! - Inside `Device::step` (step plans): from step 3 on, a step allocates no texture,
//!   compiles no program, attaches no framebuffer, reads nothing back, and every one of its
//!   draws is replayed from the plan; the draws per step are fixed; one submission per step.
//! - Eagerly (no `Device::step`): after two warm-up steps, no allocations, compiles or reads
//!   and a fixed number of draws, each attaching the shared framebuffer once.

use pixelgrad_core::{Counters, Device, Tensor};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::Samples;
use pixelgrad_nn::{Mode, Module, OptimizerKind};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

const STEPS: usize = 8;
const KEY: u64 = 7;

/// First step whose counters must not move (but for draws). Steps 0 and 1 record the plans
/// of parity 0 and 1. Step 0 is not like the others: it creates the optimizer state (Adam's
/// moments), its check queue starts empty (so it folds no index checks at its end) and the
/// model's parameters come from eager uploads. Step 2 replays parity 0 up to the first
/// difference and re-records the rest (allocating and attaching there). Step 1 already had
/// the repeating structure, so step 3 replays parity 1 in full, and from then on every step
/// matches its parity's plan.
const STEADY_FROM: usize = 3;

/// Counters after each training step (no reads inside the steps), and the final loss.
fn train(preset: Preset, optimizer: &str, planned: bool) -> (Vec<Counters>, f32) {
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    let dev = Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"));
    let (input, classes, batch) = ([1, 8, 8], 4, 8);
    let model = ModelSpec { preset, input, classes }.build(&dev, 3).unwrap();
    let n = batch * 2;
    let x: Vec<f32> = (0..n * 64).map(|i| pixelgrad_core::rng::uniform(5, i as u64)).collect();
    let y: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    let samples = Samples::new(&x, &input, &y).unwrap();
    let mut opt = OptimizerKind::parse(optimizer).unwrap().build(0.01);
    let loss_fn = preset.loss();
    let mut counters = Vec::new();
    let mut last: Option<Tensor> = None;
    for step in 0..STEPS {
        let mut one_step = || {
            let idx: Vec<usize> = (0..batch).map(|k| (step * batch + k) % n).collect();
            let (xb, yb) = samples.batch(&dev, &idx)?;
            let loss = loss_fn.compute(&model.forward(&xb, Mode::Train)?, &yb)?;
            loss.backward()?;
            opt.step(&model)?;
            Ok(loss.detach())
        };
        let loss = if planned {
            dev.step(KEY, one_step).unwrap()
        } else {
            let l = one_step().unwrap();
            dev.flush().unwrap();
            l
        };
        last = Some(loss);
        counters.push(dev.counters());
        eprintln!("{preset:?}/{optimizer} planned={planned} step {step}: {:?}", dev.counters());
    }
    let loss = last.expect("steps ran").to_vec().unwrap()[0];
    (counters, loss)
}

fn check_planned(preset: Preset, optimizer: &str) {
    let (c, loss) = train(preset, optimizer, true);
    assert!(loss.is_finite(), "{preset:?}/{optimizer}: loss {loss}");
    let what = |i: usize| format!("{preset:?}/{optimizer} step {i}: {:?} after {:?}", c[i], c[i - 1]);
    let draws = c[STEADY_FROM].launches - c[STEADY_FROM - 1].launches;
    assert!(draws > 0);
    for i in STEADY_FROM..STEPS {
        let (prev, now) = (&c[i - 1], &c[i]);
        assert_eq!(now.allocations, prev.allocations, "{}: allocated textures", what(i));
        assert_eq!(now.compiles, prev.compiles, "{}: compiled programs", what(i));
        assert_eq!(now.bindings, prev.bindings, "{}: attached framebuffers", what(i));
        assert_eq!(now.readbacks, prev.readbacks, "{}: read back", what(i));
        assert_eq!(now.launches - prev.launches, draws, "{}: draws differ from step {STEADY_FROM}", what(i));
        assert_eq!(now.replayed - prev.replayed, draws, "{}: not every draw was replayed", what(i));
        assert_eq!(now.bytes_in_use, prev.bytes_in_use, "{}: memory grew", what(i));
        // Nothing eager is queued between steps, so `begin_step` submits nothing.
        assert_eq!(now.submissions - prev.submissions, 1, "{}: one submission per step", what(i));
    }
    // The recording steps did attach framebuffers and replay nothing at first.
    assert!(c[1].bindings > 0 && c[0].replayed == 0, "{:?}", c[1]);
}

fn check_eager(preset: Preset, optimizer: &str) {
    let (c, loss) = train(preset, optimizer, false);
    assert!(loss.is_finite(), "{preset:?}/{optimizer}: loss {loss}");
    let what = |i: usize| format!("{preset:?}/{optimizer} eager step {i}: {:?} after {:?}", c[i], c[i - 1]);
    for i in 2..STEPS {
        let (prev, now) = (&c[i - 1], &c[i]);
        assert_eq!(now.allocations, prev.allocations, "{}: allocated textures", what(i));
        assert_eq!(now.compiles, prev.compiles, "{}: compiled programs", what(i));
        assert_eq!(now.readbacks, prev.readbacks, "{}: read back", what(i));
        assert_eq!(now.launches - prev.launches, c[1].launches - c[0].launches, "{}: draws differ from step 1", what(i));
        assert_eq!(now.bytes_in_use, prev.bytes_in_use, "{}: pool grew", what(i));
        // Eager draws share one framebuffer and attach their target each time.
        assert_eq!(now.bindings - prev.bindings, now.launches - prev.launches, "{}", what(i));
        assert_eq!(now.replayed, 0, "{}", what(i));
    }
}

#[test]
fn mlp_sgd_steady_state() {
    check_planned(Preset::Mlp, "sgd");
}

#[test]
fn mlp_adam_steady_state() {
    check_planned(Preset::Mlp, "adam");
}

#[test]
fn cnn_sgd_steady_state() {
    check_planned(Preset::Cnn, "sgd");
}

#[test]
fn cnn_adam_steady_state() {
    check_planned(Preset::Cnn, "adam");
}

#[test]
fn mlp_adam_eager_steady_state() {
    check_eager(Preset::Mlp, "adam");
}

#[test]
fn cnn_sgd_eager_steady_state() {
    check_eager(Preset::Cnn, "sgd");
}
