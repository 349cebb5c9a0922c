//! Grouped draws (`src/group.rs`): at the end of a step, pending results of the same size are
//! drawn together, one draw with several render targets. They change no result: the
//! conformance training workloads (MLP and CNN, every optimizer) end with bit-identical
//! parameters and losses with grouping on and off, in replayed and in eager steps. They save
//! draws: Adam's `m`, `v` and parameter updates are one draw per parameter, and the
//! benchmark's MLP and CNN (`pixelgrad bench`, `passes_per_step`) stay under their targets. A
//! replayed step with grouped draws still allocates, compiles and attaches nothing.

use pixelgrad_conformance::steps::{self, Replay, OPTIMIZERS};
use pixelgrad_core::{Device, Result, Tensor};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::Samples;
use pixelgrad_nn::{Loss, Mode, Module, OptimizerKind};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

const STEPS: usize = 6;

fn backend(group: bool) -> WebGlBackend {
    let opts = WebGlOptions { group, self_test: false, ..WebGlOptions::default() };
    WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context")
}

fn read(ts: &[Tensor]) -> Vec<Vec<f32>> {
    ts.iter().map(|t| t.to_vec().unwrap()).collect()
}

/// Launches of the last step of a run.
fn last_step(r: &steps::Run) -> u64 {
    r.counters[STEPS - 1].launches - r.counters[STEPS - 2].launches
}

fn compare(preset: Preset, replay: Replay) {
    for opt in OPTIMIZERS {
        let what = format!("{preset:?}/{opt} {replay:?}");
        let grouped = steps::run(&Device::new(backend(true)), preset, opt, STEPS, replay).unwrap();
        let alone = steps::run(&Device::new(backend(false)), preset, opt, STEPS, replay).unwrap();
        steps::same_bits(&read(&grouped.params), &read(&alone.params), &what).unwrap();
        steps::same_bits(&read(&grouped.losses), &read(&alone.losses), &format!("{what} loss")).unwrap();
        let (g, a) = (last_step(&grouped), last_step(&alone));
        eprintln!("{what}: {g} draws per step grouped, {a} alone");
        if opt == "sgd" {
            // One update per parameter, each of its own size: nothing to group here.
            assert!(g <= a, "{what}: {g} grouped draws vs {a}");
        } else {
            // An optimizer with state (momentum, Adam, RMSprop) updates it with each
            // parameter, in one draw. In both runs each parameter's first update is the
            // epilogue of the draw computing its gradient (a matmul or a bias's sum), so
            // grouping saves what is left: at least one draw.
            assert!(g < a, "{what}: {g} grouped draws vs {a}");
        }
        if replay == Replay::Plan {
            steps::check_replayed(&grouped.counters, &what).unwrap();
        }
    }
}

#[test]
fn mlp_grouped_equals_ungrouped_bit_for_bit() {
    compare(Preset::Mlp, Replay::Plan);
}

#[test]
fn cnn_grouped_equals_ungrouped_bit_for_bit() {
    compare(Preset::Cnn, Replay::Plan);
}

#[test]
fn eager_steps_group_too_and_agree() {
    compare(Preset::Mlp, Replay::Eager);
}

#[test]
fn replayed_steps_keep_their_held_losses_right() {
    // Losses kept alive make their planned draws fall back; grouped draws must too.
    let opt = "adam";
    let grouped = steps::run(&Device::new(backend(true)), Preset::Mlp, opt, STEPS, Replay::PlanHoldingLosses).unwrap();
    let alone = steps::run(&Device::new(backend(false)), Preset::Mlp, opt, STEPS, Replay::PlanHoldingLosses).unwrap();
    steps::same_bits(&read(&grouped.losses), &read(&alone.losses), "held losses").unwrap();
    steps::same_bits(&read(&grouped.params), &read(&alone.params), "params").unwrap();
}

