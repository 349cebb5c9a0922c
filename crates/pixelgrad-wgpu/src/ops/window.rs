//! im2col and its adjoint col2im (the building blocks of convolution and average pooling), the
//! depthwise convolution, which reads its windows directly, and the window programs rendered
//! from their one definition (max pooling and its gradient).

use std::borrow::Cow;

use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::windows::{window_params, WindowProgram, WINDOW_PARAMS};
use pixelgrad_core::{Error, Result, Shape, Window};

use super::{f, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::BACKEND;

pub(crate) const IM2COL: Kernel = Kernel {
    name: Cow::Borrowed("im2col"),
    source: Cow::Borrowed(include_str!("../kernels/im2col.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &[],
    status: false,
};
pub(crate) const DEPTHWISE: Kernel = Kernel {
    name: Cow::Borrowed("depthwise_conv"),
    source: Cow::Borrowed(include_str!("../kernels/depthwise_conv.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &["INSIDE"],
    status: false,
};
pub(crate) const COL2IM: Kernel = Kernel {
    name: Cow::Borrowed("col2im"),
    source: Cow::Borrowed(include_str!("../kernels/col2im.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &[],
    status: false,
};

/// [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW, f32 1/OW, f32 1/W,
/// f32 1/stride_h, f32 1/stride_w] (the kernels read the reciprocals they divide by).
fn params(op: &'static str, images: usize, c: usize, h: usize, w: usize, win: &Window) -> Result<[u32; 16]> {
    let (oh, ow) = win.out_hw(h, w).unwrap_or((0, 0));
    // The kernels divide in f32 (see `div_small` in the WGSL), exact below 2^24.
    let small = 1 << 24;
    if oh * ow >= small || h * w >= small || h + win.pad_h >= small || w + win.pad_w >= small {
        return Err(Error::Limit {
            op,
            backend: BACKEND.into(),
            limit_name: "pixels per image (2^24)",
            limit: small as u64,
            requested: (oh * ow).max(h * w) as u64,
        });
    }
    let inv = |d: usize| f(1.0 / d.max(1) as f32);
    Ok([
        u(op, images)?,
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
        inv(ow),
        inv(w),
        inv(win.stride_h),
        inv(win.stride_w),
    ])
}

/// Grid of the window kernels: blocks of 256 along `per` (one row's positions or one
/// channel's pixels), then `outer` and `images`, folded into the kernels' loops beyond the
/// adapter's grid limit.
fn grid(gpu: &Gpu, op: &'static str, per: usize, outer: usize, images: usize) -> Result<[u32; 3]> {
    let max = gpu.limits.max_compute_workgroups_per_dimension as usize;
    Ok([gpu.check_dim(op, per.div_ceil(256) as u64)?, outer.clamp(1, max) as u32, images.clamp(1, max) as u32])
}

/// Rows of the column matrix one im2col invocation writes (`ROWS` in im2col.wgsl).
const IM2COL_ROWS: usize = 256;

pub(crate) fn im2col(gpu: &Gpu, win: &Window, x: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    let d = shape.dims();
    let mut p = params("im2col", d[0], d[1], d[2], d[3], win)?;
    // Blocks of rows per channel: the output exists, so C * kh * kw (its row count) fits.
    let blocks = (win.kh * win.kw).div_ceil(IM2COL_ROWS).max(1);
    p[13] = u("im2col", blocks)?;
    let grid = grid(gpu, "im2col", out.dims()[2], d[1].saturating_mul(blocks), d[0])?;
    gpu.launch("im2col", &IM2COL, &[], &[x.buffer()], res.buffer(), &p, grid)
}

pub(crate) fn col2im(gpu: &Gpu, win: &Window, h: usize, w: usize, col: &GpuTensor, out: &Shape, res: &GpuTensor) -> Result<()> {
    let d = out.dims();
    let p = params("col2im", d[0], d[1], h, w, win)?;
    let grid = grid(gpu, "col2im", h * w, d[1], d[0])?;
    gpu.launch("col2im", &COL2IM, &[], &[col.buffer()], res.buffer(), &p, grid)
}

pub(crate) fn depthwise(gpu: &Gpu, win: &Window, x: &GpuTensor, k: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    let d = shape.dims();
    let mut p = params("depthwise_conv", d[0], d[1], d[2], d[3], win)?;
    let o = out.dims();
    // Four outputs of a row per invocation, 64 invocations per workgroup (depthwise_conv.wgsl).
    let quads = o[3].div_ceil(4);
    p[12] = f(1.0 / quads.max(1) as f32);
    let max = gpu.limits.max_compute_workgroups_per_dimension as usize;
    let grid = [gpu.check_dim("depthwise_conv", (o[2] * quads).div_ceil(64) as u64)?, d[1].clamp(1, max) as u32, d[0].clamp(1, max) as u32];
    // A window that fits in the image takes the kernel's INSIDE path (no per-lane bounds).
    let inside = win.kh <= d[2] && win.kw <= d[3];
    gpu.launch("depthwise_conv", &DEPTHWISE, &[u32::from(inside)], &[x.buffer(), k.buffer()], res.buffer(), &p, grid)
}

/// Runs window program `which` over `n` output elements of images `h` x `w`: one invocation
/// per element. The programs index with `i32`, so every tensor they touch (`largest`
/// elements) stays below 2^31.
#[allow(clippy::too_many_arguments)]
fn run_program(
    gpu: &Gpu,
    which: WindowProgram,
    win: &Window,
    h: usize,
    w: usize,
    inputs: &[&GpuTensor],
    n: usize,
    largest: usize,
    res: &GpuTensor,
) -> Result<()> {
    let op = which.name();
    let limit = i32::MAX as usize;
    if largest > limit {
        return Err(Error::Limit {
            op,
            backend: BACKEND.into(),
            limit_name: "i32 element index",
            limit: limit as u64,
            requested: largest as u64,
        });
    }
    let params = window_params(h, w, win).ok_or_else(|| Error::invalid(op, "window does not fit"))?;
    let mut p = Vec::with_capacity(WINDOW_PARAMS.len() + 1);
    for v in params {
        // Every parameter is an index or a size the program adds to indices: below 2^31 too.
        if v > limit {
            return Err(Error::Limit {
                op,
                backend: BACKEND.into(),
                limit_name: "i32 window parameter",
                limit: limit as u64,
                requested: v as u64,
            });
        }
        p.push(v as u32);
    }
    // The programs divide through f32 (`pg_idiv` in wgsl.rs), exact while every quotient
    // (image planes, rows and columns of the padded image) stays below 2^23.
    let small = 1usize << 23;
    let planes = largest / (h * w).min(params[8] * params[9]).max(1);
    let padded = h.saturating_add(win.pad_h.saturating_mul(2)).max(w.saturating_add(win.pad_w.saturating_mul(2)));
    if planes >= small || padded >= small {
        let requested = planes.max(padded) as u64;
        return Err(Error::Limit {
            op,
            backend: BACKEND.into(),
            limit_name: "image planes and padded image side (2^23)",
            limit: small as u64,
            requested,
        });
    }
    p.push(n as u32);
    let grid = gpu.grid_1d(op, n.div_ceil(256) as u64)?;
    let buffers: Vec<&wgpu::Buffer> = inputs.iter().map(|t| t.buffer()).collect();
    gpu.launch(op, super::programs::program_kernel(KernelProgram::Window(which)), &[], &buffers, res.buffer(), &p, grid)
}

/// [`pixelgrad_core::Op::Window`]: any window program, one invocation per output element.
pub(crate) fn window_program(
    gpu: &Gpu,
    which: WindowProgram,
    win: &Window,
    ins: &[&GpuTensor],
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let d = shapes[0].dims();
    let largest = shapes.iter().map(|s| s.numel()).chain([out.numel()]).max().unwrap_or(0);
    run_program(gpu, which, win, d[2], d[3], ins, out.numel(), largest, res)
}

/// [`pixelgrad_core::Op::MaxPool`]: one window scan per output element.
pub(crate) fn max_pool(gpu: &Gpu, win: &Window, x: &GpuTensor, shape: &Shape, out: &Shape, res: &GpuTensor) -> Result<()> {
    let d = shape.dims();
    run_program(gpu, WindowProgram::MaxPool, win, d[2], d[3], &[x], out.numel(), shape.numel().max(out.numel()), res)
}

/// [`pixelgrad_core::Op::MaxPoolGrad`]: a gather over the windows covering each input pixel.
pub(crate) fn max_pool_grad(gpu: &Gpu, win: &Window, x: &GpuTensor, dy: &GpuTensor, shape: &Shape, res: &GpuTensor) -> Result<()> {
    let d = shape.dims();
    let (oh, ow) = win.out_hw(d[2], d[3]).unwrap_or((0, 0));
    let dy_n = d[0].saturating_mul(d[1]).saturating_mul(oh).saturating_mul(ow);
    run_program(gpu, WindowProgram::MaxPoolGrad, win, d[2], d[3], &[x, dy], shape.numel(), shape.numel().max(dy_n), res)
}
