//! The reduction programs, each defined once (see [`super::program`]): one pass of a
//! reduction tree for every [`crate::ReduceOp`], as the GPU backends draw them.
//!
//! The input is viewed as `[outer, n, inner]` and the output as `[outer, m, inner]`: output
//! element `(o, j, r)` folds the group of up to `group` consecutive elements `j * group ..
//! min(n, (j + 1) * group)` along the axis, in ascending order. With `group >= n` (so `m = 1`)
//! one pass is the whole reduction; otherwise passes repeat over the partial results until
//! `m = 1`, and each kind's accumulator is chosen so that folding partials gives the whole
//! result (sum of sums, first maximum of first maxima, log-sum-exp of log-sum-exps).
//!
//! A consecutive group (the last axis, `inner == 1`) is read four elements at a time where
//! their flat indices are an aligned run ([`Stmt::Load4`]: one texel on WebGL), one at a time
//! before and after; the lanes are folded in the same ascending order, so the results are
//! those of one-element loads, bit for bit.
//!
//! Parameters, in this order: `n` (the axis), `m` (groups per axis), `inner`, `group`.

use std::ops::{Add, Div, Mul, Rem, Sub};

use super::program::{Acc, Bound, Cond, Fx, FxOp, Ix, Program, Stmt};

/// The parameters, in [`Ix::Param`] order.
pub const REDUCE_PARAMS: [&str; 4] = ["n", "m", "inner", "group"];

/// Returned by [`ReduceProgram::FirstEqual`] for a group with no element equal to the maximum.
pub const NO_INDEX: f32 = 3.0e38;

/// One pass of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceProgram {
    /// [`crate::ReduceOp::Sum`]: `+` from 0, in ascending order.
    Sum,
    /// [`crate::ReduceOp::Max`]: the group's first element, replaced by a later one only if
    /// greater ([`Acc::MaxTies`]: NaN never replaces and, first, is kept; ties keep the
    /// first, so `max(-0, 0) = -0`).
    Max,
    /// [`crate::ReduceOp::Min`]: as [`ReduceProgram::Max`] with "smaller", computed as the
    /// negated maximum of the negated elements (negation is exact, so the rule carries over).
    Min,
    /// [`crate::ReduceOp::LogSumExp`] ([`Acc::LogSumExp`]).
    LogSumExp,
    /// [`crate::ReduceOp::ArgMax`] of one group: the axis index (as `f32`) of the group's first
    /// maximum in [`ReduceProgram::Max`]'s sense (the group's first index when that is NaN).
    ArgMax,
    /// Argmax's middle pass over an axis longer than a group: input `best` (`[outer, 1,
    /// inner]`, the maxima) besides `x`; the first axis index in the group whose element
    /// equals the maximum, [`NO_INDEX`] when none does. A [`ReduceProgram::Min`] tree over
    /// these candidates then gives the first maximum overall. A NaN maximum is the axis's
    /// first element (nothing replaces it), so the first group answers 0 for it.
    FirstEqual,
}

impl ReduceProgram {
    pub const ALL: [ReduceProgram; 6] = [
        ReduceProgram::Sum,
        ReduceProgram::Max,
        ReduceProgram::Min,
        ReduceProgram::LogSumExp,
        ReduceProgram::ArgMax,
        ReduceProgram::FirstEqual,
    ];

