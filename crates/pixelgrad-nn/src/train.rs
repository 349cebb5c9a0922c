//! The training loop. Loss and accuracy are accumulated on the device and read back every
//! `read_every` steps (one small readback), never per op, so a GPU queue never drains while
//! training.

use std::ops::ControlFlow;

use pixelgrad_core::composite::accuracy_count;
use pixelgrad_core::{no_grad, rng, Device, Error, Result, Tensor};

use crate::optim::{Optimizer, Schedule};
use crate::{Loss, Mode, Module};

/// Host-side samples: `x` holds `labels.len()` samples of `sample_shape` each, contiguous.
#[derive(Clone, Copy, Debug)]
pub struct Samples<'a> {
    pub x: &'a [f32],
    pub sample_shape: &'a [usize],
    pub labels: &'a [u32],
}

impl<'a> Samples<'a> {
    pub fn new(x: &'a [f32], sample_shape: &'a [usize], labels: &'a [u32]) -> Result<Self> {
        let per: usize = sample_shape.iter().product();
        if per == 0 || x.len() != per * labels.len() {
            return Err(Error::invalid(
                "samples",
                format!("{} values do not hold {} samples of shape {:?}", x.len(), labels.len(), sample_shape),
            ));
        }
        Ok(Samples { x, sample_shape, labels })
    }
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
    fn per_sample(&self) -> usize {
        self.sample_shape.iter().product()
    }
    /// Uploads the samples at `idx` as `(x [B, ..sample_shape], classes [B])`.
    pub fn batch(&self, dev: &Device, idx: &[usize]) -> Result<(Tensor, Tensor)> {
        let per = self.per_sample();
        let mut xb = Vec::with_capacity(idx.len() * per);
        let mut yb = Vec::with_capacity(idx.len());
        for &i in idx {
            xb.extend_from_slice(&self.x[i * per..(i + 1) * per]);
            yb.push(self.labels[i] as f32);
        }
        let mut shape = vec![idx.len()];
        shape.extend_from_slice(self.sample_shape);
        Ok((Tensor::from_vec(dev, &xb, shape)?, Tensor::from_vec(dev, &yb, [idx.len()])?))
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
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions { epochs: 1, batch_size: 32, read_every: 10, shuffle: true, seed: 0, schedule: Schedule::Constant }
    }
}

/// What a step callback sees after a readback: means over the steps since the last one.
#[derive(Clone, Debug, PartialEq)]
pub struct StepLog {
    /// 1-based global step number.
    pub step: usize,
    /// 0-based epoch.
    pub epoch: usize,
    pub loss: f32,
    pub accuracy: f32,
    pub lr: f32,
}

/// End-of-epoch summary.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochLog {
    pub epoch: usize,
    pub train_loss: f32,
    pub train_accuracy: f32,
    pub test_loss: Option<f32>,
    pub test_accuracy: Option<f32>,
}

