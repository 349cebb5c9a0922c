//! `pixelgrad bench`: matmul GFLOP/s and training steps/s per backend, measured side by side in
//! one run so the ratios mean something on a noisy machine. Not a test: nothing is asserted.
//!
//! Two sets of training workloads: the CLI's presets (`preset-*`, with and without step plans)
//! and the browser benchmark's exact models (`seed-mlp`, `mnist-mlp`, `cnn`, as defined in
//! `web/bench/lib/workloads.mjs`, plain SGD), which `cargo xtask bench-burn` compares with
//! Burn's wgpu backend. For every training workload and backend the run also counts
//! `passes_per_step`: the GPU launches (WebGPU dispatches, WebGL draws, CPU kernels) of one
//! training step replayed from its step plan, with SGD and with Adam.

use std::time::Instant;

use clap::Args;
use pixelgrad::nn::init::{Init, WeightInit};
use pixelgrad::nn::layers::{Activation, Conv2d, Flatten, Linear, MaxPool2d};
use pixelgrad::nn::presets::{ModelSpec, Preset};
use pixelgrad::nn::train::Samples;
use pixelgrad::nn::{Loss, Mode, Module, OptimizerKind, Sequential};
use pixelgrad::{Device, Tensor};

use crate::{backend, CliResult, Context};

#[derive(Args)]
pub struct BenchArgs {
    /// Backends to compare (comma-separated); unavailable ones are reported and skipped.
    /// `webgpu-nosubgroups` is WebGPU without subgroup operations (lavapipe's matmul without
    /// shared A loads), for before/after comparisons in one run
    #[arg(long, default_value = "cpu,webgpu,webgl")]
    pub backends: String,
    /// Matmul sizes n (n x n times n x n)
    #[arg(long, default_value = "256,1024,2048")]
    pub matmul: String,
    /// Workloads (comma-separated): matmul, preset-seed-mlp, preset-mlp, preset-cnn, seed-mlp,
    /// mnist-mlp, cnn, or `all`
    #[arg(long, default_value = "all")]
    pub workloads: String,
    /// Seconds spent per measurement (after warm-up)
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Skip counting passes per replayed step
    #[arg(long)]
    pub no_passes: bool,
    /// Write the results as JSON to this file too
    #[arg(long)]
    pub json_out: Option<std::path::PathBuf>,
}

/// One row of the passes table: workload, optimizer, and per backend (SGD, Adam) launches.
type PassRow<'a> = (&'a Train, &'static str, Vec<Option<(u64, u64)>>);

/// Calls per second of `f` over at least `secs` seconds and `min` calls. `f(true)` must end with a
/// readback. `warm` warm-up calls, the last read back, come first: they compile kernels, fill
/// buffer pools and record step plans (replayed from the fifth step), and on lavapipe the
/// readback also makes sure the driver's own first-run shader compiles (seconds each) have
/// finished before the clock starts.
fn rate(secs: f64, min: usize, warm: usize, mut f: impl FnMut(bool) -> CliResult<()>) -> CliResult<f64> {
    for i in 0..warm {
        f(i + 1 == warm)?;
    }
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
    let r = rate(secs, 1, 2, |_| {
        let mut c = a.matmul(&b).ctx()?;
        for _ in 1..per {
            c = a.matmul(&b).ctx()?;
        }
        c.slice(0, 0, 1).ctx()?.slice(1, 0, 1).ctx()?.to_vec().ctx()?;
        Ok(())
    })?;
    Ok(r * per as f64 * 2.0 * (n as f64).powi(3) / 1e9)
}

/// A model architecture of the benchmark.
#[derive(Clone, Copy)]
enum Arch {
    /// One of the CLI's presets.
    Preset(Preset),
    /// The browser's mnist-mlp: 784 → 128 ReLU → 10.
    MnistMlp,
    /// The browser's cnn: conv 3x3x8 ReLU, maxpool 2, conv 3x3x16 ReLU, maxpool 2, dense
    /// (no padding).
    SmallCnn,
}

/// A training workload: the model, its data shape, loss and optimizer.
struct Train {
    /// Name for `--workloads`.
    name: &'static str,
    label: &'static str,
    arch: Arch,
    /// Input [c, h, w] per sample.
    input: [usize; 3],
    classes: usize,
    batch: usize,
    loss: Loss,
    optimizer: &'static str,
    lr: f32,
    /// Also measure without step plans (the CLI presets' comparison rows).
    no_plan_row: bool,
}

