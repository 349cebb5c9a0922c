//! Elementwise fusion on WebGPU. An elementwise op (unary, binary, `where`, `expand`, `fill`) is not
//! launched when called: it returns a [`Lazy`] storage holding the composed kernel
//! (`pixelgrad_core::kernel::fuse`), and the next elementwise op that reads it composes with
//! it (also through a reshape, when every input of the chain has its shape). The chain runs as one launch when a value is needed: a non-elementwise op reads it
//! ([`tensor`]), it is read back, or the step ends or the queue is flushed
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

use crate::context::{Gpu, GpuTensor};
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
fn fits(gpu: &Rc<Gpu>, p: &Pending<Storage>) -> bool {
    let words = MapLayout::map(p.launch.params.len()).words(p.inputs(), p.shape.rank());
    p.inputs() <= gpu.max_inputs() && words <= crate::pipelines::PARAM_WORDS && p.nodes() <= MAX_NODES
}

/// Elements a storage holds (a pending result: its shape's).
fn len_of(gpu: &Rc<Gpu>, op: &'static str, s: &Storage) -> Result<usize> {
    if let Some(m) = s.downcast::<LazyMatmul>() {
        return Ok(m.out.numel());
    }
    if let Some(r) = s.downcast::<LazyReduce>() {
        return Ok(r.out.numel());
    }
    match s.downcast::<Lazy>() {
        Some(l) => Ok(l.shape().numel()),
        None => Ok(tensor(gpu, op, s)?.len),
    }
}

/// The buffer behind `s`, computing it first when it is pending (a fused chain, a deferred
/// matmul or sum): how every op that is not fused reads its inputs.
pub(crate) fn tensor<'a>(gpu: &Rc<Gpu>, op: &'static str, s: &'a Storage) -> Result<&'a GpuTensor> {
    if let Some(t) = s.downcast::<GpuTensor>() {
        return Ok(t);
    }
    if let Some(m) = s.downcast::<LazyMatmul>() {
        return m.force(gpu);
    }
    if let Some(r) = s.downcast::<LazyReduce>() {
        return r.force(gpu);
    }
    if let Some(lazy) = s.downcast::<Lazy>() {
        let done = lazy.force(|p| run(gpu, p))?;
        return done.downcast::<GpuTensor>().ok_or_else(|| Error::backend(op, BACKEND, "a fused result is not a buffer"));
    }
    Err(Error::BackendMismatch { op, a: gpu.backend_name(), b: "another backend".into() })
}

/// `launch` over `inputs`, returned pending (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn defer(
    gpu: &Rc<Gpu>,
    op: &Op,
    launch: &Launch,
    name: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Storage> {
    let lens = inputs.iter().map(|s| len_of(gpu, op.name(), s)).collect::<Result<Vec<_>>>()?;
    pixelgrad_core::check_execute(op, &lens, shapes, out, &gpu.backend_name())?;
    // Device limits are reported now, not when the result is finally computed.
    gpu.check_size(op.name(), out.numel() as u64 * 4)?;
    let p = fuse::defer(launch, name, inputs, shapes, out, gpu.generation.get(), |p| fits(gpu, p))?;
    let st = Storage::new(Lazy::new(p, gpu.generation.get()));
    remember(gpu, &st);
    Ok(st)
}

fn remember(gpu: &Rc<Gpu>, st: &Storage) {
    let mut list = gpu.lazies.borrow_mut();
    if list.len() >= PRUNE_AT {
        list.retain(|w| w.upgrade().is_some_and(|s| undone(&s)));
    }
    list.push(st.downgrade());
}

/// Words a reduction with a fused input needs in the parameter slot.
fn reduce_fits(gpu: &Rc<Gpu>, p: &Pending<Storage>) -> bool {
    let words = MapLayout::after(crate::ops::reduce::OWN_WORDS, p.launch.params.len()).words(p.inputs(), p.shape.rank());
    p.inputs() <= gpu.max_inputs() && words <= crate::pipelines::PARAM_WORDS
}

