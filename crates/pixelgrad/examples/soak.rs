//! Long-run check: trains a small MLP on the embedded digits for many steps through `fit`
//! (host checkpoints on, their interval chosen automatically) and samples the process's
//! resident memory and the backend's `bytes_in_use` every `--sample` steps. Memory must stay
//! flat after warm-up (the first 10 % of steps): the run fails when RSS grows by more than
//! `--rss-bound-mib` (default 16 MiB) or device memory by more than 1 MiB after warm-up.
//! Not a test (minutes of run time); the issue-17 numbers come from it.
//!
//! `cargo run --release -p pixelgrad --example soak -- [cpu|webgpu|webgl] [STEPS]`
//! (defaults: cpu, 100000; add `--features webgpu` / `webgl` for the GPU backends).

use std::ops::ControlFlow;

use pixelgrad::nn::presets::{ModelSpec, Preset};
use pixelgrad::nn::train::{fit, Callbacks, FitOptions, Samples, StepLog};
use pixelgrad::nn::OptimizerKind;
use pixelgrad::{cpu::CpuBackend, data, Device};

fn device(name: &str) -> Result<Device, Box<dyn std::error::Error>> {
    match name {
        "cpu" => Ok(Device::new(CpuBackend::new())),
        #[cfg(feature = "webgpu")]
        "webgpu" => Ok(Device::new(pixelgrad::wgpu::WgpuBackend::new(Default::default())?)),
        #[cfg(feature = "webgl")]
        "webgl" => Ok(Device::new(pixelgrad::webgl::WebGlBackend::new_headless(Default::default())?)),
        other => Err(format!("unknown or disabled backend '{other}' (cpu; webgpu/webgl need --features)").into()),
    }
}

/// Resident set size in bytes (Linux `/proc/self/statm`; 0 elsewhere).
fn rss() -> u64 {
    let page = 4096;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |p| p * page)
}

struct Sampler {
    dev: Device,
    every: usize,
    next: usize,
    samples: Vec<(usize, u64, u64, f32)>,
}

impl Callbacks for Sampler {
    fn on_step(&mut self, log: &StepLog) -> ControlFlow<()> {
        if log.step >= self.next {
            self.next += self.every;
            self.samples.push((log.step, rss(), self.dev.counters().bytes_in_use, log.loss));
        }
        ControlFlow::Continue(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "cpu".into());
    let steps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(100_000);
    let rss_bound_mib: u64 = 16;
    let dev = device(&name)?;
    let set = data::digits()?;
    let shape = [1usize, 8, 8];
    let samples = Samples::new(set.images(), &shape, set.labels())?;
    let model = ModelSpec { preset: Preset::Mlp, input: shape, classes: 10 }.build(&dev, 1)?;
    let mut opt = OptimizerKind::parse("adam")?.build(0.001);
    let batch = 32;
    let per_epoch = samples.len().div_ceil(batch);
    let epochs = steps.div_ceil(per_epoch);
    let opts = FitOptions { epochs, batch_size: batch, read_every: 50, seed: 1, ..Default::default() };
    let every = (steps / 100).max(50);
    let mut cb = Sampler { dev: dev.clone(), every, next: every, samples: Vec::new() };
    println!("{}: {} steps ({epochs} epochs of {per_epoch}), batch {batch}", dev.name(), epochs * per_epoch);
    let t0 = std::time::Instant::now();
    let h = fit(&model, opt.as_mut(), Preset::Mlp.loss(), &dev, samples, None, &opts, &mut cb)?;
    let secs = t0.elapsed().as_secs_f64();
    let warm = cb.samples.len() / 10;
    let (w_step, w_rss, w_dev, _) = cb.samples[warm];
    let max_rss = cb.samples[warm..].iter().map(|s| s.1).max().unwrap_or(0);
    let max_dev = cb.samples[warm..].iter().map(|s| s.2).max().unwrap_or(0);
    let (l_step, l_rss, l_dev, l_loss) = *cb.samples.last().ok_or("no samples")?;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "{:.1} s ({:.3} ms/step); checkpoints: {} every {} steps, {:.3} s in all ({:.2} % of the run)",
        secs,
        1e3 * secs / (epochs * per_epoch) as f64,
        h.checkpoints,
        h.checkpoint_every,
        h.checkpoint_seconds,
        100.0 * h.checkpoint_seconds / secs
    );
    println!(
        "RSS: {:.1} MiB at step {w_step} (after warm-up), max {:.1} MiB after it, {:.1} MiB at step {l_step}",
        mib(w_rss),
        mib(max_rss),
        mib(l_rss)
    );
    println!("device bytes in use: {:.2} MiB after warm-up, max {:.2} MiB, {:.2} MiB at the end", mib(w_dev), mib(max_dev), mib(l_dev));
    println!("loss at the end {l_loss:.4}; stopped: {:?}", h.stopped);
    let rss_growth = max_rss.saturating_sub(w_rss);
    let dev_growth = max_dev.saturating_sub(w_dev);
    if rss_growth > rss_bound_mib << 20 || dev_growth > 1 << 20 {
        return Err(format!("memory grew after warm-up: RSS +{:.1} MiB, device +{:.2} MiB", mib(rss_growth), mib(dev_growth)).into());
    }
    println!("flat: RSS +{:.2} MiB, device +{:.2} MiB after warm-up (bounds {rss_bound_mib} MiB, 1 MiB)", mib(rss_growth), mib(dev_growth));
    Ok(())
}
