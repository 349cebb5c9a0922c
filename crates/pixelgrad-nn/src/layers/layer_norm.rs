use pixelgrad_core::{Device, Param, Result, Tensor};

use super::{check_last_axis, check_norm};
use crate::{Mode, Module};

/// Layer normalisation over the last axis (Keras `LayerNormalization`):
/// `y = (x - mean) / sqrt(var + eps) * gamma + beta`, mean and biased variance of each row.
///
/// Input `[.., dim]`, output the same shape. `gamma` starts at 1, `beta` at 0.
pub struct LayerNorm {
    pub gamma: Param,
    pub beta: Param,
    dim: usize,
    eps: f32,
}

impl LayerNorm {
    /// Keras' default epsilon is `1e-3`.
    pub fn new(dev: &Device, dim: usize, eps: f32) -> Result<Self> {
        check_norm("layer_norm", dim, eps)?;
        Ok(LayerNorm { gamma: Param::new(Tensor::ones(dev, [dim])?), beta: Param::new(Tensor::zeros(dev, [dim])?), dim, eps })
    }
    pub fn dim(&self) -> usize {
        self.dim
    }
    pub fn eps(&self) -> f32 {
        self.eps
    }
}

impl Module for LayerNorm {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        check_last_axis("layer_norm", x, self.dim)?;
        let mean = x.mean_axis(-1, true)?;
        let centred = x.sub(&mean)?;
        let inv_std = centred.square()?.mean_axis(-1, true)?.add_scalar(self.eps)?.powf(-0.5)?;
        centred.mul(&inv_std)?.mul(&self.gamma.tensor())?.add(&self.beta.tensor())
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("gamma", &self.gamma);
        f("beta", &self.beta);
    }
    fn describe(&self) -> String {
        format!("LayerNorm({})", self.dim)
    }
}
