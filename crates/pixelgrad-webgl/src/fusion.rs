//! Elementwise fusion on WebGL, as on WebGPU: an elementwise op (unary, binary, `where`,
//! `expand`, `fill`) returns a pending [`Lazy`] result holding the composed kernel
//! (`pixelgrad_core::kernel::fuse`); the next elementwise op composes with it, and the chain is
//! drawn as one pass when a value is needed — a non-elementwise op or a read
//! ([`tensor_of`]), the end of a step or a flush (`group::settle`). At a settle,
//! results whose textures have one size are drawn together on WebGL2 (`group.rs`).
//!
//! Matmuls and reductions of values are deferred too where the context has multiple render
//! targets ([`LazyMatmul`], [`LazyReduce`]): the first pending result of one that reads it is
//! drawn in its own (last) pass as an epilogue, and a sum over the batch of a batched product
//! is one matmul summing its batch.
//!
//! A composition that would not fit one program (more samplers or scalar uniforms than the
//! program declares, a very long chain) draws its largest pending input first instead.
//!
//! Chains never cross a *generation*: every read, flush and step boundary starts a new one, and
//! a pending result made in an earlier generation is read as a plain input (computed once)
//! rather than inlined. Without that, eager loops would compose optimizer state and running
//! sums into longer kernels every iteration, and compile a new one each time.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use pixelgrad_core::kernel::fuse::{self, Lazy, Pending};
use pixelgrad_core::kernel::Launch;
use pixelgrad_core::{Op, ReduceOp, Result, Shape, Storage};

use crate::context::Shared;
use crate::dialect::{MAP_MAX_INPUTS, MAP_MAX_PARAMS};
use crate::ops::elementwise::FusedRead;
use crate::texture::{texture_of, GlTensor};

/// Longest kernel (in IR nodes, before lowering) a chain may grow to before it is drawn.
const MAX_NODES: usize = 96;
/// Results made since the last settle beyond which finished entries are pruned.
const PRUNE_AT: usize = 256;

pub(crate) use fuse::elementwise;

/// The fusion layer's state: owned by the backend next to (not inside) the device state, and
/// handed to the calls that make or settle pending results.
pub(crate) struct Fusion {
    /// Fuse elementwise chains ([`crate::WebGlOptions::fuse`]).
    pub fuse: bool,
    /// Matmuls are deferred and take a pending result of their product as an epilogue drawn
    /// to a second render target ([`LazyMatmul`]): fusion on, WebGL2 with multiple render
    /// targets.
    pub epilogues: bool,
    /// The most outputs one grouped draw may have (`group.rs`; below 2: never grouped).
    pub group_targets: usize,
    /// The pending results made since the last settle, oldest first.
    pub lazies: RefCell<Vec<pixelgrad_core::WeakStorage>>,
    /// The fusion generation (see the module docs): bumped at reads, flushes and step
    /// boundaries.
    pub generation: Cell<u64>,
}

fn fits(p: &Pending<Storage>) -> bool {
    p.inputs() <= MAP_MAX_INPUTS && p.launch.params.len() <= MAP_MAX_PARAMS && p.nodes() <= MAX_NODES
}

/// `launch` over `inputs`, returned pending (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn defer(
    sh: &Rc<Shared>,
    fu: &Fusion,
    op: &Op,
    launch: &Launch,
    name: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Storage> {
    let lens = inputs.iter().map(|s| len_of(sh, op.name(), s)).collect::<Result<Vec<_>>>()?;
    pixelgrad_core::check_execute(op, &lens, shapes, out, &sh.name)?;
    // Device limits are reported now, not when the result is finally drawn.
    sh.layout(out.numel(), op.name())?;
    let p = fuse::defer(launch, name, inputs, shapes, out, fu.generation.get(), fits)?;
    let st = Storage::new(Lazy::new(p, fu.generation.get()));
    remember(fu, &st);
    Ok(st)
}

/// Elements of `s`, without drawing it when it is pending.
fn len_of(sh: &Rc<Shared>, op: &'static str, s: &Storage) -> Result<usize> {
    if let Some(l) = s.downcast::<Lazy>() {
        return Ok(l.shape().numel());
    }
    if let Some(m) = s.downcast::<LazyMatmul>() {
        return Ok(m.out.numel());
    }
    if let Some(r) = s.downcast::<LazyReduce>() {
        return Ok(r.out.numel());
    }
    tensor_of(s, sh, op).map(|t| t.len)
}

