//! Reductions as passes of the programs rendered from their one definition
//! (`pixelgrad_core::kernel::reductions`), the launch [`crate::ReduceKernel::Rendered`]
//! names: one invocation per output element and group, each folding up to a group of
//! elements along the axis in ascending order (a last-axis group four elements per step);
//! an axis longer than [`MAX_GROUP`] takes a tree of passes, the group balanced over the
//! fewest passes (as WebGL2 draws them), each pass's partials in a pooled scratch buffer.
//! Argmax over several groups is a max tree, the first-equal pass and a min tree.
//!
//! Launched where [`chosen`] says (`ReduceKernel::Auto`): on SwiftShader (Chromium's WebGPU
//! on the CPU) every kind, 0.25-0.69x the hand-written kernel's time on the large cases; on
//! lavapipe sums, log-sum-exp and one-group argmax, which measured 0.5-0.9x there, while max
//! and min (1.3x on a last axis: the tie count and selects per lane) and a longer argmax
//! (2.1x over 2^20 elements: four passes, the input read twice, against one workgroup) stay
//! hand-written (`bench/notes/2026-12-07-webgpu-reductions-rendered.md`).

use std::rc::Rc;

use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::reductions::{reduce_params, tree_group, ReduceProgram, MAX_GROUP};
use pixelgrad_core::{ReduceOp, Result};

use super::programs::program_kernel;
use crate::context::{Gpu, GpuTensor};

/// Whether `op` over `[outer, n, inner]` of a stored tensor runs rendered: as
/// [`crate::ReduceKernel`] says, where [`fits`] holds.
pub(crate) fn chosen(gpu: &Gpu, op: ReduceOp, outer: usize, n: usize, inner: usize) -> bool {
    let rendered = match gpu.reductions.get() {
        crate::ReduceKernel::HandWritten => false,
        crate::ReduceKernel::Rendered => true,
        // On SwiftShader (a browser's CPU adapter, or by name) every kind measured 0.25-0.69x
        // the hand-written time; on lavapipe sums, log-sum-exp and one-group argmax did.
        crate::ReduceKernel::Auto => {
            gpu.info.device_type == wgpu::DeviceType::Cpu
                && (swiftshader(&gpu.info)
                    || match op {
                        ReduceOp::Sum | ReduceOp::LogSumExp => true,
                        ReduceOp::ArgMax => n <= MAX_GROUP,
                        ReduceOp::Max | ReduceOp::Min => false,
                    })
        }
    };
    rendered && fits(outer, n, inner)
}

/// Whether a CPU adapter is SwiftShader: in a browser (Chromium's WebGPU on the CPU; the page
/// is told no adapter name) or by name.
fn swiftshader(info: &wgpu::AdapterInfo) -> bool {
    info.backend == wgpu::Backend::BrowserWebGpu || info.name.contains("SwiftShader")
}

/// Whether a reduction of `[outer, n, inner]` can run rendered: a non-empty axis, and every
/// flat index below 2^31 (the programs index with `i32`).
pub(crate) fn fits(outer: usize, n: usize, inner: usize) -> bool {
    n > 0 && outer.checked_mul(n).and_then(|v| v.checked_mul(inner)).is_some_and(|v| v < i32::MAX as usize)
}

/// One pass of `which` with `group` over `ins[0]` viewed as `[outer, n, inner]` into `out`
/// (`[outer, ceil(n / group), inner]`).
#[allow(clippy::too_many_arguments)]
fn pass(
    gpu: &Gpu,
    which: ReduceProgram,
    ins: &[&GpuTensor],
    outer: usize,
    n: usize,
    inner: usize,
    group: usize,
    out: &GpuTensor,
) -> Result<()> {
    let params = reduce_params(n, inner, group);
    let outputs = outer * params[1] * inner;
    let mut p: Vec<u32> = params.iter().map(|&v| v as u32).collect();
    p.push(outputs as u32);
    let grid = gpu.grid_elems("reduce", outputs)?;
    let bufs: Vec<&wgpu::Buffer> = ins.iter().map(|t| t.buffer()).collect();
    gpu.launch("reduce", program_kernel(KernelProgram::Reduce(which)), &[], &bufs, out.buffer(), &p, grid)
}

/// Passes of `which` over `x` (`[outer, n, inner]`) until one element per output is left, the
/// last written into `out`.
fn tree(gpu: &Rc<Gpu>, which: ReduceProgram, x: &GpuTensor, outer: usize, mut n: usize, inner: usize, out: &GpuTensor) -> Result<()> {
    let mut cur: Option<GpuTensor> = None;
    loop {
        let group = tree_group(n);
        let m = n.div_ceil(group);
        let src = cur.as_ref().unwrap_or(x);
        if m == 1 {
            return pass(gpu, which, &[src], outer, n, inner, group, out);
        }
        let next = GpuTensor::new(gpu, "reduce", outer * m * inner)?;
        pass(gpu, which, &[src], outer, n, inner, group, &next)?;
        cur = Some(next);
        n = m;
    }
}

/// `op` over the middle axis of `x` viewed as `[outer, n, inner]` into `out` (`[outer,
/// inner]`); [`fits`] must hold.
pub(crate) fn reduce(gpu: &Rc<Gpu>, op: ReduceOp, x: &GpuTensor, outer: usize, n: usize, inner: usize, out: &GpuTensor) -> Result<()> {
    if op != ReduceOp::ArgMax {
        return tree(gpu, ReduceProgram::of(op), x, outer, n, inner, out);
    }
    let group = tree_group(n);
    if n <= group {
        return pass(gpu, ReduceProgram::ArgMax, &[x], outer, n, inner, group, out);
    }
    // The maxima, then per group the first index holding its maximum (none: a huge value),
    // then the smallest of those candidates.
    let best = GpuTensor::new(gpu, "reduce", outer * inner)?;
    tree(gpu, ReduceProgram::Max, x, outer, n, inner, &best)?;
    let m = n.div_ceil(group);
    let cand = GpuTensor::new(gpu, "reduce", outer * m * inner)?;
    pass(gpu, ReduceProgram::FirstEqual, &[x, &best], outer, n, inner, group, &cand)?;
    tree(gpu, ReduceProgram::Min, &cand, outer, m, inner, out)
}
