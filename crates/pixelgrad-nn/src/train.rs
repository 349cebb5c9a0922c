//! The training loop. Loss and accuracy are accumulated on the device and read back every
//! `read_every` steps (one small readback), never per op, so a GPU queue never drains while
//! training.
//!
//! Targets are what the caller gave ([`Targets`]: class indices or float targets of any
//! shape), checked against the model's output before the first step. Every
//! `checkpoint_every` steps [`fit`] copies parameters and optimizer state to the host
//! ([`Checkpoint`]); when the device is lost it asks [`Callbacks::on_device_lost`] for a new
//! one, restores the checkpoint there and redoes the steps since; with `stop_on_nan` a
//! non-finite loss stops training with the last good checkpoint restored.

use std::ops::ControlFlow;

use pixelgrad_core::{no_grad, rng, Device, Error, Result, Tensor};

use crate::checkpoint::{Capture, Checkpoint};
use crate::loss::TargetKind;
use crate::mixed::{scaler_for, train_batch_mixed, LossScaler, MixedReport, Precision, ScaleOptions};
use crate::optim::{Optimizer, Schedule};
use crate::{Loss, Mode, Module};

/// What each sample is compared with.
#[derive(Clone, Copy, Debug)]
pub enum Targets<'a> {
    /// One class index per sample.
    Classes(&'a [u32]),
    /// `shape` floats per sample, contiguous: one-hot or probability rows for cross-entropy,
    /// any values for MSE, 0/1 for BCE. Used as given.
    Values { values: &'a [f32], shape: &'a [usize] },
}

/// Host-side samples: `x` holds `len()` samples of `sample_shape` each, contiguous, and
/// their targets.
#[derive(Clone, Copy, Debug)]
pub struct Samples<'a> {
    pub x: &'a [f32],
    pub sample_shape: &'a [usize],
    pub targets: Targets<'a>,
    n: usize,
}

impl<'a> Samples<'a> {
    /// Samples with class indices as targets.
    pub fn new(x: &'a [f32], sample_shape: &'a [usize], labels: &'a [u32]) -> Result<Self> {
        Self::check_x(x, sample_shape, labels.len())?;
        Ok(Samples { x, sample_shape, targets: Targets::Classes(labels), n: labels.len() })
    }

    /// Samples with float targets of `target_shape` each (`values.len()` is a whole number of
    /// them, and gives the sample count).
    pub fn with_values(x: &'a [f32], sample_shape: &'a [usize], values: &'a [f32], target_shape: &'a [usize]) -> Result<Self> {
        let per: usize = target_shape.iter().product();
        if per == 0 || !values.len().is_multiple_of(per) {
            return Err(Error::invalid(
                "samples",
                format!("{} target values are not a whole number of targets of shape {target_shape:?}", values.len()),
            ));
        }
        let n = values.len() / per;
        Self::check_x(x, sample_shape, n)?;
        Ok(Samples { x, sample_shape, targets: Targets::Values { values, shape: target_shape }, n })
    }

