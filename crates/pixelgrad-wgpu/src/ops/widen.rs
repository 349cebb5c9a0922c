//! [`pixelgrad_core::Op::Widen`]: packed 8-bit or f16 storage to f32, one invocation per
//! element, with integer operations only (exact on every device, subnormals included); and
//! its inverse for halves, [`pixelgrad_core::Op::NarrowF16`], one invocation per word.

use std::borrow::Cow;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Result};

use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::BACKEND;

pub(crate) const WIDEN: Kernel = Kernel {
    name: Cow::Borrowed("widen"),
    source: Cow::Borrowed(include_str!("../kernels/widen.wgsl")),
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
