//! Training steps under the counters: the checks behind "a replayed step allocates nothing,
//! compiles nothing and prepares no bindings", shared by the native tests of both GPU
//! backends and by the browser tests. Nothing here reads back (WebGPU in a browser cannot
//! block), so callers read the returned tensors with `to_vec` or `to_vec_async`.

use pixelgrad_core::{Counters, Device, Result, Tensor};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::Samples;
use pixelgrad_nn::{Mode, Module, OptimizerKind};

/// How the steps run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replay {
    /// No `Device::step`: every launch as usual, a flush per step.
    Eager,
    /// Each step inside `Device::step(KEY, ..)`: plans recorded, then replayed.
    Plan,
    /// As `Plan`, but every step's loss stays alive until the end, so the launches writing
    /// them find their planned buffer held and must fall back (results must not change).
    PlanHoldingLosses,
}

/// Plan key of the steps (any constant: one structure).
pub const KEY: u64 = 42;

/// What [`run`] did.
pub struct Run {
    /// Counters after each step.
    pub counters: Vec<Counters>,
    /// Each step's loss when holding them ([`Replay::PlanHoldingLosses`]); else the last one.
    pub losses: Vec<Tensor>,
    /// The parameters after the last step, in the model's order.
    pub params: Vec<Tensor>,
}

/// One model with its optimizer and deterministic data (input 1x8x8, 4 classes, batch 8).
struct Trainer {
    model: Box<dyn Module>,
    opt: Box<dyn pixelgrad_nn::Optimizer>,
    x: Vec<f32>,
    y: Vec<u32>,
    loss: pixelgrad_nn::Loss,
    step: usize,
}

const BATCH: usize = 8;

impl Trainer {
    fn new(dev: &Device, preset: Preset, optimizer: &str, seed: u64) -> Result<Trainer> {
        let (input, classes) = ([1, 8, 8], 4);
        let model = ModelSpec { preset, input, classes }.build(dev, seed)?;
        let n = BATCH * 2;
        let x: Vec<f32> = (0..n * 64).map(|i| pixelgrad_core::rng::uniform(seed + 2, i as u64)).collect();
        let y: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
        let opt = OptimizerKind::parse(optimizer)?.build(0.01);
        Ok(Trainer { model: Box::new(model), opt, x, y, loss: preset.loss(), step: 0 })
    }

    /// One step (new batch each step) under `key`, or eagerly (then flushed) for `None`;
    /// returns the loss.
    fn step(&mut self, dev: &Device, key: Option<u64>) -> Result<Tensor> {
        let idx: Vec<usize> = (0..BATCH).map(|k| (self.step * BATCH + k) % (BATCH * 2)).collect();
        self.step += 1;
        let Trainer { model, opt, x, y, loss, .. } = self;
        let samples = Samples::new(x, &[1, 8, 8], y)?;
        let mut body = || -> Result<Tensor> {
            let (xb, yb) = samples.batch(dev, &idx)?;
            let l = loss.compute(&model.forward(&xb, Mode::Train)?, &yb)?;
            l.backward()?;
            opt.step(&**model)?;
            Ok(l.detach())
        };
        match key {
            None => {
                let l = body()?;
                dev.flush()?;
                Ok(l)
            }
            Some(k) => dev.step(k, body),
        }
    }

    fn params(&self) -> Vec<Tensor> {
        let mut params = Vec::new();
        self.model.visit_params(&mut |_, p| params.push(p.tensor()));
        params
    }
}

