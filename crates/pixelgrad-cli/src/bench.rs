//! `pixelgrad bench`: matmul GFLOP/s and training steps/s per backend, measured side by side in
//! one run so the ratios mean something on a noisy machine. Not a test: nothing is asserted.

use std::time::Instant;

use clap::Args;
use pixelgrad::nn::presets::{ModelSpec, Preset};
use pixelgrad::nn::train::Samples;
use pixelgrad::nn::{Mode, Module, OptimizerKind};
use pixelgrad::{Device, Tensor};

use crate::{backend, CliResult, Context};

#[derive(Args)]
pub struct BenchArgs {
    /// Backends to compare (comma-separated); unavailable ones are reported and skipped
    #[arg(long, default_value = "cpu,webgpu,webgl")]
    pub backends: String,
    /// Matmul sizes n (n x n times n x n)
    #[arg(long, default_value = "256,1024,2048")]
    pub matmul: String,
    /// Seconds spent per measurement (after warm-up)
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Write the results as JSON to this file too
    #[arg(long)]
    pub json_out: Option<std::path::PathBuf>,
}

/// Repeats `f` until `secs` have passed (at least `min` times); returns runs per second.
/// Calls per second of `f` over at least `secs` seconds and `min` calls. `f(true)` must end with a
/// readback. Two warm-up calls, the second read back, come first: they compile kernels and fill
/// buffer pools, and on lavapipe the readback also makes sure the driver's own first-run shader
/// compiles (seconds each) have finished before the clock starts.
fn rate(secs: f64, min: usize, mut f: impl FnMut(bool) -> CliResult<()>) -> CliResult<f64> {
    f(false)?;
    f(true)?;
    let t0 = Instant::now();
    let mut n = 0;
    while n < min || t0.elapsed().as_secs_f64() < secs {
        f(false)?;
        n += 1;
    }
    Ok(n as f64 / t0.elapsed().as_secs_f64())
}

fn matmul_gflops(dev: &Device, n: usize, secs: f64) -> CliResult<f64> {
    let a = Tensor::rand_uniform(dev, [n, n], -1.0, 1.0, 1).ctx()?;
    let b = Tensor::rand_uniform(dev, [n, n], -1.0, 1.0, 2).ctx()?;
    // Batches of launches end with one small readback so queued GPU work is really done.
    let per = if n <= 512 { 8 } else { 2 };
    let r = rate(secs, 1, |_| {
        let mut c = a.matmul(&b).ctx()?;
        for _ in 1..per {
            c = a.matmul(&b).ctx()?;
        }
        c.slice(0, 0, 1).ctx()?.slice(1, 0, 1).ctx()?.to_vec().ctx()?;
        Ok(())
    })?;
    Ok(r * per as f64 * 2.0 * (n as f64).powi(3) / 1e9)
}

/// The training workloads: (label, preset, input [c,h,w], classes, batch).
const WORKLOADS: [(&str, Preset, [usize; 3], usize, usize); 3] = [
    ("seed-mlp (48-64-2, batch 1)", Preset::SeedMlp, [1, 6, 8], 2, 1),
    ("mlp (784-256-10, batch 64)", Preset::Mlp, [1, 28, 28], 10, 64),
    ("cnn (28x28, batch 32)", Preset::Cnn, [1, 28, 28], 10, 32),
];

