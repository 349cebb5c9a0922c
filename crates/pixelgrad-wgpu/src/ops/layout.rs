//! Data movement: permute, expand, slice, pad and concat, all through one strided-copy kernel
//! (pad first fills the output with zeros).

use std::borrow::Cow;

use pixelgrad_core::{Result, Shape};

use super::{create, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::strides::{check_rank, coalesce, contiguous, MAX_RANK};

pub(crate) const COPY: Kernel = Kernel {
    name: Cow::Borrowed("copy"),
    source: Cow::Borrowed(include_str!("../kernels/copy.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &[],
    status: false,
};

/// Copies the box `dims` from `x` (at `src_base` + coordinates · `src`) to `out` (at
/// `dst_base` + coordinates · `dst`).
#[allow(clippy::too_many_arguments)]
fn strided_copy(
    gpu: &Gpu,
    op: &'static str,
    x: &GpuTensor,
    out: &GpuTensor,
    dims: &[usize],
    src_base: usize,
    src: Vec<usize>,
    dst_base: usize,
    dst: Vec<usize>,
) -> Result<()> {
    let n: usize = dims.iter().product();
    if n == 0 {
        return Ok(());
    }
    let (dims, s) = coalesce(dims, &[src, dst]);
    check_rank(op, dims.len())?;
    let mut p = vec![0u32; 4 + 3 * MAX_RANK];
    p[0] = u(op, n)?;
    p[1] = dims.len() as u32;
    p[2] = u(op, src_base)?;
    p[3] = u(op, dst_base)?;
    for i in 0..dims.len() {
        p[4 + i] = u(op, dims[i])?;
        p[4 + MAX_RANK + i] = u(op, s[0][i])?;
        p[4 + 2 * MAX_RANK + i] = u(op, s[1][i])?;
    }
    let grid = gpu.grid_elems(op, n)?;
    gpu.launch(op, &COPY, &[], &[x.buffer()], out.buffer(), &p, grid)
}

/// A plain copy of `n` elements.
pub(crate) fn copy_all(gpu: &Gpu, x: &GpuTensor, n: usize, out: &GpuTensor) -> Result<()> {
    strided_copy(gpu, "reshape", x, out, &[n], 0, vec![1], 0, vec![1])
}

pub(crate) fn permute(gpu: &Gpu, perm: &[usize], x: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    let in_strides = shape.strides();
    let src = perm.iter().map(|&a| in_strides[a]).collect();
    strided_copy(gpu, "permute", x, res, out.dims(), 0, src, 0, contiguous(out.dims()))
}

pub(crate) fn expand(gpu: &Gpu, x: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    let src = pixelgrad_core::shape::broadcast_strides(shape, out);
    strided_copy(gpu, "expand", x, res, out.dims(), 0, src, 0, contiguous(out.dims()))
}

pub(crate) fn slice(gpu: &Gpu, starts: &[usize], x: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    let st = shape.strides();
    let base = starts.iter().zip(st.iter()).map(|(a, b)| a * b).sum();
    strided_copy(gpu, "slice", x, res, out.dims(), base, st, 0, contiguous(out.dims()))
}

pub(crate) fn pad(gpu: &Gpu, before: &[usize], x: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    create::fill(gpu, res, 0.0)?;
    let ost = contiguous(out.dims());
    let base = before.iter().zip(ost.iter()).map(|(a, b)| a * b).sum();
    strided_copy(gpu, "pad", x, res, shape.dims(), 0, shape.strides(), base, ost)
}

pub(crate) fn concat(gpu: &Gpu, axis: usize, ins: &[&GpuTensor], shapes: &[&Shape], out: &Shape, res: &GpuTensor) -> Result<()> {
    let ost = contiguous(out.dims());
    let mut offset = 0;
    for (x, s) in ins.iter().zip(shapes.iter()) {
        strided_copy(gpu, "concat", x, res, s.dims(), 0, s.strides(), offset * ost[axis], ost.clone())?;
        offset += s.dims()[axis];
    }
    Ok(())
}
