//! `pixelgrad train`.

use std::collections::HashMap;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pixelgrad::nn::presets::{ModelSpec, Preset, SPEC_KEY};
use pixelgrad::nn::train::{fit, Callbacks, EpochLog, FitOptions, Samples, StepLog};
use pixelgrad::nn::{io, Mode, Module, OptimizerKind, Precision, Schedule};

use crate::dataset::{self, DatasetSpec};
use crate::weights::WeightDumper;
use crate::{backend, plot, CliResult, Context};

#[derive(Args)]
pub struct TrainArgs {
    /// digits (embedded default) | idx:DIR | csv:PATH
    #[arg(long, default_value = "digits")]
    pub dataset: String,
    /// seed-mlp | mlp | cnn
    #[arg(long, default_value = "mlp")]
    pub model: String,
    /// auto | cpu | webgpu | webgl
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Passes over the training set [default: per model and data set]
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Samples per step [default: 1 for seed-mlp, 32 otherwise]
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Learning rate [default: 0.5 for seed-mlp (sgd), 0.001 otherwise (adam)]
    #[arg(long)]
    pub lr: Option<f32>,
    /// sgd | momentum | nesterov | adam | adamw | rmsprop [default: sgd for seed-mlp, adam otherwise]
    #[arg(long)]
    pub optimizer: Option<String>,
    /// Learning-rate schedule: constant | cosine | step | warmup
    #[arg(long, default_value = "constant")]
    pub schedule: String,
    /// Seed for weights, shuffling and the digits split
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Read loss/accuracy back from the device every N steps (one row of metrics.csv each)
    #[arg(long, default_value_t = 10)]
    pub log_every: usize,
    /// Output folder for model.safetensors, metrics.csv and loss.png
    #[arg(long, default_value = "runs/last")]
    pub out: PathBuf,
    /// Print one JSON object with the results as the last line of stdout
    #[arg(long)]
    pub json: bool,
    /// Draw the first layer's weights into DIR/epoch-NNN.png after every epoch (on the GPU,
    /// through the WebGL backend's heatmap program)
    #[arg(long)]
    pub dump_weights: Option<PathBuf>,
    /// Pace training for watching: at most this many steps per second (same results)
    #[arg(long)]
    pub max_steps_per_second: Option<f64>,
    /// f32 | mixed: mixed keeps activations and gradients in f16 with f32 master weights and
    /// dynamic loss scaling; on a backend that cannot, it trains f32 and says so
    #[arg(long, default_value = "f32")]
    pub precision: String,
}

struct Defaults {
    epochs: usize,
    batch: usize,
    lr: f32,
    optimizer: &'static str,
}

fn defaults(preset: Preset, spec: &DatasetSpec) -> Defaults {
    let digits = matches!(spec, DatasetSpec::Digits);
    match preset {
        Preset::SeedMlp => Defaults { epochs: if digits { 10 } else { 1 }, batch: 1, lr: 0.5, optimizer: "sgd" },
        Preset::Mlp => {
            Defaults { epochs: if digits { 30 } else { 2 }, batch: 32, lr: if digits { 0.003 } else { 0.002 }, optimizer: "adam" }
        }
        Preset::Cnn => {
            Defaults { epochs: if digits { 20 } else { 1 }, batch: 32, lr: if digits { 0.003 } else { 0.001 }, optimizer: "adam" }
        }
    }
}

fn schedule(name: &str, total_steps: usize) -> CliResult<Schedule> {
    Ok(match name {
        "constant" => Schedule::Constant,
        "cosine" => Schedule::Cosine { total: total_steps, min_lr: 0.0 },
        "step" => Schedule::Step { every: (total_steps / 3).max(1), gamma: 0.3 },
        "warmup" => Schedule::Warmup { steps: (total_steps / 20).max(1), then: Box::new(Schedule::Constant) },
        other => return Err(format!("unknown schedule '{other}' (constant, cosine, step, warmup)")),
    })
}

/// Progress bar plus the logs that go to metrics.csv and loss.png.
struct Progress<'a> {
    model: &'a dyn Module,
    dumper: Option<WeightDumper>,
    bar: ProgressBar,
    epochs: usize,
    steps: Vec<StepLog>,
    quiet: bool,
    epoch_start: Instant,
}