/// Training steps per second. With `plan`, each step runs inside `Device::step`, as `fit`
/// does (GPU backends replay a prepared step plan); without, every launch is prepared afresh
/// (the comparison row shows what the plan saves).
#[allow(clippy::too_many_arguments)]
fn steps_per_second(
    dev: &Device,
    preset: Preset,
    input: [usize; 3],
    classes: usize,
    batch: usize,
    secs: f64,
    plan: bool,
) -> CliResult<f64> {
    let spec = ModelSpec { preset, input, classes };
    let model = spec.build(dev, 1).ctx()?;
    let per: usize = input.iter().product();
    let n = batch * 8;
    let x: Vec<f32> = (0..n * per).map(|i| pixelgrad::rng::uniform(9, i as u64)).collect();
    let y: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    let samples = Samples::new(&x, &input, &y).ctx()?;
    let kind = if preset == Preset::SeedMlp { "sgd" } else { "adam" };
    let mut opt = OptimizerKind::parse(kind).ctx()?.build(0.01);
    let loss_fn = preset.loss();
    let mut i = 0usize;
    let mut last_loss: Option<Tensor> = None;
    let r = rate(secs, 3, |sync| {
        let idx: Vec<usize> = (0..batch).map(|k| (i * batch + k) % n).collect();
        i += 1;
        let key = pixelgrad::nn::step_key(&model, &*opt, &[batch]);
        let mut body = || -> pixelgrad::Result<Tensor> {
            let (xb, yb) = samples.batch(dev, &idx)?;
            let out = model.forward(&xb, Mode::Train)?;
            let l = loss_fn.compute(&out, &yb)?;
            l.backward()?;
            opt.step(&model)?;
            Ok(l.detach())
        };
        // A step inside `Device::step` ends with its own submission.
        let l = if plan { dev.step(key, body).ctx()? } else { body().ctx()? };
        last_loss = Some(l);
        // read back every 10 steps, as the training loop does
        if sync || i % 10 == 0 {
            if let Some(l) = &last_loss {
                l.to_vec().ctx()?;
            }
        } else if !plan {
            dev.flush().ctx()?;
        }
        Ok(())
    })?;
    if let Some(l) = last_loss {
        l.to_vec().ctx()?;
    }
    Ok(r)
}

pub fn run(a: BenchArgs) -> CliResult<()> {
    let sizes: Vec<usize> = a
        .matmul
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().parse().map_err(|_| format!("bad matmul size '{s}'")))
        .collect::<CliResult<_>>()?;
    let mut devices = Vec::new();
    for b in a.backends.split(',') {
        match backend::select(b.trim()) {
            Ok(s) => {
                println!("{:<7} {}", b, s.name);
                devices.push((b.trim().to_string(), s.device));
            }
            Err(e) => println!("{b:<7} skipped: {e}"),
        }
    }
    let mut rows: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for &n in &sizes {
        let label = format!("matmul {n}^3 (GFLOP/s)");
        let mut vals = Vec::new();
        for (_, dev) in &devices {
            vals.push(matmul_gflops(dev, n, a.seconds).map_err(|e| eprintln!("{label}: {e}")).ok());
        }
        print_row(&label, &vals);
        rows.push((label, vals));
    }
    for (label, preset, input, classes, batch) in WORKLOADS {
        for plan in [true, false] {
            let label = if plan { format!("{label} steps/s") } else { format!("{label} steps/s, no step plan") };
            let mut vals = Vec::new();
            for (_, dev) in &devices {
                let v = steps_per_second(dev, preset, input, classes, batch, a.seconds, plan);
                vals.push(v.map_err(|e| eprintln!("{label}: {e}")).ok());
            }
            print_row(&label, &vals);
            rows.push((label, vals));
        }
    }
    if let Some(path) = &a.json_out {
        let names: Vec<&str> = devices.iter().map(|(n, _)| n.as_str()).collect();
        let j = serde_json::json!({
            "backends": devices.iter().map(|(n, d)| serde_json::json!({"backend": n, "name": d.name()})).collect::<Vec<_>>(),
            "rows": rows.iter().map(|(l, v)| serde_json::json!({"workload": l, "values": names.iter().zip(v).map(|(n, x)| (n.to_string(), serde_json::json!(x))).collect::<serde_json::Map<_, _>>()})).collect::<Vec<_>>(),
        });
        std::fs::write(path, j.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Values side by side, with each one's ratio to the first backend (the CPU by default).
fn print_row(label: &str, vals: &[Option<f64>]) {
    let base = vals.first().copied().flatten();
    let cells: Vec<String> = vals
        .iter()
        .map(|v| match (v, base) {
            (Some(x), Some(b)) if b > 0.0 => format!("{x:>10.2} ({:.2}x)", x / b),
            (Some(x), _) => format!("{x:>10.2}"),
            (None, _) => format!("{:>10}", "failed"),
        })
        .collect();
    println!("{label:<52} {}", cells.join("  "));
}