/// Trains `preset` (input 1x8x8, 4 classes, batch 8, seed 3) for `steps` steps of
/// `optimizer` (`sgd`, `adam`, ...) on deterministic data, new batch each step.
pub fn run(dev: &Device, preset: Preset, optimizer: &str, steps: usize, replay: Replay) -> Result<Run> {
    let mut t = Trainer::new(dev, preset, optimizer, 3)?;
    let mut counters = Vec::with_capacity(steps);
    let mut losses: Vec<Tensor> = Vec::new();
    // Work queued while building the model is submitted before the first step, as
    // `Device::step` does, so both kinds of run group (fuse) their ops the same way and
    // their results can be compared bit for bit.
    dev.flush()?;
    for _ in 0..steps {
        let loss = t.step(dev, if replay == Replay::Eager { None } else { Some(KEY) })?;
        if replay != Replay::PlanHoldingLosses {
            losses.clear();
        }
        losses.push(loss);
        counters.push(dev.counters());
    }
    Ok(Run { counters, losses, params: t.params() })
}

/// What [`alternate`] did, per model.
pub struct Alternated {
    /// Counters before and after each of the model's steps.
    pub steps: Vec<(Counters, Counters)>,
    /// The parameters after the last step.
    pub params: Vec<Tensor>,
}

/// Two models of `preset` (seeds 3 and 4, the same batch size) trained on one device in
/// turns, `steps` steps each, every step inside `Device::step` under the key
/// [`pixelgrad_nn::step_key`] gives it (or under one shared constant key with `shared_key`,
/// to show what that costs). Each model must replay its own plan.
pub fn alternate(dev: &Device, preset: Preset, optimizer: &str, steps: usize, shared_key: bool) -> Result<[Alternated; 2]> {
    let mut ts = [Trainer::new(dev, preset, optimizer, 3)?, Trainer::new(dev, preset, optimizer, 4)?];
    let mut out: [Vec<(Counters, Counters)>; 2] = [Vec::new(), Vec::new()];
    dev.flush()?;
    for _ in 0..steps {
        for (t, log) in ts.iter_mut().zip(&mut out) {
            let key = if shared_key { KEY } else { pixelgrad_nn::step_key(&*t.model, &*t.opt, &[BATCH, 1, 8, 8]) };
            let before = dev.counters();
            t.step(dev, Some(key))?;
            log.push((before, dev.counters()));
        }
    }
    let [a, b] = out;
    Ok([Alternated { steps: a, params: ts[0].params() }, Alternated { steps: b, params: ts[1].params() }])
}

/// The model [`alternate`] trains with `seed`, trained alone and eagerly for `steps` steps
/// (what each alternated model must equal bit for bit).
pub fn alone(dev: &Device, preset: Preset, optimizer: &str, steps: usize, seed: u64) -> Result<Vec<Tensor>> {
    let mut t = Trainer::new(dev, preset, optimizer, seed)?;
    dev.flush()?;
    for _ in 0..steps {
        t.step(dev, None)?;
    }
    Ok(t.params())
}

/// Checks the steps of one model of [`alternate`] from [`STEADY_FROM`] on: each allocates,
/// compiles and binds nothing, and replays every launch.
pub fn check_alternated(a: &Alternated, what: &str) -> std::result::Result<(), String> {
    if a.steps.len() <= STEADY_FROM {
        return Err(format!("{what}: need more than {STEADY_FROM} steps"));
    }
    for (i, (prev, now)) in a.steps.iter().enumerate().skip(STEADY_FROM) {
        let at = format!("{what} step {i}");
        for (name, x, y) in [
            ("allocations", prev.allocations, now.allocations),
            ("compiles", prev.compiles, now.compiles),
            ("bindings", prev.bindings, now.bindings),
        ] {
            if x != y {
                return Err(format!("{at}: {name} went from {x} to {y}"));
            }
        }
        let (launches, replayed) = (now.launches - prev.launches, now.replayed - prev.replayed);
        if launches == 0 || replayed != launches {
            return Err(format!("{at}: {replayed} of {launches} launches replayed"));
        }
    }
    Ok(())
}

/// Step from which replay must be complete: steps 0 and 1 record the two parities, step 2
/// re-records parity 0 (the optimizer's first step created its state, so step 0 differed),
/// step 3 re-binds parity 1 to the buffers step 2 chose; from step 4 on every step repeats.
pub const STEADY_FROM: usize = 4;