impl Callbacks for Progress<'_> {
    fn on_step(&mut self, log: &StepLog) -> ControlFlow<()> {
        self.bar.set_position(log.step as u64);
        self.bar.set_message(format!("loss {:.4} acc {:.3}", log.loss, log.accuracy.unwrap_or(f32::NAN)));
        self.steps.push(log.clone());
        ControlFlow::Continue(())
    }
    fn on_epoch(&mut self, log: &EpochLog) -> ControlFlow<()> {
        let line = format!(
            "epoch {:>3}/{}  train loss {:.4}  train acc {:.4}  test loss {:.4}  test acc {:.4}  ({:.1} s)",
            log.epoch + 1,
            self.epochs,
            log.train_loss,
            log.train_accuracy.unwrap_or(f32::NAN),
            log.test_loss.unwrap_or(f32::NAN),
            log.test_accuracy.unwrap_or(f32::NAN),
            self.epoch_start.elapsed().as_secs_f32()
        );
        self.epoch_start = Instant::now();
        let line = match &self.dumper {
            Some(d) => match d.dump(self.model, log.epoch) {
                Ok(p) => format!("{line}  weights: {}", p.display()),
                Err(e) => format!("{line}  (weights not drawn: {e})"),
            },
            None => line,
        };
        if self.quiet {
            self.bar.suspend(|| eprintln!("{line}"));
        } else if self.bar.is_hidden() {
            println!("{line}");
        } else {
            self.bar.println(line);
        }
        ControlFlow::Continue(())
    }
}

pub fn run(a: TrainArgs) -> CliResult<()> {
    let preset = Preset::parse(&a.model).ctx()?;
    let spec = DatasetSpec::parse(&a.dataset)?;
    let d = defaults(preset, &spec);
    let epochs = a.epochs.unwrap_or(d.epochs);
    let batch = a.batch_size.unwrap_or(d.batch);
    let lr = a.lr.unwrap_or(d.lr);
    let opt_name = a.optimizer.clone().unwrap_or_else(|| d.optimizer.to_string());
    let kind = OptimizerKind::parse(&opt_name).ctx()?;
    let precision = Precision::parse(&a.precision).ctx()?;
    if batch == 0 || a.log_every == 0 {
        return Err("--batch-size and --log-every must be at least 1".into());
    }
    if !(lr.is_finite() && lr > 0.0) {
        return Err(format!("--lr must be a positive number, got {lr}"));
    }

    let data = dataset::load(&spec, preset, a.seed)?;
    let sel = backend::select(&a.backend)?;
    let dev = sel.device.clone();
    // Human-readable lines go to stderr when --json owns stdout.
    let say = |s: String| if a.json { eprintln!("{s}") } else { println!("{s}") };
    say(format!("backend: {} [{}]", sel.name, sel.explain()));
    say(format!(
        "data: {} — {} train / {} test samples of {:?}, {} classes",
        data.name,
        data.train.len(),
        data.test.len(),
        data.shape(),
        data.classes()
    ));

    let model_spec = ModelSpec { preset, input: data.shape(), classes: data.classes() };
    let model = model_spec.build(&dev, a.seed).ctx()?;
    say(format!("model: {} ({} parameters)", model.describe(), model.num_params()));
    say(format!("training: {epochs} epochs, batch {batch}, {opt_name} lr {lr}, seed {}, {}", a.seed, precision.name()));

    let steps_per_epoch = data.train.len().div_ceil(batch);
    let total = steps_per_epoch * epochs;
    let mut opt = kind.build(lr);
    let opts = FitOptions {
        epochs,
        batch_size: batch,
        read_every: a.log_every,
        shuffle: true,
        seed: a.seed,
        schedule: schedule(&a.schedule, total)?,
        max_steps_per_second: a.max_steps_per_second,
        precision,
        ..Default::default()
    };
    let shape = data.shape();
    let train = Samples::new(data.train.images(), &shape, data.train.labels()).ctx()?;
    let test = Samples::new(data.test.images(), &shape, data.test.labels()).ctx()?;

    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} steps [{elapsed_precise}<{eta_precise}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let dumper = match &a.dump_weights {
        Some(dir) => Some(WeightDumper::new(dir, data.shape())?),
        None => None,
    };
    let mut progress = Progress { model: &model, dumper, bar, epochs, steps: Vec::new(), quiet: a.json, epoch_start: Instant::now() };
    let activations = activation_bytes(&model, preset, &dev, &train, batch)?;
    let t0 = Instant::now();
    let history = fit(&model, opt.as_mut(), preset.loss(), &dev, train, Some(test), &opts, &mut progress).ctx()?;
    let train_seconds = t0.elapsed().as_secs_f64();
    progress.bar.finish_and_clear();

    let last = history.epochs.last().ok_or("training ran no epoch (--epochs 0?)")?;
    let (test_loss, test_acc) = (last.test_loss.unwrap_or(f32::NAN), last.test_accuracy.unwrap_or(f32::NAN));

    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let mut meta = HashMap::new();
    meta.insert(SPEC_KEY.to_string(), model_spec.to_meta());
    meta.insert("pixelgrad.dataset".to_string(), data.name.clone());
    let model_path = a.out.join("model.safetensors");
    io::save(&model, &model_path, &meta).ctx()?;
    write_metrics(&a.out.join("metrics.csv"), &history.steps, &history.epochs, steps_per_epoch)?;
    plot::loss_png(&a.out.join("loss.png"), &history.steps, &format!("{} on {} ({})", preset.name(), data.name, sel.device.kind()))?;

    let mixed = history.mixed.clone();
    if let Some(m) = &mixed {
        match &m.fallback {
            Some(why) => say(format!("precision: f32 ({why})")),
            None => say(format!(
                "precision: mixed, final loss scale {}, {} steps skipped for f16 overflow; activations kept for backward {} bytes vs {} in f32 ({:.2}x)",
                m.final_scale,
                m.skipped_steps,
                activations.1,
                activations.0,
                activations.1 as f64 / activations.0.max(1) as f64
            )),
        }
    }
    say(format!(
        "done: test accuracy {test_acc:.4}, test loss {test_loss:.4}, {train_seconds:.1} s; wrote {}, metrics.csv, loss.png",
        model_path.display()
    ));
    if a.json {
        let j = serde_json::json!({
            "test_accuracy": test_acc,
            "test_loss": test_loss,
            "train_loss": last.train_loss,
            "epochs": history.epochs.len(),
            "steps": history.steps.last().map(|s| s.step).unwrap_or(0),
            "backend": sel.device.kind().as_str(),
            "backend_name": sel.name,
            "model": preset.name(),
            "dataset": data.name,
            "train_seconds": train_seconds,
            "out": a.out.display().to_string(),
            "losses": history.steps.iter().map(|s| s.loss).collect::<Vec<_>>(),
            "precision": mixed.as_ref().map(|m| m.precision).unwrap_or("f32"),
            "precision_fallback": mixed.as_ref().and_then(|m| m.fallback.clone()),
            "loss_scale": mixed.as_ref().filter(|m| m.fallback.is_none()).map(|m| m.final_scale),
            "skipped_steps": mixed.as_ref().map(|m| m.skipped_steps).unwrap_or(0),
            "activation_bytes_f32": activations.0,
            "activation_bytes": if mixed.as_ref().is_some_and(|m| m.fallback.is_none()) { activations.1 } else { activations.0 },
        });
        let mut out = std::io::stdout().lock();
        writeln!(out, "{j}").ctx()?;
    }
    Ok(())
}

