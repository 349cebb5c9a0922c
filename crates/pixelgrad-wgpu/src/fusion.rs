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

use std::borrow::Cow;
use std::rc::Rc;

use pixelgrad_core::kernel::fuse::{self, Lazy, Pending};
use pixelgrad_core::kernel::Launch;
use std::cell::OnceCell;

use pixelgrad_core::{Error, Op, ReduceOp, Result, Shape, Storage};

use crate::backend::WgpuBackend;
use crate::context::GpuTensor;
use crate::ops::elementwise::map;
use crate::ops::reduce::ReduceInput;
use crate::pipelines::Kernel;
use crate::wgsl::{GroupMember, MapLayout};
use crate::BACKEND;

/// Most IR nodes and inputs of an elementwise computation a matmul applies as it stores:
/// room for a bias add and any activation, HardSwish included (whose bias + `x * min(max(x +
/// 3, 0), 6) / 6` needed more than the 12 this was: the PP-OCR classifier then ran 90 launches
/// instead of 100, 10-25 % faster on SwiftShader, its first run ~1 s slower to compile).
const MAX_EPILOGUE_NODES: usize = 16;
const MAX_EPILOGUE_INPUTS: usize = 3;
/// Longest kernel (in IR nodes, before lowering) a chain may grow to before it is computed.
const MAX_NODES: usize = 192;
/// Results made since the last settle beyond which finished entries are pruned.
const PRUNE_AT: usize = 256;

pub(crate) use fuse::elementwise;

/// True if `p` runs as one launch: its inputs fit the bind group layouts and its
/// parameters, shape and strides fit the 256-byte parameter slot (counted over the
/// unmerged rank, an upper bound of the merged one).
fn fits(b: &WgpuBackend, p: &Pending<Storage>) -> bool {
    let words = MapLayout::map(p.launch.params.len()).words(p.inputs(), p.shape.rank());
    p.inputs() <= b.gpu.max_inputs() && words <= crate::context::PARAM_WORDS && p.nodes() <= MAX_NODES
}

/// Elements a storage holds (a pending result: its shape's).
fn len_of(b: &WgpuBackend, op: &'static str, s: &Storage) -> Result<usize> {
    if let Some(m) = s.downcast::<LazyMatmul>() {
        return Ok(m.out.numel());
    }
    if let Some(r) = s.downcast::<LazyReduce>() {
        return Ok(r.out.numel());
    }
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
    let p = fuse::defer(launch, name, inputs, shapes, out, b.gpu.generation.get(), |p| fits(b, p))?;
    let st = Storage::new(Lazy::new(p, b.gpu.generation.get()));
    remember(b, &st);
    Ok(st)
}

fn remember(b: &WgpuBackend, st: &Storage) {
    let mut list = b.gpu.lazies.borrow_mut();
    if list.len() >= PRUNE_AT {
        list.retain(|w| w.upgrade().is_some_and(|s| undone(&s)));
    }
    list.push(st.downgrade());
}

/// Words a reduction with a fused input needs in the parameter slot.
fn reduce_fits(b: &WgpuBackend, p: &Pending<Storage>) -> bool {
    let words = MapLayout::after(crate::ops::reduce::OWN_WORDS, p.launch.params.len()).words(p.inputs(), p.shape.rank());
    p.inputs() <= b.gpu.max_inputs() && words <= crate::context::PARAM_WORDS
}

