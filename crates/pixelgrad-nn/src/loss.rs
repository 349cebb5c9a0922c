//! Loss functions as a value (so a model config can name one), and what a loss compares the
//! model's output with: class indices, or float targets shaped like the output.
//!
//! Targets are used as given, never converted behind the caller's back:
//!
//! - **class indices** `[N]` (whole numbers in `0..C`) for an output `[N, C]`: cross-entropy
//!   picks the class; MSE and BCE compare against the one-hot matrix, built on the device;
//! - **float targets** of the output's exact shape `[N, ...]`: one-hot or probability rows for
//!   cross-entropy (soft targets), any values for MSE, 0/1 (or probabilities) for BCE;
//! - **class indices at every position** `[N, S]` for a sequence output `[N, S, C]` (a
//!   decoder's next token): the positions count as rows `[N · S, C]` with class indices
//!   `[N · S]`, the loss is their mean and a sample's accuracy is the share of its positions
//!   that are right.
//!
//! Anything else is an error naming both shapes ([`Loss::check`] on shapes before training,
//! [`Loss::compute`] on tensors).

use pixelgrad_core::composite::{accuracy_count, bce_with_logits, cross_entropy, cross_entropy_one_hot, mse};
use pixelgrad_core::{Error, Result, Tensor};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Mean squared error (the seed network's loss): against float targets, or against the
    /// one-hot rows of class indices.
    Mse,
    /// Softmax cross-entropy from logits, against class indices or probability rows.
    CrossEntropy,
    /// Softmax cross-entropy from logits; class indices are turned into one-hot rows on the
    /// device first (same value as `CrossEntropy`).
    CrossEntropyOneHot,
    /// Sigmoid binary cross-entropy from logits, per output, against 0/1 (or probability)
    /// targets, or the one-hot rows of class indices.
    BceWithLogits,
}

/// What the targets of a data set are, as far as checking them against a model goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind<'a> {
    /// One class index per sample.
    Classes,
    /// Float targets, `shape` per sample.
    Values(&'a [usize]),
}

impl Loss {
    pub fn parse(name: &str) -> Result<Loss> {
        Ok(match name {
            "mse" | "meanSquaredError" => Loss::Mse,
            "cross-entropy" | "cross_entropy" | "softmaxCrossEntropy" | "categoricalCrossentropy" => Loss::CrossEntropy,
            "cross-entropy-one-hot" => Loss::CrossEntropyOneHot,
            "bce" | "bce-with-logits" | "sigmoidCrossEntropy" | "binaryCrossentropy" => Loss::BceWithLogits,
            other => return Err(Error::invalid("loss", format!("unknown loss '{other}' (mse, cross-entropy, bce)"))),
        })
    }

