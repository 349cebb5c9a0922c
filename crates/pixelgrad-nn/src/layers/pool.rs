use pixelgrad_core::composite::{avg_pool2d, max_pool2d};
use pixelgrad_core::{Result, Tensor};

use super::bad_input;
use crate::{Mode, Module};

/// Max pooling over `k`x`k` windows. Input `[N, C, H, W]`, output `[N, C, OH, OW]`.
pub struct MaxPool2d {
    pub kernel: usize,
    pub stride: usize,
    pub padding: usize,
}

impl MaxPool2d {
    /// Non-overlapping windows (stride = kernel), no padding.
    pub fn new(kernel: usize) -> Self {
        MaxPool2d { kernel, stride: kernel, padding: 0 }
    }
}

impl Module for MaxPool2d {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        max_pool2d(x, self.kernel, self.stride, self.padding)
    }
    fn describe(&self) -> String {
        format!("MaxPool2d(k={}, stride={})", self.kernel, self.stride)
    }
}

/// Average pooling over `k`x`k` windows. Input `[N, C, H, W]`, output `[N, C, OH, OW]`.
pub struct AvgPool2d {
    pub kernel: usize,
    pub stride: usize,
    pub padding: usize,
}

impl AvgPool2d {
    pub fn new(kernel: usize) -> Self {
        AvgPool2d { kernel, stride: kernel, padding: 0 }
    }
}

impl Module for AvgPool2d {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        avg_pool2d(x, self.kernel, self.stride, self.padding)
    }
    fn describe(&self) -> String {
        format!("AvgPool2d(k={}, stride={})", self.kernel, self.stride)
    }
}

/// Flattens `[N, ...]` to `[N, prod(...)]`.
pub struct Flatten;

impl Module for Flatten {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        if x.rank() < 1 {
            return Err(bad_input("flatten", x, "expects a batch axis".into()));
        }
        x.flatten_from(1)
    }
    fn describe(&self) -> String {
        "Flatten".into()
    }
}

/// Reorders axes: output axis `i` is input axis `perm[i]` (e.g. `[0, 3, 1, 2]` turns NHWC
/// images into NCHW). Input of rank `perm.len()`.
pub struct Permute(pub Vec<usize>);

impl Module for Permute {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        if x.rank() != self.0.len() {
            return Err(bad_input("permute", x, format!("expects a rank-{} input", self.0.len())));
        }
        x.permute(&self.0)
    }
    fn describe(&self) -> String {
        format!("Permute({:?})", self.0)
    }
}