/// Bytes one training step's graph keeps for the backward pass on the first batch, in f32 and
/// in a mixed-precision scope (the same where the device cannot narrow): what `--precision
/// mixed` saves. One forward pass each, no update.
fn activation_bytes(model: &dyn Module, preset: Preset, dev: &pixelgrad::Device, train: &Samples, batch: usize) -> CliResult<(u64, u64)> {
    let idx: Vec<usize> = (0..batch.min(train.len())).collect();
    let (x, y) = train.batch(dev, &idx).ctx()?;
    let bytes = |mixed: bool| -> CliResult<u64> {
        let _g = mixed.then(pixelgrad::mixed_precision);
        let out = model.forward(&x, Mode::Train).ctx()?;
        Ok(preset.loss().compute(&out, &y).ctx()?.graph_bytes())
    };
    Ok((bytes(false)?, bytes(true)?))
}

/// `step,epoch,loss,accuracy,test_accuracy` — one row per readback; test accuracy on the last
/// row of each epoch.
fn write_metrics(path: &std::path::Path, steps: &[StepLog], epochs: &[EpochLog], steps_per_epoch: usize) -> CliResult<()> {
    let mut s = String::from("step,epoch,loss,accuracy,test_accuracy\n");
    for (i, st) in steps.iter().enumerate() {
        let end_of_epoch = st.step % steps_per_epoch == 0 || steps.get(i + 1).is_none_or(|n| n.epoch != st.epoch);
        let test = if end_of_epoch {
            epochs.get(st.epoch).and_then(|e| e.test_accuracy).map(|a| a.to_string()).unwrap_or_default()
        } else {
            String::new()
        };
        s.push_str(&format!(
            "{},{},{},{},{}\n",
            st.step,
            st.epoch + 1,
            st.loss,
            st.accuracy.map(|a| a.to_string()).unwrap_or_default(),
            test
        ));
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}
