//! Passes per replayed training step, fused and unfused, for the benchmark workloads: WebGPU
//! dispatches and WebGL draws of the 6th step (the plan replays from the 5th). Prints, asserts
//! nothing.
//!
//! `cargo run --release -p pixelgrad --features webgpu,webgl --example passes` prints the table;
//! `... -- webgl mlp adam` lists the passes of one workload (backend `webgpu` or `webgl`,
//! model `seed-mlp`, `mlp` or `cnn`, any optimizer name).

use std::rc::Rc;

use pixelgrad::nn::presets::{ModelSpec, Preset};
use pixelgrad::nn::train::{train_batch, Samples, Sums};
use pixelgrad::nn::OptimizerKind;
use pixelgrad::webgl::{WebGlBackend, WebGlOptions};
use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::{Device, Result};

/// A device and its pass log: `log(true)` starts recording, `take()` returns what was recorded.
struct Logged {
    dev: Device,
    log: Box<dyn Fn(bool)>,
    take: Box<dyn Fn() -> Vec<String>>,
}

fn logged(backend: &str, fuse: bool) -> Result<Logged> {
    if backend == "webgl" {
        let b = Rc::new(WebGlBackend::new_headless(WebGlOptions { fuse, self_test: false, ..Default::default() })?);
        let (l, t) = (b.clone(), b.clone());
        Ok(Logged { dev: Device::from_rc(b), log: Box::new(move |on| l.set_pass_log(on)), take: Box::new(move || t.take_pass_log()) })
    } else {
        let b = Rc::new(WgpuBackend::new(WgpuOptions { fuse, ..Default::default() })?);
        let (l, t) = (b.clone(), b.clone());
        Ok(Logged { dev: Device::from_rc(b), log: Box::new(move |on| l.set_launch_log(on)), take: Box::new(move || t.take_launch_log()) })
    }
}

/// Passes of the 6th step of `preset` trained with `opt`; with `show`, prints them.
fn passes(backend: &str, fuse: bool, preset: Preset, opt: &str, show: bool) -> Result<u64> {
    let Logged { dev, log, take } = logged(backend, fuse)?;
    let (input, classes, batch) = match preset {
        Preset::SeedMlp => ([1, 6, 8], 2, 1),
        _ => ([1, 28, 28], 10, 32),
    };
    let model = ModelSpec { preset, input, classes }.build(&dev, 1)?;
    let per: usize = input.iter().product();
    let x: Vec<f32> = (0..batch * per).map(|i| (i % 13) as f32 / 13.0).collect();
    let y: Vec<u32> = (0..batch).map(|i| (i % classes) as u32).collect();
    let samples = Samples::new(&x, &input, &y)?;
    let mut opt = OptimizerKind::parse(opt)?.build(0.01);
    let idx: Vec<usize> = (0..batch).collect();
    let mut sums = Sums::new();
    let key = pixelgrad::nn::step_key(&model, &*opt, &[batch]);
    let mut last = 0;
    for step in 0..6 {
        log(show && step == 5);
        let before = dev.counters().launches;
        dev.step(key, || {
            let (xb, yb) = samples.batch(&dev, &idx)?;
            train_batch(&model, opt.as_mut(), preset.loss(), &xb, &yb, &mut sums)
        })?;
        last = dev.counters().launches - before;
    }
    for line in take() {
        println!("  {line}");
    }
    Ok(last)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [backend, model, opt] = args.as_slice() {
        let preset = match model.as_str() {
            "seed-mlp" => Preset::SeedMlp,
            "cnn" => Preset::Cnn,
            _ => Preset::Mlp,
        };
        println!("{} passes", passes(backend, true, preset, opt, true)?);
        return Ok(());
    }
    println!("{:<8} {:<10} {:<8} {:>8} {:>8}", "backend", "model", "opt", "unfused", "fused");
    for backend in ["webgpu", "webgl"] {
        for (name, preset) in [("seed-mlp", Preset::SeedMlp), ("mlp", Preset::Mlp), ("cnn", Preset::Cnn)] {
            for opt in ["sgd", "adam"] {
                let (u, f) = (passes(backend, false, preset, opt, false)?, passes(backend, true, preset, opt, false)?);
                println!("{backend:<8} {name:<10} {opt:<8} {u:>8} {f:>8}");
            }
        }
    }
    Ok(())
}