    /// The name used in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Loss::Mse => "mse",
            Loss::CrossEntropy => "cross-entropy",
            Loss::CrossEntropyOneHot => "cross-entropy-one-hot",
            Loss::BceWithLogits => "bce",
        }
    }

    /// Checks that targets of `kind` fit a model whose output is `output` per sample (without
    /// the batch axis): class indices need an output `[C]` with at least two classes, float
    /// targets the output's exact shape (and rows `[C]` for cross-entropy). The error names
    /// both shapes.
    pub fn check(&self, op: &'static str, output: &[usize], kind: TargetKind) -> Result<()> {
        let msg = match kind {
            TargetKind::Classes => match output {
                [c] if *c >= 2 => return Ok(()),
                _ => format!(
                    "{} with class indices needs a model output [N, classes] with at least 2 classes; this model's output is [N{}] \
                     (give targets of the output's shape instead)",
                    self.name(),
                    tail(output)
                ),
            },
            // class indices at every position of a sequence output [S.., C]
            TargetKind::Values(t) if !t.is_empty() && output.len() == t.len() + 1 && output[..t.len()] == *t => match output.last() {
                Some(c) if *c >= 2 => return Ok(()),
                _ => format!("{} with class indices at every position needs at least 2 classes per position", self.name()),
            },
            TargetKind::Values(t) if t != output => format!(
                "targets of shape [N{}] do not match the model's output [N{}] ({} compares tensors of equal shape{})",
                tail(t),
                tail(output),
                self.name(),
                if t.is_empty() && output.len() == 1 { "; class indices need an output [N, classes] with 2 or more classes" } else { "" }
            ),
            TargetKind::Values(_) if matches!(self, Loss::CrossEntropy | Loss::CrossEntropyOneHot) && output.len() != 1 => {
                format!("{} needs a model output [N, classes]; this model's output is [N{}]", self.name(), tail(output))
            }
            TargetKind::Values(_) => return Ok(()),
        };
        let shapes = match kind {
            TargetKind::Classes => vec![output.to_vec(), vec![]],
            TargetKind::Values(t) => vec![output.to_vec(), t.to_vec()],
        };
        Err(Error::Shape { op, shapes, backend: String::new(), msg })
    }

    /// The loss of `output [N, ...]` against `target`: class indices `[N]` (f32 whole numbers)
    /// for an output `[N, C]`, or float targets of the output's shape.
    pub fn compute(&self, output: &Tensor, target: &Tensor) -> Result<Tensor> {
        match (self.kind_of(output, target)?, self) {
            (Kind::Positions, _) => {
                let (rows, classes) = positions_as_rows(output, target)?;
                self.compute(&rows, &classes)
            }
            (Kind::Classes, Loss::CrossEntropy) => cross_entropy(output, target),
            (Kind::Classes, Loss::Mse) => mse(output, &one_hot(output, target)?),
            (Kind::Classes, Loss::CrossEntropyOneHot) => cross_entropy_one_hot(output, &one_hot(output, target)?),
            (Kind::Classes, Loss::BceWithLogits) => bce_with_logits(output, &one_hot(output, target)?),
            (Kind::Values, Loss::Mse) => mse(output, target),
            (Kind::Values, Loss::CrossEntropy | Loss::CrossEntropyOneHot) => cross_entropy_one_hot(output, target),
            (Kind::Values, Loss::BceWithLogits) => bce_with_logits(output, target),
        }
    }

    /// Correct predictions in the batch, as a device scalar, where accuracy means something:
    /// class indices (argmax equals the class), probability rows with cross-entropy (argmax of
    /// the output equals argmax of the target) and BCE targets (logit > 0 agrees with target >
    /// 0.5, averaged over a sample's outputs, so the count divided by the samples is the binary
    /// accuracy). `None` for MSE on float targets: a regression has no accuracy.
    pub fn correct(&self, output: &Tensor, target: &Tensor) -> Result<Option<Tensor>> {
        Ok(match (self.kind_of(output, target)?, self) {
            (Kind::Positions, _) => {
                let (rows, classes) = positions_as_rows(output, target)?;
                let per = target.dims().iter().skip(1).product::<usize>().max(1) as f32;
                Some(accuracy_count(&rows, &classes)?.mul_scalar(1.0 / per)?)
            }
            (Kind::Classes, _) => Some(accuracy_count(output, target)?),
            (Kind::Values, Loss::Mse) => None,
            (Kind::Values, Loss::CrossEntropy | Loss::CrossEntropyOneHot) => {
                Some(output.argmax(1, false)?.eq(&target.argmax(1, false)?)?.sum_all()?)
            }
            (Kind::Values, Loss::BceWithLogits) => {
                let per = output.dims().iter().skip(1).product::<usize>().max(1) as f32;
                let agree = output.gt_scalar(0.0)?.eq(&target.gt_scalar(0.5)?)?;
                Some(agree.sum_all()?.mul_scalar(1.0 / per)?)
            }
        })
    }

    /// Whether accuracy is reported for targets of `kind` (see [`Loss::correct`]).
    pub fn has_accuracy(&self, kind: TargetKind) -> bool {
        !matches!((kind, self), (TargetKind::Values(_), Loss::Mse))
    }

    fn kind_of(&self, output: &Tensor, target: &Tensor) -> Result<Kind> {
        let (o, t) = (output.dims(), target.dims());
        if o == t {
            return Ok(Kind::Values);
        }
        if o.len() == 2 && t.len() == 1 && o[0] == t[0] {
            return Ok(Kind::Classes);
        }
        if o.len() >= 3 && t.len() + 1 == o.len() && o[..t.len()] == t[..] {
            return Ok(Kind::Positions);
        }
        Err(Error::Shape {
            op: "loss",
            shapes: vec![o.to_vec(), t.to_vec()],
            backend: output.device().name(),
            msg: format!(
                "{}: targets must be class indices [N] for an output [N, C], class indices [N, S] for a sequence output \
                 [N, S, C], or have the output's shape",
                self.name()
            ),
        })
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Classes,
    Values,
    /// Class indices `[N, S..]` for an output `[N, S.., C]`.
    Positions,
}

/// A sequence output `[N, S.., C]` and its class indices `[N, S..]` as rows `[N · S.., C]` and
/// class indices `[N · S..]`.
fn positions_as_rows(output: &Tensor, target: &Tensor) -> Result<(Tensor, Tensor)> {
    let c = output.dims()[output.rank() - 1];
    let n = target.numel();
    Ok((output.reshape([n, c])?, target.reshape([n])?))
}

/// `, 2, 3` for `[2, 3]`: the per-sample part of a batch shape `[N, ...]`.
fn tail(dims: &[usize]) -> String {
    dims.iter().map(|d| format!(", {d}")).collect()
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