    fn check_x(x: &[f32], sample_shape: &[usize], n: usize) -> Result<()> {
        let per: usize = sample_shape.iter().product();
        if per == 0 || x.len() != per * n {
            return Err(Error::invalid("samples", format!("{} values do not hold {n} samples of shape {sample_shape:?}", x.len())));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    fn per_sample(&self) -> usize {
        self.sample_shape.iter().product()
    }
    /// What the targets are, for [`Loss::check`].
    pub fn kind(&self) -> TargetKind<'a> {
        match self.targets {
            Targets::Classes(_) => TargetKind::Classes,
            Targets::Values { shape, .. } => TargetKind::Values(shape),
        }
    }
    /// Checks the targets against a model whose output per sample is `output` under `loss`
    /// (shapes, and class indices below the number of classes): a typed error before any
    /// training step, naming the sample.
    pub fn check(&self, op: &'static str, loss: Loss, output: &[usize], backend: &str) -> Result<()> {
        loss.check(op, output, self.kind()).map_err(|e| e.with_backend(backend))?;
        if let (Targets::Classes(labels), [classes]) = (self.targets, output) {
            if let Some((i, c)) = labels.iter().enumerate().find(|(_, c)| **c as usize >= *classes) {
                return Err(Error::invalid(
                    op,
                    format!("label {c} of sample {i} is not a class index in 0..{classes} (the model has {classes} outputs)"),
                ));
            }
        }
        Ok(())
    }
    /// Uploads the samples at `idx` as `(x [B, ..sample_shape], targets)`: class indices `[B]`
    /// or float targets `[B, ..target_shape]`.
    pub fn batch(&self, dev: &Device, idx: &[usize]) -> Result<(Tensor, Tensor)> {
        let per = self.per_sample();
        let mut xb = Vec::with_capacity(idx.len() * per);
        for &i in idx {
            xb.extend_from_slice(&self.x[i * per..(i + 1) * per]);
        }
        let mut shape = vec![idx.len()];
        shape.extend_from_slice(self.sample_shape);
        let y = match self.targets {
            Targets::Classes(labels) => {
                let yb: Vec<f32> = idx.iter().map(|&i| labels[i] as f32).collect();
                Tensor::from_vec(dev, &yb, [idx.len()])?
            }
            Targets::Values { values, shape: ts } => {
                let tp: usize = ts.iter().product();
                let mut yb = Vec::with_capacity(idx.len() * tp);
                for &i in idx {
                    yb.extend_from_slice(&values[i * tp..(i + 1) * tp]);
                }
                let mut s = vec![idx.len()];
                s.extend_from_slice(ts);
                Tensor::from_vec(dev, &yb, s)?
            }
        };
        Ok((Tensor::from_vec(dev, &xb, shape)?, y))
    }
}

/// A seeded permutation of `0..n` (Fisher-Yates driven by the counter-based RNG).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let w = rng::words(seed, i as u64);
        let r = ((w[0] as u64) << 32 | w[1] as u64) % (i as u64 + 1);
        v.swap(i, r as usize);
    }
    v
}

/// Options of [`fit`].
#[derive(Clone, Debug)]
pub struct FitOptions {
    pub epochs: usize,
    pub batch_size: usize,
    /// Read loss and accuracy back every this many steps.
    pub read_every: usize,
    pub shuffle: bool,
    pub seed: u64,
    pub schedule: Schedule,
    /// Host checkpoint every this many steps (see [`Checkpoint`]): `Some(0)` never (no
    /// recovery from device loss), `None` chosen from the measured cost of a checkpoint against
    /// a training step ([`auto_checkpoint_every`]).
    pub checkpoint_every: Option<usize>,
    /// Stop at the first non-finite loss read back, with the last good checkpoint restored.
    pub stop_on_nan: bool,
    /// Pacing for watching training: at most this many steps per second (the thread sleeps
    /// between steps; results are unchanged). `None` runs at full speed. Native only: in wasm
    /// the JS `fit({ maxStepsPerSecond })` paces instead.
    pub max_steps_per_second: Option<f64>,
    /// f32, or mixed precision (f16 activations and gradients, f32 master weights, dynamic
    /// loss scaling: see [`crate::mixed`]). Mixed on a device that cannot falls back to f32,
    /// as [`History::mixed`] reports.
    pub precision: Precision,
    /// The loss scale of mixed-precision training.
    pub loss_scale: ScaleOptions,
    /// Stop after this many steps in all (counting those of a resumed run), with a checkpoint
    /// there when checkpoints are on ([`Callbacks::on_checkpoint`]) and
    /// [`Stopped::MaxSteps`]; no evaluation for the unfinished epoch.
    pub max_steps: Option<usize>,
    /// Go on from a saved run ([`Resume`], e.g. read by [`crate::resume::load`]) instead of
    /// starting: its checkpoint is restored into the model and optimizer, training continues at
    /// its position with its logs, and ends with the same weights as a run never interrupted
    /// (bit for bit on the same backend), given the same data and options.
    pub resume: Option<Resume>,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            epochs: 1,
            batch_size: 32,
            read_every: 10,
            shuffle: true,
            seed: 0,
            schedule: Schedule::Constant,
            checkpoint_every: None,
            stop_on_nan: true,
            max_steps_per_second: None,
            precision: Precision::F32,
            loss_scale: ScaleOptions::default(),
            max_steps: None,
            resume: None,
        }
    }
}

/// Share of training time that automatic checkpoints may take (see [`auto_checkpoint_every`]).
pub const CHECKPOINT_BUDGET: f64 = 0.02;
/// Bounds of the automatic checkpoint interval, in steps.
pub const CHECKPOINT_EVERY_MIN: usize = 20;
pub const CHECKPOINT_EVERY_MAX: usize = 2000;