/// Draws of one replayed step of the benchmark's workload (`pixelgrad bench`: input 1x28x28,
/// 10 classes, cross-entropy, lr 0.01, `batch`), counted as `passes_per_step` counts them
/// (the eighth step, after a read emptied the queue), and the pass log of that step.
/// Also returns how many parameters the model has.
fn bench_step(preset: Preset, batch: usize, optimizer: &str, group: bool) -> Result<(u64, Vec<String>, u64)> {
    let b = std::rc::Rc::new(backend(group));
    let dev = Device::from_rc(b.clone());
    let (input, classes) = ([1, 28, 28], 10);
    let model = ModelSpec { preset, input, classes }.build(&dev, 1)?;
    let n = batch * 8;
    let x: Vec<f32> = (0..n * 784).map(|i| pixelgrad_core::rng::uniform(9, i as u64)).collect();
    let y: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    let samples = Samples::new(&x, &input, &y)?;
    let mut opt = OptimizerKind::parse(optimizer)?.build(0.01);
    let mut step = |i: usize| -> Result<Tensor> {
        let idx: Vec<usize> = (0..batch).map(|k| (i * batch + k) % n).collect();
        dev.step(5, || {
            let (xb, yb) = samples.batch(&dev, &idx)?;
            let l = Loss::CrossEntropy.compute(&model.forward(&xb, Mode::Train)?, &yb)?;
            l.backward()?;
            opt.step(&model)?;
            Ok(l.detach())
        })
    };
    for i in 0..6 {
        step(i)?;
    }
    step(6)?.to_vec()?;
    let before = dev.counters();
    b.set_pass_log(true);
    let l = step(7)?;
    let after = dev.counters();
    let log = b.take_pass_log();
    assert!(l.to_vec()?[0].is_finite());
    assert_eq!(after.replayed - before.replayed, after.launches - before.launches, "every draw replayed");
    assert_eq!((after.allocations, after.compiles, after.bindings), (before.allocations, before.compiles, before.bindings));
    let mut params = 0;
    model.visit_params(&mut |_, _| params += 1);
    Ok((after.launches - before.launches, log, params))
}

/// Outputs of the grouped draws in a pass log (`group of N: ...` lines), and results drawn
/// as a matmul's epilogue (`matmul... + fused ...` lines: a second output of the matmul's draw).
fn grouped_outputs(log: &[String]) -> u64 {
    let grouped: u64 = log.iter().filter_map(|l| l.strip_prefix("group of ")?.split(':').next()?.parse::<u64>().ok()).sum();
    grouped + log.iter().filter(|l| l.starts_with("matmul") && l.contains(" + fused ")).count() as u64
}

#[test]
fn adam_steps_of_the_benchmark_draw_less() {
    // Adam's new `m`, `v` and parameter were three draws per parameter, now at most one
    // (or a matmul's epilogue and one). The MLP's replayed step was 42 draws (4 parameters), the
    // CNN's 84 (6); results whose textures have one size (small biases, the loss) share draws
    // across parameters too.
    for (preset, batch, most) in [(Preset::Mlp, 64, Some(35)), (Preset::Cnn, 32, None)] {
        let (grouped, log, params) = bench_step(preset, batch, "adam", true).unwrap();
        let (alone, _, _) = bench_step(preset, batch, "adam", false).unwrap();
        eprintln!("{preset:?}/adam: {grouped} draws per replayed step grouped, {alone} alone, {params} parameters");
        let outputs = grouped_outputs(&log);
        assert!(outputs >= 3 * params, "{outputs} results in grouped draws, {params} parameters:\n{}", log.join("\n"));
        // Without grouping the first of the three is the epilogue of the gradient's draw (a
        // matmul, a bias's sum): at least one draw fewer per parameter with grouping.
        assert!(grouped + params <= alone, "{preset:?}/adam: {grouped} vs {alone} draws per step");
        if let Some(most) = most {
            assert!(grouped <= most, "{preset:?}/adam: {grouped} draws per step, target {most}:\n{}", log.join("\n"));
        }
    }
}

/// Eager elementwise results of several lengths settled by one flush: fast-path results
/// (one-element inputs among them), a broadcast one (drawn alone), a chain too long for one
/// program (its result reads a pending part of itself, which must be drawn first). Returns
/// the values, the pass log of the flush and its draws.
fn eager_mix(group: bool) -> (Vec<Vec<f32>>, Vec<String>, u64) {
    let b = std::rc::Rc::new(backend(group));
    let dev = Device::from_rc(b.clone());
    let t = |k: usize, dims: &[usize]| {
        let n: usize = dims.iter().product();
        let v: Vec<f32> = (0..n).map(|i| ((i * 7 + k * 3) % 23) as f32 * 0.25 - 2.0).collect();
        Tensor::from_vec(&dev, &v, dims.to_vec()).unwrap()
    };
    let xs: Vec<Tensor> = (0..10).map(|k| t(k, &[10])).collect();
    let (s, short, m, bias) = (t(20, &[1]), t(21, &[7]), t(22, &[2, 5]), t(23, &[5]));
    dev.flush().unwrap();
    let before = dev.counters().launches;
    b.set_pass_log(true);
    let mut sum = xs[0].clone();
    for x in &xs[1..] {
        sum = sum.add(x).unwrap();
    }
    let results = [
        xs[0].mul_scalar(2.0).unwrap().add_scalar(1.0).unwrap(),
        xs[1].sub(&xs[0]).unwrap(),
        xs[2].mul(&s).unwrap(),
        m.add(&bias).unwrap(),
        short.mul(&short).unwrap().add_scalar(-0.5).unwrap(),
        sum,
        s.mul_scalar(3.0).unwrap(),
        xs[3].mul(&xs[4]).unwrap().sub(&xs[5]).unwrap(),
    ];
    dev.flush().unwrap();
    let draws = dev.counters().launches - before;
    let log = b.take_pass_log();
    (results.iter().map(|r| r.to_vec().unwrap()).collect(), log, draws)
}

