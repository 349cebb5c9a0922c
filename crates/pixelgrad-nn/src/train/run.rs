//! The training loop as a state machine: [`Run::next`] does the next piece of work (a step, a
//! readback, a checkpoint, an evaluation) and says what happened as an [`Event`]. Checkpoint
//! cadence (given or measured), the stop on a non-finite loss, `max_steps`, resuming and the
//! decision to recover from a device loss live here once; a driver ([`super::fit`] natively,
//! the browser package's `fit` through `pixelgrad-web`) only loops, hands events to its
//! callbacks and answers [`Event::DeviceLost`] with a device ([`Run::recover`]) or not.
//!
//! [`RunState`] is the machine itself, holding no borrows: each call is given the model, the
//! optimizer and the data ([`Parts`]), so a driver that cannot keep borrows across calls (wasm,
//! where the page awaits between steps) owns it. [`Run`] is the same machine with its parts, as
//! native code uses it. With [`RunState::defer_reads`] the machine never reads the device
//! itself: where it would, it says [`Event::Read`] and waits for the driver to read
//! [`RunState::pending`] (asynchronously, in a browser) and [`RunState::feed`] the values back;
//! the steps, logs, checkpoints and recoveries are the same as with blocking reads.

use pixelgrad_core::{no_grad, rng, Device, Error, Result, Tensor};

use crate::checkpoint::{Capture, Checkpoint};
use crate::mixed::{scaler_for, train_batch_mixed, LossScaler, Precision};
use crate::optim::Optimizer;
use crate::pacing::Pacer;
use crate::sums::Sums;
use crate::{Loss, Mode, Module};

use super::cadence::{Cadence, Due};
use super::log::{DeviceLost, EpochLog, History, Position, Resume, ResumePoint, StepLog, Stopped};
use super::options::FitOptions;
use super::readback::{CheckpointRead, ReadKind, Reading};
use super::samples::{output_shape, shuffled, Samples};
use super::step::train_batch;

/// What one [`Run::next`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// One training step ran: `step` steps are done, the last in `epoch` at learning rate `lr`.
    Step { step: usize, epoch: usize, lr: f32 },
    /// Only with [`RunState::defer_reads`]: the machine needs the values of
    /// [`RunState::pending`] (`what` it is) before it can go on; read them and give them to
    /// [`RunState::feed`] (or a failed read's error to [`RunState::fail`]).
    Read(ReadKind),
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

/// What a [`RunState`] trains: the model, its optimizer and the data, lent for each call.
pub struct Parts<'a> {
    pub model: &'a dyn Module,
    pub opt: &'a mut dyn Optimizer,
    pub train: Samples<'a>,
    pub test: Option<Samples<'a>>,
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

/// Seconds on a monotonic clock (`None` where there is none: wasm, unless the driver gives
/// one with [`RunState::set_clock`]).
pub type Clock = fn() -> Option<f64>;

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
    /// The checkpoint before the first step (unless resumed).
    Start,
    /// After it: `max_steps` already reached, or training starts.
    Started,
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
    /// A deferred read is out ([`RunState::pending`]).
    Waiting,
    Done,
}

/// The training loop's state, without the model, optimizer and data it trains (see
/// [`Parts`]): what [`Run`] advances natively, and what a driver that owns it (wasm) advances
/// with [`RunState::next`]; [`RunState::take_history`] ends it.
pub struct RunState {
    loss: Loss,
    dev: Device,
    /// The options, without the saved run (restored once, in [`RunState::new`]).
    opts: FitOptions,
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
    /// Reads are left to the driver ([`RunState::defer_reads`]).
    defer: bool,
    /// The read out, with the phase to go on in once it is fed.
    pending: Option<(Reading, Phase)>,
    /// What a fed read produced, for the next `next`.
    fed: Option<Result<Option<Event>>>,
    clock: Clock,
    /// The epoch ends after the step in progress ([`RunState::end_here`]), then the run.
    wind: bool,
    /// Batches in an epoch.
    batches: usize,
    /// A checkpoint after the run's last step too ([`RunState::checkpoint_at_end`]).
    end_checkpoint: bool,
}

