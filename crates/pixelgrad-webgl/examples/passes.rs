//! Draws per replayed training step, fused and unfused, for the benchmark workloads
//! (`cargo run --release -p pixelgrad-webgl --example passes`). Prints, asserts nothing.

use pixelgrad_core::{Device, Result};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{train_batch, Samples, Sums};
use pixelgrad_nn::OptimizerKind;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

/// Launches of the 6th step of `preset` trained with `opt` (the plan replays from the 5th);
/// with `show`, prints them.
fn passes(fuse: bool, preset: Preset, opt: &str, show: bool) -> Result<u64> {
    let backend = std::rc::Rc::new(WebGlBackend::new_headless(WebGlOptions { fuse, self_test: false, ..Default::default() })?);
    let dev = Device::from_rc(backend.clone());
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
    let mut last = 0;
    for step in 0..6 {
        backend.set_pass_log(show && step == 5);
        let before = dev.counters().launches;
        dev.step(batch as u64, || {
            let (xb, yb) = samples.batch(&dev, &idx)?;
            train_batch(&model, opt.as_mut(), preset.loss(), &xb, &yb, &mut sums)
        })?;
        last = dev.counters().launches - before;
    }
    for line in backend.take_pass_log() {
        println!("  {line}");
    }
    Ok(last)
}

fn main() -> Result<()> {
    // `passes MODEL OPT` prints the fused draws of one replayed step of that workload.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [model, opt] = args.as_slice() {
        let preset = match model.as_str() {
            "seed-mlp" => Preset::SeedMlp,
            "cnn" => Preset::Cnn,
            _ => Preset::Mlp,
        };
        println!("{} draws", passes(true, preset, opt, true)?);
        return Ok(());
    }
    println!("{:<10} {:<8} {:>8} {:>8}", "model", "opt", "unfused", "fused");
    for (name, preset) in [("seed-mlp", Preset::SeedMlp), ("mlp", Preset::Mlp), ("cnn", Preset::Cnn)] {
        for opt in ["sgd", "adam"] {
            println!("{name:<10} {opt:<8} {:>8} {:>8}", passes(false, preset, opt, false)?, passes(true, preset, opt, false)?);
        }
    }
    Ok(())
}