/// A reduction of a pending elementwise result reads the computation itself (a fused
/// prologue) instead of computing it first: `Some` result then, `None` when the op is not a
/// reduction of an inlinable pending result (it runs as usual).
///
/// A sum is returned pending ([`LazyReduce`]): when the next op is a sum of its result over
/// the other end of its input (`[A, B, C]` summed over `C`, then over `A`: what the gradient
/// of a broadcast bias asks for), both run as one launch. A sum over the batch of a pending
/// batched matmul is one launch of the matmul too (a convolution's weight gradient).
pub(crate) fn reduce(b: &WgpuBackend, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    let Op::Reduce { op: r, axis } = op else { return Ok(None) };
    let (Some(&input), Some(&shape)) = (inputs.first(), shapes.first()) else { return Ok(None) };
    if let Some(mm) = input.downcast::<LazyMatmul>() {
        // A batched product summed over its batch: one launch, each output summing its batch.
        // (Read as any shape whose first axis is the batch: a reshape keeps the flat order.)
        let batch = mm.out.dims()[0];
        let batched = mm.out.rank() == 3 && batch > 1 && shape.dims().first() == Some(&batch) && shape.numel() == mm.out.numel();
        if *r == ReduceOp::Sum && *axis == 0 && !mm.is_done() && batched {
            pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &pixelgrad_core::Backend::name(b))?;
            let a = b.tensor("matmul", &mm.inputs[0])?;
            let bb = b.tensor("matmul", &mm.inputs[1])?;
            let res = GpuTensor::new(&b.gpu, "matmul", out.numel())?;
            let mshapes = [&mm.shapes[0], &mm.shapes[1]];
            crate::ops::matmul::matmul_summing(&b.gpu, mm.trans_a, mm.trans_b, a, bb, &mshapes, &mm.out, &res, true)?;
            return Ok(Some(Storage::new(res)));
        }
    }
    if let Some(first) = input.downcast::<LazyReduce>() {
        if *r == ReduceOp::Sum && !first.is_done() {
            pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &pixelgrad_core::Backend::name(b))?;
            if let Some(st) = first.merged(b, *axis)? {
                return Ok(Some(st));
            }
        }
    }
    // The reduction walks its input in flat order, so the pending computation is read with
    // its own shape, whatever shape the reduction sees (a reshape keeps the flat order).
    let Some(p) = fuse::current(input, b.gpu.generation.get()) else { return Ok(None) };
    if !reduce_fits(b, &p) || p.shape.numel() != shape.numel() {
        return Ok(None);
    }
    pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &pixelgrad_core::Backend::name(b))?;
    if *r == ReduceOp::Sum {
        let st =
            Storage::new(LazyReduce { axis: *axis, pending: p.clone(), shape: shape.clone(), out: out.clone(), done: OnceCell::new() });
        remember(b, &st);
        return Ok(Some(st));
    }
    Ok(Some(Storage::new(run_reduce(b, *r, &p, Layout::Axis(*axis, shape), out)?)))
}

/// How a fused reduction folds its input: one axis of `shape`, or `[reps, outputs, len]`
/// over its first and last axes.
enum Layout<'a> {
    Axis(usize, &'a Shape),
    OuterAndInner { reps: usize, outputs: usize, len: usize },
}

/// Launches a reduction reading the pending computation `p` into a fresh buffer of `out`'s size.
fn run_reduce(b: &WgpuBackend, r: ReduceOp, p: &Pending<Storage>, at: Layout<'_>, out: &Shape) -> Result<GpuTensor> {
    let ins = p.leaves.iter().map(|(s, _)| b.tensor("reduce", s)).collect::<Result<Vec<&GpuTensor>>>()?;
    let leaf_shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let res = GpuTensor::new(&b.gpu, "reduce", out.numel())?;
    let input = ReduceInput::Fused { launch: &p.launch, ins, shapes: leaf_shapes, of: &p.shape, label: p.label() };
    match at {
        Layout::Axis(axis, shape) => crate::ops::reduce::reduce(&b.gpu, r, axis, input, shape, &res)?,
        Layout::OuterAndInner { reps, outputs, len } => crate::ops::reduce::sum_outer_and_inner(&b.gpu, reps, outputs, len, input, &res)?,
    }
    Ok(res)
}

/// A sum over one axis of a pending elementwise computation, not launched yet: it runs when
/// its value is needed ([`LazyReduce::force`], or at the end of the step), or merges with the
/// sum that reads it ([`LazyReduce::merged`]).
pub(crate) struct LazyReduce {
    axis: usize,
    /// The computation summed, read in flat order.
    pending: Pending<Storage>,
    /// The reduction's input shape (as many elements as `pending`'s).
    shape: Shape,
    out: Shape,
    done: OnceCell<Storage>,
}

