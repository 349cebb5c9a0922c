//! The training loop. Loss and accuracy are accumulated on the device and read back every
//! `read_every` steps (one small readback), never per op, so a GPU queue never drains while
//! training.
//!
//! Targets are what the caller gave ([`Targets`]: class indices or float targets of any
//! shape), checked against the model's output before the first step. Every
//! `checkpoint_every` steps [`fit`] copies parameters and optimizer state to the host
//! ([`Checkpoint`](crate::checkpoint::Checkpoint)); when the device is lost it asks [`Callbacks::on_device_lost`] for a new
//! one, restores the checkpoint there and redoes the steps since; with `stop_on_nan` a
//! non-finite loss stops training with the last good checkpoint restored.
//!
//! The loop itself is [`Run`], a state machine whose [`Run::next`] yields [`Event`]s; [`fit`]
//! is the native driver that loops over them and calls the [`Callbacks`]. [`RunState`] is the
//! same machine without borrows, for a driver that owns it and reads the device itself
//! (the browser package's `fit`, through `pixelgrad-web`).

mod cadence;
mod callbacks;
mod fit;
mod log;
mod options;
mod readback;
mod run;
mod samples;
mod shadow;
mod step;

pub use crate::sums::Sums;
pub use cadence::{Cadence, Due};
pub use callbacks::{Callbacks, NoCallbacks};
pub use fit::fit;
pub use log::{DeviceLost, EpochLog, History, Position, Resume, ResumePoint, StepLog, Stopped};
pub use options::{auto_checkpoint_every, FitOptions, CHECKPOINT_BUDGET, CHECKPOINT_EVERY_MAX, CHECKPOINT_EVERY_MIN};
pub use readback::ReadKind;
pub use run::{Clock, Event, Parts, Run, RunState};
pub use samples::{output_shape, shuffled, Samples, Targets};
pub use shadow::{PrecisionAction, PrecisionCheck, PRECISION_CHECK_STEPS, PRECISION_CHECK_TOLERANCE};
pub use step::{evaluate, predict, train_batch};