/// The checkpoint interval that keeps checkpoints under [`CHECKPOINT_BUDGET`] of the training
/// time, from the measured seconds of one checkpoint and of one step, within
/// [`CHECKPOINT_EVERY_MIN`]..=[`CHECKPOINT_EVERY_MAX`] (the most steps a device loss redoes).
pub fn auto_checkpoint_every(checkpoint_seconds: f64, step_seconds: f64) -> usize {
    if !(checkpoint_seconds > 0.0 && step_seconds > 0.0) {
        return CHECKPOINT_EVERY_MIN;
    }
    let n = (checkpoint_seconds / (CHECKPOINT_BUDGET * step_seconds)).ceil();
    (n.min(CHECKPOINT_EVERY_MAX as f64) as usize).clamp(CHECKPOINT_EVERY_MIN, CHECKPOINT_EVERY_MAX)
}

/// What a step callback sees after a readback: means over the steps since the last one.
#[derive(Clone, Debug, PartialEq)]
pub struct StepLog {
    /// 1-based global step number.
    pub step: usize,
    /// 0-based epoch.
    pub epoch: usize,
    pub loss: f32,
    /// `None` where accuracy means nothing (MSE on float targets).
    pub accuracy: Option<f32>,
    pub lr: f32,
}

/// End-of-epoch summary.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochLog {
    pub epoch: usize,
    pub train_loss: f32,
    pub train_accuracy: Option<f32>,
    pub test_loss: Option<f32>,
    pub test_accuracy: Option<f32>,
}

/// A device loss during [`fit`], as [`Callbacks::on_device_lost`] sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceLost {
    /// Steps done when the loss was noticed.
    pub step: usize,
    /// The step of the checkpoint training goes back to (at most `checkpoint_every` earlier).
    pub checkpoint_step: usize,
    /// The lost device's name.
    pub backend: String,
    /// What the backend reported.
    pub reason: String,
}

/// Per-step and per-epoch hooks. Returning `ControlFlow::Break` from either stops training.
pub trait Callbacks {
    fn on_step(&mut self, _log: &StepLog) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn on_epoch(&mut self, _log: &EpochLog) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// The device was lost: return a device to go on with (the same backend started again,
    /// or another one), on which the last checkpoint is restored and the steps since are
    /// redone; `None` (the default) ends `fit` with the device-loss error. Steps after the
    /// checkpoint are logged again as they are redone.
    fn on_device_lost(&mut self, _info: &DeviceLost) -> Option<Device> {
        None
    }
    /// A good checkpoint was taken after `point.position.step` steps (every
    /// `checkpoint_every` steps, and at [`FitOptions::max_steps`]; not the one before the first
    /// step): save it ([`crate::resume::save`]) to go on later with [`FitOptions::resume`]. An
    /// error stops `fit` with it.
    fn on_checkpoint(&mut self, _point: &ResumePoint<'_>) -> Result<()> {
        Ok(())
    }
}

/// Callbacks that do nothing.
pub struct NoCallbacks;
impl Callbacks for NoCallbacks {}

/// Why [`fit`] stopped before its last epoch, other than a callback asking.
#[derive(Clone, Debug, PartialEq)]
pub enum Stopped {
    /// A loss read back at `step` was NaN or infinite (somewhere in `first_step..=step`); the
    /// weights and optimizer state are those of the checkpoint of `restored_step`.
    NonFiniteLoss { first_step: usize, step: usize, loss: f32, restored_step: usize },
    /// [`FitOptions::max_steps`] steps were done.
    MaxSteps { step: usize },
}

/// Everything logged during [`fit`].
#[derive(Clone, Debug, Default)]
pub struct History {
    pub steps: Vec<StepLog>,
    pub epochs: Vec<EpochLog>,
    /// Device losses recovered from, in order.
    pub recoveries: Vec<DeviceLost>,
    pub stopped: Option<Stopped>,
    /// The checkpoint interval used (chosen or given; 0: none).
    pub checkpoint_every: usize,
    /// Checkpoints taken, and the seconds they took in all (0 where time is not measured).
    pub checkpoints: usize,
    pub checkpoint_seconds: f64,
    /// The last good checkpoint (`None` without checkpoints): restore it to get the model back
    /// after a later device loss.
    pub last_checkpoint: Option<Checkpoint>,
    /// For `precision: Mixed`: what ran (or the f32 fallback and why), the final loss scale and
    /// the steps skipped for overflow. `None` for f32 training.
    pub mixed: Option<MixedReport>,
}

