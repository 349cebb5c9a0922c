//! Elementwise unary, binary and select, with broadcasting through strides.

use pixelgrad_core::shape::broadcast_strides;
use pixelgrad_core::{BinaryOp, Result, Shape, UnaryOp};

use super::{f, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::strides::{check_rank, coalesce, contiguous, MAX_RANK};

pub(crate) const UNARY: Kernel =
    Kernel { name: "unary", source: include_str!("../kernels/unary.wgsl"), inputs: 1, overrides: &["OP"], status: false };
pub(crate) const BINARY: Kernel =
    Kernel { name: "binary", source: include_str!("../kernels/binary.wgsl"), inputs: 2, overrides: &["OP", "FAST"], status: false };
pub(crate) const WHERE: Kernel =
    Kernel { name: "where", source: include_str!("../kernels/where.wgsl"), inputs: 3, overrides: &["FAST"], status: false };

pub(crate) fn unary(gpu: &Gpu, op: UnaryOp, x: &GpuTensor, out: &GpuTensor) -> Result<()> {
    let (code, p0, p1) = op.code();
    let n = u("unary", out.len)?;
    let grid = gpu.grid_elems("unary", out.len)?;
    gpu.launch("unary", &UNARY, &[code], &[x.buffer()], out.buffer(), &[n, f(p0), f(p1)], grid)
}

/// Parameters [n, rank, dims[6], strides[6] per input] of the broadcasting kernels, or `None`
/// when every input already has the output's shape (the FAST path).
fn broadcast_params(op: &'static str, shapes: &[&Shape], out: &Shape) -> Result<Option<Vec<u32>>> {
    let n = u(op, out.numel())?;
    if shapes.iter().all(|s| *s == out) {
        return Ok(None);
    }
    let mut all: Vec<Vec<usize>> = shapes.iter().map(|s| broadcast_strides(s, out)).collect();
    // The output's own strides join the merge so merged axes stay contiguous in it too.
    all.push(contiguous(out.dims()));
    let (dims, strides) = coalesce(out.dims(), &all);
    check_rank(op, dims.len())?;
    let mut p = vec![0u32; 2 + MAX_RANK * (1 + shapes.len())];
    p[0] = n;
    p[1] = dims.len() as u32;
    for (i, &d) in dims.iter().enumerate() {
        p[2 + i] = u(op, d)?;
    }
    for (k, s) in strides.iter().take(shapes.len()).enumerate() {
        for (i, &v) in s.iter().enumerate() {
            p[2 + MAX_RANK * (k + 1) + i] = u(op, v)?;
        }
    }
    Ok(Some(p))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn binary(
    gpu: &Gpu,
    op: BinaryOp,
    a: &GpuTensor,
    b: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let grid = gpu.grid_elems("binary", res.len)?;
    let code = op.code();
    match broadcast_params("binary", shapes, out)? {
        None => {
            let n = u("binary", res.len)?;
            gpu.launch("binary", &BINARY, &[code, 1], &[a.buffer(), b.buffer()], res.buffer(), &[n], grid)
        }
        Some(p) => gpu.launch("binary", &BINARY, &[code, 0], &[a.buffer(), b.buffer()], res.buffer(), &p, grid),
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn where_(
    gpu: &Gpu,
    cond: &GpuTensor,
    a: &GpuTensor,
    b: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let grid = gpu.grid_elems("where", res.len)?;
    let bufs = [cond.buffer(), a.buffer(), b.buffer()];
    match broadcast_params("where", shapes, out)? {
        None => {
            let n = u("where", res.len)?;
            gpu.launch("where", &WHERE, &[1], &bufs, res.buffer(), &[n], grid)
        }
        Some(p) => gpu.launch("where", &WHERE, &[0], &bufs, res.buffer(), &p, grid),
    }
}
