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

/// Trains `preset` (input 1x8x8, 4 classes, batch 8, seed 3) for `steps` steps of
/// `optimizer` (`sgd`, `adam`, ...) on deterministic data, new batch each step.
pub fn run(dev: &Device, preset: Preset, optimizer: &str, steps: usize, replay: Replay) -> Result<Run> {
    let (input, classes, batch) = ([1, 8, 8], 4, 8);
    let model = ModelSpec { preset, input, classes }.build(dev, 3)?;
    let n = batch * 2;
    let x: Vec<f32> = (0..n * 64).map(|i| pixelgrad_core::rng::uniform(5, i as u64)).collect();
    let y: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    let samples = Samples::new(&x, &input, &y)?;
    let mut opt = OptimizerKind::parse(optimizer)?.build(0.01);
    let loss_fn = preset.loss();
    let mut counters = Vec::with_capacity(steps);
    let mut losses: Vec<Tensor> = Vec::new();
    // Work queued while building the model is submitted before the first step, as
    // `Device::step` does, so both kinds of run group (fuse) their ops the same way and
    // their results can be compared bit for bit.
    dev.flush()?;
    for step in 0..steps {
        let idx: Vec<usize> = (0..batch).map(|k| (step * batch + k) % n).collect();
        let mut body = || -> Result<Tensor> {
            let (xb, yb) = samples.batch(dev, &idx)?;
            let loss = loss_fn.compute(&model.forward(&xb, Mode::Train)?, &yb)?;
            loss.backward()?;
            opt.step(&model)?;
            Ok(loss.detach())
        };
        let loss = match replay {
            Replay::Eager => {
                let l = body()?;
                dev.flush()?;
                l
            }
            Replay::Plan | Replay::PlanHoldingLosses => dev.step(KEY, body)?,
        };
        if replay != Replay::PlanHoldingLosses {
            losses.clear();
        }
        losses.push(loss);
        counters.push(dev.counters());
    }
    let mut params = Vec::new();
    model.visit_params(&mut |_, p| params.push(p.tensor()));
    Ok(Run { counters, losses, params })
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