/// Device-side running sums of `loss * batch` and correct predictions, plus the host-side
/// sample count: what a training loop accumulates between two readbacks.
///
/// Every [`Sums::add`] runs the same ops (`sum * keep + value`, with `keep` 0 right after a
/// [`Sums::take`]), so a step that ends with it has the same structure every time and
/// replays its step plan (see [`Device::step`]).
#[derive(Default)]
pub struct Sums {
    loss_sum: Option<Tensor>,
    correct: Option<Tensor>,
    /// 0 after a take: the next add starts the sums afresh.
    keep: f32,
    samples: usize,
    steps: usize,
}

impl Sums {
    pub fn new() -> Self {
        Sums::default()
    }
    /// Adds one batch's mean loss and correct-prediction count (both device scalars; no
    /// count where accuracy means nothing, for every batch of these sums).
    pub fn add(&mut self, loss: &Tensor, correct: Option<&Tensor>, batch: usize) -> Result<()> {
        let l = loss.detach().mul_scalar(batch as f32)?;
        let keep = self.keep;
        let fold = |prev: Option<Tensor>, v: Tensor| -> Result<Tensor> {
            match prev {
                Some(s) => s.mul_scalar(keep)?.add(&v),
                None => Ok(v),
            }
        };
        self.loss_sum = Some(fold(self.loss_sum.take(), l)?);
        self.correct = match correct {
            Some(c) => Some(fold(self.correct.take(), c.detach())?),
            None => None,
        };
        self.keep = 1.0;
        self.samples += batch;
        self.steps += 1;
        Ok(())
    }
    /// Batches added since the last take.
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// `[loss sum, correct]` (or `[loss sum]` without accuracy) as one device tensor plus the
    /// sample count, and starts new sums; `None` when nothing was added since the last take.
    pub fn take(&mut self) -> Result<Option<(Tensor, usize)>> {
        if self.steps == 0 {
            return Ok(None);
        }
        let Some(l) = &self.loss_sum else { return Ok(None) };
        let both = match &self.correct {
            Some(c) => Tensor::concat(&[&l.reshape([1])?, &c.reshape([1])?], 0)?,
            None => l.reshape([1])?,
        };
        let n = std::mem::take(&mut self.samples);
        self.steps = 0;
        self.keep = 0.0;
        Ok(Some((both, n)))
    }
    /// Drops what was added since the last take (after a device loss).
    pub fn clear(&mut self) {
        *self = Sums::new();
    }
    /// One blocking readback of both sums: (loss sum, correct count, samples), and resets.
    pub fn read(&mut self) -> Result<Option<(f64, Option<f64>, usize)>> {
        let Some((both, n)) = self.take()? else { return Ok(None) };
        let v = both.to_vec()?;
        Ok(Some((v[0] as f64, v.get(1).map(|&c| c as f64), n)))
    }
}

/// One training step on a device-resident batch (`x` of `[B, ..]`, targets `y`: class indices
/// `[B]` or float targets shaped like the output): forward, loss, accuracy where it means
/// something (no graph), backward, optimizer update, and the batch's loss and correct count
/// added to `sums`. A failed backward or update clears the gradients it half-accumulated. Run
/// it inside [`Device::step`] so GPU backends replay it.
pub fn train_batch(model: &dyn Module, opt: &mut dyn Optimizer, loss: Loss, x: &Tensor, y: &Tensor, sums: &mut Sums) -> Result<()> {
    let out = model.forward(x, Mode::Train)?;
    let l = loss.compute(&out, y)?;
    let correct = {
        let _g = no_grad();
        loss.correct(&out, y)?
    };
    if let Err(e) = l.backward().and_then(|_| opt.step(model)) {
        model.zero_grad();
        return Err(e);
    }
    sums.add(&l, correct.as_ref(), x.dims().first().copied().unwrap_or(0))
}

/// The model's output shape for one sample (without the batch axis), found by running one
/// sample in evaluation mode.
pub fn output_shape(model: &dyn Module, dev: &Device, data: &Samples) -> Result<Vec<usize>> {
    let _g = no_grad();
    let (x, _) = data.batch(dev, &[0])?;
    Ok(model.forward(&x, Mode::Eval)?.dims()[1..].to_vec())
}

/// Where training is: the epoch, the next batch in it, the steps done and the epoch's sums so
/// far. With the [`Checkpoint`] taken there, what [`fit`] needs to go on from that moment
/// exactly ([`FitOptions::resume`]): an epoch's batch order comes from the seed and the epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Position {
    /// 0-based epoch.
    pub epoch: usize,
    /// The next batch of the epoch (0-based; the epoch's batch count when all are done and the
    /// evaluation is next).
    pub batch: usize,
    /// Training steps done.
    pub step: usize,
    /// The epoch's sum of `loss * batch`, correct predictions and samples so far.
    pub epoch_loss: f64,
    pub epoch_correct: f64,
    pub epoch_samples: usize,
}

