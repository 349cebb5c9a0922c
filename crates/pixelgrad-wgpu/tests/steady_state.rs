//! Step replay on WebGPU (Mesa lavapipe in CI): from the fifth step of a repeated training
//! step on, nothing is allocated, compiled or bound, every launch comes from the step plan
//! and a step is one submission; and replay changes no result, bit for bit, even when tensors
//! from earlier steps stay alive. The checks live in `pixelgrad_conformance::steps`, shared
//! with the WebGL backend and the browser tests.

use pixelgrad_conformance::steps::{self, Replay};
use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::presets::Preset;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

const STEPS: usize = 8;

fn device() -> Device {
    Device::new(WgpuBackend::new(WgpuOptions::default()).expect("a WebGPU adapter (Mesa lavapipe in CI)"))
}

fn read(ts: &[Tensor]) -> Vec<Vec<f32>> {
    ts.iter().map(|t| t.to_vec().unwrap()).collect()
}

fn steady(preset: Preset, optimizer: &str) {
    let what = format!("{preset:?}/{optimizer}");
    let dev = device();
    let run = steps::run(&dev, preset, optimizer, STEPS, Replay::Plan).unwrap();
    for (i, c) in run.counters.iter().enumerate() {
        eprintln!("{what} step {i}: {c:?}");
    }
    steps::check_replayed(&run.counters, &what).unwrap();
    let loss = run.losses[0].to_vec().unwrap()[0];
    assert!(loss.is_finite(), "{what}: loss {loss}");
    // Same parameters as without plans, bit for bit.
    let eager = steps::run(&device(), preset, optimizer, STEPS, Replay::Eager).unwrap();
    steps::same_bits(&read(&run.params), &read(&eager.params), &what).unwrap();
}

#[test]
fn mlp_sgd_replays() {
    steady(Preset::Mlp, "sgd");
}

#[test]
fn mlp_adam_replays() {
    steady(Preset::Mlp, "adam");
}

#[test]
fn cnn_sgd_replays() {
    steady(Preset::Cnn, "sgd");
}

#[test]
fn cnn_adam_replays() {
    steady(Preset::Cnn, "adam");
}

#[test]
fn held_tensors_fall_back_without_changing_results() {
    let run = steps::run(&device(), Preset::Mlp, "adam", STEPS, Replay::PlanHoldingLosses).unwrap();
    let eager = steps::run(&device(), Preset::Mlp, "adam", STEPS, Replay::Eager).unwrap();
    // Eager keeps only the last loss; compare it and the parameters.
    let last = run.losses.last().unwrap().to_vec().unwrap();
    steps::same_bits(&[last], &read(&eager.losses), "last loss").unwrap();
    steps::same_bits(&read(&run.params), &read(&eager.params), "params").unwrap();
    // Every loss is still the value of its own step (none was overwritten by a later one).
    let all = read(&run.losses);
    assert_eq!(all.len(), STEPS);
    assert!(all.windows(2).all(|w| w[0] != w[1]), "{all:?}");
    let (a, b) = (&run.counters[STEPS - 2], &run.counters[STEPS - 1]);
    assert!(b.replayed - a.replayed < b.launches - a.launches, "a held output must not be replayed: {a:?} {b:?}");
}

#[test]
fn dropped_plans_and_misuse() {
    let dev = device();
    dev.backend().begin_step(1).unwrap();
    let e = dev.backend().begin_step(1).unwrap_err().to_string();
    assert!(e.contains("already open"), "{e}");
    dev.backend().end_step().unwrap();
    assert!(dev.backend().end_step().is_err(), "end_step without a step");
    // Dropping the plans between steps: later steps record again, results unchanged.
    let a = steps::run(&dev, Preset::Mlp, "sgd", 3, Replay::Plan).unwrap();
    dev.drop_plans();
    let after = dev.counters();
    let b = steps::run(&dev, Preset::Mlp, "sgd", 3, Replay::Plan).unwrap();
    steps::same_bits(&read(&a.params), &read(&b.params), "after drop_plans").unwrap();
    assert!(b.counters[0].bindings > after.bindings, "a fresh plan binds anew");
}

#[test]
fn two_models_with_one_batch_size_each_replay_their_own_plan() {
    let dev = device();
    let both = steps::alternate(&dev, Preset::Mlp, "adam", STEPS, false).unwrap();
    for (i, (m, seed)) in both.iter().zip([3, 4]).enumerate() {
        let what = format!("model {i}");
        steps::check_alternated(m, &what).unwrap();
        let alone = steps::alone(&device(), Preset::Mlp, "adam", STEPS, seed).unwrap();
        steps::same_bits(&read(&m.params), &read(&alone), &what).unwrap();
    }
    // The check can fail: under one key shared by both models, the steps keep re-recording.
    let shared = steps::alternate(&device(), Preset::Mlp, "adam", STEPS, true).unwrap();
    assert!(steps::check_alternated(&shared[0], "shared key").is_err());
}