impl LazyReduce {
    pub(crate) fn is_done(&self) -> bool {
        self.done.get().is_some()
    }

    /// The result, launching the reduction the first time.
    pub(crate) fn force(&self, b: &WgpuBackend) -> Result<&GpuTensor> {
        if self.done.get().is_none() {
            let t = run_reduce(b, ReduceOp::Sum, &self.pending, Layout::Axis(self.axis, &self.shape), &self.out)?;
            let _ = self.done.set(Storage::new(t));
        }
        self.done
            .get()
            .and_then(|s| s.downcast::<GpuTensor>())
            .ok_or_else(|| Error::backend("reduce", BACKEND, "a reduction result is not a buffer"))
    }

    /// The sum of this result over `axis` as one launch with this one's, when the two summed
    /// axes are the two ends of the input (every axis outside them of size 1): `None`
    /// otherwise, and this sum then runs on its own when read.
    fn merged(&self, b: &WgpuBackend, axis: usize) -> Result<Option<Storage>> {
        let d = self.shape.dims();
        let (lo, hi) = (axis.min(self.axis), axis.max(self.axis));
        if lo == hi || hi >= d.len() || d[..lo].iter().chain(&d[hi + 1..]).any(|&e| e != 1) {
            return Ok(None);
        }
        let (reps, len) = (d[lo], d[hi]);
        let outputs: usize = d[lo + 1..hi].iter().product();
        let mut od = d.to_vec();
        od[lo] = 1;
        od[hi] = 1;
        let out = Shape(od);
        let at = Layout::OuterAndInner { reps, outputs, len };
        Ok(Some(Storage::new(run_reduce(b, ReduceOp::Sum, &self.pending, at, &out)?)))
    }
}

/// A matmul not launched yet (register kernels, native CPU adapters): it runs when its value
/// is needed ([`LazyMatmul::force`]), or — when the first thing computed from it is a pending
/// elementwise result of its own shape (a bias add and activation) — in the same launch as
/// that result, which the matmul kernel applies as it stores (an epilogue, see [`run`]). The
/// matmul's own result is stored too (the backward pass reads it).
pub(crate) struct LazyMatmul {
    trans_a: bool,
    trans_b: bool,
    inputs: [Storage; 2],
    shapes: [Shape; 2],
    out: Shape,
    done: std::cell::OnceCell<Storage>,
}

impl LazyMatmul {
    pub(crate) fn is_done(&self) -> bool {
        self.done.get().is_some()
    }

    /// The result, launching the matmul the first time.
    pub(crate) fn force(&self, b: &WgpuBackend) -> Result<&GpuTensor> {
        if self.done.get().is_none() {
            let a = b.tensor("matmul", &self.inputs[0])?;
            let bb = b.tensor("matmul", &self.inputs[1])?;
            let res = GpuTensor::new(&b.gpu, "matmul", self.out.numel())?;
            if self.out.numel() > 0 {
                let shapes = [&self.shapes[0], &self.shapes[1]];
                crate::ops::matmul::matmul(&b.gpu, self.trans_a, self.trans_b, a, bb, &shapes, &self.out, &res)?;
            }
            let _ = self.done.set(Storage::new(res));
        }
        self.done
            .get()
            .and_then(|s| s.downcast::<GpuTensor>())
            .ok_or_else(|| Error::backend("matmul", BACKEND, "a matmul result is not a buffer"))
    }
}