/// Checks counters of a [`Replay::Plan`] run from [`STEADY_FROM`] on: nothing allocated,
/// compiled, bound or read; the same launches every step, all of them replayed; one
/// submission per step (WebGPU: `queue.submit`; WebGL: the flush that ends the step).
pub fn check_replayed(c: &[Counters], what: &str) -> std::result::Result<(), String> {
    if c.len() < STEADY_FROM + 2 {
        return Err(format!("{what}: need at least {} steps", STEADY_FROM + 2));
    }
    let per_step = c[STEADY_FROM].launches - c[STEADY_FROM - 1].launches;
    for i in STEADY_FROM..c.len() {
        let (prev, now) = (&c[i - 1], &c[i]);
        let at = format!("{what} step {i}");
        let same = [
            ("allocations", prev.allocations, now.allocations),
            ("compiles", prev.compiles, now.compiles),
            ("bindings", prev.bindings, now.bindings),
            ("readbacks", prev.readbacks, now.readbacks),
            ("bytes_in_use", prev.bytes_in_use, now.bytes_in_use),
        ];
        for (name, a, b) in same {
            if a != b {
                return Err(format!("{at}: {name} went from {a} to {b}"));
            }
        }
        let launches = now.launches - prev.launches;
        if launches != per_step || launches == 0 {
            return Err(format!("{at}: {launches} launches, step {STEADY_FROM} had {per_step}"));
        }
        let replayed = now.replayed - prev.replayed;
        if replayed != launches {
            return Err(format!("{at}: {replayed} of {launches} launches replayed"));
        }
        let subs = now.submissions - prev.submissions;
        if subs != 1 {
            return Err(format!("{at}: {subs} submissions"));
        }
    }
    Ok(())
}

/// Bit-for-bit comparison of two lists of host values.
pub fn same_bits(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) -> std::result::Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("{what}: {} vs {} tensors", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x.len() != y.len() {
            return Err(format!("{what}: tensor {i} has {} vs {} values", x.len(), y.len()));
        }
        if let Some((j, (u, v))) = x.iter().zip(y).enumerate().find(|(_, (u, v))| u.to_bits() != v.to_bits()) {
            return Err(format!("{what}: tensor {i} value {j}: {u} vs {v}"));
        }
    }
    Ok(())
}

/// Every optimizer the fused-vs-unfused comparisons train with.
pub const OPTIMIZERS: [&str; 6] = ["sgd", "momentum", "nesterov", "adam", "adamw", "rmsprop"];

/// How far a fused training run may drift from the unfused one after a few steps: the same
/// f32 operations in the same order, but a shader compiler may contract `a * b + c` inside one
/// fused kernel where separate kernels round in between (one rounding per op, amplified a
/// little by the optimizers' divisions).
pub const FUSED_VS_UNFUSED: crate::tolerance::Tol = crate::tolerance::Tol::new(1e-4, 1e-5);

/// Element-by-element comparison of two lists of host values within `tol`.
pub fn close(got: &[Vec<f32>], want: &[Vec<f32>], tol: crate::tolerance::Tol, what: &str) -> std::result::Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} vs {} tensors", got.len(), want.len()));
    }
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        if x.len() != y.len() {
            return Err(format!("{what}: tensor {i} has {} vs {} values", x.len(), y.len()));
        }
        if let Some((j, (u, v))) = x.iter().zip(y).enumerate().find(|(_, (u, v))| !tol.accepts(**u as f64, **v as f64)) {
            return Err(format!("{what}: tensor {i} value {j}: {u} vs {v} (tolerance {tol:?})"));
        }
    }
    Ok(())
}