/// Per-step and per-epoch hooks. Returning `ControlFlow::Break` from either stops training.
pub trait Callbacks {
    fn on_step(&mut self, _log: &StepLog) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn on_epoch(&mut self, _log: &EpochLog) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// Callbacks that do nothing.
pub struct NoCallbacks;
impl Callbacks for NoCallbacks {}

/// Everything logged during [`fit`].
#[derive(Clone, Debug, Default)]
pub struct History {
    pub steps: Vec<StepLog>,
    pub epochs: Vec<EpochLog>,
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
    /// Adds one batch's mean loss and correct-prediction count (both device scalars).
    pub fn add(&mut self, loss: &Tensor, correct: &Tensor, batch: usize) -> Result<()> {
        let l = loss.detach().mul_scalar(batch as f32)?;
        let c = correct.detach();
        let keep = self.keep;
        let fold = |prev: Option<Tensor>, v: Tensor| -> Result<Tensor> {
            match prev {
                Some(s) => s.mul_scalar(keep)?.add(&v),
                None => Ok(v),
            }
        };
        self.loss_sum = Some(fold(self.loss_sum.take(), l)?);
        self.correct = Some(fold(self.correct.take(), c)?);
        self.keep = 1.0;
        self.samples += batch;
        self.steps += 1;
        Ok(())
    }
    /// Batches added since the last take.
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// `[loss sum, correct]` as one device tensor of 2 elements plus the sample count, and
    /// starts new sums; `None` when nothing was added since the last take.
    pub fn take(&mut self) -> Result<Option<(Tensor, usize)>> {
        if self.steps == 0 {
            return Ok(None);
        }
        let (Some(l), Some(c)) = (&self.loss_sum, &self.correct) else { return Ok(None) };
        let both = Tensor::concat(&[&l.reshape([1])?, &c.reshape([1])?], 0)?;
        let n = std::mem::take(&mut self.samples);
        self.steps = 0;
        self.keep = 0.0;
        Ok(Some((both, n)))
    }
    /// One blocking readback of both sums: (loss sum, correct count, samples), and resets.
    pub fn read(&mut self) -> Result<Option<(f64, f64, usize)>> {
        let Some((both, n)) = self.take()? else { return Ok(None) };
        let v = both.to_vec()?;
        Ok(Some((v[0] as f64, v[1] as f64, n)))
    }
}

/// One training step on a device-resident batch (`x` of `[B, ..]`, class indices `y` of
/// `[B]`): forward, loss, accuracy (no graph), backward, optimizer update, and the batch's loss
/// and correct count added to `sums`. A failed backward or update clears the gradients it
/// half-accumulated. Run it inside [`Device::step`] so GPU backends replay it.
pub fn train_batch(model: &dyn Module, opt: &mut dyn Optimizer, loss: Loss, x: &Tensor, y: &Tensor, sums: &mut Sums) -> Result<()> {
    let out = model.forward(x, Mode::Train)?;
    let l = loss.compute(&out, y)?;
    let correct = {
        let _g = no_grad();
        accuracy_count(&out, y)?
    };
    if let Err(e) = l.backward().and_then(|_| opt.step(model)) {
        model.zero_grad();
        return Err(e);
    }
    sums.add(&l, &correct, x.dims().first().copied().unwrap_or(0))
}

/// Trains `model` on `train` for `opts.epochs` epochs, evaluating on `test` after each epoch.
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
    let base_lr = opt.lr();
    let mut history = History::default();
    let mut step = 0usize;
    'epochs: for epoch in 0..opts.epochs {
        let order = if opts.shuffle { shuffled(train.len(), rng::mix(opts.seed, epoch as u64)) } else { (0..train.len()).collect() };
        let mut window = Sums::new();
        let (mut ep_loss, mut ep_correct, mut ep_n) = (0.0f64, 0.0f64, 0usize);
        let batches: Vec<&[usize]> = order.chunks(opts.batch_size).collect();
        let last = batches.len() - 1;
        for (bi, idx) in batches.into_iter().enumerate() {
            let lr = opts.schedule.lr(base_lr, step);
            opt.set_lr(lr);
            // One step plan per model, optimizer and batch size (the last batch of an epoch
            // may be smaller).
            let key = crate::step_key(model, &*opt, &[idx.len()]);
            dev.step(key, || {
                let (xb, yb) = train.batch(dev, idx)?;
                train_batch(model, &mut *opt, loss, &xb, &yb, &mut window)
            })?;
            step += 1;
            if window.steps() >= opts.read_every || bi == last {
                if let Some((ls, cs, n)) = window.read()? {
                    ep_loss += ls;
                    ep_correct += cs;
                    ep_n += n;
                    let log = StepLog { step, epoch, loss: (ls / n as f64) as f32, accuracy: (cs / n as f64) as f32, lr };
                    let flow = cb.on_step(&log);
                    history.steps.push(log);
                    if flow.is_break() {
                        break 'epochs;
                    }
                }
            }
        }
        let (test_loss, test_accuracy) = match &test {
            Some(t) if !t.is_empty() => {
                let (a, b) = evaluate(model, loss, dev, *t, opts.batch_size.max(256))?;
                (Some(a), Some(b))
            }
            _ => (None, None),
        };
        let log = EpochLog {
            epoch,
            train_loss: (ep_loss / ep_n.max(1) as f64) as f32,
            train_accuracy: (ep_correct / ep_n.max(1) as f64) as f32,
            test_loss,
            test_accuracy,
        };
        let flow = cb.on_epoch(&log);
        history.epochs.push(log);
        if flow.is_break() {
            break;
        }
    }
    opt.set_lr(base_lr);
    Ok(history)
}

/// Mean loss and accuracy of `model` over `data` (evaluation mode, no gradients). Sums stay on
/// the device; one readback at the end.
pub fn evaluate(model: &dyn Module, loss: Loss, dev: &Device, data: Samples, batch_size: usize) -> Result<(f32, f32)> {
    if data.is_empty() {
        return Err(Error::invalid("evaluate", "the data set is empty"));
    }
    let _g = no_grad();
    let idx: Vec<usize> = (0..data.len()).collect();
    let mut window = Sums::new();
    for chunk in idx.chunks(batch_size.max(1)) {
        let (xb, yb) = data.batch(dev, chunk)?;
        let out = model.forward(&xb, Mode::Eval)?;
        window.add(&loss.compute(&out, &yb)?, &accuracy_count(&out, &yb)?, chunk.len())?;
    }
    let (l, c, n) = window.read()?.unwrap_or((0.0, 0.0, 1));
    Ok(((l / n as f64) as f32, (c / n as f64) as f32))
}

/// Model outputs for `x` in evaluation mode, as host data `[N, C]` (row-major).
pub fn predict(model: &dyn Module, x: &Tensor) -> Result<Vec<f32>> {
    let _g = no_grad();
    model.forward(x, Mode::Eval)?.to_vec()
}