const TRAIN: [Train; 6] = [
    Train {
        name: "preset-seed-mlp",
        label: "seed-mlp (48-64-2, batch 1)",
        arch: Arch::Preset(Preset::SeedMlp),
        input: [1, 6, 8],
        classes: 2,
        batch: 1,
        loss: Loss::Mse,
        optimizer: "sgd",
        lr: 0.01,
        no_plan_row: true,
    },
    Train {
        name: "preset-mlp",
        label: "mlp (784-256-10, batch 64)",
        arch: Arch::Preset(Preset::Mlp),
        input: [1, 28, 28],
        classes: 10,
        batch: 64,
        loss: Loss::CrossEntropy,
        optimizer: "adam",
        lr: 0.01,
        no_plan_row: true,
    },
    Train {
        name: "preset-cnn",
        label: "cnn (28x28, batch 32)",
        arch: Arch::Preset(Preset::Cnn),
        input: [1, 28, 28],
        classes: 10,
        batch: 32,
        loss: Loss::CrossEntropy,
        optimizer: "adam",
        lr: 0.01,
        no_plan_row: true,
    },
    // The browser benchmark's workloads (web/bench/lib/workloads.mjs), plain SGD.
    Train {
        name: "seed-mlp",
        label: "seed-mlp browser (48-64-2 sigmoid, MSE, SGD, batch 1)",
        arch: Arch::Preset(Preset::SeedMlp),
        input: [1, 1, 48],
        classes: 2,
        batch: 1,
        loss: Loss::Mse,
        optimizer: "sgd",
        lr: 0.5,
        no_plan_row: false,
    },
    Train {
        name: "mnist-mlp",
        label: "mnist-mlp browser (784-128-10, SGD, batch 64)",
        arch: Arch::MnistMlp,
        input: [1, 28, 28],
        classes: 10,
        batch: 64,
        loss: Loss::CrossEntropy,
        optimizer: "sgd",
        lr: 0.1,
        no_plan_row: false,
    },
    Train {
        name: "cnn",
        label: "cnn browser (conv8-pool-conv16-pool-dense, SGD, batch 32)",
        arch: Arch::SmallCnn,
        input: [1, 28, 28],
        classes: 10,
        batch: 32,
        loss: Loss::CrossEntropy,
        optimizer: "sgd",
        lr: 0.05,
        no_plan_row: false,
    },
];

impl Train {
    fn build(&self, dev: &Device) -> pixelgrad::Result<Sequential> {
        let mut init = Init::new(1);
        let [c, h, w] = self.input;
        Ok(match self.arch {
            Arch::Preset(preset) => ModelSpec { preset, input: self.input, classes: self.classes }.build(dev, 1)?,
            Arch::MnistMlp => Sequential::new()
                .push(Flatten)
                .push(Linear::with_init(dev, c * h * w, 128, WeightInit::Glorot, true, &mut init)?)
                .push(Activation::Relu)
                .push(Linear::with_init(dev, 128, self.classes, WeightInit::Glorot, true, &mut init)?),
            Arch::SmallCnn => {
                // 'valid' convolutions: 28 → 26 → pool 13 → 11 → pool 5.
                let (h2, w2) = (((h - 2) / 2 - 2) / 2, ((w - 2) / 2 - 2) / 2);
                Sequential::new()
                    .push(Conv2d::new(dev, c, 8, 3, 1, 0, &mut init)?)
                    .push(Activation::Relu)
                    .push(MaxPool2d::new(2))
                    .push(Conv2d::new(dev, 8, 16, 3, 1, 0, &mut init)?)
                    .push(Activation::Relu)
                    .push(MaxPool2d::new(2))
                    .push(Flatten)
                    .push(Linear::with_init(dev, 16 * h2 * w2, self.classes, WeightInit::Glorot, true, &mut init)?)
            }
        })
    }
}

/// A model, its optimizer and eight batches of deterministic data, ready to step.
struct Trainer<'a> {
    dev: &'a Device,
    w: &'a Train,
    model: Sequential,
    opt: Box<dyn pixelgrad::nn::Optimizer>,
    x: Vec<f32>,
    y: Vec<u32>,
    /// Steps run so far (picks the batch).
    i: usize,
    /// Step plan key: one per workload, so two models never share a plan.
    key: u64,
}