/// A training run to go on from (see [`FitOptions::resume`]): the checkpoint, where it was
/// taken, the loss scaler's state (mixed precision) and the logs up to then. Saved by
/// [`Callbacks::on_checkpoint`] through [`crate::resume`].
#[derive(Clone, Debug, PartialEq)]
pub struct Resume {
    pub checkpoint: Checkpoint,
    pub position: Position,
    /// Mixed precision: the loss scale, the good steps in a row and the skipped steps.
    pub loss_scale: Option<[f32; 3]>,
    pub steps: Vec<StepLog>,
    pub epochs: Vec<EpochLog>,
}

/// What [`Callbacks::on_checkpoint`] sees: a [`Resume`] by reference.
#[derive(Clone, Copy, Debug)]
pub struct ResumePoint<'a> {
    pub checkpoint: &'a Checkpoint,
    pub position: &'a Position,
    pub loss_scale: Option<[f32; 3]>,
    pub steps: &'a [StepLog],
    pub epochs: &'a [EpochLog],
}

impl Resume {
    /// The same run by reference.
    pub fn point(&self) -> ResumePoint<'_> {
        ResumePoint {
            checkpoint: &self.checkpoint,
            position: &self.position,
            loss_scale: self.loss_scale,
            steps: &self.steps,
            epochs: &self.epochs,
        }
    }
}

/// The last good checkpoint with the position it was taken at.
struct Good {
    ck: Checkpoint,
    pos: Position,
    /// The loss scaler's state then (mixed precision).
    scale: Option<[f32; 3]>,
    /// Step and epoch logs in the history when it was taken.
    logged: usize,
    epochs_logged: usize,
}

/// Most device losses one `fit` recovers from.
const MAX_RECOVERIES: usize = 16;

fn now() -> Option<f64> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        static T0: OnceLock<std::time::Instant> = OnceLock::new();
        Some(T0.get_or_init(std::time::Instant::now).elapsed().as_secs_f64())
    }
    #[cfg(target_arch = "wasm32")]
    None
}

