//! `pixelgrad train`.
//!
//! Every `--checkpoint-every` steps the run is saved to `OUT/checkpoint.safetensors` (weights,
//! optimizer state, where in which epoch, the logs so far, and the settings that decide the
//! weights: [`RunConfig`]); `--resume` goes on from it and ends with the weights an
//! uninterrupted run would have. Every file is written through `pixelgrad_durable`, so a crash
//! leaves each file whole (old or new). When the run ends the checkpoint is removed.

use std::collections::HashMap;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pixelgrad::nn::presets::{Preset, SPEC_KEY};
use pixelgrad::nn::train::{fit, Callbacks, EpochLog, FitOptions, PrecisionAction, ResumePoint, Samples, StepLog, Stopped};
use pixelgrad::nn::{io, resume, Loss, Mode, Module, OptimizerKind, Precision, Schedule};

use crate::dataset::{self, DatasetSpec, Loaded};
use crate::model::{self, ModelArg};
use crate::outdir::{self, Prior, CHECKPOINT_FILE, DEFAULT_OUT};
use crate::weights::WeightDumper;
use crate::{backend, plot, CliResult, Context};

#[derive(Args)]
pub struct TrainArgs {
    /// digits (embedded default) | idx:DIR | csv:PATH
    #[arg(long, default_value = "digits")]
    pub dataset: String,
    /// seed-mlp | mlp | cnn | FILE.json (a model description: see the book's "Models" page)
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
    /// Output folder for model.safetensors, metrics.csv, loss.png and checkpoint.safetensors.
    /// runs/last (the default) is overwritten; another folder that exists with files in it only
    /// with --force
    #[arg(long, default_value = DEFAULT_OUT)]
    pub out: PathBuf,
    /// Overwrite the files of an existing, non-empty --out folder
    #[arg(long)]
    pub force: bool,
    /// Save a checkpoint (weights, optimizer state, position in the data, metrics so far) to
    /// OUT/checkpoint.safetensors every N steps, for --resume after a crash; 0: never
    #[arg(long, default_value_t = 100)]
    pub checkpoint_every: usize,
    /// Continue the run saved in --out from its checkpoint, with its settings (flags given
    /// must match them); ends with the same weights as a run never interrupted
    #[arg(long)]
    pub resume: bool,
    /// Stop after N steps in all, saving a checkpoint there (--resume continues)
    #[arg(long)]
    pub max_steps: Option<usize>,
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

/// A description file trains with the defaults of `mlp`.
fn defaults(preset: Option<Preset>, spec: &DatasetSpec) -> Defaults {
    let digits = matches!(spec, DatasetSpec::Digits);
    match preset.unwrap_or(Preset::Mlp) {
        Preset::SeedMlp => Defaults { epochs: if digits { 10 } else { 1 }, batch: 1, lr: 0.5, optimizer: "sgd" },
        Preset::Mlp => {
            Defaults { epochs: if digits { 30 } else { 2 }, batch: 32, lr: if digits { 0.003 } else { 0.002 }, optimizer: "adam" }
        }
        Preset::Cnn => {
            Defaults { epochs: if digits { 20 } else { 1 }, batch: 32, lr: if digits { 0.003 } else { 0.001 }, optimizer: "adam" }
        }
    }
}

/// The settings that decide a run's weights: saved in its checkpoint, and what `--resume`
/// goes on with.
#[derive(Clone, Debug, PartialEq)]
struct RunConfig {
    dataset: String,
    model: String,
    epochs: usize,
    batch: usize,
    lr: f32,
    optimizer: String,
    schedule: String,
    seed: u64,
    log_every: usize,
    precision: String,
    /// Not a setting of the weights (a flag given with `--resume` replaces it), but of when the
    /// losses are read back: kept so a resumed run logs the rows the straight one would have.
    checkpoint_every: usize,
}

/// Checkpoint header keys of the CLI: the settings, and a fingerprint of the data.
const CONFIG_KEY: &str = "pixelgrad.train.config";
const DATA_KEY: &str = "pixelgrad.train.data";

impl RunConfig {
    /// The flags with their defaults filled in.
    fn from_args(a: &TrainArgs) -> CliResult<Self> {
        let arg = ModelArg::parse(&a.model)?;
        let d = defaults(arg.preset(), &DatasetSpec::parse(&a.dataset)?);
        Ok(RunConfig {
            dataset: a.dataset.clone(),
            model: arg.name(),
            epochs: a.epochs.unwrap_or(d.epochs),
            batch: a.batch_size.unwrap_or(d.batch),
            lr: a.lr.unwrap_or(d.lr),
            optimizer: a.optimizer.clone().unwrap_or_else(|| d.optimizer.to_string()),
            schedule: a.schedule.clone(),
            seed: a.seed,
            log_every: a.log_every,
            precision: a.precision.clone(),
            checkpoint_every: a.checkpoint_every,
        })
    }