fn remember(fu: &Fusion, st: &Storage) {
    let mut list = fu.lazies.borrow_mut();
    if list.len() >= PRUNE_AT {
        list.retain(|w| w.upgrade().is_some_and(|s| undone(&s)));
    }
    list.push(st.downgrade());
}

/// True while `s` holds a computation not drawn yet (a pending elementwise result or matmul).
pub(crate) fn undone(s: &Storage) -> bool {
    s.downcast::<Lazy>().is_some_and(|l| !l.is_done()) || deferred(s)
}

/// True while `s` is a matmul or reduction not drawn yet: these are drawn after the pending
/// elementwise results at a settle (one of those may take it as its epilogue).
pub(crate) fn deferred(s: &Storage) -> bool {
    s.downcast::<LazyMatmul>().is_some_and(|m| !m.is_done()) || s.downcast::<LazyReduce>().is_some_and(|r| !r.is_done())
}

/// Most inputs of an epilogue besides the product: with the product pass's own samplers (4
/// for the block path's assembling pass) a draw binds at most 8 textures.
const MAX_EPILOGUE_OTHERS: usize = 4;

/// A matmul not drawn yet (fusion on, WebGL2 with multiple render targets): it is drawn when
/// its value is needed ([`LazyMatmul::force`]), or — when the first thing computed from it is
/// a pending elementwise result of its size that reads it once (a bias add and activation, an
/// optimizer's update of a weight from its gradient) — in the same draw as that result, which
/// the matmul pass writes to a second render target as it stores the product (an epilogue,
/// `dialect::MATMUL_EPI`). The product is stored either way (the backward pass may read it).
pub(crate) struct LazyMatmul {
    trans_a: bool,
    trans_b: bool,
    inputs: [Storage; 2],
    shapes: [Shape; 2],
    out: Shape,
    /// A batched product summed over its batch (`out` has no batch axis).
    sum_batch: bool,
    done: std::cell::OnceCell<Storage>,
}

impl LazyMatmul {
    pub(crate) fn is_done(&self) -> bool {
        self.done.get().is_some()
    }

    /// The product, drawing the matmul the first time.
    pub(crate) fn force(&self, sh: &Rc<Shared>) -> Result<&Storage> {
        if let Some(s) = self.done.get() {
            return Ok(s);
        }
        let a = tensor_of(&self.inputs[0], sh, "matmul")?;
        let b = tensor_of(&self.inputs[1], sh, "matmul")?;
        let (m, s) = (&self.shapes, self.sum_batch);
        let (t, _) = crate::ops::matmul::matmul_epilogue(sh, a, b, &m[0], &m[1], self.trans_a, self.trans_b, s, &self.out, None)?;
        Ok(self.done.get_or_init(|| Storage::new(t)))
    }
}

