//! [`pixelgrad_core::Op::Widen`]: packed 8-bit or f16 storage to f32, one invocation per
//! element, with integer operations only (exact on every device, subnormals included); and
//! its inverses, [`pixelgrad_core::Op::NarrowF16`] and [`pixelgrad_core::Op::Narrow8`], one
//! invocation per word.

use std::borrow::Cow;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Result};

use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::BACKEND;

pub(crate) const WIDEN: Kernel = Kernel {
    name: Cow::Borrowed("widen"),
    source: Cow::Borrowed(concat!(include_str!("../kernels/half_bits.wgsl"), include_str!("../kernels/widen.wgsl"))),
    inputs: 1,
    outputs: 1,
    overrides: &["KIND"],
    status: false,
};

/// The first `res.len` elements of `x` (i8, u8 or f16, packed) into `res` as f32; the caller
/// checked the shapes and that `x` is packed.
pub(crate) fn widen(gpu: &Gpu, x: &GpuTensor, res: &GpuTensor) -> Result<()> {
    let op = "widen";
    let kind = match x.dtype {
        DType::I8 => 0,
        DType::U8 => 1,
        DType::F16 => 2,
        other => return Err(Error::backend(op, BACKEND, format!("internal: widen of {other} storage"))),
    };
    let n = u(op, res.len)?;
    let grid = gpu.grid_elems(op, res.len)?;
    gpu.launch(op, &WIDEN, &[kind], &[x.buffer()], res.buffer(), &[n], grid)
}

pub(crate) const NARROW_F16: Kernel = Kernel {
    name: Cow::Borrowed("narrow_f16"),
    source: Cow::Borrowed(include_str!("../kernels/narrow_f16.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &[],
    status: false,
};

/// The first `n` f32 elements of `x` rounded to f16 into `res` (packed two per word, allocated
/// by the caller for `n` halves).
pub(crate) fn narrow_f16(gpu: &Gpu, x: &GpuTensor, res: &GpuTensor, n: usize) -> Result<()> {
    let op = "narrow_f16";
    let params = [u(op, n)?];
    let grid = gpu.grid_elems(op, n.div_ceil(2))?;
    gpu.launch(op, &NARROW_F16, &[], &[x.buffer()], res.buffer(), &params, grid)
}

pub(crate) const NARROW8: Kernel = Kernel {
    name: Cow::Borrowed("narrow8"),
    source: Cow::Borrowed(include_str!("../kernels/narrow8.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &["KIND"],
    status: false,
};

/// The first `n` f32 elements of `x` rounded (ties to even) and saturated to 8 bits into `res`
/// (packed four per word, allocated by the caller for `n` bytes of `res.dtype`).
pub(crate) fn narrow8(gpu: &Gpu, x: &GpuTensor, res: &GpuTensor, n: usize) -> Result<()> {
    let op = "narrow8";
    let kind = match res.dtype {
        DType::I8 => 0,
        DType::U8 => 1,
        other => return Err(Error::backend(op, BACKEND, format!("internal: narrow8 into {other} storage"))),
    };
    let params = [u(op, n)?];
    let grid = gpu.grid_elems(op, n.div_ceil(4))?;
    gpu.launch(op, &NARROW8, &[kind], &[x.buffer()], res.buffer(), &params, grid)
}