    fn to_meta(&self) -> String {
        serde_json::json!({
            "dataset": self.dataset,
            "model": self.model,
            "epochs": self.epochs,
            "batch_size": self.batch,
            // Display of an f32 is the shortest text that parses back to the same value
            "lr": self.lr.to_string(),
            "optimizer": self.optimizer,
            "schedule": self.schedule,
            "seed": self.seed,
            "log_every": self.log_every,
            "precision": self.precision,
            "checkpoint_every": self.checkpoint_every,
        })
        .to_string()
    }

    fn from_meta(s: &str) -> Option<Self> {
        let j: serde_json::Value = serde_json::from_str(s).ok()?;
        let text = |k: &str| j[k].as_str().map(str::to_string);
        let num = |k: &str| j[k].as_u64();
        Some(RunConfig {
            dataset: text("dataset")?,
            model: text("model")?,
            epochs: usize::try_from(num("epochs")?).ok()?,
            batch: usize::try_from(num("batch_size")?).ok()?,
            lr: text("lr")?.parse().ok()?,
            optimizer: text("optimizer")?,
            schedule: text("schedule")?,
            seed: num("seed")?,
            log_every: usize::try_from(num("log_every")?).ok()?,
            precision: text("precision")?,
            checkpoint_every: usize::try_from(num("checkpoint_every")?).ok()?,
        })
    }

    /// `--resume`: every setting flag given on the command line must agree with the saved run.
    fn check_given(&self, a: &TrainArgs, given: &dyn Fn(&str) -> bool) -> CliResult<()> {
        let mine = RunConfig::from_args(a)?;
        let pairs: [(&str, &str, String, String); 10] = [
            ("dataset", "--dataset", mine.dataset.clone(), self.dataset.clone()),
            ("model", "--model", mine.model.clone(), self.model.clone()),
            ("epochs", "--epochs", mine.epochs.to_string(), self.epochs.to_string()),
            ("batch_size", "--batch-size", mine.batch.to_string(), self.batch.to_string()),
            ("lr", "--lr", mine.lr.to_string(), self.lr.to_string()),
            ("optimizer", "--optimizer", mine.optimizer.clone(), self.optimizer.clone()),
            ("schedule", "--schedule", mine.schedule.clone(), self.schedule.clone()),
            ("seed", "--seed", mine.seed.to_string(), self.seed.to_string()),
            ("log_every", "--log-every", mine.log_every.to_string(), self.log_every.to_string()),
            ("precision", "--precision", mine.precision.clone(), self.precision.clone()),
        ];
        for (id, flag, have, saved) in pairs {
            if given(id) && have != saved {
                return Err(format!(
                    "{}: {flag} {have} differs from the saved run's {flag} {saved} (--resume goes on with the saved settings; leave the flag out)",
                    a.out.join(CHECKPOINT_FILE).display()
                ));
            }
        }
        Ok(())
    }
}

/// Sample counts and a hash of every pixel and label: a resumed run must see the same data.
fn data_fingerprint(d: &Loaded) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |w: u32| h = (h ^ u64::from(w)).wrapping_mul(0x0100_0000_01b3);
    for set in [&d.train, &d.test] {
        set.images().iter().for_each(|v| eat(v.to_bits()));
        set.labels().iter().for_each(|&l| eat(l));
    }
    format!("{} train, {} test, {:?}, hash {h:016x}", d.train.len(), d.test.len(), d.shape())
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

/// Progress bar plus the logs that go to metrics.csv and loss.png, and the checkpoint file.
struct Progress<'a> {
    model: &'a dyn Module,
    dumper: Option<WeightDumper>,
    bar: ProgressBar,
    epochs: usize,
    steps: Vec<StepLog>,
    quiet: bool,
    epoch_start: Instant,
    /// Where checkpoints go, with the header that rebuilds the run; `save_every` 0 saves only
    /// the one at `max_steps`.
    checkpoint: PathBuf,
    checkpoint_meta: HashMap<String, String>,
    save_every: usize,
    max_steps: Option<usize>,
    saved_step: Option<usize>,
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
    /// A device below full precision (WebGL's RGBA16F fallback) is checked against the CPU
    /// before training (see `pixelgrad::nn::train::PrecisionCheck`).
    fn precision_reference(&mut self) -> Option<pixelgrad::Device> {
        Some(pixelgrad::Device::new(pixelgrad::cpu::CpuBackend::new()))
    }
    fn on_checkpoint(&mut self, point: &ResumePoint<'_>) -> pixelgrad::Result<()> {
        let step = point.position.step;
        if self.save_every == 0 && self.max_steps != Some(step) {
            return Ok(());
        }
        resume::save(point, &self.checkpoint, &self.checkpoint_meta)?;
        self.saved_step = Some(step);
        Ok(())
    }
}

