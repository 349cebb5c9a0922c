//! Evaluating kernels on the host: what the CPU backend runs (in `f32`, and in `f64` for the
//! reference), and what tests use to check lowered kernels without a GPU.
//!
//! Evaluation goes node by node over a block of elements (not element by element), so each
//! node is one tight loop the compiler can vectorise and the interpretation cost is paid once
//! per block. Booleans are held as `1` / `0` of the float type.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::ir::{DType, Kernel, Lit, Node, Op1, Op2};
use super::schedule::Schedule;
use crate::{Error, Result};

/// The float types kernels evaluate in, with IEEE semantics for every function.
pub trait Float:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Send
    + Sync
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    const NAN: Self;
    fn from_f32(v: f32) -> Self;
    fn floor(self) -> Self;
    fn round_ties_even(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn exp2(self) -> Self;
    fn log2(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, p: Self) -> Self;
    fn is_nan(self) -> bool;
    fn is_infinite(self) -> bool;
    fn is_sign_negative(self) -> bool;
}

macro_rules! float_impl {
    ($t:ty) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn round_ties_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn exp2(self) -> Self {
                <$t>::exp2(self)
            }
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn powf(self, p: Self) -> Self {
                <$t>::powf(self, p)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
        }
    };
}

float_impl!(f32);
float_impl!(f64);

fn flag<T: Float>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

pub(super) fn truth<T: Float>(v: T) -> bool {
    v != T::ZERO
}

/// `op` on one value, with the IEEE meaning documented on [`Op1`]. Raw built-ins are
/// evaluated as the Rust function they stand for.
pub fn apply1<T: Float>(op: Op1, x: T) -> T {
    match op {
        Op1::Neg => -x,
        Op1::Abs => x.abs(),
        Op1::Floor | Op1::FloorRaw => x.floor(),
        Op1::RoundEven => x.round_ties_even(),
        Op1::Exp | Op1::ExpRaw => x.exp(),
        Op1::Log | Op1::LogRaw => x.ln(),
        Op1::Exp2Raw => x.exp2(),
        Op1::Log2Raw => x.log2(),
        Op1::Sqrt | Op1::SqrtRaw => x.sqrt(),
        Op1::Tanh => x.tanh(),
        Op1::Sin => x.sin(),
        Op1::Cos => x.cos(),
        Op1::IsNan => flag(x.is_nan()),
        Op1::IsInf => flag(x.is_infinite()),
        Op1::SignBit => flag(x.is_sign_negative()),
        Op1::Not => flag(!truth(x)),
    }
}

/// `op` on two values, with the IEEE meaning documented on [`Op2`].
pub fn apply2<T: Float>(op: Op2, a: T, b: T) -> T {
    match op {
        Op2::Add => a + b,
        Op2::Sub => a - b,
        Op2::Mul => a * b,
        Op2::Div | Op2::DivRaw => a / b,
        // NaN if either is; on ties (±0) the first. Written as `b` if it is NaN, else
        // `a < b ? b : a` (a NaN `a` falls through to `a`): wasm's `pmax` and a NaN test, three
        // SIMD instructions where the four-way test took seven.
        Op2::Max => {
            let r = if a < b { b } else { a };
            if b.is_nan() {
                b
            } else {
                r
            }
        }
        Op2::Min => {
            let r = if b < a { b } else { a };
            if b.is_nan() {
                b
            } else {
                r
            }
        }
        Op2::MaxRaw => {
            if a >= b {
                a
            } else {
                b
            }
        }
        Op2::MinRaw => {
            if a <= b {
                a
            } else {
                b
            }
        }
        Op2::Pow => a.powf(b),
        Op2::Lt | Op2::LtRaw => flag(a < b),
        Op2::Le | Op2::LeRaw => flag(a <= b),
        Op2::Eq | Op2::EqRaw => flag(a == b),
        Op2::And => flag(truth(a) && truth(b)),
        Op2::Or => flag(truth(a) || truth(b)),
    }
}

/// Where a block reads one input from: consecutive elements, or one value for every element
/// (an input broadcast along the block).
#[derive(Clone, Copy, Debug)]
pub enum Src<'a, T> {
    Slice(&'a [T]),
    Scalar(T),
}