impl<'a> Trainer<'a> {
    fn new(dev: &'a Device, w: &'a Train, optimizer: &str, key: u64) -> CliResult<Self> {
        let model = w.build(dev).ctx()?;
        let per: usize = w.input.iter().product();
        let n = w.batch * 8;
        let x = (0..n * per).map(|i| pixelgrad::rng::uniform(9, i as u64)).collect();
        let y = (0..n).map(|i| (i % w.classes) as u32).collect();
        let opt = OptimizerKind::parse(optimizer).ctx()?.build(w.lr);
        Ok(Trainer { dev, w, model, opt, x, y, i: 0, key })
    }

    /// One step (forward, loss, backward, update), inside `Device::step` when `plan`; returns
    /// the loss.
    fn step(&mut self, plan: bool) -> CliResult<Tensor> {
        let samples = Samples::new(&self.x, &self.w.input, &self.y).ctx()?;
        let (batch, n) = (self.w.batch, self.y.len());
        let idx: Vec<usize> = (0..batch).map(|k| (self.i * batch + k) % n).collect();
        self.i += 1;
        let (dev, model, opt, loss) = (self.dev, &self.model, &mut self.opt, self.w.loss);
        let mut body = || -> pixelgrad::Result<Tensor> {
            let (xb, yb) = samples.batch(dev, &idx)?;
            let out = model.forward(&xb, Mode::Train)?;
            let l = loss.compute(&out, &yb)?;
            l.backward()?;
            opt.step(model)?;
            Ok(l.detach())
        };
        // A step inside `Device::step` ends with its own submission.
        if plan {
            dev.step(self.key, body).ctx()
        } else {
            body().ctx()
        }
    }
}

