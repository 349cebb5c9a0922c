//! Weight initialisation from the counter-based RNG: the same seed gives the same weights on
//! every backend.

use pixelgrad_core::{rng, Device, Result, Shape, Tensor};

/// A stream of seeds: each tensor drawn gets the next one.
#[derive(Clone, Debug)]
pub struct Init {
    seed: u64,
    counter: u64,
}

impl Init {
    pub fn new(seed: u64) -> Self {
        Init { seed, counter: 0 }
    }
    /// The next independent seed.
    pub fn next_seed(&mut self) -> u64 {
        self.counter += 1;
        rng::mix(self.seed, self.counter)
    }
    /// Glorot (Xavier) uniform: `U(-a, a)`, `a = sqrt(6 / (fan_in + fan_out))`. Suits sigmoid/tanh.
    pub fn glorot_uniform(&mut self, dev: &Device, shape: impl Into<Shape>, fan_in: usize, fan_out: usize) -> Result<Tensor> {
        let a = (6.0 / (fan_in + fan_out).max(1) as f32).sqrt();
        Tensor::rand_uniform(dev, shape, -a, a, self.next_seed())
    }
    /// He (Kaiming) normal: `N(0, 2 / fan_in)`. Suits ReLU.
    pub fn he_normal(&mut self, dev: &Device, shape: impl Into<Shape>, fan_in: usize) -> Result<Tensor> {
        let std = (2.0 / fan_in.max(1) as f32).sqrt();
        Tensor::rand_normal(dev, shape, 0.0, std, self.next_seed())
    }
    /// He (Kaiming) uniform: `U(-a, a)`, `a = sqrt(6 / fan_in)`.
    pub fn he_uniform(&mut self, dev: &Device, shape: impl Into<Shape>, fan_in: usize) -> Result<Tensor> {
        let a = (6.0 / fan_in.max(1) as f32).sqrt();
        Tensor::rand_uniform(dev, shape, -a, a, self.next_seed())
    }
}

/// Which initialiser a layer uses for its weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WeightInit {
    /// Glorot uniform (default for dense layers, suits sigmoid and tanh).
    #[default]
    Glorot,
    /// He uniform (suits ReLU).
    He,
}