/// A matmul returned pending when the device defers matmuls (fusion on, register kernels):
/// `None` runs it as usual.
pub(crate) fn defer_matmul(b: &WgpuBackend, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    let Op::MatMul { trans_a, trans_b } = *op else { return Ok(None) };
    if inputs.len() != 2 || shapes.len() != 2 {
        return Ok(None);
    }
    let lens = inputs.iter().map(|s| len_of(b, op.name(), s)).collect::<Result<Vec<_>>>()?;
    pixelgrad_core::check_execute(op, &lens, shapes, out, &pixelgrad_core::Backend::name(b))?;
    b.gpu.check_size(op.name(), out.numel() as u64 * 4)?;
    let st = Storage::new(LazyMatmul {
        trans_a,
        trans_b,
        inputs: [inputs[0].clone(), inputs[1].clone()],
        shapes: [shapes[0].clone(), shapes[1].clone()],
        out: out.clone(),
        done: std::cell::OnceCell::new(),
    });
    remember(b, &st);
    Ok(Some(st))
}

/// True while `s` holds a computation not run yet (a pending elementwise result or matmul).
fn undone(s: &Storage) -> bool {
    s.downcast::<Lazy>().is_some_and(|l| !l.is_done())
        || s.downcast::<LazyMatmul>().is_some_and(|m| !m.is_done())
        || s.downcast::<LazyReduce>().is_some_and(|r| !r.is_done())
}

/// Runs `p` as the epilogue of the pending matmul it reads, if it reads one of its own shape
/// that the matmul kernel can take it on: `Some(result)` then (the matmul's result stored too).
fn run_as_epilogue(b: &WgpuBackend, p: &Pending<Storage>) -> Result<Option<Storage>> {
    let Some(given) = epilogue_of(p) else { return Ok(None) };
    let Some(mm) = p.leaves[given].0.downcast::<LazyMatmul>() else { return Ok(None) };
    // A computation on a reshape of the product (a convolution's [N, O, OH, OW] view of its
    // [N, O, OH*OW] product) is read in the product's shape, when its other leaves follow
    // the reshape; the result is the same elements in the same flat order.
    let viewed;
    let p = if p.shape == mm.out {
        p
    } else {
        match p.viewed_as(&mm.out) {
            Some(v) => {
                viewed = v;
                &viewed
            }
            None => return Ok(None),
        }
    };
    let shapes = [&mm.shapes[0], &mm.shapes[1]];
    if !crate::ops::matmul::takes_epilogue(&b.gpu, mm.trans_a, mm.trans_b, &shapes, &mm.out, p.launch.params.len(), p.leaves.len() - 1) {
        return Ok(None);
    }
    let a = b.tensor("matmul", &mm.inputs[0])?;
    let bb = b.tensor("matmul", &mm.inputs[1])?;
    let mut leaves = Vec::new();
    let mut leaf_shapes = Vec::new();
    for (j, (s, sh)) in p.leaves.iter().enumerate() {
        if j != given {
            leaves.push(b.tensor("fused", s)?);
            leaf_shapes.push(sh);
        }
    }
    let res = GpuTensor::new(&b.gpu, "matmul", mm.out.numel())?;
    let out = GpuTensor::new(&b.gpu, "fused", p.shape.numel())?;
    let epi = crate::ops::matmul::EpilogueArgs { launch: &p.launch, given, leaves, shapes: leaf_shapes };
    crate::ops::matmul::matmul_epilogue(&b.gpu, mm.trans_a, mm.trans_b, a, bb, &shapes, &mm.out, &res, &epi, &out)?;
    let _ = mm.done.set(Storage::new(res));
    Ok(Some(Storage::new(out)))
}

