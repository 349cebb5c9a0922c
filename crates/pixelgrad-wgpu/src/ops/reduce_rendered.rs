//! Reductions as passes of the programs rendered from their one definition
//! (`pixelgrad_core::kernel::reductions`), the launch [`crate::ReduceKernel::Rendered`]
//! names: one invocation per output element and group, each folding up to a group of
//! elements along the axis in ascending order (a last-axis group four elements per step);
//! an axis longer than [`MAX_GROUP`] takes a tree of passes, the group balanced over the
//! fewest passes (as WebGL2 draws them), each pass's partials in a pooled scratch buffer.
//! Argmax over several groups is a max tree, the first-equal pass and a min tree.
//! A pending elementwise input ([`Source::Fused`]) is read by the passes over the input (the
//! first of each tree, and argmax's first-equal pass) through a fused read rendered into the
//! program (`wgsl::fused_program_source`), so its values are never stored; later passes read
//! the partials.
//!
//! Launched where [`chosen`] says (`ReduceKernel::Auto`): on SwiftShader (Chromium's WebGPU
//! on the CPU) every kind from 2^16 input elements up, 0.25-0.69x the hand-written kernel's time on the large cases; on
//! lavapipe sums, log-sum-exp and one-group argmax, which measured 0.5-0.9x there, while max
//! and min (1.3x on a last axis: the tie count and selects per lane) and a longer argmax
//! (2.1x over 2^20 elements: four passes, the input read twice, against one workgroup) stay
//! hand-written (`bench/notes/2026-12-07-webgpu-reductions-rendered.md`). Over a fused
//! input: every kind on SwiftShader (0.48-0.65x), only log-sum-exp on lavapipe (0.68x; a sum
//! of exp(x) measured 0.96-1.28x there).

use std::borrow::Cow;
use std::rc::Rc;

use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::reductions::{reduce_params, tree_group, ReduceProgram, MAX_GROUP};
use pixelgrad_core::kernel::{self, Launch};
use pixelgrad_core::{Error, ReduceOp, Result, Shape};

use super::elementwise::fill_fused;
use super::programs::program_kernel;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::wgsl::{fused_program_source, MapLayout};
use crate::BACKEND;

/// What a rendered reduction reads: a stored tensor, or a pending elementwise computation.
pub(crate) enum Source<'a> {
    Stored(&'a GpuTensor),
    /// `launch` over `ins` (of `shapes`) broadcast to `of`, walked in flat order (`of` has
    /// as many elements as the reduction's input).
    Fused {
        launch: &'a Launch,
        ins: Vec<&'a GpuTensor>,
        shapes: Vec<&'a Shape>,
        of: &'a Shape,
        label: &'a str,
    },
}

/// The pass of `which` with input 0 a fused read of `k`, rendered on first use.
fn fused_kernel(gpu: &Gpu, which: ReduceProgram, k: &kernel::Kernel, label: &str) -> Result<Rc<Kernel>> {
    let key = (which, k.clone());
    if let Some(found) = gpu.rendered_reduce_kernels.borrow().get(&key) {
        return Ok(found.clone());
    }
    let p = which.program();
    let source = fused_program_source(&p, k).map_err(|e| Error::backend("reduce", BACKEND, e.to_string()))?;
    let id = gpu.rendered_reduce_kernels.borrow().len();
    let made = Rc::new(Kernel {
        name: Cow::Owned(format!("{}_fused{id}_{label}", which.name())),
        source: Cow::Owned(source),
        inputs: k.inputs().len() + p.inputs.len() - 1,
        outputs: 1,
        overrides: &["FAST", "SCALARS"],
        status: p.faults(),
    });
    gpu.rendered_reduce_kernels.borrow_mut().insert(key, made.clone());
    Ok(made)
}

/// The fewest input elements a reduction on SwiftShader runs rendered for under `Auto`. The
/// rendered passes measured 0.25-0.69x the hand-written time from 2^16 elements up, but small
/// ones (a training step's bias gradients and losses, a few hundred to a few thousand
/// elements) made the browser bench's small-batch training 1.5-2x slower on SwiftShader
/// (`bench/notes/2026-12-07-threaded-build-on-gpu.md`).
const SWIFTSHADER_MIN_RENDERED: usize = 1 << 16;