/// Trains `preset` with every optimizer of [`OPTIMIZERS`] for `steps` replayed steps on a
/// device from `make(true)` (fusion on) and one from `make(false)` (off), and checks that the
/// losses and parameters agree within [`FUSED_VS_UNFUSED`] and that fusion saved launches.
/// Returns `(optimizer, fused, unfused)` launches per step. Reads back with the blocking
/// `to_vec`: for native devices and WebGL, not WebGPU in a browser.
pub fn fused_matches_unfused(
    make: &dyn Fn(bool) -> Device,
    preset: Preset,
    steps: usize,
) -> std::result::Result<Vec<(&'static str, u64, u64)>, String> {
    let read = |ts: &[Tensor], what: &str| ts.iter().map(|t| t.to_vec()).collect::<Result<Vec<_>>>().map_err(|e| format!("{what}: {e}"));
    let per_step = |r: &Run| r.counters[steps - 1].launches - r.counters[steps - 2].launches;
    let mut out = Vec::new();
    for opt in OPTIMIZERS {
        let what = format!("{preset:?}/{opt}");
        let fused = run(&make(true), preset, opt, steps, Replay::Plan).map_err(|e| format!("{what} fused: {e}"))?;
        let plain = run(&make(false), preset, opt, steps, Replay::Plan).map_err(|e| format!("{what} unfused: {e}"))?;
        let (f, u) = (per_step(&fused), per_step(&plain));
        if f >= u {
            return Err(format!("{what}: fusion saved nothing ({f} vs {u} launches per step)"));
        }
        close(&read(&fused.losses, &what)?, &read(&plain.losses, &what)?, FUSED_VS_UNFUSED, &format!("{what} loss"))?;
        close(&read(&fused.params, &what)?, &read(&plain.params, &what)?, FUSED_VS_UNFUSED, &what)?;
        out.push((opt, f, u));
    }
    Ok(out)
}

/// The benchmark's training workloads with their passes per replayed step before fusion
/// (issue 12's baseline): (preset on 28x28 inputs, batch, optimizer, WebGL draws, WebGPU
/// dispatches). The budget is a third of each.
pub const PASS_BUDGETS: &[(Preset, usize, &str, u64, u64)] = &[
    (Preset::Mlp, 64, "sgd", 63, 41),
    (Preset::Mlp, 64, "adam", 107, 85),
    (Preset::Cnn, 32, "sgd", 110, 76),
    (Preset::Cnn, 32, "adam", 176, 142),
];

/// Launches of the 7th replayed training step of `preset` (28x28 inputs, 10 classes,
/// `batch`, cross-entropy) with `optimizer` on `dev`, counted as `pixelgrad bench` counts
/// `passes_per_step`: forward, loss, backward and update inside `Device::step`, no accuracy
/// sums, the loss read back after each step.
pub fn bench_passes(dev: &Device, preset: Preset, batch: usize, optimizer: &str) -> Result<u64> {
    let input = [1, 28, 28];
    let model = ModelSpec { preset, input, classes: 10 }.build(dev, 1)?;
    let x: Vec<f32> = (0..batch * 784).map(|i| pixelgrad_core::rng::uniform(9, i as u64)).collect();
    let y: Vec<u32> = (0..batch).map(|i| (i % 10) as u32).collect();
    let samples = Samples::new(&x, &input, &y)?;
    let mut opt = OptimizerKind::parse(optimizer)?.build(0.01);
    let idx: Vec<usize> = (0..batch).collect();
    let key = pixelgrad_nn::step_key(&model, &*opt, &[batch]);
    let mut last = 0;
    for _ in 0..7 {
        let before = dev.counters().launches;
        let l = dev.step(key, || {
            let (xb, yb) = samples.batch(dev, &idx)?;
            let out = model.forward(&xb, Mode::Train)?;
            let l = pixelgrad_nn::Loss::CrossEntropy.compute(&out, &yb)?;
            l.backward()?;
            opt.step(&model)?;
            Ok(l.detach())
        })?;
        last = dev.counters().launches - before;
        l.to_vec()?;
    }
    Ok(last)
}