/// A matmul returned pending when the context can draw epilogues (see [`LazyMatmul`]):
/// `None` draws it as usual.
pub(crate) fn defer_matmul(
    sh: &Rc<Shared>,
    fu: &Fusion,
    op: &Op,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Option<Storage>> {
    let Op::MatMul { trans_a, trans_b } = *op else { return Ok(None) };
    if !fu.epilogues || inputs.len() != 2 || shapes.len() != 2 || out.numel() == 0 {
        return Ok(None);
    }
    let lens = inputs.iter().map(|s| len_of(sh, op.name(), s)).collect::<Result<Vec<_>>>()?;
    pixelgrad_core::check_execute(op, &lens, shapes, out, &sh.name)?;
    sh.layout(out.numel(), op.name())?;
    let st = Storage::new(LazyMatmul {
        trans_a,
        trans_b,
        inputs: [inputs[0].clone(), inputs[1].clone()],
        shapes: [shapes[0].clone(), shapes[1].clone()],
        out: out.clone(),
        sum_batch: false,
        done: std::cell::OnceCell::new(),
    });
    remember(fu, &st);
    Ok(Some(st))
}

/// A sum over the batch of a pending batched matmul (a convolution's weight gradient),
/// returned as a pending matmul that sums its batch as it multiplies (`None`: not such a sum).
fn summed_matmul(sh: &Rc<Shared>, fu: &Fusion, op: &Op, input: &Storage, shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    let (Op::Reduce { op: ReduceOp::Sum, axis: 0 }, Some(mm), Some(&shape)) = (op, input.downcast::<LazyMatmul>(), shapes.first()) else {
        return Ok(None);
    };
    // Read as any shape whose first axis is the batch: a reshape keeps the flat order.
    let batch = mm.out.dims()[0];
    let batched = mm.out.rank() == 3 && batch > 1 && shape.dims().first() == Some(&batch) && shape.numel() == mm.out.numel();
    if mm.is_done() || mm.sum_batch || !batched {
        return Ok(None);
    }
    pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &sh.name)?;
    sh.layout(out.numel(), op.name())?;
    let st = Storage::new(LazyMatmul {
        trans_a: mm.trans_a,
        trans_b: mm.trans_b,
        inputs: mm.inputs.clone(),
        shapes: mm.shapes.clone(),
        out: out.clone(),
        sum_batch: true,
        done: std::cell::OnceCell::new(),
    });
    remember(fu, &st);
    Ok(Some(st))
}

/// The leaf of `p` that is a pending matmul or reduction of `p`'s size that can take an
/// epilogue, read once, when `p` is small enough to be one: what [`run_as_epilogue`] folds
/// `p` into.
pub(crate) fn epilogue_of(p: &Pending<Storage>) -> Option<usize> {
    if p.inputs() > MAX_EPILOGUE_OTHERS + 1 || p.launch.params.len() > crate::dialect::MAP_MAX_PARAMS {
        return None;
    }
    let n = p.shape.numel();
    let given = p.leaves.iter().position(|(s, sh)| {
        sh.numel() == n
            && (s.downcast::<LazyMatmul>().is_some_and(|m| !m.is_done() && m.out.numel() == n)
                || s.downcast::<LazyReduce>().is_some_and(|r| !r.is_done() && r.out.numel() == n && r.takes_epilogue()))
    })?;
    (p.leaves.iter().filter(|(s, _)| s.ptr_eq(&p.leaves[given].0)).count() == 1).then_some(given)
}

/// Draws `p` as the epilogue of the pending matmul or reduction it reads (see
/// [`epilogue_of`]), if that result's shape can be read the way `p` reads it: `Some(result)`
/// then, the matmul's or reduction's own result stored too.
fn run_as_epilogue(sh: &Rc<Shared>, p: &Pending<Storage>) -> Result<Option<Storage>> {
    let Some(given) = epilogue_of(p) else { return Ok(None) };
    let leaf = &p.leaves[given].0;
    let out = match (leaf.downcast::<LazyMatmul>(), leaf.downcast::<LazyReduce>()) {
        (Some(mm), _) => &mm.out,
        (_, Some(r)) => &r.out,
        _ => return Ok(None),
    };
    // A computation on a reshape of the result (a convolution's [N, O, OH, OW] view of its
    // [N, O, OH*OW] product) is read in the result's shape when its other leaves follow the
    // reshape; the values are the same elements in the same flat order.
    let viewed;
    let p = if &p.shape == out {
        p
    } else {
        match p.viewed_as(out) {
            Some(v) => {
                viewed = v;
                &viewed
            }
            None => return Ok(None),
        }
    };
    if &p.leaves[given].1 != out {
        return Ok(None);
    }
    let mut ins = Vec::with_capacity(p.leaves.len());
    let mut shapes = Vec::with_capacity(p.leaves.len());
    for (j, (s, shape)) in p.leaves.iter().enumerate() {
        if j != given {
            ins.push(tensor_of(s, sh, "fused")?);
            shapes.push(shape);
        }
    }
    let read = FusedRead::new(sh, "fused", &p.launch, &ins, &shapes, &p.shape, || format!("fused {}", p.label()))?;
    let epi = crate::ops::matmul::Epilogue { read, given };
    if let Some(mm) = leaf.downcast::<LazyMatmul>() {
        let a = tensor_of(&mm.inputs[0], sh, "matmul")?;
        let b = tensor_of(&mm.inputs[1], sh, "matmul")?;
        let (m, s) = (&mm.shapes, mm.sum_batch);
        let (product, result) =
            crate::ops::matmul::matmul_epilogue(sh, a, b, &m[0], &m[1], mm.trans_a, mm.trans_b, s, &mm.out, Some(&epi))?;
        let _ = mm.done.set(Storage::new(product));
        return Ok(result.map(Storage::new));
    }
    match leaf.downcast::<LazyReduce>() {
        Some(r) => r.draw(sh, Some(&epi)),
        None => Ok(None),
    }
}

