use pixelgrad_core::{Device, Param, Result, Tensor};

use super::{check_last_axis, check_norm};
use crate::{Mode, Module};

/// Root-mean-square normalisation over the last axis (Keras `RMSNormalization`):
/// `y = x / sqrt(mean(x²) + eps) * gamma`, no centring and no bias.
///
/// Input `[.., dim]`, output the same shape. `gamma` starts at 1.
pub struct RmsNorm {
    pub gamma: Param,
    dim: usize,
    eps: f32,
}

impl RmsNorm {
    /// Keras' default epsilon is `1e-6`.
    pub fn new(dev: &Device, dim: usize, eps: f32) -> Result<Self> {
        check_norm("rms_norm", dim, eps)?;
        Ok(RmsNorm { gamma: Param::new(Tensor::ones(dev, [dim])?), dim, eps })
    }
    pub fn dim(&self) -> usize {
        self.dim
    }
    pub fn eps(&self) -> f32 {
        self.eps
    }
}

impl Module for RmsNorm {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        check_last_axis("rms_norm", x, self.dim)?;
        let inv_rms = x.square()?.mean_axis(-1, true)?.add_scalar(self.eps)?.powf(-0.5)?;
        x.mul(&inv_rms)?.mul(&self.gamma.tensor())
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("gamma", &self.gamma);
    }
    fn describe(&self) -> String {
        format!("RmsNorm({})", self.dim)
    }
}