/// The value of one node over a block.
#[derive(Clone, Copy)]
enum Val<T> {
    /// The elements of input `j` (a slice).
    In(usize),
    Scalar(T),
    /// Held in scratch buffer `i`.
    Buf(usize),
}

/// Buffers reused from block to block (one per node), and the nodes' values.
pub struct Scratch<T> {
    pub(super) bufs: Vec<Vec<T>>,
    vals: Vec<Val<T>>,
    /// Per node, its value for the block where it has one (`super::schedule`).
    pub(super) scalars: Vec<T>,
    /// Not used here: kept for the caller's own per-block buffers (a backend's gathered
    /// inputs), so they too are allocated once per thread rather than once per call.
    pub spare: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch { bufs: Vec::new(), vals: Vec::new(), scalars: Vec::new(), spare: Vec::new() }
    }
}

/// A kernel with what [`eval_prepared`] needs to know of it once rather than per block: how
/// many readers each node has (the result counts as one), which decides what pairs.
pub struct Prepared<'k> {
    kernel: &'k Kernel,
    uses: Vec<u32>,
    /// The blocks' steps, decided once, for blocks whose single-value inputs are the ones
    /// given to [`Prepared::with_scalars`].
    schedule: Option<Schedule>,
}

impl<'k> Prepared<'k> {
    pub fn new(kernel: &'k Kernel) -> Self {
        let mut uses = Vec::new();
        count_uses(kernel, &mut uses);
        Prepared { kernel, uses, schedule: None }
    }

    /// [`Prepared::new`] for blocks whose input `j` is one value exactly where
    /// `scalar_inputs[j]` (a caller that reads an input through a stride of 0 along the
    /// block): what each block does is decided here, once. Blocks given other inputs are
    /// still evaluated right, node by node.
    pub fn with_scalars(kernel: &'k Kernel, scalar_inputs: &[bool]) -> Self {
        let mut p = Prepared::new(kernel);
        p.schedule = Schedule::new(kernel, &p.uses, scalar_inputs);
        p
    }

    /// True if blocks with the inputs given to [`Prepared::with_scalars`] run a schedule.
    pub fn scheduled(&self) -> bool {
        self.schedule.is_some()
    }
}

/// Elements per block when [`eval`] walks a long output.
pub const BLOCK: usize = 1024;

/// Checks that `kernel` can be evaluated here with `inputs` inputs and `params` parameters:
/// the host evaluates `f32` kernels (bools as 1 / 0), in `f32` or `f64`.
pub fn check(kernel: &Kernel, inputs: usize, params: usize) -> Result<()> {
    if let Some(t) = kernel.inputs().iter().find(|t| **t != DType::F32) {
        return Err(Error::invalid("kernel", format!("the host evaluates f32 inputs only, not {t}")));
    }
    for node in kernel.nodes() {
        match *node {
            Node::Cast(DType::F32, a) if matches!(kernel.dtype(a), DType::F32 | DType::Bool) => {}
            Node::Cast(t, a) => return Err(Error::invalid("kernel", format!("the host does not convert {} to {t}", kernel.dtype(a)))),
            Node::Const(Lit::I32(_)) => return Err(Error::invalid("kernel", "the host has no i32 values")),
            _ => {}
        }
    }
    if kernel.inputs().len() != inputs || kernel.params() != params {
        return Err(Error::invalid(
            "kernel",
            format!("takes {} inputs and {} parameters, given {inputs} and {params}", kernel.inputs().len(), kernel.params()),
        ));
    }
    Ok(())
}