#[test]
fn eager_results_of_several_lengths_drawn_together_are_right() {
    let (grouped, log, g) = eager_mix(true);
    let (alone, _, a) = eager_mix(false);
    eprintln!("{g} draws grouped, {a} alone:\n{}", log.join("\n"));
    steps::same_bits(&grouped, &alone, "eager mix").unwrap();
    assert!(log.iter().any(|l| l.starts_with("group of")), "nothing grouped:\n{}", log.join("\n"));
    assert!(
        log.iter().any(|l| l.contains("(broadcast)") && !l.starts_with("group")),
        "the broadcast add is drawn alone:\n{}",
        log.join("\n")
    );
    assert!(g < a, "{g} draws grouped, {a} alone");
    // And against the host: element i of input k is ((7i + 3k) % 23) / 4 - 2.
    let x = |k: usize, i: usize| ((i * 7 + k * 3) % 23) as f32 * 0.25 - 2.0;
    let sum: Vec<f32> = (0..10).map(|i| (0..10).map(|k| x(k, i)).sum()).collect();
    let close = |got: &[f32], want: &[f32]| got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-5 * w.abs().max(1.0));
    assert!(close(&grouped[5], &sum), "{:?} vs {sum:?}", grouped[5]);
    assert!(close(&grouped[1], &(0..10).map(|i| x(1, i) - x(0, i)).collect::<Vec<_>>()));
    assert!(close(&grouped[2], &(0..10).map(|i| x(2, i) * x(20, 0)).collect::<Vec<_>>()));
    assert!(close(&grouped[3], &(0..10).map(|i| x(22, i) + x(23, i % 5)).collect::<Vec<_>>()));
    assert!(close(&grouped[4], &(0..7).map(|i| x(21, i) * x(21, i) - 0.5).collect::<Vec<_>>()));
    assert_eq!(grouped[6], vec![x(20, 0) * 3.0]);
}

#[test]
fn a_draw_has_at_most_as_many_targets_as_the_context_allows() {
    let b = std::rc::Rc::new(backend(true));
    let most = (b.report().max_draw_buffers as usize).min(8);
    let dev = Device::from_rc(b.clone());
    let v: Vec<f32> = (0..50).map(|i| i as f32 * 0.5 - 3.0).collect();
    let x = Tensor::from_vec(&dev, &v, [50]).unwrap();
    dev.flush().unwrap();
    b.set_pass_log(true);
    // Ten results of one input: `most` in the first draw, the rest in the next.
    let ys: Vec<Tensor> = (0..10).map(|k| x.mul_scalar(k as f32).unwrap()).collect();
    dev.flush().unwrap();
    let log = b.take_pass_log();
    let sizes: Vec<u64> = log.iter().filter_map(|l| l.strip_prefix("group of ")?.split(':').next()?.parse().ok()).collect();
    assert_eq!(sizes.iter().sum::<u64>(), 10, "{}", log.join("\n"));
    assert!(sizes.iter().all(|&n| n as usize <= most) && sizes[0] as usize == most, "{sizes:?}, at most {most}");
    for (k, y) in ys.iter().enumerate() {
        assert_eq!(y.to_vec().unwrap(), v.iter().map(|a| a * k as f32).collect::<Vec<_>>(), "x * {k}");
    }
}

#[test]
fn webgl1_mode_never_groups() {
    let opts = WebGlOptions { webgl1: true, self_test: false, ..WebGlOptions::default() };
    let b = std::rc::Rc::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"));
    let dev = Device::from_rc(b.clone());
    b.set_pass_log(true);
    let r = steps::run(&dev, Preset::Mlp, "adam", 3, Replay::Plan).unwrap();
    assert!(read(&r.params).iter().flatten().all(|v| v.is_finite()));
    let log = b.take_pass_log();
    assert!(!log.is_empty() && !log.iter().any(|l| l.contains("group of")), "{}", log.join("\n"));
}
