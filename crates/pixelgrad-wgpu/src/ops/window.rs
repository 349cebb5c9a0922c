//! im2col and its adjoint col2im (the building blocks of convolution and pooling).

use std::borrow::Cow;

use pixelgrad_core::{Result, Shape, Window};

use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;

pub(crate) const IM2COL: Kernel = Kernel {
    name: Cow::Borrowed("im2col"),
    source: Cow::Borrowed(include_str!("../kernels/im2col.wgsl")),
    inputs: 1,
    overrides: &[],
    status: false,
};
pub(crate) const COL2IM: Kernel = Kernel {
    name: Cow::Borrowed("col2im"),
    source: Cow::Borrowed(include_str!("../kernels/col2im.wgsl")),
    inputs: 1,
    overrides: &[],
    status: false,
};

/// [n_out, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW].
fn params(op: &'static str, n_out: usize, c: usize, h: usize, w: usize, win: &Window) -> Result<[u32; 12]> {
    let (oh, ow) = win.out_hw(h, w).unwrap_or((0, 0));
    Ok([
        u(op, n_out)?,
        u(op, c)?,
        u(op, h)?,
        u(op, w)?,
        u(op, win.kh)?,
        u(op, win.kw)?,
        u(op, win.stride_h)?,
        u(op, win.stride_w)?,
        u(op, win.pad_h)?,
        u(op, win.pad_w)?,
        u(op, oh)?,
        u(op, ow)?,
    ])
}

pub(crate) fn im2col(gpu: &Gpu, win: &Window, x: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    let d = shape.dims();
    let p = params("im2col", out.numel(), d[1], d[2], d[3], win)?;
    let grid = gpu.grid_elems("im2col", out.numel())?;
    gpu.launch("im2col", &IM2COL, &[], &[x.buffer()], res.buffer(), &p, grid)
}

pub(crate) fn col2im(gpu: &Gpu, win: &Window, h: usize, w: usize, col: &GpuTensor, out: &Shape, res: &GpuTensor) -> Result<()> {
    let c = out.dims()[1];
    let p = params("col2im", out.numel(), c, h, w, win)?;
    let grid = gpu.grid_elems("col2im", out.numel())?;
    gpu.launch("col2im", &COL2IM, &[], &[col.buffer()], res.buffer(), &p, grid)
}