/// Evaluates `kernel` for `out.len()` consecutive elements: input `i` comes from `inputs[i]`
/// (a slice at least as long as `out`, or one value), parameters from `params`. The caller
/// has checked the arity ([`check`]).
pub fn eval_block<T: Float>(kernel: &Kernel, inputs: &[Src<'_, T>], params: &[T], out: &mut [T], scratch: &mut Scratch<T>) {
    eval_prepared(&Prepared::new(kernel), inputs, params, out, scratch)
}

/// [`eval_block`] of a kernel prepared once for many blocks.
pub fn eval_prepared<T: Float>(prepared: &Prepared<'_>, inputs: &[Src<'_, T>], params: &[T], out: &mut [T], scratch: &mut Scratch<T>) {
    let kernel = prepared.kernel;
    if let Some(s) = prepared.schedule.as_ref().filter(|s| s.fits(inputs)) {
        s.run(kernel, inputs, params, out, scratch);
        return;
    }
    let n = out.len();
    let nodes = kernel.nodes();
    if scratch.bufs.len() < nodes.len() {
        scratch.bufs.resize_with(nodes.len(), Vec::new);
    }
    // The result node is normally the last one: it is computed straight into `out`.
    let last = nodes.len() - 1;
    let direct = kernel.out() as usize == last;
    let mut wrote = false;
    let mut vals = std::mem::take(&mut scratch.vals);
    vals.clear();
    // A node's value computed early, together with the node it reads (see `pairable`).
    let mut paired: Option<(usize, Val<T>)> = None;
    for (i, node) in nodes.iter().enumerate() {
        if let Some((j, v)) = paired {
            if j == i {
                paired = None;
                vals.push(v);
                if direct && i == last {
                    wrote = true;
                    break;
                }
                continue;
            }
        }
        let into_out = direct && i == last;
        // `x op1 s1`, then `_ op2 s2` in its one reader `j`: one pass, the value kept in a
        // register between the two (the same operations in the same order: the same bits).
        // Node i's own value is never read afterwards.
        if paired.is_none() {
            if let Some(p) = pairable(kernel, &prepared.uses, &vals, i, inputs, params) {
                if direct && p.j == last {
                    map_pair(p.op1, p.s1, p.op2, p.s2, read(p.x, inputs, scratch, n), out);
                    vals.push(Val::Scalar(T::ZERO));
                    paired = Some((p.j, Val::Scalar(T::ZERO)));
                    continue;
                }
                let mut buf = take(scratch, p.j, n);
                map_pair(p.op1, p.s1, p.op2, p.s2, read(p.x, inputs, scratch, n), &mut buf);
                vals.push(Val::Scalar(T::ZERO));
                paired = Some((p.j, put(scratch, p.j, buf)));
                continue;
            }
        }
        let v = match *node {
            Node::Input(j) => match inputs[j as usize] {
                Src::Slice(_) => Val::In(j as usize),
                Src::Scalar(x) => Val::Scalar(x),
            },
            Node::Param(j) => Val::Scalar(params[j as usize]),
            Node::Const(l) => Val::Scalar(match l {
                Lit::F32(bits) => T::from_f32(f32::from_bits(bits)),
                Lit::Bool(b) => flag(b),
                Lit::I32(x) => T::from_f32(x as f32),
            }),
            Node::Op1(op, a) => match vals[a as usize] {
                Val::Scalar(x) => Val::Scalar(apply1(op, x)),
                va if into_out => {
                    map1(op, read(va, inputs, scratch, n), out);
                    wrote = true;
                    break;
                }
                va => {
                    let mut buf = take(scratch, i, n);
                    map1(op, read(va, inputs, scratch, n), &mut buf);
                    put(scratch, i, buf)
                }
            },
            Node::Op2(op, a, b) => match (vals[a as usize], vals[b as usize]) {
                (Val::Scalar(x), Val::Scalar(y)) => Val::Scalar(apply2(op, x, y)),
                (va, vb) if into_out => {
                    map2(op, operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), out);
                    wrote = true;
                    break;
                }
                (va, vb) => {
                    let mut buf = take(scratch, i, n);
                    map2(op, operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), &mut buf);
                    put(scratch, i, buf)
                }
            },
            Node::Select(c, a, b) => match (vals[c as usize], vals[a as usize], vals[b as usize]) {
                (Val::Scalar(c), va, vb) => {
                    if truth(c) {
                        va
                    } else {
                        vb
                    }
                }
                (vc, va, vb) if into_out => {
                    select_into(read(vc, inputs, scratch, n), operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), out);
                    wrote = true;
                    break;
                }
                (vc, va, vb) => {
                    let mut buf = take(scratch, i, n);
                    select_into(read(vc, inputs, scratch, n), operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), &mut buf);
                    put(scratch, i, buf)
                }
            },
            // Every value is held in the float type already (bools as 1 / 0).
            Node::Cast(_, a) => vals[a as usize],
        };
        vals.push(v);
    }
    if !wrote {
        match vals[kernel.out() as usize] {
            Val::Scalar(x) => out.fill(x),
            v => out.copy_from_slice(&read(v, inputs, scratch, n)[..n]),
        }
    }
    scratch.vals = vals;
}