/// Trains `model` on `train` for `opts.epochs` epochs, evaluating on `test` after each epoch.
///
/// Before the first step the targets are checked against the model's output (shapes; class
/// indices in range). With checkpoints on (the default), a device loss reported by a step,
/// a read or an evaluation is recovered from through [`Callbacks::on_device_lost`]; without a
/// device from it, `fit` returns the error.
///
/// ```
/// use pixelgrad_core::Device;
/// use pixelgrad_nn::layers::{Activation, Linear};
/// use pixelgrad_nn::train::{fit, FitOptions, NoCallbacks, Samples};
/// use pixelgrad_nn::{Init, Loss, OptimizerKind, Sequential};
/// # fn main() -> pixelgrad_core::Result<()> {
/// let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
/// // 64 points of the unit square; class 1 where the first coordinate is the larger.
/// let x: Vec<f32> = (0..64).flat_map(|i| [(i % 8) as f32 / 8.0, (i / 8) as f32 / 8.0]).collect();
/// let y: Vec<u32> = x.chunks(2).map(|p| (p[0] > p[1]) as u32).collect();
/// let mut init = Init::new(1);
/// let model = Sequential::new()
///     .push(Linear::new(&dev, 2, 16, &mut init)?)
///     .push(Activation::Tanh)
///     .push(Linear::new(&dev, 16, 2, &mut init)?);
/// let mut opt = OptimizerKind::parse("adam")?.build(0.05);
/// let shape = [2usize];
/// let train = Samples::new(&x, &shape, &y)?;
/// let opts = FitOptions { epochs: 30, batch_size: 16, ..Default::default() };
/// let h = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, None, &opts, &mut NoCallbacks)?;
/// let (first, last) = (&h.epochs[0], h.epochs.last().unwrap());
/// assert!(last.train_loss < first.train_loss);
/// assert!(last.train_accuracy.unwrap() > 0.85);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn fit(
    model: &dyn Module,
    opt: &mut dyn Optimizer,
    loss: Loss,
    dev: &Device,
    train: Samples,
    test: Option<Samples>,
    opts: &FitOptions,
    cb: &mut dyn Callbacks,
) -> Result<History> {
    if train.is_empty() {
        return Err(Error::invalid("fit", "the training set is empty"));
    }
    if opts.batch_size == 0 || opts.read_every == 0 {
        return Err(Error::invalid("fit", "batch size and read_every must be at least 1"));
    }
    if opts.max_steps_per_second.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(Error::invalid("fit", format!("max_steps_per_second must be a positive number, got {:?}", opts.max_steps_per_second)));
    }
    let mut pacer = crate::pacing::Pacer::new(opts.max_steps_per_second);
    let output = output_shape(model, dev, &train)?;
    train.check("fit", loss, &output, &dev.name())?;
    if let Some(t) = &test {
        t.check("fit (test set)", loss, &output, &dev.name())?;
    }
    let accuracy = loss.has_accuracy(train.kind());
    let base_lr = opt.lr();
    let mut dev = dev.clone();
    let mut history = History::default();
    let mut every = opts.checkpoint_every.unwrap_or(CHECKPOINT_EVERY_MIN);
    let auto = opts.checkpoint_every.is_none();
    let mut good: Option<Good> = None;
    let mut pos = Position::default();
    let mut window = Sums::new();
    let mut step_started = now();
    let mut scaler = scaler_for(opts.precision, &dev, opts.loss_scale)?;
    if let Some(r) = &opts.resume {
        pos = resume_from(r, model, &mut *opt, &dev, &train, opts, scaler.as_mut())?;
        history.steps = r.steps.clone();
        history.epochs = r.epochs.clone();
        good = Some(Good {
            ck: r.checkpoint.clone(),
            pos: pos.clone(),
            scale: r.loss_scale,
            logged: history.steps.len(),
            epochs_logged: history.epochs.len(),
        });
    }
    let result = (|| -> Result<()> {
        let checkpoint = |pos: &Position,
                          history: &mut History,
                          good: &mut Option<Good>,
                          opt: &dyn Optimizer,
                          scaler: Option<&LossScaler>|
         -> Result<(Option<f64>, bool)> {
            let t0 = now();
            let ck = Capture::of(model, opt, pos.step).read()?;
            let scale = scaler.map(LossScaler::state).transpose()?;
            let secs = match (t0, now()) {
                (Some(a), Some(b)) => Some(b - a),
                _ => None,
            };
            history.checkpoints += 1;
            history.checkpoint_seconds += secs.unwrap_or(0.0);
            let finite = ck.is_finite();
            if finite {
                *good = Some(Good { ck, pos: pos.clone(), scale, logged: history.steps.len(), epochs_logged: history.epochs.len() });
            }
            Ok((secs, finite))
        };
        if good.is_none() && (every > 0 || opts.stop_on_nan) {
            checkpoint(&pos, &mut history, &mut good, &*opt, scaler.as_ref())?;
        }
        if opts.max_steps.is_some_and(|m| pos.step >= m) {
            history.stopped = Some(Stopped::MaxSteps { step: pos.step });
            return Ok(());
        }
        step_started = now();
        'outer: while pos.epoch < opts.epochs {
            let order =
                if opts.shuffle { shuffled(train.len(), rng::mix(opts.seed, pos.epoch as u64)) } else { (0..train.len()).collect() };
            let batches: Vec<&[usize]> = order.chunks(opts.batch_size).collect();
            let last = batches.len() - 1;
            let lost = |e: Error| -> std::result::Result<Error, Error> {
                match e {
                    Error::DeviceLost { .. } => Ok(e),
                    other => Err(other),
                }
            };
            // Steps of this epoch; a device loss jumps back to the last checkpoint.
            let outcome: std::result::Result<bool, Error> = (|| {
                while pos.batch < batches.len() {
                    let idx = batches[pos.batch];
                    let lr = opts.schedule.lr(base_lr, pos.step);
                    opt.set_lr(lr);
                    // One step plan per model, optimizer and batch size (the last batch of an
                    // epoch may be smaller).
                    let key = crate::step_key(model, &*opt, &[idx.len(), scaler.is_some() as usize]);
                    pacer.wait();
                    dev.step(key, || {
                        let (xb, yb) = train.batch(&dev, idx)?;
                        match scaler.as_mut() {
                            Some(s) => train_batch_mixed(model, &mut *opt, loss, &xb, &yb, &mut window, s),
                            None => train_batch(model, &mut *opt, loss, &xb, &yb, &mut window),
                        }
                    })?;
                    pos.step += 1;
                    pos.batch += 1;
                    let at_max = opts.max_steps == Some(pos.step);
                    let at_checkpoint = every > 0 && (pos.step % every == 0 || at_max);
                    if window.steps() >= opts.read_every || pos.batch > last || at_checkpoint {
                        if let Some((ls, cs, n)) = window.read()? {
                            pos.epoch_loss += ls;
                            pos.epoch_correct += cs.unwrap_or(0.0);
                            pos.epoch_samples += n;
                            let mean = (ls / n as f64) as f32;
                            let log =
                                StepLog { step: pos.step, epoch: pos.epoch, loss: mean, accuracy: cs.map(|c| (c / n as f64) as f32), lr };
                            if opts.stop_on_nan && !mean.is_finite() {
                                let first_step = history.steps.last().map(|s| s.step + 1).unwrap_or(1);
                                history.steps.push(log);
                                let restored_step = match &good {
                                    Some(g) => {
                                        g.ck.restore(model, &mut *opt, &dev)?;
                                        g.ck.step
                                    }
                                    None => 0,
                                };
                                history.stopped = Some(Stopped::NonFiniteLoss { first_step, step: pos.step, loss: mean, restored_step });
                                return Ok(true);
                            }
                            let flow = cb.on_step(&log);
                            history.steps.push(log);
                            if flow.is_break() {
                                return Ok(true);
                            }
                        }
                    }
                    if at_checkpoint {
                        let step_secs = match (step_started, now()) {
                            (Some(a), Some(b)) => Some((b - a) / every as f64),
                            _ => None,
                        };
                        let (ck_secs, finite) = checkpoint(&pos, &mut history, &mut good, &*opt, scaler.as_ref())?;
                        if let (true, Some(g)) = (finite, &good) {
                            cb.on_checkpoint(&ResumePoint {
                                checkpoint: &g.ck,
                                position: &g.pos,
                                loss_scale: g.scale,
                                steps: &history.steps,
                                epochs: &history.epochs,
                            })?;
                        }
                        if auto && pos.step == every {
                            // The first interval measured both costs: choose the interval once.
                            if let (Some(c), Some(st)) = (ck_secs, step_secs) {
                                every = auto_checkpoint_every(c, st);
                            }
                        }
                        step_started = now();
                    }
                    if at_max {
                        history.stopped = Some(Stopped::MaxSteps { step: pos.step });
                        return Ok(true);
                    }
                }
                Ok(false)
            })();
            let stop = match outcome.map_err(lost) {
                Ok(stop) => stop,
                Err(Err(other)) => return Err(other),
                Err(Ok(e)) => {
                    recover(e, model, &mut *opt, &mut dev, &mut pos, &mut window, &mut history, &good, cb)?;
                    restart_scaler(&mut scaler, opts, &dev)?;
                    step_started = now();
                    continue 'outer;
                }
            };
            if stop {
                // a callback asked, or the loss was not finite: no evaluation, no epoch log
                break;
            }
            let (test_loss, test_accuracy) = match &test {
                Some(t) if !t.is_empty() => match evaluate(model, loss, &dev, *t, opts.batch_size.max(256)) {
                    Ok((a, b)) => (Some(a), b),
                    Err(e @ Error::DeviceLost { .. }) => {
                        recover(e, model, &mut *opt, &mut dev, &mut pos, &mut window, &mut history, &good, cb)?;
                        restart_scaler(&mut scaler, opts, &dev)?;
                        continue 'outer;
                    }
                    Err(e) => return Err(e),
                },
                _ => (None, None),
            };
            let log = EpochLog {
                epoch: pos.epoch,
                train_loss: (pos.epoch_loss / pos.epoch_samples.max(1) as f64) as f32,
                train_accuracy: accuracy.then(|| (pos.epoch_correct / pos.epoch_samples.max(1) as f64) as f32),
                test_loss,
                test_accuracy,
            };
            let flow = cb.on_epoch(&log);
            history.epochs.push(log);
            if flow.is_break() {
                break;
            }
            pos = Position { epoch: pos.epoch + 1, step: pos.step, ..Position::default() };
        }
        Ok(())
    })();
    opt.set_lr(base_lr);
    result?;
    if opts.precision == Precision::Mixed {
        history.mixed = Some(LossScaler::report(scaler.as_ref(), &dev)?);
    }
    history.checkpoint_every = every;
    history.last_checkpoint = good.map(|g| g.ck);
    Ok(history)
}

