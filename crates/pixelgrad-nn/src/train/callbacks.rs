//! The hooks a caller of [`super::fit`] gives: per step, per epoch, per checkpoint, and a new
//! device after a loss.

use std::ops::ControlFlow;

use pixelgrad_core::{Device, Result};

use super::log::{DeviceLost, EpochLog, ResumePoint, StepLog};

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
    /// `checkpoint_every` steps, and at [`FitOptions::max_steps`](super::FitOptions::max_steps); not the one before the first
    /// step): save it ([`crate::resume::save`]) to go on later with [`FitOptions::resume`](super::FitOptions::resume). An
    /// error stops `fit` with it.
    fn on_checkpoint(&mut self, _point: &ResumePoint<'_>) -> Result<()> {
        Ok(())
    }
    /// The device to check a reduced-precision device against (the CPU): when the training
    /// device reports [`Caps::reduced_precision`](pixelgrad_core::Caps::reduced_precision), [`super::fit`] first trains its first
    /// steps on both and goes on on the device only if its losses follow (see
    /// [`super::PrecisionCheck`]); `None` (the default) trusts the device.
    fn precision_reference(&mut self) -> Option<Device> {
        None
    }
}

/// Callbacks that do nothing.
pub struct NoCallbacks;
impl Callbacks for NoCallbacks {}
