//! The device reads of a training run, as values: what is to be read and what the values mean
//! once read, so that a [`super::RunState`] can read them itself (blocking, natively) or leave
//! them to its driver (asynchronously, in a browser) and go on the same way with either.

use pixelgrad_core::{Error, Result, Tensor};

use crate::checkpoint::{Capture, Checkpoint};

/// What an [`Event::Read`](super::Event::Read) is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadKind {
    /// The loss (and correct-prediction) sums since the last read: a log follows.
    Sums,
    /// A checkpoint: the model, the optimizer and the loss scaler, joined in one tensor.
    Checkpoint,
    /// The end-of-epoch evaluation sums over the test set.
    Evaluation,
}

/// A checkpoint being read: its capture, and when it and its interval started.
pub(super) struct CheckpointRead {
    cap: Capture,
    /// The capture's tensors (and the loss scaler's state, last) in one; `None` with nothing
    /// to read.
    tensor: Option<Tensor>,
    /// Floats of the capture (the scaler's three follow).
    cap_len: usize,
    scaler: bool,
    /// Clock reading when the capture began.
    pub started: Option<f64>,
    /// `Some` for an interval's checkpoint (with the interval's seconds where measured);
    /// `None` for the one before the first step.
    pub interval_secs: Option<Option<f64>>,
}

impl CheckpointRead {
    pub fn new(cap: Capture, scale: Option<Tensor>, started: Option<f64>, interval_secs: Option<Option<f64>>) -> Result<Self> {
        let cap_len = cap.len();
        let scaler = scale.is_some();
        let parts: Vec<Tensor> = cap.joined()?.into_iter().chain(scale).collect();
        let tensor = match parts.len() {
            0 => None,
            1 => Some(parts[0].clone()),
            _ => Some(Tensor::concat(&parts.iter().collect::<Vec<_>>(), 0)?),
        };
        Ok(CheckpointRead { cap, tensor, cap_len, scaler, started, interval_secs })
    }

    /// The checkpoint, and the loss scaler's state, from the values read.
    pub fn finish(self, mut values: Vec<f32>) -> Result<(Checkpoint, Option<[f32; 3]>)> {
        let want = self.cap_len + if self.scaler { 3 } else { 0 };
        if values.len() != want {
            return Err(Error::invalid("checkpoint", format!("read {} values, expected {want}", values.len())));
        }
        let scale = if self.scaler {
            let s = values.split_off(self.cap_len);
            Some([s[0], s[1], s[2]])
        } else {
            None
        };
        Ok((self.cap.finish(values)?, scale))
    }
}

/// A read a [`super::RunState`] waits for, with what it needs to go on.
pub(super) enum Reading {
    Sums { tensor: Tensor, n: usize, lr: f32 },
    Checkpoint(CheckpointRead),
    Eval { tensor: Tensor, n: usize },
}

impl Reading {
    pub fn kind(&self) -> ReadKind {
        match self {
            Reading::Sums { .. } => ReadKind::Sums,
            Reading::Checkpoint(_) => ReadKind::Checkpoint,
            Reading::Eval { .. } => ReadKind::Evaluation,
        }
    }

    /// What to read (`None`: nothing, the values are empty).
    pub fn tensor(&self) -> Option<&Tensor> {
        match self {
            Reading::Sums { tensor, .. } | Reading::Eval { tensor, .. } => Some(tensor),
            Reading::Checkpoint(c) => c.tensor.as_ref(),
        }
    }
}