    /// The program's (and its GPU programs') name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceProgram::Sum => "reduce_sum",
            ReduceProgram::Max => "reduce_max",
            ReduceProgram::Min => "reduce_min",
            ReduceProgram::LogSumExp => "reduce_log_sum_exp",
            ReduceProgram::ArgMax => "reduce_argmax",
            ReduceProgram::FirstEqual => "reduce_first_equal",
        }
    }

    /// The pass reducing with `op` (argmax: its one-group pass).
    pub fn of(op: crate::ReduceOp) -> ReduceProgram {
        match op {
            crate::ReduceOp::Sum => ReduceProgram::Sum,
            crate::ReduceOp::Max => ReduceProgram::Max,
            crate::ReduceOp::Min => ReduceProgram::Min,
            crate::ReduceOp::LogSumExp => ReduceProgram::LogSumExp,
            crate::ReduceOp::ArgMax => ReduceProgram::ArgMax,
        }
    }

    pub fn program(self) -> Program {
        let neg = |f: Fx| Fx::Bin(FxOp::Mul, Box::new(Fx::lit(-1.0)), Box::new(f));
        let (accs, folds, out) = match self {
            ReduceProgram::Sum => (vec![Acc::Sum], fold_group(0, |e| e), Fx::Acc(0)),
            ReduceProgram::Max => (vec![Acc::MaxTies], fold_group(0, |e| e), Fx::Acc(0)),
            ReduceProgram::Min => (vec![Acc::MaxTies], fold_group(0, neg), neg(Fx::Acc(0))),
            ReduceProgram::LogSumExp => (vec![Acc::LogSumExp], fold_group(0, |e| e), Fx::Acc(0)),
            ReduceProgram::ArgMax => {
                // The maximum first, then the first index holding it (scanning downwards, the
                // last hit is the first); the group's start when none does (a NaN maximum).
                let mut body = fold_group(0, |e| e);
                body.push(Stmt::Fold { acc: 1, value: Fx::int(v(K0)) });
                body.extend(first_index_where(1, Fx::Acc(0)));
                (vec![Acc::MaxTies, Acc::Last], body, Fx::Acc(1))
            }
            ReduceProgram::FirstEqual => {
                let best = Fx::load(1, v(O).mul(p(2)).add(v(R)));
                let mut body = vec![
                    Stmt::LetF(BEST, best),
                    Stmt::Reset(0),
                    Stmt::Fold { acc: 0, value: Fx::lit(NO_INDEX) },
                    Stmt::If {
                        cond: Cond::IsNan(Fx::Var(BEST)),
                        body: vec![Stmt::If {
                            cond: Fx::int(v(K0)).eq(Fx::lit(0.0)),
                            body: vec![Stmt::Fold { acc: 0, value: Fx::lit(0.0) }],
                        }],
                    },
                ];
                body.extend(first_index_where(0, Fx::Var(BEST)));
                (vec![Acc::Last], body, Fx::Acc(0))
            }
        };
        let mut body = group();
        body.extend(folds);
        let inputs = if self == ReduceProgram::FirstEqual { vec!["x", "best"] } else { vec!["x"] };
        Program { name: self.name(), inputs, params: REDUCE_PARAMS.to_vec(), accs, body, out }
    }
}

// Variables: the output element's place and its group, its aligned runs, then the loops'
// (two sets of `RUN_VARS`: argmax scans its group twice).
const R: u8 = 0;
const O: u8 = 2;
const K0: u8 = 3;
const K1: u8 = 4;
const BASE: u8 = 5;
const HEAD: u8 = 6;
const TEXELS: u8 = 7;
const TAIL: u8 = 8;
// Float variable: FirstEqual's maximum.
const BEST: u8 = 9;
const SCAN: u8 = 16;
const SCAN2: u8 = SCAN + RUN_VARS;
const RUN_VARS: u8 = 8;

fn p(i: u8) -> Ix {
    Ix::Param(i)
}

fn v(i: u8) -> Ix {
    Ix::Var(i)
}

/// Where output element `i` reads: `r = i % inner`, `j = (i / inner) % m`, `o = i / (inner *
/// m)`; the group `k0..k1` and the element `(o, 0, r)` at `base`. Then the group split for
/// 4-lane loads ([`Stmt::Load4`]): a head `k0..head` up to the first element whose flat
/// index is a multiple of 4, `texels` whole aligned runs of four from `head`, and the tail
/// `head + 4 * texels .. k1`. Only a consecutive group (`inner == 1`) has texels: `1 /
/// inner` is 1 for it and 0 otherwise, when head and tail are the whole group.
fn group() -> Vec<Stmt> {
    let (n, m, inner, group) = (p(0), p(1), p(2), p(3));
    let four = || Ix::Lit(4);
    // The first flat index at or after the group's start that is a multiple of 4, as an
    // axis index (inner == 1); clamped to the group.
    let start = v(BASE).add(v(K0).mul(inner.clone()));
    let aligned = start.clone().add(Ix::Lit(3)).div(four()).mul(four());
    vec![
        Stmt::Let(R, Ix::Elem.rem(inner.clone())),
        Stmt::Let(1, Ix::Elem.div(inner.clone()).rem(m.clone())),
        Stmt::Let(O, Ix::Elem.div(inner.clone().mul(m))),
        Stmt::Let(K0, v(1).mul(group.clone())),
        Stmt::Let(K1, n.clone().min(v(K0).add(group))),
        Stmt::Let(BASE, v(O).mul(n).mul(inner.clone()).add(v(R))),
        Stmt::Let(HEAD, v(K1).min(v(K0).add(aligned.sub(start)))),
        Stmt::Let(TEXELS, v(K1).sub(v(HEAD)).div(four()).mul(Ix::Lit(1).div(inner))),
        Stmt::Let(TAIL, v(HEAD).add(v(TEXELS).mul(four()))),
    ]
}

