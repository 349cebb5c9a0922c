//! gather and scatter_add along an axis (indices stored as f32).

use std::borrow::Cow;

use pixelgrad_core::{Result, Shape};

use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;

pub(crate) const GATHER: Kernel = Kernel {
    name: Cow::Borrowed("gather"),
    source: Cow::Borrowed(include_str!("../kernels/gather.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &[],
    status: true,
};
pub(crate) const SCATTER_ADD: Kernel = Kernel {
    name: Cow::Borrowed("scatter_add"),
    source: Cow::Borrowed(include_str!("../kernels/scatter_add.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &[],
    status: true,
};

pub(crate) fn gather(
    gpu: &Gpu,
    axis: usize,
    x: &GpuTensor,
    idx: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let (xd, id) = (shapes[0].dims(), shapes[1].dims());
    let inner: usize = id[axis + 1..].iter().product();
    let p = [u("gather", out.numel())?, u("gather", xd[axis])?, u("gather", id[axis])?, u("gather", inner)?];
    let grid = gpu.grid_elems("gather", out.numel())?;
    gpu.launch("gather", &GATHER, &[], &[x.buffer(), idx.buffer()], res.buffer(), &p, grid)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn scatter_add(
    gpu: &Gpu,
    axis: usize,
    size: usize,
    src: &GpuTensor,
    idx: &GpuTensor,
    shapes: &[&Shape],
    res: &GpuTensor,
) -> Result<()> {
    let sd = shapes[0].dims();
    let inner: usize = sd[axis + 1..].iter().product();
    let p = [u("scatter_add", res.len)?, u("scatter_add", size)?, u("scatter_add", sd[axis])?, u("scatter_add", inner)?];
    let grid = gpu.grid_elems("scatter_add", res.len)?;
    gpu.launch("scatter_add", &SCATTER_ADD, &[], &[src.buffer(), idx.buffer()], res.buffer(), &p, grid)
}