/// What a pending reduction reads: a pending elementwise computation read in its first pass
/// (a fused prologue; the computation itself is never stored for it), or a tensor.
enum ReduceSource {
    Prologue(Pending<Storage>),
    Plain(Storage),
}

/// A reduction not drawn yet (fusion on, WebGL2 with multiple render targets): drawn when its
/// value is needed, or — when the first thing computed from it is a pending elementwise
/// result of its size (a bias's update from its summed gradient) — with that result as the
/// epilogue of its last pass (`dialect::REDUCE_EPI`), which stores both.
pub(crate) struct LazyReduce {
    op: ReduceOp,
    source: ReduceSource,
    /// The shape reduced and the axis.
    shape: Shape,
    axis: usize,
    out: Shape,
    done: std::cell::OnceCell<Storage>,
}

impl LazyReduce {
    pub(crate) fn is_done(&self) -> bool {
        self.done.get().is_some()
    }

    /// Whether its last pass can apply an epilogue: a tree reduction of a value (reductions
    /// with a prologue are drawn when asked for, see [`reduce`]; a one-pass one could not
    /// take both, they would declare the same uniforms).
    fn takes_epilogue(&self) -> bool {
        crate::ops::reduce::takes_epilogue(self.op) && matches!(self.source, ReduceSource::Plain(_))
    }

    /// Draws the reduction (with `epi` in its last pass where it can): the epilogue's result.
    fn draw(&self, sh: &Rc<Shared>, epi: Option<&crate::ops::matmul::Epilogue<'_>>) -> Result<Option<Storage>> {
        use crate::ops::reduce::{reduce_epilogue, Input};
        let (t, applied) = match &self.source {
            ReduceSource::Prologue(p) => {
                let ins = p.leaves.iter().map(|(s, _)| tensor_of(s, sh, "reduce")).collect::<Result<Vec<&GlTensor>>>()?;
                let leaf_shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
                let read = FusedRead::new(sh, "reduce", &p.launch, &ins, &leaf_shapes, &p.shape, || format!("fused {}", p.label()))?;
                reduce_epilogue(sh, self.op, Input::Fused(&read), &self.shape, self.axis, epi)?
            }
            ReduceSource::Plain(s) => {
                let x = tensor_of(s, sh, "reduce")?;
                reduce_epilogue(sh, self.op, Input::Texture(x), &self.shape, self.axis, epi)?
            }
        };
        let _ = self.done.set(Storage::new(t));
        Ok(applied.map(Storage::new))
    }

    /// The result, drawing the reduction the first time.
    pub(crate) fn force(&self, sh: &Rc<Shared>) -> Result<&Storage> {
        if self.done.get().is_none() {
            self.draw(sh, None)?;
        }
        self.done.get().ok_or_else(|| sh.err("reduce", "internal: a reduction was not drawn"))
    }
}

