//! The product with block-quantised weights kept packed ([`pixelgrad_core::Op::MatMulNBits`]):
//! the weight's bytes are the u8 storage [`crate::WgpuBackend`] uploads (four per u32 word,
//! as uploaded, never widened), dequantised inside the kernel where each value is read
//! (`kernels/matmul_nbits.wgsl`): in inference each invocation computes [`ROWS`] rows of one
//! output column, so a weight value is unpacked once for all of them; a one-row product (a
//! decoder's next token) runs one row per invocation.

use std::borrow::Cow;
use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Result, Shape};

use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::BACKEND;

pub(crate) const MATMUL_NBITS: Kernel = Kernel {
    name: Cow::Borrowed("matmul_nbits"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_nbits.wgsl")),
    inputs: 4,
    outputs: 1,
    overrides: &["TRANS", "ROWS", "BITS", "DEQUANT"],
    status: false,
};

/// Rows of `a` each inference invocation computes when `a` has at least that many.
const ROWS: usize = 4;

/// Rows of `a` from which the weight is dequantised into a transient f32 `[N, K]` buffer and
/// multiplied by the plain f32 matmul (its tiled or register kernels), instead of unpacking the
/// weight in every invocation: a prompt or a batch, not a decoder's next token. The transient
/// buffer goes back to the pool when the product has run, so only one layer's weight is ever
/// held as f32.
const DEQUANT_ROWS: usize = 8;

/// `a` times the packed weight `q` (u8 storage) with its `scales` and `zeros` into `res`;
/// shapes passed `Op::infer_shape` (so `q` is `[N, k_blocks * blob]`).
pub(crate) fn matmul_nbits(
    gpu: &Rc<Gpu>,
    (bits, block, k, trans): (usize, usize, usize, bool),
    ins: [&GpuTensor; 4],
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let op = "matmul_nbits";
    let [a, q, s, z] = ins;
    if q.dtype != DType::U8 {
        return Err(Error::backend(op, BACKEND, format!("the packed weight has {} storage; it must be u8", q.dtype)));
    }
    if [a, s, z].iter().any(|t| t.is_packed()) {
        return Err(Error::backend(op, BACKEND, "a, scales and zeros must be f32"));
    }
    let (m, n) = (shapes[0].dims()[0], shapes[1].dims()[0]);
    let k_blocks = k.div_ceil(block);
    let blob = block * bits / 8;
    if !trans && m >= DEQUANT_ROWS {
        let values = n * k;
        u(op, values)?;
        let w = GpuTensor::new(gpu, op, values)?;
        let params = [u(op, m)?, u(op, n)?, u(op, k)?, u(op, block)?, u(op, k_blocks)?, u(op, blob)?, u(op, bits)?, u(op, values)?];
        let config = [0, 1, u(op, bits)?, 1];
        // `a` is not read when dequantising: the scales stand in for its binding.
        gpu.launch(
            op,
            &MATMUL_NBITS,
            &config,
            &[s.buffer(), q.buffer(), s.buffer(), z.buffer()],
            w.buffer(),
            &params,
            gpu.grid_elems(op, values)?,
        )?;
        let w_shape = Shape::from(vec![n, k]);
        return super::matmul::matmul(gpu, false, true, a, &w, &[shapes[0], &w_shape], out, res);
    }
    // Rows per invocation: one per output element for the transposed product.
    let rows = if !trans && m >= ROWS { ROWS } else { 1 };
    let invocations = if trans { out.numel() } else { m.div_ceil(rows) * n };
    // Every index the kernel forms (elements of a and c, bytes of q, blocks) must fit u32.
    u(op, m * if trans { n } else { k })?;
    u(op, out.numel())?;
    u(op, n * k_blocks * blob)?;
    let params = [u(op, m)?, u(op, n)?, u(op, k)?, u(op, block)?, u(op, k_blocks)?, u(op, blob)?, u(op, bits)?, u(op, invocations)?];
    let grid = gpu.grid_elems(op, invocations)?;
    let config = [u32::from(trans), u(op, rows)?, u(op, bits)?, 0];
    gpu.launch(op, &MATMUL_NBITS, &config, &[a.buffer(), q.buffer(), s.buffer(), z.buffer()], res.buffer(), &params, grid)
}
