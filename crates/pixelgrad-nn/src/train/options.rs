//! What a training run is asked to do ([`FitOptions`]) and the automatic checkpoint interval.

use crate::mixed::{Precision, ScaleOptions};
use crate::optim::Schedule;

use super::log::Resume;

/// Options of [`fit`](super::fit).
#[derive(Clone, Debug)]
pub struct FitOptions {
    pub epochs: usize,
    pub batch_size: usize,
    /// Read loss and accuracy back every this many steps.
    pub read_every: usize,
    pub shuffle: bool,
    pub seed: u64,
    pub schedule: Schedule,
    /// Host checkpoint every this many steps (see [`Checkpoint`](crate::checkpoint::Checkpoint)): `Some(0)` never (no
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
    /// as [`History::mixed`](super::History::mixed) reports.
    pub precision: Precision,
    /// The loss scale of mixed-precision training.
    pub loss_scale: ScaleOptions,
    /// Stop after this many steps in all (counting those of a resumed run), with a checkpoint
    /// there when checkpoints are on ([`Callbacks::on_checkpoint`](super::Callbacks::on_checkpoint)) and
    /// [`Stopped::MaxSteps`](super::Stopped::MaxSteps); no evaluation for the unfinished epoch.
    pub max_steps: Option<usize>,
    /// Go on from a saved run ([`Resume`](super::Resume), e.g. read by [`crate::resume::load`]) instead of
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
