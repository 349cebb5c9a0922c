//! Step plans on WebGL (`Device::step`): replayed steps compute exactly what eager steps
//! compute, also when tensors of earlier steps stay alive (those draws fall back), after
//! `drop_plans`, and with more keys than the backend keeps; misuse is a typed error.

use pixelgrad_core::{Counters, Device, Error, Tensor};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::Samples;
use pixelgrad_nn::{Mode as NnMode, Module, OptimizerKind};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

const KEY: u64 = 11;
const STEPS: usize = 6;

fn device() -> Device {
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"))
}

/// How the training steps are run.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    /// No `Device::step`; the loss is read after each step.
    Eager,
    /// Each step in `Device::step`; the loss is read after each step.
    Planned,
    /// Each step in `Device::step`; every step's loss and logits are kept alive and read at
    /// the end.
    KeepAlive,
    /// Like `Planned`, with `drop_plans` after step 2.
    DropPlans,
}

/// Per step: the loss and the logits (bit patterns), and the counters after the step.
struct Run {
    losses: Vec<u32>,
    logits: Vec<Vec<u32>>,
    counters: Vec<Counters>,
}

fn bits(v: Vec<f32>) -> Vec<u32> {
    v.into_iter().map(f32::to_bits).collect()
}

fn train(preset: Preset, optimizer: &str, mode: Mode) -> Run {
    let dev = device();
    let (input, classes, batch) = ([1, 8, 8], 4, 8);
    let model = ModelSpec { preset, input, classes }.build(&dev, 3).unwrap();
    let n = batch * 2;
    let x: Vec<f32> = (0..n * 64).map(|i| pixelgrad_core::rng::uniform(9, i as u64)).collect();
    let y: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    let samples = Samples::new(&x, &input, &y).unwrap();
    let mut opt = OptimizerKind::parse(optimizer).unwrap().build(0.01);
    let loss_fn = preset.loss();
    let mut run = Run { losses: Vec::new(), logits: Vec::new(), counters: Vec::new() };
    let mut kept: Vec<(Tensor, Tensor)> = Vec::new();
    for step in 0..STEPS {
        let mut one_step = || {
            let idx: Vec<usize> = (0..batch).map(|k| (step * batch + k) % n).collect();
            let (xb, yb) = samples.batch(&dev, &idx)?;
            let logits = model.forward(&xb, NnMode::Train)?;
            let loss = loss_fn.compute(&logits, &yb)?;
            loss.backward()?;
            opt.step(&model)?;
            Ok((loss.detach(), logits.detach()))
        };
        let (loss, logits) = match mode {
            Mode::Eager => one_step().unwrap(),
            _ => dev.step(KEY, one_step).unwrap(),
        };
        if mode == Mode::KeepAlive {
            kept.push((loss, logits));
        } else {
            run.losses.push(loss.to_vec().unwrap()[0].to_bits());
            run.logits.push(bits(logits.to_vec().unwrap()));
        }
        if mode == Mode::DropPlans && step == 2 {
            let before = dev.counters().bytes_in_use;
            dev.drop_plans();
            // Planned textures went to the pool: still allocated, still counted.
            assert_eq!(dev.counters().bytes_in_use, before);
        }
        run.counters.push(dev.counters());
    }
    for (loss, logits) in kept {
        run.losses.push(loss.to_vec().unwrap()[0].to_bits());
        run.logits.push(bits(logits.to_vec().unwrap()));
    }
    run
}

fn same_as_eager(preset: Preset, optimizer: &str, mode: Mode) -> Run {
    let eager = train(preset, optimizer, Mode::Eager);
    let run = train(preset, optimizer, mode);
    let label = format!("{preset:?}/{optimizer} {mode:?}");
    assert_eq!(run.losses, eager.losses, "{label}: losses differ from the eager run");
    assert_eq!(run.logits, eager.logits, "{label}: logits differ from the eager run");
    assert!(eager.losses.iter().all(|&l| f32::from_bits(l).is_finite()), "{label}");
    run
}

/// Launches and replayed launches from step `from` to the end.
fn replay_since(c: &[Counters], from: usize) -> (u64, u64) {
    let (a, b) = (&c[from - 1], &c[c.len() - 1]);
    (b.launches - a.launches, b.replayed - a.replayed)
}

#[test]
fn planned_steps_are_bit_identical_to_eager_mlp_adam() {
    let run = same_as_eager(Preset::Mlp, "adam", Mode::Planned);
    let (launches, replayed) = replay_since(&run.counters, 3);
    assert_eq!(replayed, launches, "{:?}", run.counters);
}

#[test]
fn planned_steps_are_bit_identical_to_eager_cnn_sgd() {
    let run = same_as_eager(Preset::Cnn, "sgd", Mode::Planned);
    let (launches, replayed) = replay_since(&run.counters, 3);
    assert_eq!(replayed, launches, "{:?}", run.counters);
}

