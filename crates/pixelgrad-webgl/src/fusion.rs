//! Elementwise fusion on WebGL, as on WebGPU: an elementwise op (unary, binary, `where`,
//! `expand`, `fill`) returns a pending [`Lazy`] result holding the composed kernel
//! (`pixelgrad_core::kernel::fuse`); the next elementwise op composes with it, and the chain is
//! drawn as one pass when a value is needed — a non-elementwise op or a read
//! ([`crate::texture::tensor_of`]), the end of a step or a flush ([`settle`]). At a settle,
//! results whose textures have one size are drawn together on WebGL2 (`group.rs`).
//!
//! A composition that would not fit one program (more samplers or scalar uniforms than the
//! program declares, a very long chain) draws its largest pending input first instead.
//!
//! Chains never cross a *generation*: every read, flush and step boundary starts a new one, and
//! a pending result made in an earlier generation is read as a plain input (computed once)
//! rather than inlined. Without that, eager loops would compose optimizer state and running
//! sums into longer kernels every iteration, and compile a new one each time.

use std::rc::Rc;

use pixelgrad_core::kernel::fuse::{self, Lazy, Pending};
use pixelgrad_core::kernel::Launch;
use pixelgrad_core::{Op, Result, Shape, Storage};

use crate::context::Shared;
use crate::dialect::{MAP_MAX_INPUTS, MAP_MAX_PARAMS};
use crate::ops::elementwise::FusedRead;
use crate::texture::{tensor_of, GlTensor};

/// Longest kernel (in IR nodes, before lowering) a chain may grow to before it is drawn.
const MAX_NODES: usize = 96;
/// Results made since the last settle beyond which finished entries are pruned.
const PRUNE_AT: usize = 256;

pub(crate) use fuse::elementwise;

fn fits(p: &Pending<Storage>) -> bool {
    p.inputs() <= MAP_MAX_INPUTS && p.launch.params.len() <= MAP_MAX_PARAMS && p.nodes() <= MAX_NODES
}

/// `launch` over `inputs`, returned pending (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn defer(
    sh: &Rc<Shared>,
    op: &Op,
    launch: &Launch,
    name: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Storage> {
    let lens = inputs
        .iter()
        .map(|s| match s.downcast::<Lazy>() {
            Some(l) => Ok(l.shape().numel()),
            None => tensor_of(s, sh, op.name()).map(|t| t.len),
        })
        .collect::<Result<Vec<_>>>()?;
    pixelgrad_core::check_execute(op, &lens, shapes, out, &sh.name)?;
    // Device limits are reported now, not when the result is finally drawn.
    crate::texture::layout(out.numel(), sh.max_tex, op.name(), &sh.name)?;
    let p = fuse::defer(launch, name, inputs, shapes, out, sh.generation.get(), fits)?;
    let st = Storage::new(Lazy::new(p, sh.generation.get()));
    remember(sh, &st);
    Ok(st)
}

fn remember(sh: &Shared, st: &Storage) {
    let mut list = sh.lazies.borrow_mut();
    if list.len() >= PRUNE_AT {
        list.retain(|w| w.upgrade().is_some_and(|s| s.downcast::<Lazy>().is_some_and(|l| !l.is_done())));
    }
    list.push(st.downgrade());
}

/// A reduction of a pending elementwise result reads the computation itself in its first
/// pass (a fused prologue) instead of drawing it first: `Some` result then, `None` when the
/// op is not a reduction of a pending result of this generation (it runs as usual).
pub(crate) fn reduce(sh: &Rc<Shared>, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    let Op::Reduce { op: r, axis } = op else { return Ok(None) };
    let (Some(&input), Some(&shape)) = (inputs.first(), shapes.first()) else { return Ok(None) };
    // The reduction walks its input in flat order, so the computation is read with its own
    // shape, whatever shape the reduction sees (a reshape keeps the flat order).
    let Some(p) = fuse::current(input, sh.generation.get()) else { return Ok(None) };
    if !fits(&p) || p.shape.numel() != shape.numel() {
        return Ok(None);
    }
    pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &sh.name)?;
    crate::texture::layout(out.numel(), sh.max_tex, op.name(), &sh.name)?;
    let ins = p.leaves.iter().map(|(s, _)| tensor_of(s, sh, "reduce")).collect::<Result<Vec<&GlTensor>>>()?;
    let leaf_shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let read = FusedRead::new(sh, "reduce", &p.launch, &ins, &leaf_shapes, &p.shape, || format!("fused {}", p.label()))?;
    let t = crate::ops::reduce::reduce(sh, *r, crate::ops::reduce::Input::Fused(&read), shape, *axis)?;
    Ok(Some(Storage::new(t)))
}

/// Draws one pending computation into a fresh texture.
pub(crate) fn run(sh: &Rc<Shared>, p: &Pending<Storage>) -> Result<Storage> {
    let ins = p.leaves.iter().map(|(s, _)| tensor_of(s, sh, "fused")).collect::<Result<Vec<&GlTensor>>>()?;
    let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let t = crate::ops::elementwise::map_labelled(sh, "fused", &p.launch, &ins, &shapes, &p.shape, || format!("fused {}", p.label()))?;
    Ok(Storage::new(t))
}

/// Starts a new generation (see the module docs).
pub(crate) fn new_generation(generation: &std::cell::Cell<u64>) {
    generation.set(generation.get().wrapping_add(1));
}

/// Draws every pending result some tensor still holds, oldest first; results of the same
/// size together where the context has multiple render targets (`group.rs`).
pub(crate) fn settle(sh: &Rc<Shared>) -> Result<()> {
    new_generation(&sh.generation);
    let list = std::mem::take(&mut *sh.lazies.borrow_mut());
    if sh.group_targets >= 2 {
        let live: Vec<Storage> = list.iter().filter_map(|w| w.upgrade()).collect();
        return crate::group::settle(sh, &live);
    }
    for w in list {
        if let Some(s) = w.upgrade() {
            if s.downcast::<Lazy>().is_some_and(|l| !l.is_done()) {
                tensor_of(&s, sh, "settle")?;
            }
        }
    }
    Ok(())
}