/// A reduction of a pending elementwise result reads the computation itself in its first
/// pass (a fused prologue) instead of drawing it first: `Some` result then, `None` when the
/// op is not a reduction of a pending result of this generation (it runs as usual). Where
/// the context draws epilogues, tree reductions are returned pending ([`LazyReduce`]), with
/// their prologue if they have one; a sum over the batch of a pending batched matmul is one
/// pending matmul.
pub(crate) fn reduce(
    sh: &Rc<Shared>,
    fu: &Fusion,
    op: &Op,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Option<Storage>> {
    let Op::Reduce { op: r, axis } = op else { return Ok(None) };
    let (Some(&input), Some(&shape)) = (inputs.first(), shapes.first()) else { return Ok(None) };
    if let Some(st) = summed_matmul(sh, fu, op, input, shapes, out)? {
        return Ok(Some(st));
    }
    // The reduction walks its input in flat order, so the computation is read with its own
    // shape, whatever shape the reduction sees (a reshape keeps the flat order).
    // A computation that can be a pending matmul's epilogue is drawn as one (the reduction
    // reads its result): the same number of draws, and whatever else reads it later reads
    // that result instead of a draw of its own.
    let prologue = fuse::current(input, fu.generation.get())
        .filter(|p| fits(p) && p.shape.numel() == shape.numel() && epilogue_of(p).is_none())
        .map(|p| p.clone());
    // A reduction with a prologue is drawn now, as before epilogues existed; one reading a
    // pending elementwise result it cannot inline has that result drawn now (as a matmul's
    // epilogue, typically), and is itself deferred. This keeps the order in which products
    // meet their epilogues.
    let deferred = fu.epilogues && crate::ops::reduce::takes_epilogue(*r) && prologue.is_none();
    if deferred && input.downcast::<Lazy>().is_some_and(|l| !l.is_done()) {
        tensor_of(input, sh, op.name())?;
    }
    if prologue.is_none() && !deferred {
        return Ok(None);
    }
    let len = len_of(sh, op.name(), input)?;
    pixelgrad_core::check_execute(op, &[len], shapes, out, &sh.name)?;
    sh.layout(out.numel(), op.name())?;
    let source = match prologue {
        Some(p) => ReduceSource::Prologue(p),
        None => ReduceSource::Plain(input.clone()),
    };
    let lazy = LazyReduce { op: *r, source, shape: shape.clone(), axis: *axis, out: out.clone(), done: std::cell::OnceCell::new() };
    if !deferred {
        lazy.draw(sh, None)?;
        return Ok(lazy.done.into_inner());
    }
    let st = Storage::new(lazy);
    remember(fu, &st);
    Ok(Some(st))
}

/// Downcasts a storage to this backend's texture, drawing it first if it is a pending result
/// (a fused chain, [`LazyMatmul`] or [`LazyReduce`]). Everything below fusion takes textures
/// settled here.
pub(crate) fn tensor_of<'a>(s: &'a Storage, sh: &Rc<Shared>, op: &'static str) -> Result<&'a GlTensor> {
    let s = match s.downcast::<Lazy>() {
        Some(lazy) => lazy.force(|p| run(sh, p))?,
        None => s,
    };
    let s = match s.downcast::<LazyMatmul>() {
        Some(m) => m.force(sh)?,
        None => s,
    };
    let s = match s.downcast::<LazyReduce>() {
        Some(r) => r.force(sh)?,
        None => s,
    };
    texture_of(s, sh, op)
}

/// Runs `op` now: realises its pending inputs ([`tensor_of`]) and hands their textures to the
/// op's passes.
pub(crate) fn execute_now(sh: &Rc<Shared>, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
    sh.current()?;
    let ts: Vec<&GlTensor> = inputs.iter().map(|s| tensor_of(s, sh, op.name())).collect::<Result<_>>()?;
    let result = crate::ops::execute(sh, op, inputs, &ts, shapes, out)?;
    // An op that queued a run-time check (gather, scatter_add) may have made the queue long.
    crate::submit::fold_if_long(sh)?;
    Ok(result)
}

/// Draws one pending computation into a fresh texture (as a matmul's epilogue when it can).
pub(crate) fn run(sh: &Rc<Shared>, p: &Pending<Storage>) -> Result<Storage> {
    if p.shape.numel() > 0 {
        if let Some(s) = run_as_epilogue(sh, p)? {
            return Ok(s);
        }
    }
    let ins = p.leaves.iter().map(|(s, _)| tensor_of(s, sh, "fused")).collect::<Result<Vec<&GlTensor>>>()?;
    let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let t = crate::ops::elementwise::map_labelled(sh, "fused", &p.launch, &ins, &shapes, &p.shape, || format!("fused {}", p.label()))?;
    Ok(Storage::new(t))
}

/// Starts a new generation (see the module docs).
pub(crate) fn new_generation(generation: &Cell<u64>) {
    generation.set(generation.get().wrapping_add(1));
}
