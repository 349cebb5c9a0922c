use std::cell::Cell;

use pixelgrad_core::{rng, Error, Result, Tensor};

use crate::{Mode, Module};

/// Inverted dropout: in training, zeroes each element with probability `p` and scales the rest
/// by `1 / (1 - p)`; identity in evaluation. The mask comes from the counter-based RNG, so a
/// seeded run drops the same elements on every backend.
pub struct Dropout {
    p: f32,
    seed: u64,
    calls: Cell<u64>,
}

impl Dropout {
    pub fn new(p: f32, seed: u64) -> Result<Self> {
        if !(0.0..1.0).contains(&p) {
            return Err(Error::invalid("dropout", format!("rate {p} must be in [0, 1)")));
        }
        Ok(Dropout { p, seed, calls: Cell::new(0) })
    }
    /// The drop probability.
    pub fn rate(&self) -> f32 {
        self.p
    }
}

impl Module for Dropout {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, mode: Mode) -> Result<Tensor> {
        if mode == Mode::Eval || self.p == 0.0 {
            return Ok(x.clone());
        }
        let n = self.calls.get() + 1;
        self.calls.set(n);
        let u = Tensor::rand_uniform(x.device(), x.shape().clone(), 0.0, 1.0, rng::mix(self.seed, n))?;
        // keep where u >= p  <=>  u > p (ties have probability 2^-24)
        let mask = u.gt_scalar(self.p)?.mul_scalar(1.0 / (1.0 - self.p))?;
        x.mul(&mask)
    }
    fn visit_counters(&self, f: &mut dyn FnMut(&str, &Cell<u64>)) {
        f("calls", &self.calls);
    }
    fn describe(&self) -> String {
        format!("Dropout(p={})", self.p)
    }
}