/// Checks a saved run against this one and restores it: its checkpoint into `model` and
/// `opt`, its loss scale into `scaler`. Returns the position to go on from.
fn resume_from(
    r: &Resume,
    model: &dyn Module,
    opt: &mut dyn Optimizer,
    dev: &Device,
    train: &Samples,
    opts: &FitOptions,
    scaler: Option<&mut LossScaler>,
) -> Result<Position> {
    let p = &r.position;
    let batches = train.len().div_ceil(opts.batch_size);
    let bad = |m: String| Err(Error::invalid("resume", m));
    if r.checkpoint.step != p.step {
        return bad(format!("the checkpoint is of step {} but the position says step {}", r.checkpoint.step, p.step));
    }
    if p.epoch > opts.epochs || p.batch > batches || (p.epoch == opts.epochs && p.batch > 0) {
        return bad(format!(
            "position epoch {} batch {} is outside a run of {} epochs of {batches} batches (other data or batch size?)",
            p.epoch, p.batch, opts.epochs
        ));
    }
    if p.step < p.batch || r.steps.last().is_some_and(|s| s.step > p.step) || r.epochs.len() != p.epoch {
        return bad(format!("the logs do not end at step {} (epoch {})", p.step, p.epoch));
    }
    r.checkpoint.restore(model, opt, dev)?;
    match (scaler, r.loss_scale) {
        (Some(s), Some(state)) => s.set_state(dev, state)?,
        (None, None) => {}
        (Some(_), None) => return bad("the saved run trained in f32; this one is mixed precision".into()),
        (None, Some(_)) => return bad("the saved run trained in mixed precision; this one is f32 (or the device cannot)".into()),
    }
    Ok(p.clone())
}

