use std::collections::HashMap;

use pixelgrad_core::{Param, Result, Tensor};

use super::{Optimizer, OptimizerState};

/// Stochastic gradient descent with optional momentum (heavy-ball or Nesterov) and L2 weight
/// decay: `g += wd p; v = mu v + g; p -= lr (nesterov ? g + mu v : v)` (PyTorch's convention).
pub struct Sgd {
    lr: f32,
    momentum: f32,
    nesterov: bool,
    weight_decay: f32,
    velocity: HashMap<String, Tensor>,
}

impl Sgd {
    pub fn new(lr: f32) -> Self {
        Sgd { lr, momentum: 0.0, nesterov: false, weight_decay: 0.0, velocity: HashMap::new() }
    }
    pub fn momentum(mut self, m: f32) -> Self {
        self.momentum = m;
        self
    }
    pub fn nesterov(mut self, n: bool) -> Self {
        self.nesterov = n;
        self
    }
    pub fn weight_decay(mut self, wd: f32) -> Self {
        self.weight_decay = wd;
        self
    }
}

impl Optimizer for Sgd {
    fn update(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()> {
        let w = p.tensor();
        let mut g = g.clone();
        if self.weight_decay != 0.0 {
            g = g.add(&w.mul_scalar(self.weight_decay)?)?;
        }
        let dir = if self.momentum != 0.0 {
            let v = match self.velocity.get(name) {
                Some(v) => v.mul_scalar(self.momentum)?.add(&g)?,
                None => g.clone(),
            };
            let d = if self.nesterov { g.add(&v.mul_scalar(self.momentum)?)? } else { v.clone() };
            self.velocity.insert(name.to_string(), v);
            d
        } else {
            g
        };
        p.set(&w.sub(&dir.mul_scalar(self.lr)?)?)
    }
    fn lr(&self) -> f32 {
        self.lr
    }
    fn set_lr(&mut self, lr: f32) {
        self.lr = lr;
    }
    fn name(&self) -> &'static str {
        "sgd"
    }
    fn state(&self) -> OptimizerState {
        let mut s = OptimizerState::default();
        s.push_map("velocity", &self.velocity);
        s
    }
    fn set_state(&mut self, state: OptimizerState) -> Result<()> {
        if let Some((n, _)) = state.scalars.first() {
            return Err(pixelgrad_core::Error::invalid("optimizer state", format!("sgd has no scalar '{n}'")));
        }
        self.velocity = state.maps("sgd", &["velocity"])?.into_iter().next().unwrap_or_default();
        Ok(())
    }
}
