//! Elementwise fusion on WebGPU. An elementwise op (unary, binary, `where`, `expand`, `fill`) is not
//! launched when called: it returns a [`Lazy`] storage holding the composed kernel
//! (`pixelgrad_core::kernel::fuse`), and the next elementwise op that reads it composes with
//! it (also through a reshape, when every input of the chain has its shape). The chain runs as one launch when a value is needed: a non-elementwise op reads it
//! (`WgpuBackend::tensor`), it is read back, or the step ends or the queue is flushed
//! ([`settle`], which computes every result still held, in the order they were made).
//!
//! A composition that would not fit one launch — more inputs than the bind group layouts
//! have, a parameter slot overflowing, a very long chain — computes its largest pending input
//! first and reads it as a plain input instead.
//!
//! Chains never cross a *generation*: every read, flush and step boundary starts a new one, and
//! a pending result made in an earlier generation is read as a plain input (computed once)
//! rather than inlined. Without that, eager loops would compose optimizer state and running
//! sums into longer kernels every iteration, and compile a new one each time.

use pixelgrad_core::kernel::defs::{fill_launch, identity_launch, where_launch};
use pixelgrad_core::kernel::fuse::{self, Lazy, Pending};
use pixelgrad_core::kernel::Launch;
use pixelgrad_core::{Op, Result, Shape, Storage};

use crate::backend::WgpuBackend;
use crate::context::GpuTensor;
use crate::ops::elementwise::map;
use crate::ops::reduce::ReduceInput;
use crate::pipelines::MAX_INPUTS;
use crate::wgsl::MapLayout;

/// Longest kernel (in IR nodes, before lowering) a chain may grow to before it is computed.
const MAX_NODES: usize = 96;
/// Results made since the last settle beyond which finished entries are pruned.
const PRUNE_AT: usize = 256;

/// The kernel of an elementwise op and its name, or `None` for any other op.
pub(crate) fn elementwise(op: &Op) -> Result<Option<(Launch, &'static str)>> {
    Ok(match op {
        Op::Unary(u) => Some((u.launch()?, u.name())),
        Op::Binary(b) => Some((b.launch()?, b.name())),
        Op::Where => Some((where_launch()?, "where")),
        // Broadcasting is how every fused kernel reads its inputs: expand is the identity.
        Op::Expand(_) => Some((identity_launch()?, "expand")),
        // A constant: inlined into whatever reads it.
        Op::Fill { value, .. } => Some((fill_launch(*value)?, "fill")),
        _ => None,
    })
}

/// True if `p` runs as one launch: its inputs fit the bind group layouts and its
/// parameters, shape and strides fit the 256-byte parameter slot (counted over the
/// unmerged rank, an upper bound of the merged one).
fn fits(p: &Pending<Storage>) -> bool {
    let words = MapLayout::map(p.launch.params.len()).words(p.inputs(), p.shape.rank());
    p.inputs() <= MAX_INPUTS && words <= crate::context::PARAM_WORDS && p.nodes() <= MAX_NODES
}

/// Elements a storage holds (a pending result: its shape's).
fn len_of(b: &WgpuBackend, op: &'static str, s: &Storage) -> Result<usize> {
    match s.downcast::<Lazy>() {
        Some(l) => Ok(l.shape().numel()),
        None => Ok(b.tensor(op, s)?.len),
    }
}

/// `launch` over `inputs`, returned pending (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn defer(
    b: &WgpuBackend,
    op: &Op,
    launch: &Launch,
    name: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Storage> {
    let lens = inputs.iter().map(|s| len_of(b, op.name(), s)).collect::<Result<Vec<_>>>()?;
    pixelgrad_core::check_execute(op, &lens, shapes, out, &pixelgrad_core::Backend::name(b))?;
    // Device limits are reported now, not when the result is finally computed.
    b.gpu.check_size(op.name(), out.numel() as u64 * 4)?;
    let p = fuse::defer(launch, name, inputs, shapes, out, b.gpu.generation.get(), fits)?;
    let st = Storage::new(Lazy::new(p, b.gpu.generation.get()));
    remember(b, &st);
    Ok(st)
}

fn remember(b: &WgpuBackend, st: &Storage) {
    let mut list = b.gpu.lazies.borrow_mut();
    if list.len() >= PRUNE_AT {
        list.retain(|w| w.upgrade().is_some_and(|s| s.downcast::<Lazy>().is_some_and(|l| !l.is_done())));
    }
    list.push(st.downgrade());
}

/// Words a reduction with a fused input needs in the parameter slot.
fn reduce_fits(p: &Pending<Storage>) -> bool {
    let words = MapLayout::after(crate::ops::reduce::OWN_WORDS, p.launch.params.len()).words(p.inputs(), p.shape.rank());
    p.inputs() <= MAX_INPUTS && words <= crate::context::PARAM_WORDS
}

/// A reduction of a pending elementwise result reads the computation itself (a fused
/// prologue) instead of computing it first: `Some` result then, `None` when the op is not a
/// reduction of an inlinable pending result (it runs as usual).
pub(crate) fn reduce(b: &WgpuBackend, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    let Op::Reduce { op: r, axis } = op else { return Ok(None) };
    let (Some(&input), Some(&shape)) = (inputs.first(), shapes.first()) else { return Ok(None) };
    // The reduction walks its input in flat order, so the pending computation is read with
    // its own shape, whatever shape the reduction sees (a reshape keeps the flat order).
    let Some(p) = fuse::current(input, b.gpu.generation.get()) else { return Ok(None) };
    if !reduce_fits(&p) || p.shape.numel() != shape.numel() {
        return Ok(None);
    }
    pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &pixelgrad_core::Backend::name(b))?;
    let ins = p.leaves.iter().map(|(s, _)| b.tensor("reduce", s)).collect::<Result<Vec<&GpuTensor>>>()?;
    let leaf_shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let res = GpuTensor::new(&b.gpu, "reduce", out.numel())?;
    let input = ReduceInput::Fused { launch: &p.launch, ins, shapes: leaf_shapes, of: &p.shape, label: p.label() };
    crate::ops::reduce::reduce(&b.gpu, *r, *axis, input, shape, &res)?;
    Ok(Some(Storage::new(res)))
}

/// Launches one pending computation into a fresh buffer.
pub(crate) fn run(b: &WgpuBackend, p: &Pending<Storage>) -> Result<Storage> {
    let ins = p.leaves.iter().map(|(s, _)| b.tensor("fused", s)).collect::<Result<Vec<&GpuTensor>>>()?;
    let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let res = GpuTensor::new(&b.gpu, "fused", p.shape.numel())?;
    if p.shape.numel() > 0 {
        map(&b.gpu, "fused", &p.launch, &ins, &shapes, &p.shape, &res, || p.label())?;
    }
    Ok(Storage::new(res))
}

/// Starts a new generation (see the module docs).
pub(crate) fn new_generation(generation: &std::cell::Cell<u64>) {
    generation.set(generation.get().wrapping_add(1));
}

/// Computes every pending result some tensor still holds, oldest first.
pub(crate) fn settle(b: &WgpuBackend) -> Result<()> {
    new_generation(&b.gpu.generation);
    let list = std::mem::take(&mut *b.gpu.lazies.borrow_mut());
    for w in list {
        if let Some(s) = w.upgrade() {
            if s.downcast::<Lazy>().is_some_and(|l| !l.is_done()) {
                b.tensor("settle", &s)?;
            }
        }
    }
    Ok(())
}
