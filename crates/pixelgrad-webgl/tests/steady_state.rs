//! Steady-state training steps on WebGL: after two warm-up steps, a step allocates no
//! textures, compiles no programs, reads nothing back and issues the same number of draws
//! (launches) as every other step. Checked through `Backend::counters()` for a small MLP and
//! a small CNN, each with SGD and Adam.

use pixelgrad_core::{Counters, Device, Tensor};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::Samples;
use pixelgrad_nn::{Mode, Module, OptimizerKind};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

const STEPS: usize = 7;

/// Counters after each training step (flush at the end of each, no reads), and the final loss.
fn train(preset: Preset, optimizer: &str) -> (Vec<Counters>, f32) {
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
        let idx: Vec<usize> = (0..batch).map(|k| (step * batch + k) % n).collect();
        let (xb, yb) = samples.batch(&dev, &idx).unwrap();
        let loss = loss_fn.compute(&model.forward(&xb, Mode::Train).unwrap(), &yb).unwrap();
        loss.backward().unwrap();
        opt.step(&model).unwrap();
        dev.flush().unwrap();
        last = Some(loss.detach());
        counters.push(dev.counters());
        eprintln!("{preset:?}/{optimizer} step {step}: {:?}", dev.counters());
    }
    let loss = last.expect("steps ran").to_vec().unwrap()[0];
    (counters, loss)
}

fn check(preset: Preset, optimizer: &str) {
    let (c, loss) = train(preset, optimizer);
    assert!(loss.is_finite(), "{preset:?}/{optimizer}: loss {loss}");
    let what = |i: usize| format!("{preset:?}/{optimizer} step {i}: {:?} after {:?}", c[i], c[i - 1]);
    for i in 2..STEPS {
        let (prev, now) = (&c[i - 1], &c[i]);
        assert_eq!(now.allocations, prev.allocations, "{}: allocated textures", what(i));
        assert_eq!(now.compiles, prev.compiles, "{}: compiled programs", what(i));
        assert_eq!(now.readbacks, prev.readbacks, "{}: read back", what(i));
        assert_eq!(now.launches - prev.launches, c[1].launches - c[0].launches, "{}: draws differ from step 1", what(i));
        assert_eq!(now.bytes_in_use, prev.bytes_in_use, "{}: pool grew", what(i));
    }
}

#[test]
fn mlp_sgd_steady_state() {
    check(Preset::Mlp, "sgd");
}

#[test]
fn mlp_adam_steady_state() {
    check(Preset::Mlp, "adam");
}

#[test]
fn cnn_sgd_steady_state() {
    check(Preset::Cnn, "sgd");
}

#[test]
fn cnn_adam_steady_state() {
    check(Preset::Cnn, "adam");
}