/// Counts the readers of every node of `kernel` into `uses` (the result is one more).
fn count_uses(kernel: &Kernel, uses: &mut Vec<u32>) {
    uses.clear();
    uses.resize(kernel.nodes().len(), 0);
    for node in kernel.nodes() {
        match *node {
            Node::Op1(_, a) | Node::Cast(_, a) => uses[a as usize] += 1,
            Node::Op2(_, a, b) => {
                uses[a as usize] += 1;
                uses[b as usize] += 1;
            }
            Node::Select(c, a, b) => {
                uses[c as usize] += 1;
                uses[a as usize] += 1;
                uses[b as usize] += 1;
            }
            Node::Input(_) | Node::Param(_) | Node::Const(_) => {}
        }
    }
    uses[kernel.out() as usize] += 1;
}

/// Two scalar operations evaluated in one pass: node `j = op2(op1(x, s1), s2)`.
struct Pair<T> {
    op1: Op2,
    x: Val<T>,
    s1: T,
    op2: Op2,
    s2: T,
    j: usize,
}

/// The operations [`map_pair`] has a loop for.
pub(super) fn pairs_with(op: Op2) -> bool {
    matches!(op, Op2::Add | Op2::Sub | Op2::Mul | Op2::Div | Op2::Max | Op2::Min)
}