/// Training steps per second. With `plan`, each step runs inside `Device::step`, as `fit`
/// does (GPU backends replay a prepared step plan); without, every launch is prepared afresh
/// (the comparison row shows what the plan saves).
fn steps_per_second(dev: &Device, w: &Train, key: u64, secs: f64, plan: bool) -> CliResult<f64> {
    let mut t = Trainer::new(dev, w, w.optimizer, key)?;
    let mut last_loss: Option<Tensor> = None;
    let r = rate(secs, 3, 6, |sync| {
        let l = t.step(plan)?;
        last_loss = Some(l);
        // read back every 10 steps, as the training loop does
        if sync || t.i % 10 == 0 {
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
    dev.drop_plans();
    Ok(r)
}

/// Launches of one replayed training step: (launches, of them replayed from the plan).
/// Six steps record and settle the plans (both parities), a readback empties the queue, then
/// the counters are read around the seventh step alone.
fn passes_per_step(dev: &Device, w: &Train, optimizer: &str, key: u64) -> CliResult<(u64, u64)> {
    let mut t = Trainer::new(dev, w, optimizer, key)?;
    for _ in 0..6 {
        t.step(true)?;
    }
    t.step(true)?.to_vec().ctx()?;
    let before = dev.counters();
    let l = t.step(true)?;
    let after = dev.counters();
    l.to_vec().ctx()?;
    dev.drop_plans();
    Ok((after.launches - before.launches, after.replayed - before.replayed))
}

pub fn run(a: BenchArgs) -> CliResult<()> {
    let sizes: Vec<usize> = a
        .matmul
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().parse().map_err(|_| format!("bad matmul size '{s}'")))
        .collect::<CliResult<_>>()?;
    let chosen: Vec<&str> = a.workloads.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let known = |w: &str| w == "all" || w == "matmul" || TRAIN.iter().any(|t| t.name == w);
    if let Some(bad) = chosen.iter().find(|w| !known(w)) {
        let names: Vec<&str> = TRAIN.iter().map(|t| t.name).collect();
        return Err(format!("unknown workload '{bad}' (all, matmul, {})", names.join(", ")));
    }
    let want = |w: &str| chosen.iter().any(|c| *c == "all" || *c == w);
    let mut devices = Vec::new();
    for b in a.backends.split(',') {
        let selected = if b.trim() == "webgpu-nosubgroups" {
            let opts = pixelgrad::wgpu::WgpuOptions { subgroups: false, ..Default::default() };
            pixelgrad::wgpu::WgpuBackend::new(opts).map(Device::new).map(|d| (d.name(), d)).map_err(|e| e.to_string())
        } else {
            backend::select(b.trim()).map(|s| (s.name, s.device))
        };
        match selected {
            Ok((name, device)) => {
                println!("{b:<7} {name}");
                devices.push((b.trim().to_string(), device));
            }
            Err(e) => println!("{b:<7} skipped: {e}"),
        }
    }
    // (name, label, one value per backend); names are what `cargo xtask bench-burn` matches.
    let mut rows: Vec<(String, String, Vec<Option<f64>>)> = Vec::new();
    if want("matmul") {
        for &n in &sizes {
            let label = format!("matmul {n}^3 (GFLOP/s)");
            let mut vals = Vec::new();
            for (_, dev) in &devices {
                vals.push(matmul_gflops(dev, n, a.seconds).map_err(|e| eprintln!("{label}: {e}")).ok());
            }
            print_row(&label, &vals);
            rows.push((format!("matmul-{n}"), label, vals));
        }
    }
    for (i, w) in TRAIN.iter().enumerate().filter(|(_, w)| want(w.name)) {
        let key = 1000 + i as u64;
        let plans: &[bool] = if w.no_plan_row { &[true, false] } else { &[true] };
        for &plan in plans {
            let label = if plan { format!("{} steps/s", w.label) } else { format!("{} steps/s, no step plan", w.label) };
            let mut vals = Vec::new();
            for (_, dev) in &devices {
                let v = steps_per_second(dev, w, key, a.seconds, plan);
                vals.push(v.map_err(|e| eprintln!("{label}: {e}")).ok());
            }
            print_row(&label, &vals);
            let name = if plan { w.name.to_string() } else { format!("{}-no-plan", w.name) };
            rows.push((name, label, vals));
        }
    }
    // Passes per replayed step, per (workload, optimizer): one value per backend.
    let mut passes: Vec<PassRow> = Vec::new();
    if !a.no_passes {
        for (i, w) in TRAIN.iter().enumerate().filter(|(_, w)| want(w.name)) {
            for opt in ["sgd", "adam"] {
                let mut vals = Vec::new();
                for (_, dev) in &devices {
                    let v = passes_per_step(dev, w, opt, 2000 + i as u64);
                    vals.push(v.map_err(|e| eprintln!("passes {} {opt}: {e}", w.name)).ok());
                }
                let cells: Vec<String> = vals
                    .iter()
                    .map(|v| match v {
                        // The CPU has no plans (nothing replayed); a GPU step that was not
                        // fully replayed says how much was.
                        Some((l, r)) if *r > 0 && r < l => format!("{l:>10} ({r} replayed)"),
                        Some((l, _)) => format!("{l:>10}"),
                        None => format!("{:>10}", "failed"),
                    })
                    .collect();
                println!("{:<52} {}", format!("passes/step {} {opt}", w.name), cells.join("  "));
                passes.push((w, opt, vals));
            }
        }
    }
    if let Some(path) = &a.json_out {
        let names: Vec<&str> = devices.iter().map(|(n, _)| n.as_str()).collect();
        let per_backend = |v: &[Option<(u64, u64)>], pick: fn(&(u64, u64)) -> u64| -> serde_json::Map<String, serde_json::Value> {
            names.iter().zip(v).map(|(n, x)| (n.to_string(), serde_json::json!(x.as_ref().map(pick)))).collect()
        };
        let j = serde_json::json!({
            "backends": devices.iter().map(|(n, d)| serde_json::json!({"backend": n, "name": d.name()})).collect::<Vec<_>>(),
            "rows": rows.iter().map(|(name, l, v)| serde_json::json!({"name": name, "workload": l, "values": names.iter().zip(v).map(|(n, x)| (n.to_string(), serde_json::json!(x))).collect::<serde_json::Map<_, _>>()})).collect::<Vec<_>>(),
            "passes_per_step": passes.iter().map(|(w, opt, v)| serde_json::json!({
                "workload": w.name,
                "label": w.label,
                "optimizer": opt,
                "values": per_backend(v, |p| p.0),
                "replayed": per_backend(v, |p| p.1),
            })).collect::<Vec<_>>(),
        });
        pixelgrad_durable::write(path, j.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
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