/// Launches one pending computation into a fresh buffer (as a matmul's epilogue when it can).
pub(crate) fn run(b: &WgpuBackend, p: &Pending<Storage>) -> Result<Storage> {
    if p.shape.numel() > 0 {
        if let Some(s) = run_as_epilogue(b, p)? {
            return Ok(s);
        }
    }
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

/// Computes every pending result some tensor still holds, oldest first: grouped into
/// multi-output launches ([`Group`]) unless the device was opened with `group: false`.
pub(crate) fn settle(b: &WgpuBackend) -> Result<()> {
    new_generation(&b.gpu.generation);
    let list = std::mem::take(&mut *b.gpu.lazies.borrow_mut());
    let mut group = Group::default();
    let mut matmuls = Vec::new();
    let grouping = b.gpu.group.get();
    for w in list {
        let Some(s) = w.upgrade() else { continue };
        if s.downcast::<LazyMatmul>().is_some_and(|m| !m.is_done()) {
            // Matmuls run last (or when something reads them): a pending result of a matmul
            // computed below takes it as its epilogue.
            matmuls.push(s);
            continue;
        }
        if s.downcast::<LazyReduce>().is_some_and(|r| !r.is_done()) {
            b.tensor("settle", &s)?;
            continue;
        }
        let Some(p) = s.downcast::<Lazy>().and_then(|l| l.pending()).map(|p| p.clone()) else { continue };
        if epilogue_of(&p).is_some() {
            b.tensor("settle", &s)?;
            continue;
        }
        if !grouping {
            b.tensor("settle", &s)?;
            continue;
        }
        // A result reading a collected one waits for that one's launch.
        if p.leaves.iter().any(|(l, _)| group.members.iter().any(|(m, _, _)| m.ptr_eq(l))) {
            group.launch(b)?;
        }
        match member(&p) {
            Some(scalars) => {
                // One that would not fit starts the next group.
                if !group.fits(b, &p) {
                    group.launch(b)?;
                }
                group.push(s, p, scalars);
            }
            None => {
                b.tensor("settle", &s)?;
            }
        }
    }
    group.launch(b)?;
    for m in matmuls {
        b.tensor("settle", &m)?;
    }
    Ok(())
}

/// The leaf of `p` that is a pending matmul of `p`'s own shape (or a reshape of it), read
/// once: what [`run_as_epilogue`] can fold `p` into.
fn epilogue_of(p: &Pending<Storage>) -> Option<usize> {
    // Short computations only (a bias add and activation): the register kernels inline the
    // epilogue once per stored value (up to 256), and a long one (an optimizer update) makes
    // the shader slow to compile for a launch the grouped settle saves anyway.
    if p.nodes() > MAX_EPILOGUE_NODES || p.inputs() > MAX_EPILOGUE_INPUTS {
        return None;
    }
    let given = p.leaves.iter().position(|(s, sh)| {
        sh == &p.shape && s.downcast::<LazyMatmul>().is_some_and(|m| !m.is_done() && m.out.numel() == p.shape.numel())
    })?;
    (p.leaves.iter().filter(|(s, _)| s.ptr_eq(&p.leaves[given].0)).count() == 1).then_some(given)
}

/// The scalar bits of `p` as a member of a grouped launch (bit `i`: leaf `i` is one
/// element), or `None` when it cannot be one: a leaf needs index arithmetic (neither the
/// result's shape nor one element).
fn member(p: &Pending<Storage>) -> Option<u32> {
    let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let (fast, scalars) = fuse::read_mode(&shapes, &p.shape);
    (fast && p.shape.numel() > 0 && p.leaves.len() < 32).then_some(if p.shape.numel() == 1 {
        (1u32 << p.leaves.len()) - 1
    } else {
        scalars
    })
}

/// Most IR nodes (before lowering) of all members of one grouped launch together.
const MAX_GROUP_NODES: usize = 256;

/// Pending results collected to run as one launch: `(storage, computation, scalar bits)`.
#[derive(Default)]
struct Group {
    members: Vec<(Storage, Pending<Storage>, u32)>,
}

impl Group {
    /// Distinct leaves of the members (and of `extra`).
    fn leaves<'a>(&'a self, extra: Option<&'a Pending<Storage>>) -> Vec<&'a Storage> {
        let mut out: Vec<&Storage> = Vec::new();
        for p in self.members.iter().map(|(_, p, _)| p).chain(extra) {
            for (l, _) in &p.leaves {
                if !out.iter().any(|o| o.ptr_eq(l)) {
                    out.push(l);
                }
            }
        }
        out
    }

    /// True if `p` can join: the launch's buffers, parameter words and code stay in bounds.
    fn fits(&self, b: &WgpuBackend, p: &Pending<Storage>) -> bool {
        let buffers = b.gpu.max_buffers();
        let words: usize = self.members.iter().map(|(_, m, _)| 1 + m.launch.params.len()).sum::<usize>() + 1 + p.launch.params.len();
        let nodes: usize = self.members.iter().map(|(_, m, _)| m.nodes()).sum::<usize>() + p.nodes();
        // The members' outputs and the joining one's.
        self.leaves(Some(p)).len() + self.members.len() < buffers
            && crate::wgsl::GROUP_BASE + words <= crate::context::PARAM_WORDS
            && nodes <= MAX_GROUP_NODES
    }

    fn push(&mut self, s: Storage, p: Pending<Storage>, scalars: u32) {
        self.members.push((s, p, scalars));
    }

    /// Runs the collected members (one alone as its usual launch) and empties the group.
    fn launch(&mut self, b: &WgpuBackend) -> Result<()> {
        let members = std::mem::take(&mut self.members);
        if members.len() <= 1 {
            for (s, _, _) in &members {
                b.tensor("settle", s)?;
            }
            return Ok(());
        }
        let group = Group { members };
        let leaves = group.leaves(None);
        let spec: Vec<GroupMember> = group
            .members
            .iter()
            .map(|(_, p, scalars)| GroupMember {
                kernel: p.launch.kernel.clone(),
                reads: p.leaves.iter().map(|(l, _)| leaves.iter().position(|o| o.ptr_eq(l)).unwrap_or(0)).collect(),
                scalars: *scalars,
            })
            .collect();
        let k = group_kernel(b, &spec, leaves.len(), || format!("{}x_{}", group.members.len(), group.members[0].1.label()))?;
        let ins = leaves.iter().map(|l| b.tensor("settle", l)).collect::<Result<Vec<&GpuTensor>>>()?;
        let outs = group.members.iter().map(|(_, p, _)| GpuTensor::new(&b.gpu, "fused", p.shape.numel())).collect::<Result<Vec<_>>>()?;
        let most = outs.iter().map(|t| t.len).max().unwrap_or(0);
        let mut words = vec![crate::ops::u("fused", most)?];
        for ((_, p, _), t) in group.members.iter().zip(&outs) {
            words.push(crate::ops::u("fused", t.len)?);
            words.extend(p.launch.params.iter().map(|&v| crate::ops::f(v)));
        }
        let grid = b.gpu.grid_elems("fused", most)?;
        let in_bufs: Vec<&wgpu::Buffer> = ins.iter().map(|t| t.buffer()).collect();
        let out_bufs: Vec<&wgpu::Buffer> = outs.iter().map(|t| t.buffer()).collect();
        b.gpu.launch_multi("fused", &k, &[], &in_bufs, &out_bufs, &words, grid)?;
        drop(ins);
        for ((s, _, _), t) in group.members.iter().zip(outs) {
            if let Some(lazy) = s.downcast::<Lazy>() {
                lazy.force(|_| Ok(Storage::new(t)))?;
            }
        }
        Ok(())
    }
}

/// The compiled grouped launch of `members` over `inputs` shared inputs, rendered on first
/// use (named after `label()`) and cached per device by its structure.
fn group_kernel(b: &WgpuBackend, members: &[GroupMember], inputs: usize, label: impl FnOnce() -> String) -> Result<Rc<Kernel>> {
    let key = (members.to_vec(), inputs);
    if let Some(k) = b.gpu.group_kernels.borrow().get(&key) {
        return Ok(k.clone());
    }
    let source = crate::wgsl::group_source(members, inputs).map_err(|e| Error::backend("fused", BACKEND, e.to_string()))?;
    let id = b.gpu.group_kernels.borrow().len();
    let made = Rc::new(Kernel {
        name: Cow::Owned(format!("group{id}_{}", label())),
        source: Cow::Owned(source),
        inputs,
        outputs: members.len(),
        overrides: &[],
        status: false,
    });
    b.gpu.group_kernels.borrow_mut().insert(key, made.clone());
    Ok(made)
}
