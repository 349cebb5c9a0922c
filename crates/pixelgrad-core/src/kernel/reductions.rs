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
//! A consecutive group (the last axis, `inner == 1`) is read a texel at a time
//! ([`Stmt::Load4`]: four elements from a multiple of 4, one texel on WebGL) in one loop, the
//! lanes outside the group masked and the others folded in the same ascending order without
//! branches ([`Stmt::FoldLane`]), so the results are those of one-element loads, bit for bit,
//! and the shader compiler sees one loop of straight-line code.
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

    /// The pass with both scans of a group (texels where it is consecutive, elements
    /// otherwise: [`Scan::Both`]).
    pub fn program(self) -> Program {
        self.program_with(Scan::Both)
    }

    /// The pass scanning its groups as `form` says.
    pub fn program_with(self, form: Scan) -> Program {
        let neg = |f: Fx| Fx::Bin(FxOp::Mul, Box::new(Fx::lit(-1.0)), Box::new(f));
        let (accs, folds, out) = match self {
            ReduceProgram::Sum => (vec![Acc::Sum], fold_group(form, 0, |e| e), Fx::Acc(0)),
            ReduceProgram::Max => (vec![Acc::MaxTies], fold_group(form, 0, |e| e), Fx::Acc(0)),
            ReduceProgram::Min => (vec![Acc::MaxTies], fold_group(form, 0, neg), neg(Fx::Acc(0))),
            ReduceProgram::LogSumExp => (vec![Acc::LogSumExp], fold_group(form, 0, |e| e), Fx::Acc(0)),
            ReduceProgram::ArgMax => {
                // The group's first element and its index, then one scan: an element greater
                // than the maximum so far (so never a NaN, and the first of equal ones) moves
                // the index to it before it replaces the maximum. A NaN first element stays.
                let mut body = vec![
                    Stmt::Reset(0),
                    Stmt::Fold { acc: 0, value: Fx::load(0, at(v(K0))) },
                    Stmt::Fold { acc: 1, value: Fx::int(v(K0)) },
                ];
                body.extend(scan(form, SCAN, &|e, k, keep| {
                    let greater = e.clone().gt(Fx::Acc(0));
                    let index = Some(match keep.clone() {
                        Some(c) => c.and(greater),
                        None => greater,
                    });
                    vec![Stmt::FoldLane { acc: 1, value: Fx::int(k), keep: index }, Stmt::FoldLane { acc: 0, value: e, keep }]
                }));
                (vec![Acc::MaxTies, Acc::Last], body, Fx::Acc(1))
            }
            ReduceProgram::FirstEqual => {
                let best = Fx::load(1, v(O).mul(p(2)).add(v(R)));
                let mut body = vec![
                    Stmt::LetF(BEST, best),
                    Stmt::Reset(0),
                    Stmt::If {
                        cond: Cond::IsNan(Fx::Var(BEST)),
                        body: vec![Stmt::If {
                            cond: Fx::int(v(K0)).eq(Fx::lit(0.0)),
                            body: vec![Stmt::Fold { acc: 0, value: Fx::lit(0.0) }],
                        }],
                    },
                ];
                body.extend(first_index_where(form, 0, Fx::Var(BEST)));
                body.push(Stmt::Fold { acc: 0, value: Fx::lit(NO_INDEX) });
                (vec![Acc::First], body, Fx::Acc(0))
            }
        };
        let mut body = group();
        body.extend(folds);
        let inputs = if self == ReduceProgram::FirstEqual { vec!["x", "best"] } else { vec!["x"] };
        Program { name: self.name(), inputs, params: REDUCE_PARAMS.to_vec(), accs, body, out }
    }
}

/// How a pass scans its groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scan {
    /// A texel at a time where the group is consecutive (`inner == 1`), an element at a time
    /// otherwise: two loops, one chosen by a uniform `If` on `inner`.
    Both,
    /// An element at a time, always: one loop and no `If`, for an input that cannot be read a
    /// texel at a time (a fused read without `pg_load4` on WebGL). A loop that never runs
    /// still costs its compile: SwiftShader took minutes over a dead texel loop of four
    /// broadcast fused reads (bench/notes/2026-12-07-reductions-texel-loop.md).
    Elements,
}

// Variables: the output element's place and its group, then the scan's (`SCAN ..
// SCAN + 13`, inclusive).
const R: u8 = 0;
const O: u8 = 2;
const K0: u8 = 3;
const K1: u8 = 4;
const BASE: u8 = 5;
// Float variable: FirstEqual's maximum.
const BEST: u8 = 9;
const SCAN: u8 = 16;

fn p(i: u8) -> Ix {
    Ix::Param(i)
}

fn v(i: u8) -> Ix {
    Ix::Var(i)
}

/// Where output element `i` reads: `r = i % inner`, `j = (i / inner) % m`, `o = i / (inner *
/// m)`; the group `k0..k1` and the element `(o, 0, r)` at `base`.
fn group() -> Vec<Stmt> {
    let (n, m, inner, group) = (p(0), p(1), p(2), p(3));
    vec![
        Stmt::Let(R, Ix::Elem.rem(inner.clone())),
        Stmt::Let(1, Ix::Elem.div(inner.clone()).rem(m.clone())),
        Stmt::Let(O, Ix::Elem.div(inner.clone().mul(m))),
        Stmt::Let(K0, v(1).mul(group.clone())),
        Stmt::Let(K1, n.clone().min(v(K0).add(group))),
        Stmt::Let(BASE, v(O).mul(n).mul(inner).add(v(R))),
    ]
}

