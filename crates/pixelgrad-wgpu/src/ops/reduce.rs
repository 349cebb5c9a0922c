//! Reductions along one axis (sum, max, min, argmax).

use std::borrow::Cow;

use std::rc::Rc;

use pixelgrad_core::kernel::{self, Launch};
use pixelgrad_core::{Error, ReduceOp, Result, Shape};

use super::elementwise::fill_fused;
use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::wgsl::{with_fused_input, MapLayout};
use crate::BACKEND;

pub(crate) const REDUCE: Kernel = Kernel {
    name: Cow::Borrowed("reduce"),
    source: Cow::Borrowed(include_str!("../kernels/reduce.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &["OP", "TREE"],
    status: false,
};

/// Axes at most this long are folded by one thread per output; longer ones by a workgroup
/// tree (parallel and more accurate for long sums).
const SERIAL_MAX_LEN: usize = 64;

/// The same limit on CPU adapters (SwiftShader, lavapipe). There a workgroup barrier is the
/// expensive part (SwiftShader runs a workgroup's invocations as fibers and switches between
/// them at each one; the tree has nine), so folding a few thousand elements in one thread
/// is much faster: a global average pool over 88 channels of 288 values took 36 ms as trees
/// and 3 ms serially in one measurement (BENCHMARKS.md). The serial fold combines chunks of
/// `CHUNK` (reduce.wgsl), which keeps a long sum's rounding error near a tree's.
const SERIAL_MAX_LEN_CPU_ADAPTER: usize = 4096;

/// The longest axis (times `reps`) folded serially on `gpu`'s adapter.
fn serial_max_len(gpu: &Gpu) -> usize {
    if gpu.info.device_type == wgpu::DeviceType::Cpu {
        SERIAL_MAX_LEN_CPU_ADAPTER
    } else {
        SERIAL_MAX_LEN
    }
}

/// The reduction's own parameter words: `[outputs, len, inner, reps, rep_stride]`.
pub(crate) const OWN_WORDS: usize = 5;

/// What a reduction reads: a buffer, or a pending elementwise computation over buffers read
/// straight into the reduction (a fused prologue: its values are never stored).
pub(crate) enum ReduceInput<'a> {
    Buffer(&'a GpuTensor),
    /// `launch` over `ins` (of `shapes`) broadcast to `of`, walked in flat order (`of` has
    /// as many elements as the reduction's input, not necessarily its shape).
    Fused {
        launch: &'a Launch,
        ins: Vec<&'a GpuTensor>,
        shapes: Vec<&'a Shape>,
        of: &'a Shape,
        label: String,
    },
}

/// The reduction kernel reading a fused input computed by `k`, rendered on first use.
fn fused_kernel(gpu: &Gpu, k: &kernel::Kernel, label: &str) -> Result<Rc<Kernel>> {
    if let Some(found) = gpu.reduce_kernels.borrow().get(k) {
        return Ok(found.clone());
    }
    let source = with_fused_input(&REDUCE.source, k, OWN_WORDS).map_err(|e| Error::backend("reduce", BACKEND, e.to_string()))?;
    let id = gpu.reduce_kernels.borrow().len();
    let made = Rc::new(Kernel {
        name: Cow::Owned(format!("reduce_fused{id}_{label}")),
        source: Cow::Owned(source),
        inputs: k.inputs().len(),
        outputs: 1,
        overrides: &["OP", "TREE", "FAST", "SCALARS"],
        status: false,
    });
    gpu.reduce_kernels.borrow_mut().insert(k.clone(), made.clone());
    Ok(made)
}

pub(crate) fn reduce(gpu: &Rc<Gpu>, op: ReduceOp, axis: usize, x: ReduceInput<'_>, shape: &Shape, out: &GpuTensor) -> Result<()> {
    let dims = shape.dims();
    let outer: usize = dims[..axis].iter().product();
    let len = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    // A fused input's buffers leave room for argmax's first-equal pass, which binds the
    // maxima after them; the hand-written kernel binds none.
    let (fused, bindable) = match &x {
        ReduceInput::Buffer(_) => (false, true),
        ReduceInput::Fused { ins, .. } => (true, ins.len() < gpu.max_inputs()),
    };
    if bindable && super::reduce_rendered::chosen(gpu, op, outer, len, inner, fused) {
        use super::reduce_rendered::Source;
        let src = match &x {
            ReduceInput::Buffer(t) => Source::Stored(t),
            ReduceInput::Fused { launch, ins, shapes, of, label } => {
                Source::Fused { launch, ins: ins.clone(), shapes: shapes.clone(), of, label }
            }
        };
        return super::reduce_rendered::reduce(gpu, op, &src, outer, len, inner, out);
    }
    launch(gpu, op, Layout { outputs: outer * inner, len, inner, reps: 1 }, x, out)
}

/// The sum of `x` viewed as `[reps, outputs, len]` over its first and last axes, in one launch
/// (a bias gradient: what two reductions would give, summed over `len` first).
pub(crate) fn sum_outer_and_inner(gpu: &Gpu, reps: usize, outputs: usize, len: usize, x: ReduceInput<'_>, out: &GpuTensor) -> Result<()> {
    launch(gpu, ReduceOp::Sum, Layout { outputs, len, inner: 1, reps }, x, out)
}

/// Where the elements of each output are: output `o` folds `len` elements `inner` apart from
/// `(o / inner) * len * inner + o % inner`, and `reps` copies of that `outputs * len` apart.
struct Layout {
    outputs: usize,
    len: usize,
    inner: usize,
    reps: usize,
}

fn launch(gpu: &Gpu, op: ReduceOp, at: Layout, x: ReduceInput<'_>, out: &GpuTensor) -> Result<()> {
    let Layout { outputs, len, inner, reps } = at;
    let code = match op {
        ReduceOp::Sum => 0,
        ReduceOp::Max => 1,
        ReduceOp::Min => 2,
        ReduceOp::ArgMax => 3,
        ReduceOp::LogSumExp => 4,
    };
    let rep_stride = if reps > 1 { outputs * len } else { 0 };
    let params = [u("reduce", outputs)?, u("reduce", len)?, u("reduce", inner)?, u("reduce", reps)?, u("reduce", rep_stride)?];
    let tree = len * reps > serial_max_len(gpu);
    let grid = if tree { gpu.grid_1d("reduce", outputs as u64)? } else { gpu.grid_elems("reduce", outputs)? };
    match x {
        ReduceInput::Buffer(t) => gpu.launch("reduce", &REDUCE, &[code, u32::from(tree)], &[t.buffer()], out.buffer(), &params, grid),
        ReduceInput::Fused { launch, ins, shapes, of, label } => {
            let k = fused_kernel(gpu, &launch.kernel, &label)?;
            let mut p = params.to_vec();
            let lay = MapLayout::after(OWN_WORDS, launch.params.len());
            let (fast, scalars) = fill_fused("reduce", launch, &shapes, of, &lay, &mut p)?;
            let bufs: Vec<&wgpu::Buffer> = ins.iter().map(|t| t.buffer()).collect();
            gpu.launch("reduce", &k, &[code, u32::from(tree), u32::from(fast), scalars], &bufs, out.buffer(), &p, grid)
        }
    }
}
