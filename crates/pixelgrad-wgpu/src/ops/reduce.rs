//! Reductions along one axis (sum, max, min, argmax).

use std::borrow::Cow;

use pixelgrad_core::{ReduceOp, Result, Shape};

use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;

pub(crate) const REDUCE: Kernel = Kernel {
    name: Cow::Borrowed("reduce"),
    source: Cow::Borrowed(include_str!("../kernels/reduce.wgsl")),
    inputs: 1,
    overrides: &["OP", "TREE"],
    status: false,
};

/// Axes at most this long are folded by one thread per output; longer ones by a workgroup
/// tree (parallel and more accurate for long sums).
const SERIAL_MAX_LEN: usize = 64;

pub(crate) fn reduce(gpu: &Gpu, op: ReduceOp, axis: usize, x: &GpuTensor, shape: &Shape, out: &GpuTensor) -> Result<()> {
    let dims = shape.dims();
    let outer: usize = dims[..axis].iter().product();
    let len = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    let outputs = outer * inner;
    let code = match op {
        ReduceOp::Sum => 0,
        ReduceOp::Max => 1,
        ReduceOp::Min => 2,
        ReduceOp::ArgMax => 3,
    };
    let params = [u("reduce", outputs)?, u("reduce", len)?, u("reduce", inner)?];
    if len <= SERIAL_MAX_LEN {
        let grid = gpu.grid_elems("reduce", outputs)?;
        gpu.launch("reduce", &REDUCE, &[code, 0], &[x.buffer()], out.buffer(), &params, grid)
    } else {
        let grid = gpu.grid_1d("reduce", outputs as u64)?;
        gpu.launch("reduce", &REDUCE, &[code, 1], &[x.buffer()], out.buffer(), &params, grid)
    }
}
