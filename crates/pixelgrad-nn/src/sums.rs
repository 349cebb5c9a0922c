//! The running sums of a training (or evaluation) loop: loss and correct predictions,
//! accumulated on the device between two readbacks. Used by [`crate::train`] and by
//! [`crate::mixed`]'s step, below both (so neither imports the other for it).

use pixelgrad_core::{Result, Tensor};

/// Device-side running sums of `loss * batch` and correct predictions, plus the host-side
/// sample count: what a training loop accumulates between two readbacks.
///
/// Every [`Sums::add`] runs the same ops (`sum * keep + value`, with `keep` 0 right after a
/// [`Sums::take`]), so a step that ends with it has the same structure every time and
/// replays its step plan (see [`pixelgrad_core::Device::step`]).
#[derive(Default)]
pub struct Sums {
    loss_sum: Option<Tensor>,
    correct: Option<Tensor>,
    /// 0 after a take: the next add starts the sums afresh.
    keep: f32,
    samples: usize,
    steps: usize,
}

impl Sums {
    pub fn new() -> Self {
        Sums::default()
    }
    /// Adds one batch's mean loss and correct-prediction count (both device scalars; no
    /// count where accuracy means nothing, for every batch of these sums).
    pub fn add(&mut self, loss: &Tensor, correct: Option<&Tensor>, batch: usize) -> Result<()> {
        let l = loss.detach().mul_scalar(batch as f32)?;
        let keep = self.keep;
        let fold = |prev: Option<Tensor>, v: Tensor| -> Result<Tensor> {
            match prev {
                Some(s) => s.mul_scalar(keep)?.add(&v),
                None => Ok(v),
            }
        };
        self.loss_sum = Some(fold(self.loss_sum.take(), l)?);
        self.correct = match correct {
            Some(c) => Some(fold(self.correct.take(), c.detach())?),
            None => None,
        };
        self.keep = 1.0;
        self.samples += batch;
        self.steps += 1;
        Ok(())
    }
    /// Batches added since the last take.
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// `[loss sum, correct]` (or `[loss sum]` without accuracy) as one device tensor plus the
    /// sample count, and starts new sums; `None` when nothing was added since the last take.
    pub fn take(&mut self) -> Result<Option<(Tensor, usize)>> {
        if self.steps == 0 {
            return Ok(None);
        }
        let Some(l) = &self.loss_sum else { return Ok(None) };
        let both = match &self.correct {
            Some(c) => Tensor::concat(&[&l.reshape([1])?, &c.reshape([1])?], 0)?,
            None => l.reshape([1])?,
        };
        let n = std::mem::take(&mut self.samples);
        self.steps = 0;
        self.keep = 0.0;
        Ok(Some((both, n)))
    }
    /// Drops what was added since the last take (after a device loss).
    pub fn clear(&mut self) {
        *self = Sums::new();
    }
    /// One blocking readback of both sums: (loss sum, correct count, samples), and resets.
    pub fn read(&mut self) -> Result<Option<(f64, Option<f64>, usize)>> {
        let Some((both, n)) = self.take()? else { return Ok(None) };
        let v = both.to_vec()?;
        Ok(Some((v[0] as f64, v.get(1).map(|&c| c as f64), n)))
    }
}