/// The value of node `v` if it is one value for the whole block, evaluated or not yet
/// (parameters, constants and single-value inputs).
fn scalar_at<T: Float>(kernel: &Kernel, vals: &[Val<T>], v: usize, inputs: &[Src<'_, T>], params: &[T]) -> Option<T> {
    if let Some(val) = vals.get(v) {
        return match *val {
            Val::Scalar(x) => Some(x),
            _ => None,
        };
    }
    match kernel.nodes()[v] {
        Node::Param(j) => Some(params[j as usize]),
        Node::Const(Lit::F32(bits)) => Some(T::from_f32(f32::from_bits(bits))),
        Node::Input(j) => match inputs[j as usize] {
            Src::Scalar(x) => Some(x),
            Src::Slice(_) => None,
        },
        _ => None,
    }
}

/// Node `i` and its one reader as a [`Pair`], when node `i` is `x op1 s` (or `s op1 x` for
/// `+` and `*`, which are commutative in every bit but a NaN's payload) on a block of values, its reader `j` is
/// `_ op2 s'` (the same way round), and only parameters, constants or inputs lie between.
fn pairable<T: Float>(kernel: &Kernel, uses: &[u32], vals: &[Val<T>], i: usize, inputs: &[Src<'_, T>], params: &[T]) -> Option<Pair<T>> {
    let nodes = kernel.nodes();
    let Node::Op2(op1, a, b) = nodes[i] else { return None };
    if uses[i] != 1 || !pairs_with(op1) {
        return None;
    }
    let commutes = |op: Op2| matches!(op, Op2::Add | Op2::Mul);
    let (x, s1) = match (vals[a as usize], vals[b as usize]) {
        (Val::Scalar(_), Val::Scalar(_)) => return None,
        (x, Val::Scalar(s)) => (x, s),
        (Val::Scalar(s), x) if commutes(op1) => (x, s),
        _ => return None,
    };
    let mut j = i + 1;
    while j < nodes.len() && matches!(nodes[j], Node::Param(_) | Node::Const(_) | Node::Input(_)) {
        j += 1;
    }
    let Some(&Node::Op2(op2, c, d)) = nodes.get(j) else { return None };
    if !pairs_with(op2) {
        return None;
    }
    let s2 = if c as usize == i {
        scalar_at(kernel, vals, d as usize, inputs, params)?
    } else if d as usize == i && commutes(op2) {
        scalar_at(kernel, vals, c as usize, inputs, params)?
    } else {
        return None;
    };
    Some(Pair { op1, x, s1, op2, s2, j })
}

/// `out[k] = op2(op1(x[k], s1), s2)`: one monomorphic loop per pair of operations.
pub(super) fn map_pair<T: Float>(op1: Op2, s1: T, op2: Op2, s2: T, x: &[T], out: &mut [T]) {
    macro_rules! second {
        ($f:expr) => {{
            let f = $f;
            match op2 {
                Op2::Add => pair_loop(x, out, f, move |u: T| u + s2),
                Op2::Sub => pair_loop(x, out, f, move |u: T| u - s2),
                Op2::Mul => pair_loop(x, out, f, move |u: T| u * s2),
                Op2::Div => pair_loop(x, out, f, move |u: T| u / s2),
                Op2::Max => pair_loop(x, out, f, move |u: T| apply2(Op2::Max, u, s2)),
                Op2::Min => pair_loop(x, out, f, move |u: T| apply2(Op2::Min, u, s2)),
                _ => pair_loop(x, out, f, move |u: T| apply2(op2, u, s2)),
            }
        }};
    }
    match op1 {
        Op2::Add => second!(move |u: T| u + s1),
        Op2::Sub => second!(move |u: T| u - s1),
        Op2::Mul => second!(move |u: T| u * s1),
        Op2::Div => second!(move |u: T| u / s1),
        Op2::Max => second!(move |u: T| apply2(Op2::Max, u, s1)),
        Op2::Min => second!(move |u: T| apply2(Op2::Min, u, s1)),
        _ => second!(move |u: T| apply2(op1, u, s1)),
    }
}

#[inline(always)]
fn pair_loop<T: Copy>(x: &[T], out: &mut [T], f: impl Fn(T) -> T, g: impl Fn(T) -> T) {
    for (d, &u) in out.iter_mut().zip(x) {
        *d = g(f(u));
    }
}

pub(super) fn select_into<T: Float>(c: &[T], a: Operand<'_, T>, b: Operand<'_, T>, out: &mut [T]) {
    for (j, d) in out.iter_mut().enumerate() {
        *d = if truth(c[j]) { a.at(j) } else { b.at(j) };
    }
}

/// Evaluates `kernel` over a whole output whose inputs are all full-length slices or single
/// values, block by block.
pub fn eval<T: Float>(kernel: &Kernel, inputs: &[Src<'_, T>], params: &[T], out: &mut [T]) -> Result<()> {
    check(kernel, inputs.len(), params.len())?;
    for (i, s) in inputs.iter().enumerate() {
        if let Src::Slice(s) = s {
            if s.len() < out.len() {
                return Err(Error::invalid("kernel", format!("input {i} has {} elements for {} outputs", s.len(), out.len())));
            }
        }
    }
    let mut scratch = Scratch::default();
    let scalars: Vec<bool> = inputs.iter().map(|s| matches!(s, Src::Scalar(_))).collect();
    let prepared = Prepared::with_scalars(kernel, &scalars);
    let mut start = 0;
    for chunk in out.chunks_mut(BLOCK) {
        let ins: Vec<Src<'_, T>> = inputs
            .iter()
            .map(|s| match *s {
                Src::Slice(x) => Src::Slice(&x[start..start + chunk.len()]),
                Src::Scalar(v) => Src::Scalar(v),
            })
            .collect();
        eval_prepared(&prepared, &ins, params, chunk, &mut scratch);
        start += chunk.len();
    }
    Ok(())
}

/// Evaluates `kernel` for one element.
pub fn eval_one<T: Float>(kernel: &Kernel, inputs: &[T], params: &[T]) -> Result<T> {
    let srcs: Vec<Src<'_, T>> = inputs.iter().map(|&x| Src::Scalar(x)).collect();
    let mut out = [T::ZERO];
    eval(kernel, &srcs, params, &mut out)?;
    Ok(out[0])
}

/// Node `i`'s buffer, `n` long. Its old contents stay: every vector operation writes each
/// element of its output.
pub(super) fn take<T: Float>(s: &mut Scratch<T>, i: usize, n: usize) -> Vec<T> {
    let mut b = std::mem::take(&mut s.bufs[i]);
    b.resize(n, T::ZERO);
    b
}

fn put<T>(s: &mut Scratch<T>, i: usize, buf: Vec<T>) -> Val<T> {
    s.bufs[i] = buf;
    Val::Buf(i)
}

/// The `n` elements of a non-scalar value.
fn read<'s, T: Float>(v: Val<T>, inputs: &[Src<'s, T>], s: &'s Scratch<T>, n: usize) -> &'s [T] {
    match v {
        Val::In(j) => match inputs[j] {
            Src::Slice(x) => &x[..n],
            Src::Scalar(_) => &[],
        },
        Val::Buf(i) => &s.bufs[i],
        // Callers match scalars out first.
        Val::Scalar(_) => &[],
    }
}

/// An operand of a vector operation: elements or one value.
#[derive(Clone, Copy)]
pub(super) enum Operand<'s, T> {
    Many(&'s [T]),
    One(T),
}

impl<T: Copy> Operand<'_, T> {
    fn at(&self, j: usize) -> T {
        match self {
            Operand::Many(x) => x[j],
            Operand::One(v) => *v,
        }
    }
}

fn operand<'s, T: Float>(v: Val<T>, inputs: &[Src<'s, T>], s: &'s Scratch<T>, n: usize) -> Operand<'s, T> {
    match v {
        Val::Scalar(x) => Operand::One(x),
        other => Operand::Many(read(other, inputs, s, n)),
    }
}

