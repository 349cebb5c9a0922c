//! The precision check: before training on a device that computes or stores below f32
//! ([`Caps::reduced_precision`](pixelgrad_core::Caps::reduced_precision): WebGL's
//! RGBA16F fallback, mediump shaders), the run's first steps (the same batches, learning
//! rates and initial state) are trained on that device and on a reference device the caller
//! gives ([`Callbacks::precision_reference`](super::Callbacks::precision_reference); the CPU),
//! and the mean losses of each step compared. Within the tolerance, training goes on on the
//! device; otherwise the run falls back to the reference device. Either way training then
//! starts from the initial state (the checked steps are a probe, not part of the run), and
//! [`History::precision_check`](super::History::precision_check) holds the measured numbers:
//! a device that cannot train is never trusted silently.

use pixelgrad_core::{rng, Device, Error, Result};

use crate::checkpoint::Checkpoint;
use crate::optim::{Optimizer, Schedule};
use crate::sums::Sums;
use crate::{Loss, Module};

use super::samples::{shuffled, Samples};
use super::step::train_batch;

/// Steps compared.
pub const PRECISION_CHECK_STEPS: usize = 8;
/// Largest relative difference of a step's mean loss (device against reference) that keeps
/// training on the device.
pub const PRECISION_CHECK_TOLERANCE: f64 = 0.1;

/// What the precision check decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrecisionAction {
    /// The device's losses followed the reference's: training runs on the device.
    Continued,
    /// They did not: training runs on the reference device.
    FellBack,
}

/// The measured numbers of a precision check.
#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionCheck {
    /// The checked device and why it is below full precision.
    pub device: String,
    pub reason: String,
    pub reference: String,
    /// Mean loss of each checked step on each device.
    pub device_losses: Vec<f32>,
    pub reference_losses: Vec<f32>,
    /// Largest `|device - reference| / |reference|` over the steps (infinite when the device's
    /// loss is not finite).
    pub max_rel_diff: f64,
    pub tolerance: f64,
    pub action: PrecisionAction,
}

impl PrecisionCheck {
    /// One line for logs and the CLI.
    pub fn summary(&self) -> String {
        let fmt = |l: &[f32]| l.iter().map(|v| format!("{v:.4}")).collect::<Vec<_>>().join(" ");
        let what = match self.action {
            PrecisionAction::Continued => format!("training continues on {}", self.device),
            PrecisionAction::FellBack => format!("training falls back to {}", self.reference),
        };
        format!(
            "precision check ({}): {} steps, losses [{}] on {} vs [{}] on {}, max relative difference {:.3e} (tolerance {}): {what}",
            self.reason,
            self.device_losses.len(),
            fmt(&self.device_losses),
            self.device,
            fmt(&self.reference_losses),
            self.reference,
            self.max_rel_diff,
            self.tolerance,
        )
    }
}

/// What the check trains: the run's model, optimizer, loss, data and the first batches of its
/// first epoch in the run's order.
pub(crate) struct Probe<'r, 'a> {
    pub model: &'a dyn Module,
    pub opt: &'r mut dyn Optimizer,
    pub loss: Loss,
    pub train: &'r Samples<'a>,
    pub batch_size: usize,
    pub shuffle: bool,
    pub seed: u64,
    pub schedule: &'r Schedule,
    pub base_lr: f32,
}

impl Probe<'_, '_> {
    /// The mean loss of each of the first `steps` steps from `start`, trained on `dev`.
    fn losses(&mut self, start: &Checkpoint, dev: &Device, steps: usize) -> Result<Vec<f32>> {
        start.restore(self.model, &mut *self.opt, dev)?;
        let n = self.train.len();
        let order = if self.shuffle { shuffled(n, rng::mix(self.seed, 0)) } else { (0..n).collect() };
        let mut out = Vec::with_capacity(steps);
        for (i, idx) in order.chunks(self.batch_size).take(steps).enumerate() {
            self.opt.set_lr(self.schedule.lr(self.base_lr, i));
            let mut sums = Sums::new();
            let (xb, yb) = self.train.batch(dev, idx)?;
            train_batch(self.model, &mut *self.opt, self.loss, &xb, &yb, &mut sums)?;
            let (l, _, k) = sums.read()?.ok_or_else(|| Error::invalid("precision check", "no loss was summed"))?;
            out.push((l / k.max(1) as f64) as f32);
        }
        Ok(out)
    }

    /// Runs the check of `dev` against `reference` and leaves the model and optimizer in their
    /// initial state on the device chosen (the returned check says which).
    pub fn run(&mut self, dev: &Device, reason: String, reference: &Device) -> Result<PrecisionCheck> {
        let start = Checkpoint::take(self.model, &*self.opt, 0)?;
        let device_losses = self.losses(&start, dev, PRECISION_CHECK_STEPS)?;
        let reference_losses = self.losses(&start, reference, PRECISION_CHECK_STEPS)?;
        let max_rel_diff = device_losses.iter().zip(&reference_losses).fold(0.0f64, |m, (&d, &r)| {
            let rel = (d as f64 - r as f64).abs() / (r as f64).abs().max(1e-12);
            if rel.is_finite() {
                m.max(rel)
            } else {
                f64::INFINITY
            }
        });
        let action = if max_rel_diff <= PRECISION_CHECK_TOLERANCE { PrecisionAction::Continued } else { PrecisionAction::FellBack };
        let chosen = if action == PrecisionAction::Continued { dev } else { reference };
        start.restore(self.model, &mut *self.opt, chosen)?;
        self.opt.set_lr(self.base_lr);
        Ok(PrecisionCheck {
            device: dev.name(),
            reason,
            reference: reference.name(),
            device_losses,
            reference_losses,
            max_rel_diff,
            tolerance: PRECISION_CHECK_TOLERANCE,
            action,
        })
    }
}