impl RunState {
    /// Checks the options and the targets against the model's output (a typed error before
    /// any step) and, with [`FitOptions::resume`](super::FitOptions::resume), restores the saved run.
    pub fn new(p: &mut Parts, loss: Loss, dev: &Device, opts: &FitOptions) -> Result<RunState> {
        let train = &p.train;
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
        let output = output_shape(p.model, dev, train)?;
        train.check("fit", loss, &output, &dev.name())?;
        if let Some(t) = &p.test {
            t.check("fit (test set)", loss, &output, &dev.name())?;
        }
        let accuracy = loss.has_accuracy(train.kind());
        let base_lr = p.opt.lr();
        let mut history = History::default();
        let mut good = None;
        let mut pos = Position::default();
        let mut scaler = scaler_for(opts.precision, dev, opts.loss_scale)?;
        if let Some(r) = &opts.resume {
            pos = resume_from(r, p.model, &mut *p.opt, dev, train, opts, scaler.as_mut())?;
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
        Ok(RunState {
            loss,
            dev: dev.clone(),
            opts: without_resume(opts),
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
            defer: false,
            pending: None,
            fed: None,
            clock: now,
            wind: false,
            batches: train.len().div_ceil(opts.batch_size),
            end_checkpoint: false,
        })
    }

    /// Leaves every device read to the driver: see [`Event::Read`]. Before the first `next`.
    pub fn defer_reads(&mut self) {
        self.defer = true;
    }

    /// Also takes a checkpoint after the run's last step (or the step [`RunState::end_here`]
    /// ends on), so a page's `model.restore()` after a later loss loses nothing.
    pub fn checkpoint_at_end(&mut self) {
        self.end_checkpoint = true;
    }

    /// Right after [`Event::Step`]: read the sums back after this step, whatever the cadence
    /// (a page stepping through training one read at a time).
    pub fn request_read(&mut self) {
        if let Phase::Read { due, .. } = &mut self.phase {
            due.read = true;
        }
    }

    /// Right after [`Event::Step`]: take a checkpoint after this step, whatever the cadence (a
    /// page's autosave is due). Nothing without checkpoints.
    pub fn request_checkpoint(&mut self) {
        if let (Phase::Read { due, .. }, true) = (&mut self.phase, self.cadence.checkpoints()) {
            due.read = true;
            due.checkpoint = true;
        }
    }

    /// Ends the epoch after the step in progress (or, between steps, after the next one; between
    /// epochs, now): its
    /// sums are read, the end checkpoint taken ([`RunState::checkpoint_at_end`]), the epoch
    /// logged with the means so far (and evaluated), and then the run is done. A page's
    /// `model.stopTraining`; natively a caller [`Run::stop`]s instead.
    pub fn end_here(&mut self) {
        self.wind = true;
        let ck = self.end_checkpoint && self.cadence.checkpoints() && self.good.as_ref().is_none_or(|g| g.pos.step != self.pos.step);
        match &mut self.phase {
            Phase::Read { due, .. } => {
                due.read = true;
                due.checkpoint |= ck;
            }
            Phase::Checkpoint { due } => due.checkpoint |= ck,
            // between epochs: the one before was logged; no step of the next
            Phase::Step if self.pos.batch == 0 => self.stopped_by_caller = true,
            _ => {}
        }
    }

    /// Whether the next [`RunState::next`] trains a step (a page paces steps only).
    pub fn steps_next(&self) -> bool {
        // a fed read that produced no event (the checkpoint before the first step) is passed
        let fed_event = self.fed.as_ref().is_some_and(|f| !matches!(f, Ok(None)));
        if self.stopped_by_caller || self.lost.is_some() || self.recovered.is_some() || fed_event || self.wind {
            return false;
        }
        let stepping = self.pos.epoch < self.opts.epochs && self.pos.batch < self.batches;
        match self.phase {
            Phase::Step => stepping,
            Phase::Started => stepping && self.opts.max_steps.is_none_or(|m| self.pos.step < m),
            // nothing due after the step before: the next step follows
            Phase::Read { due, .. } => !(due.read || due.checkpoint || due.at_max) && stepping,
            Phase::Checkpoint { due } => !(due.checkpoint || due.at_max) && stepping,
            _ => false,
        }
    }

    /// Steps in all: epochs times batches.
    fn total_steps(&self, p: &Parts) -> usize {
        self.opts.epochs * p.train.len().div_ceil(self.opts.batch_size)
    }

    /// Checkpoints taken so far (the one before the first step included).
    pub fn checkpoints_taken(&self) -> usize {
        self.history.checkpoints
    }

    /// The clock that times checkpoints and intervals (the automatic checkpoint interval is
    /// chosen from it): a browser's `performance.now()`, where `std` has none.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// The precision check ([`super::PrecisionCheck`]) before the first step of a new run on
    /// a device that reports [`Caps::reduced_precision`](pixelgrad_core::Caps::reduced_precision), against `reference`: afterwards
    /// the run trains on the device or on `reference`, from its initial state, and
    /// [`History::precision_check`] says which with the measured losses. `None` (nothing
    /// checked) on a full-precision device; an error after the first step or on a resumed run.
    pub fn check_precision(&mut self, p: &mut Parts, reference: &Device, resumed: bool) -> Result<Option<&super::PrecisionCheck>> {
        if self.phase != Phase::Start || self.pos.step != 0 || resumed {
            return Err(Error::invalid("precision check", "runs only before the first step of a new run"));
        }
        let Some(reason) = self.dev.backend().caps().reduced_precision.clone() else { return Ok(None) };
        let mut probe = super::shadow::Probe {
            model: p.model,
            opt: &mut *p.opt,
            loss: self.loss,
            train: &p.train,
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

    /// The device training runs on (a new one after [`RunState::recover`]).
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

    /// The checkpoint interval now (0: none; automatic: chosen at the first checkpoint).
    pub fn checkpoint_every(&self) -> usize {
        self.cadence.every()
    }

    /// The last good checkpoint as a run to go on from (`None` without one): its logs are
    /// those up to the checkpoint (a driver saving it after later logs saves the run there).
    pub fn resume_point(&self) -> Option<ResumePoint<'_>> {
        self.good.as_ref().map(|g| ResumePoint {
            checkpoint: &g.ck,
            position: &g.pos,
            loss_scale: g.scale,
            steps: &self.history.steps[..g.logged.min(self.history.steps.len())],
            epochs: &self.history.epochs[..g.epochs_logged.min(self.history.epochs.len())],
        })
    }

    /// The last good checkpoint (`None` without one).
    pub fn last_checkpoint(&self) -> Option<&Checkpoint> {
        self.good.as_ref().map(|g| &g.ck)
    }

    /// Ends the run where it is: no evaluation of the unfinished epoch, no further checkpoint.
    /// A read out ([`Event::Read`]) is dropped.
    pub fn stop(&mut self) {
        self.stopped_by_caller = true;
        self.pending = None;
        self.fed = None;
    }

    /// The tensor to read after [`Event::Read`] (`None` when nothing is waiting for a read).
    pub fn pending(&self) -> Option<&Tensor> {
        self.pending.as_ref().and_then(|(r, _)| r.tensor())
    }

    /// The values of [`RunState::pending`], as read: the machine goes on with them at the next
    /// [`RunState::next`]. Without a read out, an error.
    pub fn feed(&mut self, p: &mut Parts, values: Vec<f32>) -> Result<()> {
        let Some((reading, then)) = self.pending.take() else {
            return Err(Error::invalid("fit", "no read is waiting for its values"));
        };
        self.phase = then;
        let r = self.complete(p, reading, values);
        self.fed = Some(r);
        Ok(())
    }

    /// The read of [`RunState::pending`] failed with `e`, or (with no read out) the driver
    /// found the device gone between steps: the next [`RunState::next`] handles it as a failed
    /// blocking read or step would be (a device loss may be recovered from:
    /// [`Event::DeviceLost`]).
    pub fn fail(&mut self, e: Error) {
        if let Some((reading, then)) = self.pending.take() {
            self.phase = then;
            if let Reading::Checkpoint(CheckpointRead { interval_secs: None, .. }) = reading {
                // the checkpoint before the first step has none to go back to
                self.fed = Some(Err(e));
                return;
            }
        }
        self.fed = Some(self.lost(e).map(Some));
    }

    /// Does the next piece of work and says what happened. An error other than a recoverable
    /// device loss ends the run with it. (Not an `Iterator`: every call may fail, and a
    /// finished run says [`Event::Done`] rather than ending.)
    pub fn next(&mut self, p: &mut Parts) -> Result<Event> {
        let r = self.advance(p);
        if r.is_err() {
            self.phase = Phase::Done;
            self.pending = None;
        }
        r
    }

    fn advance(&mut self, p: &mut Parts) -> Result<Event> {
        if let Some(info) = self.recovered.take() {
            return Ok(Event::Recovered(info));
        }
        // what a fed (or failed) read produced comes first: a device loss it reported is
        // waiting for `recover`
        if let Some(fed) = self.fed.take() {
            if let Some(ev) = fed? {
                return Ok(ev);
            }
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
                Phase::Waiting => return Err(Error::invalid("fit", "a read is out: feed its values first")),
                Phase::Start => {
                    self.phase = Phase::Started;
                    if self.good.is_none() && (self.cadence.checkpoints() || self.opts.stop_on_nan) {
                        let reading = self.capture(p, None)?;
                        if let Some(ev) = self.read(p, reading, Phase::Started)? {
                            return Ok(ev);
                        }
                    }
                }
                Phase::Started => {
                    if self.opts.max_steps.is_some_and(|m| self.pos.step >= m) {
                        return Ok(self.end(Some(Stopped::MaxSteps { step: self.pos.step })));
                    }
                    self.step_started = (self.clock)();
                    self.cadence.start_at(self.pos.step);
                    self.phase = Phase::Step;
                }
                Phase::Step => {
                    if self.pos.epoch >= self.opts.epochs {
                        return Ok(self.end(None));
                    }
                    if self.pos.batch >= p.train.len().div_ceil(self.opts.batch_size) {
                        self.phase = Phase::Evaluate;
                        continue;
                    }
                    match self.step(p) {
                        Ok(ev) => return Ok(ev),
                        Err(e) => return self.lost(e),
                    }
                }
                Phase::Read { lr, due } => {
                    let then = Phase::Checkpoint { due };
                    self.phase = then;
                    if !due.read {
                        continue;
                    }
                    let r = self.window.take().map(|t| t.map(|(tensor, n)| Reading::Sums { tensor, n, lr }));
                    match r.and_then(|r| match r {
                        Some(reading) => self.read(p, reading, then),
                        None => Ok(None),
                    }) {
                        Ok(Some(ev)) => return Ok(ev),
                        Ok(None) => {}
                        Err(e) => return self.lost(e),
                    }
                }
                Phase::Checkpoint { due } => {
                    // winding up: the (partial) epoch's log next
                    self.phase = if self.wind { Phase::Evaluate } else { Phase::Step };
                    if due.at_max {
                        self.history.stopped = Some(Stopped::MaxSteps { step: self.pos.step });
                        self.phase = Phase::Done;
                    }
                    if due.checkpoint {
                        let then = self.phase;
                        let interval = match (self.step_started, (self.clock)()) {
                            (Some(a), Some(b)) => Some(b - a),
                            _ => None,
                        };
                        // `Some` marks an interval checkpoint (timed or not)
                        let r = self.capture(p, Some(interval)).and_then(|reading| self.read(p, reading, then));
                        match r {
                            Ok(Some(ev)) => return Ok(ev),
                            Ok(None) => {}
                            Err(e) => return self.lost(e),
                        }
                    }
                }
                Phase::Evaluate => {
                    self.phase = Phase::Step;
                    if self.wind && self.pos.epoch_samples == 0 {
                        // nothing trained in the epoch: no log
                        return Ok(self.end(None));
                    }
                    let r = self.eval_sums(p).and_then(|r| match r {
                        Some(reading) => self.read(p, reading, Phase::Step),
                        None => Ok(Some(self.epoch_log((None, None)))),
                    });
                    match r {
                        Ok(Some(ev)) => return Ok(ev),
                        Ok(None) => {}
                        Err(e) => return self.lost(e),
                    }
                }
            }
        }
    }

    /// A read the machine needs: left to the driver ([`Event::Read`]) when deferred, else read
    /// now (blocking) and its result.
    fn read(&mut self, p: &mut Parts, reading: Reading, then: Phase) -> Result<Option<Event>> {
        let Some(tensor) = reading.tensor() else { return self.complete(p, reading, Vec::new()) };
        if self.defer {
            let kind = reading.kind();
            self.pending = Some((reading, then));
            self.phase = Phase::Waiting;
            return Ok(Some(Event::Read(kind)));
        }
        let values = tensor.to_vec()?;
        self.complete(p, reading, values)
    }

    /// What a read's values mean.
    fn complete(&mut self, p: &mut Parts, reading: Reading, values: Vec<f32>) -> Result<Option<Event>> {
        match reading {
            Reading::Sums { n, lr, .. } => self.logged(p, lr, &values, n),
            Reading::Checkpoint(c) => self.checkpointed(c, values),
            Reading::Eval { n, .. } => {
                let (l, c) = sums_of(&values)?;
                let test = (Some((l / n as f64) as f32), c.map(|c| (c / n as f64) as f32));
                Ok(Some(self.epoch_log(test)))
            }
        }
    }

    fn end(&mut self, stopped: Option<Stopped>) -> Event {
        if stopped.is_some() {
            self.history.stopped = stopped;
        }
        self.phase = Phase::Done;
        Event::Done(self.history.stopped.clone())
    }

    /// The next batch of the epoch: one step (inside [`Device::step`](pixelgrad_core::Device::step), so GPU backends replay
    /// its plan).
    fn step(&mut self, p: &mut Parts) -> Result<Event> {
        let epoch = self.pos.epoch;
        let order = match self.order.take() {
            Some((e, order)) if e == epoch => order,
            _ => {
                let n = p.train.len();
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
        p.opt.set_lr(lr);
        // One step plan per model, optimizer and batch size (the last batch of an epoch may
        // be smaller).
        let key = crate::step_key(p.model, &*p.opt, &[idx.len(), self.scaler.is_some() as usize]);
        self.pacer.wait();
        let (model, opt, loss, train, window, dev) = (p.model, &mut *p.opt, self.loss, &p.train, &mut self.window, &self.dev);
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
        let epoch_end = self.pos.batch >= p.train.len().div_ceil(bs);
        let mut due = self.cadence.after_step(self.pos.step, self.window.steps(), epoch_end);
        let at_end = self.wind || self.pos.step == self.total_steps(p);
        if at_end && self.end_checkpoint && self.cadence.checkpoints() {
            due.checkpoint = true;
        }
        due.read |= self.wind || due.checkpoint;
        self.phase = Phase::Read { lr, due };
        Ok(Event::Step { step: self.pos.step, epoch, lr })
    }

    /// The sums read back (see [`Cadence::after_step`]): a log, or the stop on a non-finite
    /// loss.
    fn logged(&mut self, p: &mut Parts, lr: f32, values: &[f32], n: usize) -> Result<Option<Event>> {
        let (ls, cs) = sums_of(values)?;
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
                    g.ck.restore(p.model, &mut *p.opt, &self.dev)?;
                    g.ck.step
                }
                None => 0,
            };
            let step = self.pos.step;
            return Ok(Some(self.end(Some(Stopped::NonFiniteLoss { first_step, step, loss: mean, restored_step }))));
        }
        self.history.steps.push(log.clone());
        Ok(Some(Event::Log(log)))
    }

