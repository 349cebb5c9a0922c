//! Loss functions as a value (so a model config can name one). Targets are always class
//! indices `[N]`; losses that need dense targets (MSE, BCE, one-hot cross-entropy) build the
//! one-hot matrix on the device.

use pixelgrad_core::composite::{bce_with_logits, cross_entropy, cross_entropy_one_hot, mse};
use pixelgrad_core::{Error, Result, Tensor};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Mean squared error against one-hot targets (the seed network's loss).
    Mse,
    /// Softmax cross-entropy from logits and class indices.
    CrossEntropy,
    /// Softmax cross-entropy from logits and one-hot targets (same value as `CrossEntropy`).
    CrossEntropyOneHot,
    /// Sigmoid binary cross-entropy from logits, per output, against one-hot targets.
    BceWithLogits,
}

impl Loss {
    pub fn parse(name: &str) -> Result<Loss> {
        Ok(match name {
            "mse" | "meanSquaredError" => Loss::Mse,
            "cross-entropy" | "cross_entropy" | "softmaxCrossEntropy" | "categoricalCrossentropy" => Loss::CrossEntropy,
            "cross-entropy-one-hot" => Loss::CrossEntropyOneHot,
            "bce" | "bce-with-logits" | "sigmoidCrossEntropy" => Loss::BceWithLogits,
            other => return Err(Error::invalid("loss", format!("unknown loss '{other}' (mse, cross-entropy, bce)"))),
        })
    }

    /// The loss of `output [N, C]` against class indices `classes [N]` (f32 whole numbers).
    pub fn compute(&self, output: &Tensor, classes: &Tensor) -> Result<Tensor> {
        match self {
            Loss::CrossEntropy => cross_entropy(output, classes),
            Loss::Mse => mse(output, &one_hot(output, classes)?),
            Loss::CrossEntropyOneHot => cross_entropy_one_hot(output, &one_hot(output, classes)?),
            Loss::BceWithLogits => bce_with_logits(output, &one_hot(output, classes)?),
        }
    }
}

/// One-hot targets shaped like `output [N, C]` from class indices `[N]`, built on the device by
/// comparing against `0..C`.
pub fn one_hot(output: &Tensor, classes: &Tensor) -> Result<Tensor> {
    if output.rank() != 2 || classes.rank() != 1 || classes.dims()[0] != output.dims()[0] {
        return Err(Error::Shape {
            op: "one_hot",
            shapes: vec![output.dims().to_vec(), classes.dims().to_vec()],
            backend: output.device().name(),
            msg: "expects outputs [N, C] and class indices [N]".into(),
        });
    }
    let c = output.dims()[1];
    let range = Tensor::arange(output.device(), c)?.reshape([1, c])?;
    classes.unsqueeze(1)?.eq(&range)
}