/// Element `k` of the group's column.
fn at(k: Ix) -> Ix {
    v(BASE).add(k.mul(p(2)))
}

/// `each(element, k, keep)` for every `k` of the group in ascending order; variables `first ..= first + 13`. Where the group is
/// consecutive (`inner == 1`), one loop over the texels it touches ([`Stmt::Load4`] from the
/// multiple of 4 at or below its start), each texel's lanes visited in order with
/// `keep` true only for those inside the group (the head and tail of a group not aligned to 4
/// are masked lanes, not loops of their own). Otherwise one loop over the elements, `keep`
/// `None`, each element loaded once into a variable (a fused read is written out once per
/// load). One of the two loops runs, chosen by the uniform `inner`; with [`Scan::Elements`]
/// only the element loop is there.
fn scan(form: Scan, first: u8, each: &dyn Fn(Fx, Ix, Option<Cond>) -> Vec<Stmt>) -> Vec<Stmt> {
    let var = |i: u8| first + i;
    let (start, end, t0, count, t, texel, lo, hi, lanes, j, e) =
        (var(0), var(1), var(2), var(3), var(4), var(5), var(6), var(7), var(8), var(12), var(13));
    let four = || Ix::Lit(4);
    // Texels t0, t0 + 4, ... (flat indices of their first lanes), the lanes lo..hi inside
    // the group.
    let mut body = vec![
        Stmt::Let(texel, v(t0).add(v(t).mul(four()))),
        Stmt::Let(lo, v(start).sub(v(texel))),
        Stmt::Let(hi, v(end).sub(v(texel))),
        Stmt::Load4 { first: lanes, input: 0, at: v(texel) },
    ];
    for l in 0..4u8 {
        let lane = Ix::Lit(i32::from(l));
        let keep = Cond::Not(Box::new(lane.clone().lt(v(lo)))).and(lane.clone().lt(v(hi)));
        // inner == 1: element k is at base + k.
        body.extend(each(Fx::Var(lanes + l), v(texel).add(lane).sub(v(BASE)), Some(keep)));
    }
    let texels = vec![
        Stmt::Let(start, v(BASE).add(v(K0))),
        Stmt::Let(end, v(BASE).add(v(K1))),
        Stmt::Let(t0, v(start).div(four()).mul(four())),
        Stmt::Let(count, v(end).add(Ix::Lit(3)).div(four()).sub(v(start).div(four()))),
        Stmt::For { var: t, lo: Ix::Lit(0), hi: v(count), bound: Bound::Loop, body },
    ];
    let mut element = vec![Stmt::LetF(e, Fx::load(0, at(v(j))))];
    element.extend(each(Fx::Var(e), v(j), None));
    let elements = vec![Stmt::For { var: j, lo: v(K0), hi: v(K1), bound: Bound::Loop, body: element }];
    if form == Scan::Elements {
        return elements;
    }
    let consecutive = p(2).lt(Ix::Lit(2));
    vec![Stmt::If { cond: consecutive.clone(), body: texels }, Stmt::If { cond: Cond::Not(Box::new(consecutive)), body: elements }]
}

/// Folds `value(element)` for the group in ascending order into accumulator `acc`, emptied
/// first.
fn fold_group(form: Scan, acc: u8, value: impl Fn(Fx) -> Fx) -> Vec<Stmt> {
    let mut body = vec![Stmt::Reset(acc)];
    body.extend(scan(form, SCAN, &|e, _, keep| vec![Stmt::FoldLane { acc, value: value(e), keep }]));
    body
}

/// Folds into [`Acc::First`] accumulator `acc` every `k` (as a float) whose element equals
/// `target`, in ascending order: the first such `k` is kept.
fn first_index_where(form: Scan, acc: u8, target: Fx) -> Vec<Stmt> {
    scan(form, SCAN, &|e, k, keep| {
        let hit = e.eq(target.clone());
        let keep = Some(match keep {
            Some(c) => c.and(hit),
            None => hit,
        });
        vec![Stmt::FoldLane { acc, value: Fx::int(k), keep }]
    })
}

/// Most elements one output of a pass folds on the backends whose passes take any group (the
/// `webgl1` mode's constant loop bound is smaller).
pub const MAX_GROUP: usize = 1024;

/// The group of each pass of a reduction tree over an axis of `n`: `n` itself up to
/// [`MAX_GROUP`] (one pass), else the smallest `g` with `g^p >= n` for the fewest passes `p`
/// that reach one element, so the passes are of even sizes.
pub fn tree_group(n: usize) -> usize {
    if n <= MAX_GROUP {
        return n.max(1);
    }
    let mut passes = 1u32;
    while MAX_GROUP.checked_pow(passes).is_some_and(|c| c < n) {
        passes += 1;
    }
    // the float root, corrected upwards
    let mut g = (n as f64).powf(1.0 / f64::from(passes)).ceil() as usize;
    while g.checked_pow(passes).is_some_and(|c| c < n) {
        g += 1;
    }
    g.clamp(2, MAX_GROUP)
}

/// The parameters of a pass of `group` over `[outer, n, inner]`: `[n, m, inner, group]` with
/// `m = ceil(n / group)` (its output has `outer * m * inner` elements).
pub fn reduce_params(n: usize, inner: usize, group: usize) -> [usize; 4] {
    let group = group.max(1);
    [n, n.div_ceil(group), inner, group]
}
