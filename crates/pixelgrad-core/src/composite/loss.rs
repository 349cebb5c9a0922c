//! Losses. Each returns a scalar tensor (mean over the batch).

use crate::tensor::Tensor;
use crate::{Error, Result};

fn shapes_err(op: &'static str, a: &Tensor, b: &Tensor, msg: &str) -> Error {
    Error::Shape { op, shapes: vec![a.dims().to_vec(), b.dims().to_vec()], backend: a.device().name(), msg: msg.into() }
}

/// Mean squared error `mean((pred - target)^2)`; shapes must match.
pub fn mse(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    if pred.shape() != target.shape() {
        return Err(shapes_err("mse", pred, target, "prediction and target shapes differ"));
    }
    pred.sub(target)?.square()?.mean_all()
}

/// Cross-entropy from logits `[N, C]` and class indices `[N]` (whole numbers stored as f32):
/// `-mean_i log_softmax(logits)[i, y_i]`.
///
/// The class is picked with a one-hot mask (`arange(C) == y`) rather than a gather, so the
/// whole loss and its gradient are elementwise ops and reductions, which the GPU backends fuse
/// (no gather / scatter-add passes). A class outside `0..C`, or not a whole number, makes the
/// loss NaN instead of silently picking nothing.
///
/// It is written per row, `mean_i (logsumexp_i - logits[i, y_i])`, with the picked logit a
/// row sum of the masked logits. Then the gradient is elementwise, `(softmax - one_hot) / N`:
/// each row's log-sum-exp and picked logit enter the loss once, so no row sum of the incoming
/// gradient is needed (the form `sum(one_hot * (logits - lse))` needs one, because autodiff
/// cannot know that a one-hot row sums to 1). The forward reductions run one output per row
/// instead of one over all `N * C` elements. Logits of `-inf` outside the target class (masked
/// classes) give a finite loss.
pub fn cross_entropy(logits: &Tensor, classes: &Tensor) -> Result<Tensor> {
    if logits.rank() != 2 || classes.rank() != 1 || classes.dims()[0] != logits.dims()[0] {
        return Err(shapes_err("cross_entropy", logits, classes, "expects logits [N, C] and class indices [N]"));
    }
    let c = logits.dims()[1];
    let dev = logits.device();
    let y = classes.unsqueeze(1)?;
    let one_hot = Tensor::arange(dev, c)?.reshape([1, c])?.eq(&y)?;
    // NaN for a row whose class is negative, >= C or fractional.
    let below = y.neg()?.gt_scalar(0.0)?;
    let above = y.gt_scalar(c as f32 - 1.0)?;
    let fractional = y.floor()?.eq(&y)?.affine(-1.0, 1.0)?;
    let bad = below.maximum(&above)?.maximum(&fractional)?;
    let zero = Tensor::scalar(dev, 0.0)?;
    let poison = Tensor::select(&bad, &Tensor::scalar(dev, f32::NAN)?, &zero)?;
    let picked = Tensor::select(&one_hot, logits, &zero)?.sum_axis(1, true)?;
    let n = logits.dims()[0].max(1) as f32;
    logits.logsumexp(1, true)?.sub(&picked)?.add(&poison)?.sum_all()?.mul_scalar(1.0 / n)
}

/// Cross-entropy from logits `[N, C]` and one-hot (or soft) targets `[N, C]`:
/// `-mean_i sum_c t[i, c] log_softmax(logits)[i, c]`.
///
/// The log-softmax here is `x - logsumexp(x)`: one reduction of the logits per step (the
/// stable one-pass [`Tensor::logsumexp`]) instead of a max and a sum, so a training step
/// costs one GPU pass less. Its absolute error is about the rounding step of the logits
/// (1e-6 for logits near 10, 1e-4 near 1000), far below what training notices; use
/// [`Tensor::log_softmax`] where exact log-probabilities of huge logits matter.
pub fn cross_entropy_one_hot(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    if logits.rank() != 2 || logits.shape() != target.shape() {
        return Err(shapes_err("cross_entropy_one_hot", logits, target, "expects logits and targets of equal shape [N, C]"));
    }
    let n = logits.dims()[0].max(1) as f32;
    logits.sub(&logits.logsumexp(1, true)?)?.mul(target)?.sum_all()?.mul_scalar(-1.0 / n)
}

/// Binary cross-entropy on logits: `mean(softplus(x) - x t)`.
///
/// softplus is written `x/2 + |x|/2 + log(1 + exp(-|x|))`: stable (no overflow) and, unlike
/// `max(x, 0) + log(1 + exp(-|x|))`, its autodiff gradient is right at `x = 0` too, because the
/// two kinks (`|x|` appears twice, with opposite slopes) cancel instead of both taking the
/// subgradient 0.
pub fn bce_with_logits(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    if logits.shape() != target.shape() {
        return Err(shapes_err("bce_with_logits", logits, target, "logits and target shapes differ"));
    }
    let abs = logits.abs()?;
    let tail = abs.neg()?.exp()?.add_scalar(1.0)?.log()?;
    let softplus = logits.add(&abs)?.mul_scalar(0.5)?.add(&tail)?;
    softplus.sub(&logits.mul(target)?)?.mean_all()
}

/// Number of rows of `logits [N, C]` whose argmax equals the class in `classes [N]`, as a scalar
/// tensor kept on the device (so training loops can accumulate it without a readback).
pub fn accuracy_count(logits: &Tensor, classes: &Tensor) -> Result<Tensor> {
    if logits.rank() != 2 || classes.rank() != 1 || classes.dims()[0] != logits.dims()[0] {
        return Err(shapes_err("accuracy", logits, classes, "expects logits [N, C] and class indices [N]"));
    }
    logits.argmax(1, false)?.eq(classes)?.sum_all()
}