pub(super) fn map1<T: Float>(op: Op1, x: &[T], out: &mut [T]) {
    macro_rules! each {
        ($f:expr) => {
            for (d, &v) in out.iter_mut().zip(x) {
                *d = $f(v);
            }
        };
    }
    // One loop per op, so each is monomorphic (and vectorised where the op allows).
    match op {
        Op1::Neg => each!(|v: T| -v),
        Op1::Abs => each!(|v: T| v.abs()),
        Op1::Exp | Op1::ExpRaw => each!(|v: T| v.exp()),
        Op1::Log | Op1::LogRaw => each!(|v: T| v.ln()),
        Op1::Sqrt | Op1::SqrtRaw => each!(|v: T| v.sqrt()),
        Op1::Tanh => each!(|v: T| v.tanh()),
        _ => each!(|v: T| apply1(op, v)),
    }
}

pub(super) fn map2<T: Float>(op: Op2, a: Operand<'_, T>, b: Operand<'_, T>, out: &mut [T]) {
    macro_rules! each {
        ($f:expr) => {{
            let f = $f;
            match (a, b) {
                (Operand::Many(x), Operand::Many(y)) => {
                    for ((d, &u), &v) in out.iter_mut().zip(x).zip(y) {
                        *d = f(u, v);
                    }
                }
                (Operand::Many(x), Operand::One(v)) => {
                    for (d, &u) in out.iter_mut().zip(x) {
                        *d = f(u, v);
                    }
                }
                (Operand::One(u), Operand::Many(y)) => {
                    for (d, &v) in out.iter_mut().zip(y) {
                        *d = f(u, v);
                    }
                }
                (Operand::One(u), Operand::One(v)) => out.fill(f(u, v)),
            }
        }};
    }
    match op {
        Op2::Add => each!(|u: T, v: T| u + v),
        Op2::Sub => each!(|u: T, v: T| u - v),
        Op2::Mul => each!(|u: T, v: T| u * v),
        Op2::Div | Op2::DivRaw => each!(|u: T, v: T| u / v),
        // Clamps (ReLU, ReLU6, hard sigmoid) are on every conv's output: a monomorphic loop
        // per op lets them vectorise instead of matching `op` per element.
        Op2::Max => each!(|u: T, v: T| apply2(Op2::Max, u, v)),
        Op2::Min => each!(|u: T, v: T| apply2(Op2::Min, u, v)),
        Op2::MaxRaw => each!(|u: T, v: T| apply2(Op2::MaxRaw, u, v)),
        Op2::MinRaw => each!(|u: T, v: T| apply2(Op2::MinRaw, u, v)),
        _ => each!(|u: T, v: T| apply2(op, u, v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ir::{Builder, E};

    /// Values where operation order and signed zeros show: NaN, infinities, ±0, ties.
    const EDGES: [f32; 12] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 1e-30, -7.5];

    /// A block evaluation (where scalar operations pair up, see `pairable`) gives the same
    /// bits as evaluating each element alone (every operand a single value: nothing pairs),
    /// NaN payloads aside.
    fn same_bits_as_one_by_one(k: &Kernel, params: &[f32], rows: &[Vec<f32>]) {
        let n = rows[0].len();
        let srcs: Vec<Src<'_, f32>> = rows.iter().map(|r| Src::Slice(r)).collect();
        let mut out = vec![0.0f32; n];
        eval(k, &srcs, params, &mut out).unwrap();
        for e in 0..n {
            let one: Vec<f32> = rows.iter().map(|r| r[e]).collect();
            let want = eval_one(k, &one, params).unwrap();
            // NaN is NaN: which operand's payload and sign an operation passes on is the
            // hardware's choice (wasm leaves it open), and `a + b` may pair as `b + a`.
            let same = out[e].to_bits() == want.to_bits() || (out[e].is_nan() && want.is_nan());
            assert!(same, "element {e} {one:?} params {params:?}: {} vs {want} one by one:\n{k}", out[e]);
        }
    }

    #[test]
    fn paired_scalar_operations_keep_every_bit() {
        let xs: Vec<f32> = EDGES.iter().flat_map(|&a| EDGES.iter().map(move |&b| a * 0.5 + b)).collect();
        let bias: Vec<f32> = (0..xs.len()).map(|i| EDGES[i % EDGES.len()]).collect();
        // Hard-swish after a bias, as ONNX exports it: x * clip(x * 1 + 3, 0, 6) * (1/6) + 0.
        let b = Builder::new(&[DType::F32, DType::F32], 6);
        let t = b.input(0) + b.input(1);
        let c = (t * b.param(0) + b.param(1)).max(b.param(2)).min(b.param(3));
        let k = b.finish(t * c * b.param(4) + b.param(5)).unwrap();
        for params in [[1.0, 3.0, 0.0, 6.0, 1.0 / 6.0, 0.0], [1.0, 3.0, -0.0, 6.0, 0.2, -0.0], [f32::NAN, 0.0, 0.0, 0.0, 1.0, 1.0]] {
            same_bits_as_one_by_one(&k, &params, &[xs.clone(), bias.clone()]);
        }
        // Every pair of the paired operations, either way round, with scalars from
        // parameters, constants and single-value inputs.
        type Op = for<'a> fn(E<'a>, E<'a>) -> E<'a>;
        let ops: [(&str, Op); 6] = [
            ("add", |a, b| a + b),
            ("sub", |a, b| a - b),
            ("mul", |a, b| a * b),
            ("div", |a, b| a / b),
            ("max", |a, b| a.max(b)),
            ("min", |a, b| a.min(b)),
        ];
        for (_, f) in &ops {
            for (_, g) in &ops {
                for flip in [false, true] {
                    let b = Builder::new(&[DType::F32], 1);
                    let x = b.input(0);
                    let y = if flip { f(b.param(0), x) } else { f(x, b.param(0)) };
                    let z = if flip { g(b.f32(-0.0), y) } else { g(y, b.f32(2.5)) };
                    let k = b.finish(z).unwrap();
                    for p in EDGES {
                        same_bits_as_one_by_one(&k, &[p], std::slice::from_ref(&xs));
                    }
                }
            }
        }
        // A value read twice does not pair away: (x + 1) * (x + 1) - 2.
        let b = Builder::new(&[DType::F32], 0);
        let u = b.input(0) + 1.0;
        let k = b.finish(u * u - 2.0).unwrap();
        same_bits_as_one_by_one(&k, &[], std::slice::from_ref(&xs));
    }
}