/// A reduction of a pending elementwise result reads the computation itself (a fused
/// prologue) instead of computing it first: `Some` result then, `None` when the op is not a
/// reduction of an inlinable pending result (it runs as usual).
///
/// A sum is returned pending ([`LazyReduce`]): when the next op is a sum of its result over
/// the other end of its input (`[A, B, C]` summed over `C`, then over `A`: what the gradient
/// of a broadcast bias asks for), both run as one launch. A sum over the batch of a pending
/// batched matmul is one launch of the matmul too (a convolution's weight gradient).
pub(crate) fn reduce(gpu: &Rc<Gpu>, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    let Op::Reduce { op: r, axis } = op else { return Ok(None) };
    let (Some(&input), Some(&shape)) = (inputs.first(), shapes.first()) else { return Ok(None) };
    if let Some(mm) = input.downcast::<LazyMatmul>() {
        // A batched product summed over its batch: one launch, each output summing its batch.
        // (Read as any shape whose first axis is the batch: a reshape keeps the flat order.)
        let batch = mm.out.dims()[0];
        let batched = mm.out.rank() == 3 && batch > 1 && shape.dims().first() == Some(&batch) && shape.numel() == mm.out.numel();
        if *r == ReduceOp::Sum && *axis == 0 && !mm.is_done() && batched {
            pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &gpu.backend_name())?;
            let a = tensor(gpu, "matmul", &mm.inputs[0])?;
            let bb = tensor(gpu, "matmul", &mm.inputs[1])?;
            let res = GpuTensor::new(gpu, "matmul", out.numel())?;
            let mshapes = [&mm.shapes[0], &mm.shapes[1]];
            crate::ops::matmul::matmul_summing(gpu, mm.trans_a, mm.trans_b, a, bb, &mshapes, &mm.out, &res, true)?;
            return Ok(Some(Storage::new(res)));
        }
    }
    if let Some(first) = input.downcast::<LazyReduce>() {
        if *r == ReduceOp::Sum && !first.is_done() {
            pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &gpu.backend_name())?;
            if let Some(st) = first.merged(gpu, *axis)? {
                return Ok(Some(st));
            }
        }
    }
    // The reduction walks its input in flat order, so the pending computation is read with
    // its own shape, whatever shape the reduction sees (a reshape keeps the flat order).
    let Some(p) = fuse::current(input, gpu.generation.get()) else { return Ok(None) };
    if !reduce_fits(gpu, &p) || p.shape.numel() != shape.numel() {
        return Ok(None);
    }
    pixelgrad_core::check_execute(op, &[shape.numel()], shapes, out, &gpu.backend_name())?;
    if *r == ReduceOp::Sum {
        let st =
            Storage::new(LazyReduce { axis: *axis, pending: p.clone(), shape: shape.clone(), out: out.clone(), done: OnceCell::new() });
        remember(gpu, &st);
        return Ok(Some(st));
    }
    Ok(Some(Storage::new(run_reduce(gpu, *r, &p, Layout::Axis(*axis, shape), out)?)))
}

/// How a fused reduction folds its input: one axis of `shape`, or `[reps, outputs, len]`
/// over its first and last axes.
enum Layout<'a> {
    Axis(usize, &'a Shape),
    OuterAndInner { reps: usize, outputs: usize, len: usize },
}