/// Whether `op` over `[outer, n, inner]` (`fused`: of a pending elementwise input, else
/// stored) runs rendered: as [`crate::ReduceKernel`] says, where [`fits`] holds.
pub(crate) fn chosen(gpu: &Gpu, op: ReduceOp, outer: usize, n: usize, inner: usize, fused: bool) -> bool {
    let rendered = match gpu.reductions.get() {
        crate::ReduceKernel::HandWritten => false,
        crate::ReduceKernel::Rendered => true,
        // On SwiftShader (a browser's CPU adapter, or by name) every kind from 2^16 elements
        // up measured 0.25-0.69x
        // the hand-written time (0.48-0.65x over a fused input); on lavapipe sums, log-sum-exp
        // and one-group argmax did, but over a fused input only log-sum-exp (0.68x; a sum of
        // exp(x) took 0.96-1.28x, argmax was not measured).
        crate::ReduceKernel::Auto => {
            gpu.info.device_type == wgpu::DeviceType::Cpu
                && if swiftshader(&gpu.info) {
                    outer.saturating_mul(n).saturating_mul(inner) >= SWIFTSHADER_MIN_RENDERED
                } else {
                    match op {
                        ReduceOp::LogSumExp => true,
                        ReduceOp::Sum => !fused,
                        ReduceOp::ArgMax => n <= MAX_GROUP && !fused,
                        ReduceOp::Max | ReduceOp::Min => false,
                    }
                }
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

/// One pass of `which` with `group` over `x` viewed as `[outer, n, inner]` (and the
/// program's other inputs `rest`) into `out` (`[outer, ceil(n / group), inner]`).
#[allow(clippy::too_many_arguments)]
fn pass(
    gpu: &Gpu,
    which: ReduceProgram,
    x: &Source<'_>,
    rest: &[&GpuTensor],
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
    let rest = rest.iter().map(|t| t.buffer());
    match x {
        Source::Stored(t) => {
            let bufs: Vec<&wgpu::Buffer> = std::iter::once(t.buffer()).chain(rest).collect();
            gpu.launch("reduce", program_kernel(KernelProgram::Reduce(which)), &[], &bufs, out.buffer(), &p, grid)
        }
        Source::Fused { launch, ins, shapes, of, label } => {
            let k = fused_kernel(gpu, which, &launch.kernel, label)?;
            let lay = MapLayout::after(p.len(), launch.params.len());
            let (fast, scalars) = fill_fused("reduce", launch, shapes, of, &lay, &mut p)?;
            let bufs: Vec<&wgpu::Buffer> = ins.iter().map(|t| t.buffer()).chain(rest).collect();
            gpu.launch("reduce", &k, &[u32::from(fast), scalars], &bufs, out.buffer(), &p, grid)
        }
    }
}

/// Passes of `which` over `x` (`[outer, n, inner]`) until one element per output is left, the
/// last written into `out`.
fn tree(gpu: &Rc<Gpu>, which: ReduceProgram, x: &Source<'_>, outer: usize, mut n: usize, inner: usize, out: &GpuTensor) -> Result<()> {
    let mut cur: Option<GpuTensor> = None;
    loop {
        let group = tree_group(n);
        let m = n.div_ceil(group);
        let partials = cur.as_ref().map(Source::Stored);
        let src = partials.as_ref().unwrap_or(x);
        if m == 1 {
            return pass(gpu, which, src, &[], outer, n, inner, group, out);
        }
        let next = GpuTensor::new(gpu, "reduce", outer * m * inner)?;
        pass(gpu, which, src, &[], outer, n, inner, group, &next)?;
        cur = Some(next);
        n = m;
    }
}

/// `op` over the middle axis of `x` viewed as `[outer, n, inner]` into `out` (`[outer,
/// inner]`); [`fits`] must hold.
pub(crate) fn reduce(gpu: &Rc<Gpu>, op: ReduceOp, x: &Source<'_>, outer: usize, n: usize, inner: usize, out: &GpuTensor) -> Result<()> {
    if op != ReduceOp::ArgMax {
        return tree(gpu, ReduceProgram::of(op), x, outer, n, inner, out);
    }
    let group = tree_group(n);
    if n <= group {
        return pass(gpu, ReduceProgram::ArgMax, x, &[], outer, n, inner, group, out);
    }
    // The maxima, then per group the first index holding its maximum (none: a huge value),
    // then the smallest of those candidates.
    let best = GpuTensor::new(gpu, "reduce", outer * inner)?;
    tree(gpu, ReduceProgram::Max, x, outer, n, inner, &best)?;
    let m = n.div_ceil(group);
    let cand = GpuTensor::new(gpu, "reduce", outer * m * inner)?;
    pass(gpu, ReduceProgram::FirstEqual, x, &[&best], outer, n, inner, group, &cand)?;
    tree(gpu, ReduceProgram::Min, &Source::Stored(&cand), outer, m, inner, out)
}
