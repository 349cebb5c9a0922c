//! The training loop as a state machine: [`Run::next`] does the next piece of work (a step, a
//! readback, a checkpoint, an evaluation) and says what happened as an [`Event`]. Checkpoint
//! cadence (given or measured), the stop on a non-finite loss, `max_steps`, resuming and the
//! decision to recover from a device loss live here once; a driver ([`super::fit`] natively)
//! only loops, hands events to its callbacks and answers [`Event::DeviceLost`] with a device
//! ([`Run::recover`]) or not.

use pixelgrad_core::{rng, Device, Error, Result};

use crate::checkpoint::{Capture, Checkpoint};
use crate::mixed::{scaler_for, train_batch_mixed, LossScaler, Precision};
use crate::optim::Optimizer;
use crate::pacing::Pacer;
use crate::sums::Sums;
use crate::{Loss, Module};

use super::cadence::{Cadence, Due};
use super::log::{DeviceLost, EpochLog, History, Position, Resume, ResumePoint, StepLog, Stopped};
use super::options::FitOptions;
use super::samples::{output_shape, shuffled, Samples};
use super::step::{evaluate, train_batch};

/// What one [`Run::next`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// One training step ran: `step` steps are done, the last in `epoch` at learning rate `lr`.
    Step { step: usize, epoch: usize, lr: f32 },
    /// Loss and accuracy were read back: the means since the last log (also in the history).
    /// [`Run::stop`] after it ends the run before anything else (no checkpoint at this step).
    Log(StepLog),
    /// A good checkpoint was taken after `step` steps (every `every` steps, and at `max_steps`;
    /// not the one before the first step), in `seconds` (where time is measured):
    /// [`Run::resume_point`] is the run to save.
    Checkpoint { step: usize, seconds: Option<f64>, every: usize },
    /// An epoch ended, evaluated on the test set where there is one.
    Epoch(EpochLog),
    /// The device was lost and the run can go back to its last checkpoint: call
    /// [`Run::recover`] with a device to go on with; the next [`Run::next`] without one returns
    /// the device-loss error.
    DeviceLost(DeviceLost),
    /// Training went back to the checkpoint of `info.checkpoint_step` on the new device; the
    /// steps since are redone (and logged again).
    Recovered(DeviceLost),
    /// The run is over: all epochs done, or stopped (why: `Some`), or [`Run::stop`] was called
    /// (`None`). Every later `next` says `Done` again.
    Done(Option<Stopped>),
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

/// Most device losses one run recovers from.
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

/// What `next` does next.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// The checkpoint before the first step (unless resumed), and `max_steps` already reached.
    Start,
    /// The next batch of the epoch, or its evaluation when all are done.
    Step,
    /// After a step: read the sums back when due.
    Read {
        lr: f32,
        due: Due,
    },
    /// After the read: the checkpoint when due, then the `max_steps` stop.
    Checkpoint {
        due: Due,
    },
    /// The end-of-epoch evaluation and log.
    Evaluate,
    Done,
}

/// One training run of `model` on `train` (see [`super::fit`] for what it does and
/// [`FitOptions`](super::FitOptions) for how), advanced by [`Run::next`].
pub struct Run<'a> {
    model: &'a dyn Module,
    opt: &'a mut dyn Optimizer,
    loss: Loss,
    dev: Device,
    train: Samples<'a>,
    test: Option<Samples<'a>>,
    opts: &'a FitOptions,
    accuracy: bool,
    base_lr: f32,
    pacer: Pacer,
    history: History,
    /// When to read back and to take checkpoints.
    cadence: Cadence,
    good: Option<Good>,
    pos: Position,
    window: Sums,
    step_started: Option<f64>,
    scaler: Option<LossScaler>,
    /// The batch order of `order.0`'s epoch.
    order: Option<(usize, Vec<usize>)>,
    phase: Phase,
    /// A device loss waiting for [`Run::recover`]: the error and what the driver was told.
    lost: Option<(Error, DeviceLost)>,
    recovered: Option<DeviceLost>,
    stopped_by_caller: bool,
}

