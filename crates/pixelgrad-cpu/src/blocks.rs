//! Blocks of elements as the CPU backend's kernel evaluator holds them: where a block reads each
//! input ([`Src`]), the per-node buffers reused from block to block ([`Scratch`]), and one
//! vector loop per IR operation. `crate::block_eval` walks a kernel's nodes with them;
//! `crate::schedule` replays a walk decided once.

use pixelgrad_core::kernel::eval::{apply1, apply2, truth, Float};
use pixelgrad_core::kernel::ir::{Op1, Op2};

/// Where a block reads one input from: consecutive elements, or one value for every element
/// (an input broadcast along the block).
#[derive(Clone, Copy, Debug)]
pub enum Src<'a, T> {
    Slice(&'a [T]),
    Scalar(T),
}

/// The value of one node over a block.
#[derive(Clone, Copy)]
pub(crate) enum Val<T> {
    /// The elements of input `j` (a slice).
    In(usize),
    Scalar(T),
    /// Held in scratch buffer `i`.
    Buf(usize),
}

/// Buffers reused from block to block (one per node), and the nodes' values.
pub struct Scratch<T> {
    pub(crate) bufs: Vec<Vec<T>>,
    pub(crate) vals: Vec<Val<T>>,
    /// Per node, its value for the block where it has one (`crate::schedule`).
    pub(crate) scalars: Vec<T>,
    /// Not used here: kept for the caller's own per-block buffers (a backend's gathered
    /// inputs), so they too are allocated once per thread rather than once per call.
    pub spare: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch { bufs: Vec::new(), vals: Vec::new(), scalars: Vec::new(), spare: Vec::new() }
    }
}

/// The operations [`map_pair`] has a loop for.
pub(crate) fn pairs_with(op: Op2) -> bool {
    matches!(op, Op2::Add | Op2::Sub | Op2::Mul | Op2::Div | Op2::Max | Op2::Min)
}

/// `out[k] = op2(op1(x[k], s1), s2)`: one monomorphic loop per pair of operations.
pub(crate) fn map_pair<T: Float>(op1: Op2, s1: T, op2: Op2, s2: T, x: &[T], out: &mut [T]) {
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
pub(crate) fn pair_loop<T: Copy>(x: &[T], out: &mut [T], f: impl Fn(T) -> T, g: impl Fn(T) -> T) {
    for (d, &u) in out.iter_mut().zip(x) {
        *d = g(f(u));
    }
}

pub(crate) fn select_into<T: Float>(c: &[T], a: Operand<'_, T>, b: Operand<'_, T>, out: &mut [T]) {
    for (j, d) in out.iter_mut().enumerate() {
        *d = if truth(c[j]) { a.at(j) } else { b.at(j) };
    }
}

/// Node `i`'s buffer, `n` long. Its old contents stay: every vector operation writes each
/// element of its output.
pub(crate) fn take<T: Float>(s: &mut Scratch<T>, i: usize, n: usize) -> Vec<T> {
    let mut b = std::mem::take(&mut s.bufs[i]);
    b.resize(n, T::ZERO);
    b
}

pub(crate) fn put<T>(s: &mut Scratch<T>, i: usize, buf: Vec<T>) -> Val<T> {
    s.bufs[i] = buf;
    Val::Buf(i)
}

/// The `n` elements of a non-scalar value.
pub(crate) fn read<'s, T: Float>(v: Val<T>, inputs: &[Src<'s, T>], s: &'s Scratch<T>, n: usize) -> &'s [T] {
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
pub(crate) enum Operand<'s, T> {
    Many(&'s [T]),
    One(T),
}

impl<T: Copy> Operand<'_, T> {
    pub(crate) fn at(&self, j: usize) -> T {
        match self {
            Operand::Many(x) => x[j],
            Operand::One(v) => *v,
        }
    }
}

pub(crate) fn operand<'s, T: Float>(v: Val<T>, inputs: &[Src<'s, T>], s: &'s Scratch<T>, n: usize) -> Operand<'s, T> {
    match v {
        Val::Scalar(x) => Operand::One(x),
        other => Operand::Many(read(other, inputs, s, n)),
    }
}

pub(crate) fn map1<T: Float>(op: Op1, x: &[T], out: &mut [T]) {
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
        // Every quantiser rounds (`QuantizeLinear`, the integer products' requantisation) and
        // the QDQ chains floor: through `apply1` they matched `op` once per value, a call per
        // element that took a quarter of the int8 PP-OCR classifier's run; as their own loops they
        // vectorise (`Float`'s rounding is branch-free without SSE4.1).
        Op1::RoundEven => each!(|v: T| v.round_ties_even()),
        Op1::Floor | Op1::FloorRaw => each!(|v: T| v.floor()),
        _ => each!(|v: T| apply1(op, v)),
    }
}

pub(crate) fn map2<T: Float>(op: Op2, a: Operand<'_, T>, b: Operand<'_, T>, out: &mut [T]) {
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
        // Comparisons (the QLinearAdd correction steps' `[x > t]`) likewise.
        Op2::Lt | Op2::LtRaw => each!(|u: T, v: T| apply2(Op2::Lt, u, v)),
        Op2::Le | Op2::LeRaw => each!(|u: T, v: T| apply2(Op2::Le, u, v)),
        Op2::Eq | Op2::EqRaw => each!(|u: T, v: T| apply2(Op2::Eq, u, v)),
        _ => each!(|u: T, v: T| apply2(op, u, v)),
    }
}