/// Element `k` of the group's column.
fn at(k: Ix) -> Ix {
    v(BASE).add(k.mul(p(2)))
}

/// `each(element, k)` for every `k` of the group in ascending order (`descending`: from `k1 -
/// 1` down to `k0`), the aligned runs loaded four at a time ([`Stmt::Load4`]) and their lanes
/// visited in the same order; variables `first .. first + RUN_VARS`.
fn scan(first: u8, descending: bool, each: &dyn Fn(Fx, Ix) -> Vec<Stmt>) -> Vec<Stmt> {
    let (head, texel, tail, k, lanes) = (first, first + 1, first + 2, first + 3, first + 4);
    // One element at a time over lo..hi, as `k`, in the scan's direction.
    let single = |var: u8, lo: Ix, hi: Ix| {
        let kx = if descending { lo.clone().add(hi.clone()).sub(Ix::Lit(1)).sub(v(var)) } else { v(var) };
        let mut body = vec![Stmt::Let(k, kx)];
        body.extend(each(Fx::load(0, at(v(k))), v(k)));
        Stmt::For { var, lo, hi, bound: Bound::Loop, body }
    };
    let t = if descending { v(TEXELS).sub(Ix::Lit(1)).sub(v(texel)) } else { v(texel) };
    let mut body = vec![
        Stmt::Let(k, v(HEAD).add(t.mul(Ix::Lit(4)))),
        // inner == 1 here: element k is at base + k.
        Stmt::Load4 { first: lanes, input: 0, at: v(BASE).add(v(k)) },
    ];
    let order: [u8; 4] = if descending { [3, 2, 1, 0] } else { [0, 1, 2, 3] };
    for l in order {
        body.extend(each(Fx::Var(lanes + l), v(k).add(Ix::Lit(i32::from(l)))));
    }
    let texels = Stmt::For { var: texel, lo: Ix::Lit(0), hi: v(TEXELS), bound: Bound::Loop, body };
    let (head, tail) = (single(head, v(K0), v(HEAD)), single(tail, v(TAIL), v(K1)));
    if descending {
        vec![tail, texels, head]
    } else {
        vec![head, texels, tail]
    }
}

/// Folds `value(element)` for the group in ascending order into accumulator `acc`, emptied
/// first.
fn fold_group(acc: u8, value: impl Fn(Fx) -> Fx) -> Vec<Stmt> {
    let mut body = vec![Stmt::Reset(acc)];
    body.extend(scan(SCAN, false, &|e, _| vec![Stmt::Fold { acc, value: value(e) }]));
    body
}

/// Folds into [`Acc::Last`] accumulator `acc` every `k` (as a float) whose element equals
/// `target`, scanning `k1 - 1` down to `k0`: the first such `k` is folded last.
fn first_index_where(acc: u8, target: Fx) -> Vec<Stmt> {
    scan(SCAN2, true, &|e, k| vec![Stmt::If { cond: e.eq(target.clone()), body: vec![Stmt::Fold { acc, value: Fx::int(k) }] }])
}

/// The parameters of a pass of `group` over `[outer, n, inner]`: `[n, m, inner, group]` with
/// `m = ceil(n / group)` (its output has `outer * m * inner` elements).
pub fn reduce_params(n: usize, inner: usize, group: usize) -> [usize; 4] {
    let group = group.max(1);
    [n, n.div_ceil(group), inner, group]
}
