//! Fill and counter-based random numbers.

use std::borrow::Cow;

use pixelgrad_core::{Distribution, Result};

use super::{f, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;

pub(crate) const FILL: Kernel = Kernel {
    name: Cow::Borrowed("fill"),
    source: Cow::Borrowed(include_str!("../kernels/fill.wgsl")),
    inputs: 0,
    outputs: 1,
    overrides: &[],
    status: false,
};
pub(crate) const RANDOM: Kernel = Kernel {
    name: Cow::Borrowed("random"),
    source: Cow::Borrowed(include_str!("../kernels/random.wgsl")),
    inputs: 0,
    outputs: 1,
    overrides: &["NORMAL"],
    status: false,
};

/// Writes `value` into the first `out.len` elements.
pub(crate) fn fill(gpu: &Gpu, out: &GpuTensor, value: f32) -> Result<()> {
    let n = u("fill", out.len)?;
    let grid = gpu.grid_elems("fill", out.len)?;
    gpu.launch("fill", &FILL, &[], &[], out.buffer(), &[n, f(value)], grid)
}

/// Element i = `rng::sample(dist, seed, i)` (Philox4x32-10 in the kernel).
pub(crate) fn random(gpu: &Gpu, out: &GpuTensor, seed: u64, dist: Distribution) -> Result<()> {
    let n = u("random", out.len)?;
    let (normal, p0, p1) = match dist {
        Distribution::Uniform { low, high } => (0, low, high),
        Distribution::Normal { mean, std } => (1, mean, std),
    };
    let grid = gpu.grid_elems("random", out.len)?;
    let params = [n, seed as u32, (seed >> 32) as u32, f(p0), f(p1)];
    gpu.launch("random", &RANDOM, &[normal], &[], out.buffer(), &params, grid)
}
