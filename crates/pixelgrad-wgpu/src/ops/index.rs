//! Gather and scatter-add along an axis (indices stored as f32): the index programs rendered
//! from their one definition (`pixelgrad_core::kernel::indexing`), one invocation per output
//! element. A bad index reads 0 and raises its bit of the status word, which the next readback
//! turns into an error naming the op (`Gpu::status`).

use pixelgrad_core::kernel::indexing::{gather_params, scatter_add_params, IndexProgram};
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::{Error, Result, Shape};

use super::programs::program_kernel;
use crate::context::{Gpu, GpuTensor};
use crate::BACKEND;

/// Runs `which` with `params` over `n` output elements. The programs index with `i32`, so
/// every tensor they touch (`largest` elements) stays below 2^31.
fn run(gpu: &Gpu, which: IndexProgram, params: [usize; 3], ins: [&GpuTensor; 2], n: usize, largest: usize, res: &GpuTensor) -> Result<()> {
    let op = which.name();
    let limit = i32::MAX as usize;
    if let Some(&requested) = params.iter().chain([&largest]).find(|&&v| v > limit) {
        return Err(Error::Limit {
            op,
            backend: BACKEND.into(),
            limit_name: "i32 element index",
            limit: limit as u64,
            requested: requested as u64,
        });
    }
    if n == 0 {
        return Ok(());
    }
    let mut p: Vec<u32> = params.iter().map(|&v| v as u32).collect();
    p.push(n as u32);
    let grid = gpu.grid_elems(op, n)?;
    gpu.launch(op, program_kernel(KernelProgram::Index(which)), &[], &[ins[0].buffer(), ins[1].buffer()], res.buffer(), &p, grid)
}

pub(crate) fn gather(
    gpu: &Gpu,
    axis: usize,
    x: &GpuTensor,
    idx: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let params = gather_params(shapes[0].dims(), shapes[1].dims(), axis);
    run(gpu, IndexProgram::Gather, params, [x, idx], out.numel(), shapes[0].numel().max(out.numel()), res)
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
    let params = scatter_add_params(shapes[0].dims(), axis, size);
    run(gpu, IndexProgram::ScatterAdd, params, [src, idx], res.len, shapes[0].numel().max(res.len), res)
}