/// `given(id)`: whether the flag of that argument id was on the command line (what
/// `--resume` checks against the saved settings).
pub fn run(a: TrainArgs, given: &dyn Fn(&str) -> bool) -> CliResult<()> {
    // Human-readable lines go to stderr when --json owns stdout.
    let say = |s: String| if a.json { eprintln!("{s}") } else { println!("{s}") };
    if a.max_steps == Some(0) {
        return Err("--max-steps must be at least 1".into());
    }
    let checkpoint_path = a.out.join(CHECKPOINT_FILE);
    let stale = outdir::remove_stale_temporaries(&a.out)?;
    if stale > 0 {
        say(format!("removed {stale} temporary file(s) an interrupted run left in {}", a.out.display()));
    }
    // The saved run to go on with, or the folder made ready for a new one.
    let (cfg, saved) = if a.resume {
        if !checkpoint_path.exists() {
            return Err(format!(
                "--resume: {} has no {CHECKPOINT_FILE} (the run there finished, or saved no checkpoint yet)",
                a.out.display()
            ));
        }
        let (r, meta) = resume::load(&checkpoint_path).ctx()?;
        let cfg = meta
            .get(CONFIG_KEY)
            .and_then(|s| RunConfig::from_meta(s))
            .ok_or_else(|| format!("{}: no readable '{CONFIG_KEY}' (not written by `pixelgrad train`)", checkpoint_path.display()))?;
        cfg.check_given(&a, given)?;
        let cfg = RunConfig { checkpoint_every: if given("checkpoint_every") { a.checkpoint_every } else { cfg.checkpoint_every }, ..cfg };
        (cfg, Some((r, meta)))
    } else {
        let cfg = RunConfig::from_args(&a)?;
        match outdir::prepare_fresh(&a.out, a.force)? {
            Prior::Empty => {}
            Prior::Overwritten if a.force => say(format!("overwriting the files in {} (--force)", a.out.display())),
            Prior::Overwritten => {
                say(format!("note: overwriting {} (the last run's files; pass --out DIR to keep a run)", a.out.display()))
            }
        }
        (cfg, None)
    };
    let arg = ModelArg::parse(&cfg.model)?;
    let spec = DatasetSpec::parse(&cfg.dataset)?;
    let (epochs, batch, lr, opt_name) = (cfg.epochs, cfg.batch, cfg.lr, cfg.optimizer.clone());
    let kind = OptimizerKind::parse(&opt_name).ctx()?;
    let precision = Precision::parse(&cfg.precision).ctx()?;
    if batch == 0 || cfg.log_every == 0 {
        return Err("--batch-size and --log-every must be at least 1".into());
    }
    if !(lr.is_finite() && lr > 0.0) {
        return Err(format!("--lr must be a positive number, got {lr}"));
    }

    let data = dataset::load(&spec, arg.seed_view(), cfg.seed)?;
    let fingerprint = data_fingerprint(&data);
    if let Some((r, meta)) = &saved {
        let was = meta.get(DATA_KEY).map(String::as_str).unwrap_or("unknown");
        if was != fingerprint {
            return Err(format!(
                "{}: the data set differs from the one the run started with ({was}; now {fingerprint})",
                checkpoint_path.display()
            ));
        }
        let p = &r.position;
        say(format!(
            "resuming {} at step {} (epoch {}, batch {}), with its settings",
            checkpoint_path.display(),
            p.step,
            p.epoch + 1,
            p.batch
        ));
    }
    let model_cfg = arg.config_for(data.shape(), data.classes())?;
    let shape = model::sample_shape(&model_cfg, data.shape()).map_err(|e| format!("{}: {e}", arg.name()))?;
    let loss = model_cfg.loss().ctx()?;
    let sel = backend::select_for(&a.backend, Some((&model_cfg, batch)))?;
    let dev = sel.device.clone();
    say(format!("backend: {} [{}]", sel.name, sel.explain()));
    say(format!(
        "data: {} — {} train / {} test samples of {:?}, {} classes",
        data.name,
        data.train.len(),
        data.test.len(),
        data.shape(),
        data.classes()
    ));

    let model = model::build(&model_cfg, &arg.name(), &dev, cfg.seed, data.classes())?;
    say(format!("model: {} ({} parameters)", model.describe(), model.num_params()));
    say(format!("training: {epochs} epochs, batch {batch}, {opt_name} lr {lr}, seed {}, {}", cfg.seed, precision.name()));

    let steps_per_epoch = data.train.len().div_ceil(batch);
    let total = steps_per_epoch * epochs;
    let mut opt = kind.build(lr);
    let resumed_from = saved.as_ref().map(|(r, _)| r.position.step);
    let opts = FitOptions {
        epochs,
        batch_size: batch,
        read_every: cfg.log_every,
        shuffle: true,
        seed: cfg.seed,
        schedule: schedule(&cfg.schedule, total)?,
        max_steps_per_second: a.max_steps_per_second,
        precision,
        // 0: no checkpoint files, and the in-memory ones (device-loss recovery) at their
        // automatic interval
        checkpoint_every: (cfg.checkpoint_every > 0).then_some(cfg.checkpoint_every),
        max_steps: a.max_steps,
        resume: saved.map(|(r, _)| r),
        ..Default::default()
    };
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
    let mut meta = HashMap::new();
    meta.insert(SPEC_KEY.to_string(), model_cfg.to_json());
    meta.insert("pixelgrad.dataset".to_string(), data.name.clone());
    let mut checkpoint_meta = meta.clone();
    checkpoint_meta.insert(CONFIG_KEY.to_string(), cfg.to_meta());
    checkpoint_meta.insert(DATA_KEY.to_string(), fingerprint);
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let mut progress = Progress {
        model: &model,
        dumper,
        bar,
        epochs,
        steps: Vec::new(),
        quiet: a.json,
        epoch_start: Instant::now(),
        checkpoint: checkpoint_path.clone(),
        checkpoint_meta,
        save_every: cfg.checkpoint_every,
        max_steps: a.max_steps,
        saved_step: None,
    };
    progress.bar.set_position(resumed_from.unwrap_or(0) as u64);
    let activations = activation_bytes(&model, loss, &dev, &train, batch)?;
    let t0 = Instant::now();
    let history = fit(&model, opt.as_mut(), loss, &dev, train, Some(test), &opts, &mut progress).ctx()?;
    let train_seconds = t0.elapsed().as_secs_f64();
    progress.bar.finish_and_clear();

    if let Some(Stopped::MaxSteps { step }) = history.stopped {
        let saved = match progress.saved_step {
            Some(s) => format!("checkpoint {} at step {s}", checkpoint_path.display()),
            None if checkpoint_path.exists() => format!("checkpoint {} unchanged", checkpoint_path.display()),
            None => "no checkpoint saved".to_string(),
        };
        say(format!(
            "stopped after {step} of {total} steps (--max-steps); {saved}; continue with: pixelgrad train --resume --out {}",
            a.out.display()
        ));
        if a.json {
            let j = serde_json::json!({
                "stopped_at_step": step,
                "total_steps": total,
                "checkpoint": progress.saved_step.map(|_| checkpoint_path.display().to_string()),
                "resumed_from_step": resumed_from,
                "out": a.out.display().to_string(),
            });
            writeln!(std::io::stdout().lock(), "{j}").ctx()?;
        }
        return Ok(());
    }
    let last = history.epochs.last().ok_or("training ran no epoch (--epochs 0?)")?;
    let (test_loss, test_acc) = (last.test_loss.unwrap_or(f32::NAN), last.test_accuracy.unwrap_or(f32::NAN));

    let model_path = a.out.join("model.safetensors");
    io::save(&model, &model_path, &meta).ctx()?;
    write_metrics(&a.out.join("metrics.csv"), &history.steps, &history.epochs, steps_per_epoch)?;
    plot::loss_png(
        &a.out.join("loss.png"),
        &plot::Series::from_epochs(&history.epochs),
        &format!("{} on {} ({})", arg.name(), data.name, sel.device.kind()),
    )?;
    // The run is complete: its checkpoint has nothing left to resume.
    match std::fs::remove_file(&checkpoint_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{}: {e}", checkpoint_path.display())),
        _ => {}
    }

    if let Some(c) = &history.precision_check {
        say(c.summary());
    }
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
            "backend_measured": sel.measured.as_ref().map(|m| serde_json::json!({ "chosen": m.backend, "cached": m.cached, "timings": m.timings })),
            "model": arg.name(),
            "dataset": data.name,
            "train_seconds": train_seconds,
            "out": a.out.display().to_string(),
            "resumed_from_step": resumed_from,
            "checkpoint_every": cfg.checkpoint_every,
            "losses": history.steps.iter().map(|s| s.loss).collect::<Vec<_>>(),
            "precision": mixed.as_ref().map(|m| m.precision).unwrap_or("f32"),
            "precision_fallback": mixed.as_ref().and_then(|m| m.fallback.clone()),
            "loss_scale": mixed.as_ref().filter(|m| m.fallback.is_none()).map(|m| m.final_scale),
            "skipped_steps": mixed.as_ref().map(|m| m.skipped_steps).unwrap_or(0),
            "precision_check": history.precision_check.as_ref().map(|c| serde_json::json!({
                "reason": c.reason,
                "device": c.device,
                "reference": c.reference,
                "device_losses": c.device_losses,
                "reference_losses": c.reference_losses,
                "max_rel_diff": if c.max_rel_diff.is_finite() { Some(c.max_rel_diff) } else { None },
                "tolerance": c.tolerance,
                "action": match c.action { PrecisionAction::Continued => "continued", PrecisionAction::FellBack => "fell_back" },
            })),
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
fn activation_bytes(model: &dyn Module, loss: Loss, dev: &pixelgrad::Device, train: &Samples, batch: usize) -> CliResult<(u64, u64)> {
    let idx: Vec<usize> = (0..batch.min(train.len())).collect();
    let (x, y) = train.batch(dev, &idx).ctx()?;
    let bytes = |mixed: bool| -> CliResult<u64> {
        let _g = mixed.then(pixelgrad::mixed_precision);
        let out = model.forward(&x, Mode::Train).ctx()?;
        Ok(loss.compute(&out, &y).ctx()?.graph_bytes())
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
    pixelgrad_durable::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}
