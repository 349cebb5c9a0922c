//! What a training run logs and reports: step and epoch logs, device losses, why it stopped,
//! its history, and the position and saved run to go on from.

use crate::checkpoint::Checkpoint;
use crate::mixed::MixedReport;

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

/// A device loss during [`fit`](super::fit), as [`Callbacks::on_device_lost`](super::Callbacks::on_device_lost) sees it.
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

/// Why [`fit`](super::fit) stopped before its last epoch, other than a callback asking.
#[derive(Clone, Debug, PartialEq)]
pub enum Stopped {
    /// A loss read back at `step` was NaN or infinite (somewhere in `first_step..=step`); the
    /// weights and optimizer state are those of the checkpoint of `restored_step`.
    NonFiniteLoss { first_step: usize, step: usize, loss: f32, restored_step: usize },
    /// [`FitOptions::max_steps`](super::FitOptions::max_steps) steps were done.
    MaxSteps { step: usize },
}

/// Everything logged during [`fit`](super::fit).
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
    /// The precision check run before training on a device below full precision, if one ran
    /// ([`super::PrecisionCheck`]).
    pub precision_check: Option<super::PrecisionCheck>,
}

/// Where training is: the epoch, the next batch in it, the steps done and the epoch's sums so
/// far. With the [`Checkpoint`](crate::checkpoint::Checkpoint) taken there, what [`fit`](super::fit) needs to go on from that moment
/// exactly ([`FitOptions::resume`](super::FitOptions::resume)): an epoch's batch order comes from the seed and the epoch.
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

/// A training run to go on from (see [`FitOptions::resume`](super::FitOptions::resume)): the checkpoint, where it was
/// taken, the loss scaler's state (mixed precision) and the logs up to then. Saved by
/// [`Callbacks::on_checkpoint`](super::Callbacks::on_checkpoint) through [`crate::resume`].
#[derive(Clone, Debug, PartialEq)]
pub struct Resume {
    pub checkpoint: Checkpoint,
    pub position: Position,
    /// Mixed precision: the loss scale, the good steps in a row and the skipped steps.
    pub loss_scale: Option<[f32; 3]>,
    pub steps: Vec<StepLog>,
    pub epochs: Vec<EpochLog>,
}

/// What [`Callbacks::on_checkpoint`](super::Callbacks::on_checkpoint) sees: a [`Resume`] by reference.
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