/// After a device loss the loss scale starts again from its initial value on the new device
/// (the old one's scale cannot be read).
fn restart_scaler(scaler: &mut Option<LossScaler>, opts: &FitOptions, dev: &Device) -> Result<()> {
    if scaler.is_some() || opts.precision == Precision::Mixed {
        *scaler = scaler_for(opts.precision, dev, opts.loss_scale)?;
    }
    Ok(())
}

/// Restores the last good checkpoint on a device from the callbacks and rewinds to it.
#[allow(clippy::too_many_arguments)]
fn recover(
    e: Error,
    model: &dyn Module,
    opt: &mut dyn Optimizer,
    dev: &mut Device,
    pos: &mut Position,
    window: &mut Sums,
    history: &mut History,
    good: &Option<Good>,
    cb: &mut dyn Callbacks,
) -> Result<()> {
    let Some(g) = good else { return Err(e) };
    if history.recoveries.len() >= MAX_RECOVERIES {
        return Err(e);
    }
    let reason = match &e {
        Error::DeviceLost { reason, .. } => reason.clone(),
        other => other.to_string(),
    };
    let info = DeviceLost { step: pos.step, checkpoint_step: g.ck.step, backend: dev.name(), reason };
    let Some(new_dev) = cb.on_device_lost(&info) else { return Err(e) };
    // Sums and gradients of the lost device are gone with it.
    window.clear();
    g.ck.restore(model, opt, &new_dev)?;
    *dev = new_dev;
    *pos = g.pos.clone();
    history.steps.truncate(g.logged);
    history.epochs.truncate(g.epochs_logged);
    history.recoveries.push(info);
    Ok(())
}

/// Mean loss and accuracy (`None` where it means nothing) of `model` over `data` (evaluation
/// mode, no gradients). Sums stay on the device; one readback at the end.
pub fn evaluate(model: &dyn Module, loss: Loss, dev: &Device, data: Samples, batch_size: usize) -> Result<(f32, Option<f32>)> {
    if data.is_empty() {
        return Err(Error::invalid("evaluate", "the data set is empty"));
    }
    let output = output_shape(model, dev, &data)?;
    data.check("evaluate", loss, &output, &dev.name())?;
    let _g = no_grad();
    let idx: Vec<usize> = (0..data.len()).collect();
    let mut window = Sums::new();
    for chunk in idx.chunks(batch_size.max(1)) {
        let (xb, yb) = data.batch(dev, chunk)?;
        let out = model.forward(&xb, Mode::Eval)?;
        window.add(&loss.compute(&out, &yb)?, loss.correct(&out, &yb)?.as_ref(), chunk.len())?;
    }
    let (l, c, n) = window.read()?.unwrap_or((0.0, None, 1));
    Ok(((l / n as f64) as f32, c.map(|c| (c / n as f64) as f32)))
}

/// Model outputs for `x` in evaluation mode, as host data `[N, C]` (row-major).
pub fn predict(model: &dyn Module, x: &Tensor) -> Result<Vec<f32>> {
    let _g = no_grad();
    model.forward(x, Mode::Eval)?.to_vec()
}
