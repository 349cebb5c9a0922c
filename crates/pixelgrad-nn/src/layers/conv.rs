use pixelgrad_core::composite::conv2d;
use pixelgrad_core::{Device, Param, Result, Tensor};

use super::bad_input;
use crate::init::Init;
use crate::{Mode, Module};

/// 2-D convolution over NCHW images, square kernel.
///
/// Input `[N, C_in, H, W]`, output `[N, C_out, OH, OW]` with
/// `OH = (H + 2 padding - k) / stride + 1`. Weight `[C_out, C_in, k, k]` (He-uniform), bias `[C_out]`.
pub struct Conv2d {
    pub weight: Param,
    pub bias: Param,
    in_channels: usize,
    out_channels: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
}

impl Conv2d {
    pub fn new(dev: &Device, in_channels: usize, out_channels: usize, kernel: usize, stride: usize, padding: usize, init: &mut Init) -> Result<Self> {
        let fan_in = in_channels * kernel * kernel;
        let weight = init.he_uniform(dev, [out_channels, in_channels, kernel, kernel], fan_in)?;
        Ok(Conv2d {
            weight: Param::new(weight),
            bias: Param::new(Tensor::zeros(dev, [out_channels])?),
            in_channels,
            out_channels,
            kernel,
            stride: stride.max(1),
            padding,
        })
    }
    /// Output height and width for an input of `h` x `w`.
    pub fn out_hw(&self, h: usize, w: usize) -> (usize, usize) {
        let f = |d: usize| (d + 2 * self.padding).saturating_sub(self.kernel) / self.stride + 1;
        (f(h), f(w))
    }
    pub fn out_channels(&self) -> usize {
        self.out_channels
    }
    pub fn in_channels(&self) -> usize {
        self.in_channels
    }
    pub fn kernel(&self) -> usize {
        self.kernel
    }
    pub fn stride(&self) -> usize {
        self.stride
    }
    pub fn padding(&self) -> usize {
        self.padding
    }
}

impl Module for Conv2d {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        if x.rank() != 4 || x.dims()[1] != self.in_channels {
            return Err(bad_input("conv2d", x, format!("expects [N, {}, H, W]", self.in_channels)));
        }
        conv2d(x, &self.weight.tensor(), Some(&self.bias.tensor()), self.stride, self.padding)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("weight", &self.weight);
        f("bias", &self.bias);
    }
    fn describe(&self) -> String {
        format!(
            "Conv2d({} -> {}, k={}, stride={}, padding={})",
            self.in_channels, self.out_channels, self.kernel, self.stride, self.padding
        )
    }
}