impl<'a> Run<'a> {
    /// Checks the options and the targets against the model's output (a typed error before
    /// any step) and, with [`FitOptions::resume`](super::FitOptions::resume), restores the saved run.
    pub fn new(
        model: &'a dyn Module,
        opt: &'a mut dyn Optimizer,
        loss: Loss,
        dev: &Device,
        train: Samples<'a>,
        test: Option<Samples<'a>>,
        opts: &'a FitOptions,
    ) -> Result<Run<'a>> {
        if train.is_empty() {
            return Err(Error::invalid("fit", "the training set is empty"));
        }
        if opts.batch_size == 0 || opts.read_every == 0 {
            return Err(Error::invalid("fit", "batch size and read_every must be at least 1"));
        }
        if opts.max_steps_per_second.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            return Err(Error::invalid(
                "fit",
                format!("max_steps_per_second must be a positive number, got {:?}", opts.max_steps_per_second),
            ));
        }
        let pacer = Pacer::new(opts.max_steps_per_second);
        let output = output_shape(model, dev, &train)?;
        train.check("fit", loss, &output, &dev.name())?;
        if let Some(t) = &test {
            t.check("fit (test set)", loss, &output, &dev.name())?;
        }
        let accuracy = loss.has_accuracy(train.kind());
        let base_lr = opt.lr();
        let mut history = History::default();
        let mut good = None;
        let mut pos = Position::default();
        let mut scaler = scaler_for(opts.precision, dev, opts.loss_scale)?;
        if let Some(r) = &opts.resume {
            pos = resume_from(r, model, &mut *opt, dev, &train, opts, scaler.as_mut())?;
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
        Ok(Run {
            model,
            opt,
            loss,
            dev: dev.clone(),
            train,
            test,
            opts,
            accuracy,
            base_lr,
            pacer,
            history,
            cadence: Cadence::new(opts.checkpoint_every, opts.read_every, opts.max_steps),
            good,
            pos,
            window: Sums::new(),
            step_started: None,
            scaler,
            order: None,
            phase: Phase::Start,
            lost: None,
            recovered: None,
            stopped_by_caller: false,
        })
    }

    /// The precision check ([`super::PrecisionCheck`]) before the first step of a new run on
    /// a device that reports [`Caps::reduced_precision`](pixelgrad_core::Caps::reduced_precision), against `reference`: afterwards
    /// the run trains on the device or on `reference`, from its initial state, and
    /// [`History::precision_check`] says which with the measured losses. `None` (nothing
    /// checked) on a full-precision device; an error after the first step or on a resumed run.
    pub fn check_precision(&mut self, reference: &Device) -> Result<Option<&super::PrecisionCheck>> {
        if self.phase != Phase::Start || self.pos.step != 0 || self.opts.resume.is_some() {
            return Err(Error::invalid("precision check", "runs only before the first step of a new run"));
        }
        let Some(reason) = self.dev.backend().caps().reduced_precision.clone() else { return Ok(None) };
        let mut probe = super::shadow::Probe {
            model: self.model,
            opt: &mut *self.opt,
            loss: self.loss,
            train: &self.train,
            batch_size: self.opts.batch_size,
            shuffle: self.opts.shuffle,
            seed: self.opts.seed,
            schedule: &self.opts.schedule,
            base_lr: self.base_lr,
        };
        let check = probe.run(&self.dev, reason, reference)?;
        if check.action == super::PrecisionAction::FellBack {
            self.dev = reference.clone();
            self.scaler = scaler_for(self.opts.precision, &self.dev, self.opts.loss_scale)?;
        }
        Ok(Some(self.history.precision_check.insert(check)))
    }

    /// The device training runs on (a new one after [`Run::recover`]).
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Where training is.
    pub fn position(&self) -> &Position {
        &self.pos
    }

    /// Everything logged so far.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The last good checkpoint as a run to go on from (`None` without one).
    pub fn resume_point(&self) -> Option<ResumePoint<'_>> {
        self.good.as_ref().map(|g| ResumePoint {
            checkpoint: &g.ck,
            position: &g.pos,
            loss_scale: g.scale,
            steps: &self.history.steps,
            epochs: &self.history.epochs,
        })
    }

    /// Ends the run where it is: no evaluation of the unfinished epoch, no further checkpoint.
    pub fn stop(&mut self) {
        self.stopped_by_caller = true;
    }

    /// Does the next piece of work and says what happened. An error other than a recoverable
    /// device loss ends the run with it. (Not an `Iterator`: every call may fail, and a
    /// finished run says [`Event::Done`] rather than ending.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Event> {
        let r = self.advance();
        if r.is_err() {
            self.phase = Phase::Done;
        }
        r
    }

    fn advance(&mut self) -> Result<Event> {
        if let Some(info) = self.recovered.take() {
            return Ok(Event::Recovered(info));
        }
        if let Some((e, _)) = self.lost.take() {
            return Err(e);
        }
        loop {
            if self.stopped_by_caller {
                self.phase = Phase::Done;
            }
            match self.phase {
                Phase::Done => return Ok(Event::Done(self.history.stopped.clone())),
                Phase::Start => {
                    if self.good.is_none() && (self.cadence.checkpoints() || self.opts.stop_on_nan) {
                        self.checkpoint()?;
                    }
                    if self.opts.max_steps.is_some_and(|m| self.pos.step >= m) {
                        return Ok(self.finish(Some(Stopped::MaxSteps { step: self.pos.step })));
                    }
                    self.step_started = now();
                    self.cadence.start_at(self.pos.step);
                    self.phase = Phase::Step;
                }
                Phase::Step => {
                    if self.pos.epoch >= self.opts.epochs {
                        return Ok(self.finish(None));
                    }
                    if self.pos.batch >= self.train.len().div_ceil(self.opts.batch_size) {
                        self.phase = Phase::Evaluate;
                        continue;
                    }
                    match self.step() {
                        Ok(ev) => return Ok(ev),
                        Err(e) => return self.lost(e),
                    }
                }
                Phase::Read { lr, due } => {
                    self.phase = Phase::Checkpoint { due };
                    match self.read(lr, due.read) {
                        Ok(Some(ev)) => return Ok(ev),
                        Ok(None) => {}
                        Err(e) => return self.lost(e),
                    }
                }
                Phase::Checkpoint { due } => {
                    self.phase = Phase::Step;
                    let ev = if due.checkpoint {
                        match self.interval_checkpoint() {
                            Ok(ev) => ev,
                            Err(e) => return self.lost(e),
                        }
                    } else {
                        None
                    };
                    if due.at_max {
                        self.history.stopped = Some(Stopped::MaxSteps { step: self.pos.step });
                        self.phase = Phase::Done;
                    }
                    if let Some(ev) = ev {
                        return Ok(ev);
                    }
                }
                Phase::Evaluate => match self.evaluate() {
                    Ok(ev) => return Ok(ev),
                    Err(e) => return self.lost(e),
                },
            }
        }
    }

    fn finish(&mut self, stopped: Option<Stopped>) -> Event {
        if stopped.is_some() {
            self.history.stopped = stopped;
        }
        self.phase = Phase::Done;
        Event::Done(self.history.stopped.clone())
    }

    /// The next batch of the epoch: one step (inside [`Device::step`](pixelgrad_core::Device::step), so GPU backends replay
    /// its plan).
    fn step(&mut self) -> Result<Event> {
        let epoch = self.pos.epoch;
        let order = match self.order.take() {
            Some((e, order)) if e == epoch => order,
            _ => {
                let n = self.train.len();
                if self.opts.shuffle {
                    shuffled(n, rng::mix(self.opts.seed, epoch as u64))
                } else {
                    (0..n).collect()
                }
            }
        };
        let order = &self.order.insert((epoch, order)).1;
        let bs = self.opts.batch_size;
        let idx = &order[self.pos.batch * bs..((self.pos.batch + 1) * bs).min(order.len())];
        let lr = self.opts.schedule.lr(self.base_lr, self.pos.step);
        self.opt.set_lr(lr);
        // One step plan per model, optimizer and batch size (the last batch of an epoch may
        // be smaller).
        let key = crate::step_key(self.model, &*self.opt, &[idx.len(), self.scaler.is_some() as usize]);
        self.pacer.wait();
        let (model, opt, loss, train, window, dev) = (self.model, &mut *self.opt, self.loss, &self.train, &mut self.window, &self.dev);
        let scaler = &mut self.scaler;
        dev.step(key, || {
            let (xb, yb) = train.batch(dev, idx)?;
            match scaler.as_mut() {
                Some(s) => train_batch_mixed(model, opt, loss, &xb, &yb, window, s),
                None => train_batch(model, opt, loss, &xb, &yb, window),
            }
        })?;
        self.pos.step += 1;
        self.pos.batch += 1;
        let epoch_end = self.pos.batch >= self.train.len().div_ceil(bs);
        let due = self.cadence.after_step(self.pos.step, self.window.steps(), epoch_end);
        self.phase = Phase::Read { lr, due };
        Ok(Event::Step { step: self.pos.step, epoch, lr })
    }

    /// Reads the sums back when due (see [`Cadence::after_step`]): a log, or the stop on a
    /// non-finite loss.
    fn read(&mut self, lr: f32, due: bool) -> Result<Option<Event>> {
        if !due {
            return Ok(None);
        }
        let Some((ls, cs, n)) = self.window.read()? else { return Ok(None) };
        let pos = &mut self.pos;
        pos.epoch_loss += ls;
        pos.epoch_correct += cs.unwrap_or(0.0);
        pos.epoch_samples += n;
        let mean = (ls / n as f64) as f32;
        let log = StepLog { step: pos.step, epoch: pos.epoch, loss: mean, accuracy: cs.map(|c| (c / n as f64) as f32), lr };
        if self.opts.stop_on_nan && !mean.is_finite() {
            let first_step = self.history.steps.last().map(|s| s.step + 1).unwrap_or(1);
            self.history.steps.push(log);
            let restored_step = match &self.good {
                Some(g) => {
                    g.ck.restore(self.model, &mut *self.opt, &self.dev)?;
                    g.ck.step
                }
                None => 0,
            };
            let step = self.pos.step;
            return Ok(Some(self.finish(Some(Stopped::NonFiniteLoss { first_step, step, loss: mean, restored_step }))));
        }
        self.history.steps.push(log.clone());
        Ok(Some(Event::Log(log)))
    }

    /// Copies the model and optimizer to the host; keeps it as the last good checkpoint when
    /// finite. Returns its seconds (where measured) and whether it was finite.
    fn checkpoint(&mut self) -> Result<(Option<f64>, bool)> {
        let t0 = now();
        let ck = Capture::of(self.model, &*self.opt, self.pos.step).read()?;
        let scale = self.scaler.as_ref().map(LossScaler::state).transpose()?;
        let secs = match (t0, now()) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        self.history.checkpoints += 1;
        self.history.checkpoint_seconds += secs.unwrap_or(0.0);
        let finite = ck.is_finite();
        if finite {
            self.good =
                Some(Good { ck, pos: self.pos.clone(), scale, logged: self.history.steps.len(), epochs_logged: self.history.epochs.len() });
        }
        Ok((secs, finite))
    }

    /// The checkpoint of the interval; the first one also chooses an automatic interval from
    /// the measured costs.
    fn interval_checkpoint(&mut self) -> Result<Option<Event>> {
        let interval_secs = match (self.step_started, now()) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        let (ck_secs, finite) = self.checkpoint()?;
        let every = self.cadence.checkpointed(self.pos.step, ck_secs, interval_secs);
        self.step_started = now();
        Ok(finite.then_some(Event::Checkpoint { step: self.pos.step, seconds: ck_secs, every }))
    }

    /// The end of an epoch: evaluation on the test set, the epoch's log, and the next epoch.
    fn evaluate(&mut self) -> Result<Event> {
        let (test_loss, test_accuracy) = match &self.test {
            Some(t) if !t.is_empty() => {
                let (a, b) = evaluate(self.model, self.loss, &self.dev, *t, self.opts.batch_size.max(256))?;
                (Some(a), b)
            }
            _ => (None, None),
        };
        let pos = &self.pos;
        let log = EpochLog {
            epoch: pos.epoch,
            train_loss: (pos.epoch_loss / pos.epoch_samples.max(1) as f64) as f32,
            train_accuracy: self.accuracy.then(|| (pos.epoch_correct / pos.epoch_samples.max(1) as f64) as f32),
            test_loss,
            test_accuracy,
        };
        self.history.epochs.push(log.clone());
        self.pos = Position { epoch: pos.epoch + 1, step: pos.step, ..Position::default() };
        self.phase = Phase::Step;
        Ok(Event::Epoch(log))
    }

    /// A device loss with a good checkpoint to go back to (and recoveries left) becomes
    /// [`Event::DeviceLost`]; any other error ends the run.
    fn lost(&mut self, e: Error) -> Result<Event> {
        if !matches!(e, Error::DeviceLost { .. }) || self.history.recoveries.len() >= MAX_RECOVERIES {
            return Err(e);
        }
        let Some(g) = &self.good else { return Err(e) };
        let reason = match &e {
            Error::DeviceLost { reason, .. } => reason.clone(),
            other => other.to_string(),
        };
        let info = DeviceLost { step: self.pos.step, checkpoint_step: g.ck.step, backend: self.dev.name(), reason };
        self.lost = Some((e, info.clone()));
        Ok(Event::DeviceLost(info))
    }

    /// After [`Event::DeviceLost`]: restores the last good checkpoint on `dev` and goes back to
    /// it (the next event is [`Event::Recovered`]). Without a loss waiting, an error.
    pub fn recover(&mut self, dev: Device) -> Result<()> {
        let (Some((_, info)), Some(g)) = (self.lost.take(), &self.good) else {
            return Err(Error::invalid("recover", "no device loss is waiting to be recovered from"));
        };
        // Sums and gradients of the lost device are gone with it.
        self.window.clear();
        g.ck.restore(self.model, &mut *self.opt, &dev)?;
        self.dev = dev;
        self.pos = g.pos.clone();
        self.history.steps.truncate(g.logged);
        self.history.epochs.truncate(g.epochs_logged);
        self.history.recoveries.push(info.clone());
        // The loss scale starts again from its initial value on the new device (the old
        // one's scale cannot be read).
        if self.scaler.is_some() || self.opts.precision == Precision::Mixed {
            self.scaler = scaler_for(self.opts.precision, &self.dev, self.opts.loss_scale)?;
        }
        self.step_started = now();
        self.cadence.start_at(self.pos.step);
        self.order = None;
        self.phase = Phase::Step;
        self.recovered = Some(info);
        Ok(())
    }

    /// The history of the finished (or stopped) run: the interval used, the last good
    /// checkpoint and, for mixed precision, what ran.
    pub fn into_history(mut self) -> Result<History> {
        self.opt.set_lr(self.base_lr);
        let mut history = std::mem::take(&mut self.history);
        if self.opts.precision == Precision::Mixed {
            history.mixed = Some(LossScaler::report(self.scaler.as_ref(), &self.dev)?);
        }
        history.checkpoint_every = self.cadence.every();
        history.last_checkpoint = self.good.take().map(|g| g.ck);
        Ok(history)
    }
}

impl Drop for Run<'_> {
    /// A run dropped early (an error, a driver that stopped looping) leaves the optimizer at
    /// its base learning rate, as a finished one does.
    fn drop(&mut self) {
        self.opt.set_lr(self.base_lr);
    }
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
