//! The native driver of a [`Run`](super::Run): a loop over its events that calls the [`Callbacks`](super::Callbacks).

use pixelgrad_core::{Device, Result};

use crate::optim::Optimizer;
use crate::{Loss, Module};

use super::callbacks::Callbacks;
use super::log::History;
use super::options::FitOptions;
use super::run::{Event, Run};
use super::samples::Samples;

/// Trains `model` on `train` for `opts.epochs` epochs, evaluating on `test` after each epoch.
///
/// Before the first step the targets are checked against the model's output (shapes; class
/// indices in range). With checkpoints on (the default), a device loss reported by a step,
/// a read or an evaluation is recovered from through [`Callbacks::on_device_lost`](super::Callbacks::on_device_lost); without a
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
    let mut run = Run::new(model, opt, loss, dev, train, test, opts)?;
    // A new run on a device below full precision is checked against the caller's reference
    // first (a resumed run was checked when it started).
    if opts.resume.is_none() && dev.backend().caps().reduced_precision.is_some() {
        if let Some(reference) = cb.precision_reference() {
            run.check_precision(&reference)?;
        }
    }
    loop {
        match run.next()? {
            // a Run reads the device itself: never `Read`
            Event::Step { .. } | Event::Recovered(_) | Event::Read(_) => {}
            Event::Log(log) => {
                if cb.on_step(&log).is_break() {
                    run.stop();
                }
            }
            Event::Checkpoint { .. } => {
                if let Some(point) = run.resume_point() {
                    cb.on_checkpoint(&point)?;
                }
            }
            Event::Epoch(log) => {
                if cb.on_epoch(&log).is_break() {
                    run.stop();
                }
            }
            Event::DeviceLost(info) => {
                if let Some(dev) = cb.on_device_lost(&info) {
                    run.recover(dev)?;
                }
            }
            Event::Done(_) => return run.into_history(),
        }
    }
}