    /// Captures the model, the optimizer and the loss scaler for a checkpoint (`interval`:
    /// `Some` for the checkpoint of an interval, with its seconds where measured).
    fn capture(&mut self, p: &Parts, interval: Option<Option<f64>>) -> Result<Reading> {
        let started = (self.clock)();
        let cap = Capture::of(p.model, &*p.opt, self.pos.step);
        let scale = self.scaler.as_ref().map(LossScaler::state_tensor).transpose()?;
        CheckpointRead::new(cap, scale, started, interval).map(Reading::Checkpoint)
    }

    /// A checkpoint read: kept as the last good one when finite; an interval's also chooses
    /// an automatic interval from the measured costs.
    fn checkpointed(&mut self, c: CheckpointRead, values: Vec<f32>) -> Result<Option<Event>> {
        let (started, interval) = (c.started, c.interval_secs);
        let (ck, scale) = c.finish(values)?;
        let secs = match (started, (self.clock)()) {
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
        let Some(interval_secs) = interval else { return Ok(None) };
        let every = self.cadence.checkpointed(self.pos.step, secs, interval_secs);
        self.step_started = (self.clock)();
        Ok(finite.then_some(Event::Checkpoint { step: self.pos.step, seconds: secs, every }))
    }

    /// The end of an epoch: the evaluation sums over the test set (`None` without one).
    fn eval_sums(&mut self, p: &Parts) -> Result<Option<Reading>> {
        let Some(t) = p.test.filter(|t| !t.is_empty()) else { return Ok(None) };
        let _g = no_grad();
        let idx: Vec<usize> = (0..t.len()).collect();
        let mut sums = Sums::new();
        for chunk in idx.chunks(self.opts.batch_size.max(256)) {
            let (xb, yb) = t.batch(&self.dev, chunk)?;
            let out = p.model.forward(&xb, Mode::Eval)?;
            sums.add(&self.loss.compute(&out, &yb)?, self.loss.correct(&out, &yb)?.as_ref(), chunk.len())?;
        }
        Ok(sums.take()?.map(|(tensor, n)| Reading::Eval { tensor, n }))
    }

    /// The epoch's log (with the test set's loss and accuracy), and the next epoch.
    fn epoch_log(&mut self, (test_loss, test_accuracy): (Option<f32>, Option<f32>)) -> Event {
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
        self.phase = if self.wind { Phase::Done } else { Phase::Step };
        Event::Epoch(log)
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

    /// After [`Event::DeviceLost`]: restores the last good checkpoint on `dev` (into `p`, the
    /// model and optimizer to go on with: the same, or rebuilt on `dev`) and goes back to it
    /// (the next event is [`Event::Recovered`]). Without a loss waiting, an error.
    pub fn recover(&mut self, p: &mut Parts, dev: Device) -> Result<()> {
        let (Some((_, info)), Some(g)) = (self.lost.take(), &self.good) else {
            return Err(Error::invalid("recover", "no device loss is waiting to be recovered from"));
        };
        // Sums and gradients of the lost device are gone with it.
        self.window.clear();
        g.ck.restore(p.model, &mut *p.opt, &dev)?;
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
        self.step_started = (self.clock)();
        self.cadence.start_at(self.pos.step);
        self.order = None;
        self.pending = None;
        self.fed = None;
        self.phase = Phase::Step;
        self.recovered = Some(info);
        Ok(())
    }

    /// The history of the finished (or stopped) run: the interval used, the last good
    /// checkpoint and, for mixed precision, what ran (one blocking read; with deferred reads
    /// the report is left out). Puts the optimizer back at its base learning rate.
    pub fn take_history(&mut self, p: &mut Parts) -> Result<History> {
        p.opt.set_lr(self.base_lr);
        let mut history = std::mem::take(&mut self.history);
        if self.opts.precision == Precision::Mixed && !self.defer {
            history.mixed = Some(LossScaler::report(self.scaler.as_ref(), &self.dev)?);
        }
        history.checkpoint_every = self.cadence.every();
        history.last_checkpoint = self.good.take().map(|g| g.ck);
        Ok(history)
    }

    /// The loss scaler of mixed precision (`None` in f32), taken out: a driver that keeps
    /// one with its model hands it back there after the run.
    pub fn take_scaler(&mut self) -> Option<LossScaler> {
        self.scaler.take()
    }

    /// The learning rate the optimizer had before the run (a driver dropping the run early
    /// puts it back).
    pub fn base_lr(&self) -> f32 {
        self.base_lr
    }
}

/// `(loss sum, correct count)` from the values of a [`Sums::take`] tensor.
fn sums_of(values: &[f32]) -> Result<(f64, Option<f64>)> {
    match values {
        [l] => Ok((*l as f64, None)),
        [l, c] => Ok((*l as f64, Some(*c as f64))),
        _ => Err(Error::invalid("fit", format!("read {} sums, expected 1 or 2", values.len()))),
    }
}

/// The options without the saved run (a [`RunState`] keeps no second copy of its checkpoint).
fn without_resume(o: &FitOptions) -> FitOptions {
    FitOptions {
        epochs: o.epochs,
        batch_size: o.batch_size,
        read_every: o.read_every,
        shuffle: o.shuffle,
        seed: o.seed,
        schedule: o.schedule.clone(),
        checkpoint_every: o.checkpoint_every,
        stop_on_nan: o.stop_on_nan,
        max_steps_per_second: o.max_steps_per_second,
        precision: o.precision,
        loss_scale: o.loss_scale,
        max_steps: o.max_steps,
        resume: None,
    }
}

/// One training run of `model` on `train` (see [`super::fit`] for what it does and
/// [`FitOptions`](super::FitOptions) for how), advanced by [`Run::next`]: a [`RunState`] with
/// its [`Parts`], reading the device itself (blocking).
pub struct Run<'a> {
    parts: Parts<'a>,
    state: RunState,
    resumed: bool,
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
        opts: &FitOptions,
    ) -> Result<Run<'a>> {
        let mut parts = Parts { model, opt, train, test };
        let state = RunState::new(&mut parts, loss, dev, opts)?;
        Ok(Run { parts, state, resumed: opts.resume.is_some() })
    }

    /// See [`RunState::check_precision`].
    pub fn check_precision(&mut self, reference: &Device) -> Result<Option<&super::PrecisionCheck>> {
        self.state.check_precision(&mut self.parts, reference, self.resumed)
    }

    /// The device training runs on (a new one after [`Run::recover`]).
    pub fn device(&self) -> &Device {
        self.state.device()
    }

    /// Where training is.
    pub fn position(&self) -> &Position {
        self.state.position()
    }

    /// Everything logged so far.
    pub fn history(&self) -> &History {
        self.state.history()
    }

    /// The last good checkpoint as a run to go on from (`None` without one).
    pub fn resume_point(&self) -> Option<ResumePoint<'_>> {
        self.state.resume_point()
    }

    /// Ends the run where it is: no evaluation of the unfinished epoch, no further checkpoint.
    pub fn stop(&mut self) {
        self.state.stop();
    }

    /// Does the next piece of work and says what happened (never [`Event::Read`]: a `Run`
    /// reads the device itself). An error other than a recoverable device loss ends the run
    /// with it.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Event> {
        self.state.next(&mut self.parts)
    }

    /// After [`Event::DeviceLost`]: restores the last good checkpoint on `dev` and goes back to
    /// it (the next event is [`Event::Recovered`]). Without a loss waiting, an error.
    pub fn recover(&mut self, dev: Device) -> Result<()> {
        self.state.recover(&mut self.parts, dev)
    }

    /// The history of the finished (or stopped) run: the interval used, the last good
    /// checkpoint and, for mixed precision, what ran.
    pub fn into_history(mut self) -> Result<History> {
        self.state.take_history(&mut self.parts)
    }
}

impl Drop for Run<'_> {
    /// A run dropped early (an error, a driver that stopped looping) leaves the optimizer at
    /// its base learning rate, as a finished one does.
    fn drop(&mut self) {
        self.parts.opt.set_lr(self.state.base_lr());
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
