//! The exact integer matmul of 8-bit weights ([`pixelgrad_core::Op::MatMulI8`]): weights
//! packed four per u32 word, unpacked with shifts in the kernel, i32 accumulation.

use std::borrow::Cow;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Result, Shape};

use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::BACKEND;

pub(crate) const MATMUL_I8: Kernel = Kernel {
    name: Cow::Borrowed("matmul_i8"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_i8.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &["SIGNED"],
    status: false,
};

/// [`MATMUL_I8`] for K and N multiples of 4: whole words of A, vec4s of B.
pub(crate) const MATMUL_I8_VEC4: Kernel = Kernel {
    name: Cow::Borrowed("matmul_i8_vec4"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_i8_vec4.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &["SIGNED"],
    status: false,
};

/// Output tile edge of one workgroup (must match the kernel).
const TILE: usize = 32;

/// What [`crate::WgpuBackend::int8_path`] reports: bytes unpacked by shifts, i32 products.
pub(crate) const PATH: &str = "unpacked-i32";

/// `a` (8-bit, `[M, K]` or `[G, M, K]`) times `b` (f32 whole numbers) into `res`; shapes passed
/// `Op::infer_shape`, and the caller checked the storage types.
pub(crate) fn matmul_i8(gpu: &Gpu, a: &GpuTensor, b: &GpuTensor, shapes: &[&Shape], out: &Shape, res: &GpuTensor) -> Result<()> {
    let op = "matmul_i8";
    let signed = match a.dtype {
        DType::I8 => true,
        DType::U8 => false,
        other => return Err(Error::backend(op, BACKEND, format!("internal: weights of type {other}"))),
    };
    let (sa, sb, od) = (shapes[0].dims(), shapes[1].dims(), out.dims());
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let n = od[od.len() - 1];
    let batch = if od.len() == 3 { od[0] } else { 1 };
    if out.numel() == 0 {
        return Ok(());
    }
    let a_stride = if sa.len() == 3 && sa[0] > 1 { m * k } else { 0 };
    let b_stride = if sb.len() == 3 && sb[0] > 1 { k * n } else { 0 };
    // Element indices of A (and C) must fit u32.
    u(op, batch * m * k.max(1))?;
    u(op, batch * m * n)?;
    let params = [u(op, m)?, u(op, n)?, u(op, k)?, u(op, a_stride)?, u(op, b_stride)?];
    let grid = [gpu.check_dim(op, n.div_ceil(TILE) as u64)?, gpu.check_dim(op, m.div_ceil(TILE) as u64)?, gpu.check_dim(op, batch as u64)?];
    let kernel = if k.is_multiple_of(4) && n.is_multiple_of(4) { &MATMUL_I8_VEC4 } else { &MATMUL_I8 };
    gpu.launch(op, kernel, &[u32::from(signed)], &[a.buffer(), b.buffer()], res.buffer(), &params, grid)
}
