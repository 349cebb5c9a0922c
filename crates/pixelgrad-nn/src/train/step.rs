//! One training step on a device batch, and evaluation and prediction over host samples.

use pixelgrad_core::{no_grad, Device, Error, Result, Tensor};

use crate::optim::Optimizer;
use crate::sums::Sums;
use crate::{Loss, Mode, Module};

use super::samples::{output_shape, Samples};

/// One training step on a device-resident batch (`x` of `[B, ..]`, targets `y`: class indices
/// `[B]` or float targets shaped like the output): forward, loss, accuracy where it means
/// something (no graph), backward, optimizer update, and the batch's loss and correct count
/// added to `sums`. A failed backward or update clears the gradients it half-accumulated. Run
/// it inside [`Device::step`](pixelgrad_core::Device::step) so GPU backends replay it.
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
