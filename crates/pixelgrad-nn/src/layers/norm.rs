use pixelgrad_core::{no_grad, Device, Param, Result, Tensor};

use super::bad_input;
use crate::module::Buffer;
use crate::{Mode, Module};

/// Batch normalisation over `[N, C]` (1-d) or `[N, C, H, W]` (2-d) inputs, per channel `C`.
///
/// Training: normalises with the batch mean and (biased) variance and updates the running
/// statistics `r = (1 - momentum) r + momentum * batch` (running variance unbiased, n/(n-1)).
/// Evaluation: uses the running statistics. Output has the input's shape.
pub struct BatchNorm {
    pub gamma: Param,
    pub beta: Param,
    pub running_mean: Buffer,
    pub running_var: Buffer,
    channels: usize,
    spatial: bool,
    eps: f32,
    momentum: f32,
}

impl BatchNorm {
    /// For `[N, C]` inputs.
    pub fn new_1d(dev: &Device, channels: usize) -> Result<Self> {
        Self::new(dev, channels, false)
    }
    /// For `[N, C, H, W]` inputs.
    pub fn new_2d(dev: &Device, channels: usize) -> Result<Self> {
        Self::new(dev, channels, true)
    }
    fn new(dev: &Device, channels: usize, spatial: bool) -> Result<Self> {
        Ok(BatchNorm {
            gamma: Param::new(Tensor::ones(dev, [channels])?),
            beta: Param::new(Tensor::zeros(dev, [channels])?),
            running_mean: Buffer::new(Tensor::zeros(dev, [channels])?),
            running_var: Buffer::new(Tensor::ones(dev, [channels])?),
            channels,
            spatial,
            eps: 1e-5,
            momentum: 0.1,
        })
    }

    pub fn channels(&self) -> usize {
        self.channels
    }
    /// True for `[N, C, H, W]` inputs, false for `[N, C]`.
    pub fn is_spatial(&self) -> bool {
        self.spatial
    }
    pub fn eps(&self) -> f32 {
        self.eps
    }

    /// The input viewed as `[N, C, S]` (S = H*W, or 1).
    fn as_ncs(&self, x: &Tensor) -> Result<Tensor> {
        let d = x.dims();
        let ok = if self.spatial { x.rank() == 4 } else { x.rank() == 2 };
        if !ok || d[1] != self.channels {
            let want = if self.spatial { format!("[N, {}, H, W]", self.channels) } else { format!("[N, {}]", self.channels) };
            return Err(bad_input("batch_norm", x, format!("expects {want}")));
        }
        x.reshape([d[0], d[1], d[2..].iter().product::<usize>()])
    }
}

impl Module for BatchNorm {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, mode: Mode) -> Result<Tensor> {
        let h = self.as_ncs(x)?;
        let c = self.channels;
        let (mean, var) = if mode == Mode::Train {
            let count = h.dims()[0] * h.dims()[2];
            // mean and biased variance over N and S, shaped [1, C, 1]
            let mean = h.mean_axis(2, true)?.mean_axis(0, true)?;
            let var = h.sub(&mean)?.square()?.mean_axis(2, true)?.mean_axis(0, true)?;
            {
                let _g = no_grad();
                let m = self.momentum;
                let unbias = if count > 1 { count as f32 / (count - 1) as f32 } else { 1.0 };
                let rm = self.running_mean.get().mul_scalar(1.0 - m)?.add(&mean.reshape([c])?.mul_scalar(m)?)?;
                let rv = self.running_var.get().mul_scalar(1.0 - m)?.add(&var.reshape([c])?.mul_scalar(m * unbias)?)?;
                self.running_mean.set(&rm);
                self.running_var.set(&rv);
            }
            (mean, var)
        } else {
            (self.running_mean.get().reshape([1, c, 1])?, self.running_var.get().reshape([1, c, 1])?)
        };
        let inv_std = var.add_scalar(self.eps)?.powf(-0.5)?;
        let y = h.sub(&mean)?.mul(&inv_std)?;
        let y = y.mul(&self.gamma.tensor().reshape([1, c, 1])?)?.add(&self.beta.tensor().reshape([1, c, 1])?)?;
        y.reshape(x.shape().clone())
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("gamma", &self.gamma);
        f("beta", &self.beta);
    }
    fn visit_buffers(&self, f: &mut dyn FnMut(&str, &Buffer)) {
        f("running_mean", &self.running_mean);
        f("running_var", &self.running_var);
    }
    fn describe(&self) -> String {
        format!("BatchNorm{}d({})", if self.spatial { 2 } else { 1 }, self.channels)
    }
}