#[test]
fn tensors_kept_from_earlier_steps_keep_their_values() {
    let run = same_as_eager(Preset::Mlp, "adam", Mode::KeepAlive);
    // Each step's loss and logits textures stay held, so the draws that would reuse them two
    // steps later fall back to fresh textures (and attach them): fewer replays than draws.
    let (launches, replayed) = replay_since(&run.counters, 3);
    assert!(replayed < launches, "no fallback: {replayed} of {launches} replayed");
    assert!(replayed > 0, "nothing replayed: {:?}", run.counters);
    let c = &run.counters;
    assert!(c[STEPS - 1].bindings > c[STEPS - 2].bindings, "fallback draws attach their new target: {c:?}");
}

#[test]
fn drop_plans_then_more_steps_gives_the_same_losses() {
    let run = same_as_eager(Preset::Mlp, "sgd", Mode::DropPlans);
    let c = &run.counters;
    // Step 3 records again (framebuffers attached, nothing replayed); step 5 replays its
    // parity's plan recorded at step 3.
    assert_eq!(c[3].replayed, c[2].replayed, "{c:?}");
    assert!(c[3].bindings > c[2].bindings, "{c:?}");
    assert!(c[5].replayed > c[4].replayed, "{c:?}");
}

#[test]
fn steps_do_not_nest() {
    let dev = device();
    let b = dev.backend();
    b.begin_step(1).unwrap();
    let err = b.begin_step(2).unwrap_err();
    assert!(matches!(err, Error::Backend { op: "begin_step", .. }), "{err:?}");
    b.end_step().unwrap();
    let err = b.end_step().unwrap_err();
    assert!(matches!(err, Error::Backend { op: "end_step", .. }), "{err:?}");
    // Through Device::step: the inner step fails, the outer one still ends.
    let w = Tensor::from_vec(&dev, &[1.0, 2.0], [2]).unwrap();
    let inner = dev.step(1, || dev.step(2, || w.mul_scalar(2.0)));
    assert!(matches!(inner, Err(Error::Backend { op: "begin_step", .. })), "{inner:?}");
    let y = dev.step(1, || w.mul_scalar(3.0)).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![3.0, 6.0]);
}

#[test]
fn a_failing_step_ends_and_later_steps_work() {
    let dev = device();
    let a = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0], [3]).unwrap();
    let b = Tensor::from_vec(&dev, &[1.0, 2.0], [2]).unwrap();
    for _ in 0..3 {
        assert!(dev.step(5, || a.add(&b)).is_err());
        let y = dev.step(5, || a.mul(&a)?.add_scalar(1.0)).unwrap();
        assert_eq!(y.to_vec().unwrap(), vec![2.0, 5.0, 10.0]);
    }
}

#[test]
fn more_keys_than_kept_and_reads_inside_steps() {
    // Six keys cycled through a backend that keeps four: every step finds its key evicted
    // and records again; values must not care. Each step also reads inside the step.
    let dev = device();
    let w = Tensor::from_vec(&dev, &[0.5, -1.0, 2.0, 4.0, 0.25, 3.0], [2, 3]).unwrap();
    let mut acc = w.clone();
    let mut expect: Vec<f32> = w.to_vec().unwrap();
    for step in 0..12u64 {
        let key = step % 6;
        let (next, seen) = dev
            .step(key, || {
                let next = acc.mul_scalar(0.5)?.add(&w)?;
                let seen = next.to_vec()?;
                Ok((next, seen))
            })
            .unwrap();
        let host: Vec<f32> = w.to_vec().unwrap();
        expect = expect.iter().zip(&host).map(|(a, b)| a * 0.5 + b).collect();
        assert_eq!(seen, expect, "step {step}");
        acc = next;
    }
    // A key kept alive by repetition replays: the same small step, many times.
    let before = dev.counters();
    for _ in 0..6 {
        acc = dev.step(100, || acc.mul_scalar(0.5)?.add(&w)).unwrap();
    }
    let after = dev.counters();
    assert!(after.replayed > before.replayed, "{before:?} -> {after:?}");
    assert_eq!(after.allocations, dev.counters().allocations);
    let got = acc.to_vec().unwrap();
    for _ in 0..6 {
        expect = expect.iter().zip(&w.to_vec().unwrap()).map(|(a, b)| a * 0.5 + b).collect();
    }
    assert_eq!(got, expect);
}

#[test]
fn two_models_with_one_batch_size_each_replay_their_own_plan() {
    use pixelgrad_conformance::steps;
    let read = |ts: &[Tensor]| ts.iter().map(|t| t.to_vec().unwrap()).collect::<Vec<_>>();
    let both = steps::alternate(&device(), Preset::Mlp, "adam", 7, false).unwrap();
    for (i, (m, seed)) in both.iter().zip([3, 4]).enumerate() {
        let what = format!("model {i}");
        steps::check_alternated(m, &what).unwrap();
        let alone = steps::alone(&device(), Preset::Mlp, "adam", 7, seed).unwrap();
        steps::same_bits(&read(&m.params), &read(&alone), &what).unwrap();
    }
    // The check can fail: under one key shared by both models, the steps keep re-recording.
    let shared = steps::alternate(&device(), Preset::Mlp, "adam", 7, true).unwrap();
    assert!(steps::check_alternated(&shared[0], "shared key").is_err());
}