/// Launches a reduction reading the pending computation `p` into a fresh buffer of `out`'s size.
fn run_reduce(gpu: &Rc<Gpu>, r: ReduceOp, p: &Pending<Storage>, at: Layout<'_>, out: &Shape) -> Result<GpuTensor> {
    let ins = p.leaves.iter().map(|(s, _)| tensor(gpu, "reduce", s)).collect::<Result<Vec<&GpuTensor>>>()?;
    let leaf_shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let res = GpuTensor::new(gpu, "reduce", out.numel())?;
    let input = ReduceInput::Fused { launch: &p.launch, ins, shapes: leaf_shapes, of: &p.shape, label: p.label() };
    match at {
        Layout::Axis(axis, shape) => crate::ops::reduce::reduce(gpu, r, axis, input, shape, &res)?,
        Layout::OuterAndInner { reps, outputs, len } => crate::ops::reduce::sum_outer_and_inner(gpu, reps, outputs, len, input, &res)?,
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
    pub(crate) fn force(&self, gpu: &Rc<Gpu>) -> Result<&GpuTensor> {
        if self.done.get().is_none() {
            let t = run_reduce(gpu, ReduceOp::Sum, &self.pending, Layout::Axis(self.axis, &self.shape), &self.out)?;
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
    fn merged(&self, gpu: &Rc<Gpu>, axis: usize) -> Result<Option<Storage>> {
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
        Ok(Some(Storage::new(run_reduce(gpu, ReduceOp::Sum, &self.pending, at, &out)?)))
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
    pub(crate) fn force(&self, gpu: &Rc<Gpu>) -> Result<&GpuTensor> {
        if self.done.get().is_none() {
            let a = tensor(gpu, "matmul", &self.inputs[0])?;
            let bb = tensor(gpu, "matmul", &self.inputs[1])?;
            let res = GpuTensor::new(gpu, "matmul", self.out.numel())?;
            if self.out.numel() > 0 {
                let shapes = [&self.shapes[0], &self.shapes[1]];
                crate::ops::matmul::matmul(gpu, self.trans_a, self.trans_b, a, bb, &shapes, &self.out, &res)?;
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
pub(crate) fn defer_matmul(gpu: &Rc<Gpu>, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    let Op::MatMul { trans_a, trans_b } = *op else { return Ok(None) };
    if inputs.len() != 2 || shapes.len() != 2 {
        return Ok(None);
    }
    let lens = inputs.iter().map(|s| len_of(gpu, op.name(), s)).collect::<Result<Vec<_>>>()?;
    pixelgrad_core::check_execute(op, &lens, shapes, out, &gpu.backend_name())?;
    gpu.check_size(op.name(), out.numel() as u64 * 4)?;
    let st = Storage::new(LazyMatmul {
        trans_a,
        trans_b,
        inputs: [inputs[0].clone(), inputs[1].clone()],
        shapes: [shapes[0].clone(), shapes[1].clone()],
        out: out.clone(),
        done: std::cell::OnceCell::new(),
    });
    remember(gpu, &st);
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
fn run_as_epilogue(gpu: &Rc<Gpu>, p: &Pending<Storage>) -> Result<Option<Storage>> {
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
    if !crate::ops::matmul::takes_epilogue(gpu, mm.trans_a, mm.trans_b, &shapes, &mm.out, p.launch.params.len(), p.leaves.len() - 1) {
        return Ok(None);
    }
    let a = tensor(gpu, "matmul", &mm.inputs[0])?;
    let bb = tensor(gpu, "matmul", &mm.inputs[1])?;
    let mut leaves = Vec::new();
    let mut leaf_shapes = Vec::new();
    for (j, (s, sh)) in p.leaves.iter().enumerate() {
        if j != given {
            leaves.push(tensor(gpu, "fused", s)?);
            leaf_shapes.push(sh);
        }
    }
    let res = GpuTensor::new(gpu, "matmul", mm.out.numel())?;
    let out = GpuTensor::new(gpu, "fused", p.shape.numel())?;
    let epi = crate::ops::matmul::EpilogueArgs { launch: &p.launch, given, leaves, shapes: leaf_shapes };
    crate::ops::matmul::matmul_epilogue(gpu, mm.trans_a, mm.trans_b, a, bb, &shapes, &mm.out, &res, &epi, &out)?;
    let _ = mm.done.set(Storage::new(res));
    Ok(Some(Storage::new(out)))
}

/// Launches one pending computation into a fresh buffer (as a matmul's epilogue when it can).
pub(crate) fn run(gpu: &Rc<Gpu>, p: &Pending<Storage>) -> Result<Storage> {
    if p.shape.numel() > 0 {
        if let Some(s) = run_as_epilogue(gpu, p)? {
            return Ok(s);
        }
    }
    let ins = p.leaves.iter().map(|(s, _)| tensor(gpu, "fused", s)).collect::<Result<Vec<&GpuTensor>>>()?;
    let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let res = GpuTensor::new(gpu, "fused", p.shape.numel())?;
    if p.shape.numel() > 0 {
        map(gpu, "fused", &p.launch, &ins, &shapes, &p.shape, &res, || p.label())?;
    }
    Ok(Storage::new(res))
}

/// Starts a new generation (see the module docs).
pub(crate) fn new_generation(generation: &std::cell::Cell<u64>) {
    generation.set(generation.get().wrapping_add(1));
}

/// Computes every pending result some tensor still holds, oldest first: grouped into
/// multi-output launches ([`Group`]) unless the device was opened with `group: false`.
pub(crate) fn settle(gpu: &Rc<Gpu>) -> Result<()> {
    new_generation(&gpu.generation);
    let list = std::mem::take(&mut *gpu.lazies.borrow_mut());
    let mut group = Group::default();
    let mut matmuls = Vec::new();
    let grouping = gpu.group.get();
    for w in list {
        let Some(s) = w.upgrade() else { continue };
        if s.downcast::<LazyMatmul>().is_some_and(|m| !m.is_done()) {
            // Matmuls run last (or when something reads them): a pending result of a matmul
            // computed below takes it as its epilogue.
            matmuls.push(s);
            continue;
        }
        if s.downcast::<LazyReduce>().is_some_and(|r| !r.is_done()) {
            tensor(gpu, "settle", &s)?;
            continue;
        }
        let Some(p) = s.downcast::<Lazy>().and_then(|l| l.pending()).map(|p| p.clone()) else { continue };
        if epilogue_of(&p).is_some() {
            tensor(gpu, "settle", &s)?;
            continue;
        }
        if !grouping {
            tensor(gpu, "settle", &s)?;
            continue;
        }
        // A result reading a collected one waits for that one's launch.
        if p.leaves.iter().any(|(l, _)| group.members.iter().any(|(m, _, _)| m.ptr_eq(l))) {
            group.launch(gpu)?;
        }
        match member(&p) {
            Some(scalars) => {
                // One that would not fit starts the next group.
                if !group.fits(gpu, &p) {
                    group.launch(gpu)?;
                }
                group.push(s, p, scalars);
            }
            None => {
                tensor(gpu, "settle", &s)?;
            }
        }
    }
    group.launch(gpu)?;
    for m in matmuls {
        tensor(gpu, "settle", &m)?;
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
    fn fits(&self, gpu: &Rc<Gpu>, p: &Pending<Storage>) -> bool {
        let buffers = gpu.max_buffers();
        let words: usize = self.members.iter().map(|(_, m, _)| 1 + m.launch.params.len()).sum::<usize>() + 1 + p.launch.params.len();
        let nodes: usize = self.members.iter().map(|(_, m, _)| m.nodes()).sum::<usize>() + p.nodes();
        // The members' outputs and the joining one's.
        self.leaves(Some(p)).len() + self.members.len() < buffers
            && crate::wgsl::GROUP_BASE + words <= crate::pipelines::PARAM_WORDS
            && nodes <= MAX_GROUP_NODES
    }

    fn push(&mut self, s: Storage, p: Pending<Storage>, scalars: u32) {
        self.members.push((s, p, scalars));
    }

    /// Runs the collected members (one alone as its usual launch) and empties the group.
    fn launch(&mut self, gpu: &Rc<Gpu>) -> Result<()> {
        let members = std::mem::take(&mut self.members);
        if members.len() <= 1 {
            for (s, _, _) in &members {
                tensor(gpu, "settle", s)?;
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
        let k = group_kernel(gpu, &spec, leaves.len(), || format!("{}x_{}", group.members.len(), group.members[0].1.label()))?;
        let ins = leaves.iter().map(|l| tensor(gpu, "settle", l)).collect::<Result<Vec<&GpuTensor>>>()?;
        let outs = group.members.iter().map(|(_, p, _)| GpuTensor::new(gpu, "fused", p.shape.numel())).collect::<Result<Vec<_>>>()?;
        let most = outs.iter().map(|t| t.len).max().unwrap_or(0);
        let mut words = vec![crate::ops::u("fused", most)?];
        for ((_, p, _), t) in group.members.iter().zip(&outs) {
            words.push(crate::ops::u("fused", t.len)?);
            words.extend(p.launch.params.iter().map(|&v| crate::ops::f(v)));
        }
        let grid = gpu.grid_elems("fused", most)?;
        let in_bufs: Vec<&wgpu::Buffer> = ins.iter().map(|t| t.buffer()).collect();
        let out_bufs: Vec<&wgpu::Buffer> = outs.iter().map(|t| t.buffer()).collect();
        gpu.launch_multi("fused", &k, &[], &in_bufs, &out_bufs, &words, grid)?;
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
fn group_kernel(gpu: &Rc<Gpu>, members: &[GroupMember], inputs: usize, label: impl FnOnce() -> String) -> Result<Rc<Kernel>> {
    let key = (members.to_vec(), inputs);
    if let Some(k) = gpu.group_kernels.borrow().get(&key) {
        return Ok(k.clone());
    }
    let source = crate::wgsl::group_source(members, inputs).map_err(|e| Error::backend("fused", BACKEND, e.to_string()))?;
    let id = gpu.group_kernels.borrow().len();
    let made = Rc::new(Kernel {
        name: Cow::Owned(format!("group{id}_{}", label())),
        source: Cow::Owned(source),
        inputs,
        outputs: members.len(),
        overrides: &[],
        status: false,
    });
    gpu.group_kernels.borrow_mut().insert(key, made.clone());
    Ok(made)
}
