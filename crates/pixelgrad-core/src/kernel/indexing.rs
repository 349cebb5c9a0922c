//! The index programs, each defined once (see [`super::program`]): what every GPU backend
//! renders for [`crate::Op::Gather`] and [`crate::Op::ScatterAdd`].
//!
//! Both view their tensors as `[outer, len, inner]` around the indexed axis; index tensors
//! hold floats. An index that is not a whole number in range reads as 0 and raises a
//! [`Stmt::Fault`] (WebGPU's status word; the CPU and WebGL vet the indices themselves), so a
//! bad index is an error at the next readback on every backend, never a wild read.

use std::ops::{Add, Div, Mul, Rem};

use super::program::{Acc, Bound, Cond, Fx, Ix, Program, Stmt};

/// An index program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexProgram {
    /// [`crate::Op::Gather`]: inputs `x`, `idx`; `out[o, j, r] = x[o, idx[o, j, r], r]`.
    /// Parameters `len_x` (the axis of `x`), `len_idx` (the axis of `idx`), `inner`.
    Gather,
    /// [`crate::Op::ScatterAdd`] as a gather, so no two invocations write one element and no
    /// atomics are needed: inputs `src`, `idx`; output element `(o, t, r)` loops over the
    /// `len` source positions of its column in ascending order and sums those whose index is
    /// `t`. Parameters `size` (the output axis), `len` (the source axis), `inner`.
    ScatterAdd,
}

impl IndexProgram {
    pub const ALL: [IndexProgram; 2] = [IndexProgram::Gather, IndexProgram::ScatterAdd];

    /// The program's (and its GPU programs') name.
    pub fn name(self) -> &'static str {
        match self {
            IndexProgram::Gather => "gather",
            IndexProgram::ScatterAdd => "scatter_add",
        }
    }

    pub fn program(self) -> Program {
        match self {
            IndexProgram::Gather => gather(),
            IndexProgram::ScatterAdd => scatter_add(),
        }
    }

    /// The bit of the status word a bad index raises (`1 << code`, [`Stmt::Fault`]).
    pub fn fault(self) -> u8 {
        match self {
            IndexProgram::Gather => 0,
            IndexProgram::ScatterAdd => 1,
        }
    }
}

/// The parameters of [`IndexProgram::Gather`] for `x` and `idx` of these dims along `axis`.
pub fn gather_params(x: &[usize], idx: &[usize], axis: usize) -> [usize; 3] {
    [x[axis], idx[axis], idx[axis + 1..].iter().product()]
}

/// The parameters of [`IndexProgram::ScatterAdd`] for `src` of these dims along `axis` into
/// `size`.
pub fn scatter_add_params(src: &[usize], axis: usize, size: usize) -> [usize; 3] {
    [size, src[axis], src[axis + 1..].iter().product()]
}

fn v(i: u8) -> Ix {
    Ix::Var(i)
}

fn param(i: u8) -> Ix {
    Ix::Param(i)
}

/// `out[o, j, r] = x[o, idx[o, j, r], r]`, 0 (and a fault) for a bad index.
fn gather() -> Program {
    // 0 r, 1 o, 2 (float) the index, read once.
    let (len_x, len_idx, inner) = (param(0), param(1), param(2));
    let t = || Fx::Var(2);
    let at = v(1).mul(len_x.clone()).add(Ix::Of(Box::new(t()))).mul(inner.clone()).add(v(0));
    let body = vec![
        Stmt::Let(0, Ix::Elem.rem(inner.clone())),
        Stmt::Let(1, Ix::Elem.div(inner.mul(len_idx))),
        Stmt::LetF(2, Fx::Index { input: 1, at: Ix::Elem }),
        Stmt::Reset(0),
        Stmt::If { cond: t().is_index(len_x.clone()), body: vec![Stmt::Fold { acc: 0, value: Fx::load(0, at) }] },
        Stmt::If { cond: Cond::Not(Box::new(t().is_index(len_x))), body: vec![Stmt::Fault(IndexProgram::Gather.fault())] },
    ];
    Program {
        name: "gather",
        inputs: vec!["x", "idx"],
        params: vec!["len_x", "len_idx", "inner"],
        accs: vec![Acc::Last],
        body,
        out: Fx::Acc(0),
    }
}

/// `out[o, t, r]` = the sum over `j` ascending of `src[o, j, r]` where `idx[o, j, r] == t`.
/// The invocations of row `t = 0` vet every index of their column (each is seen by one).
fn scatter_add() -> Program {
    // 0 r, 1 t, 2 o, 3 base, 4 j, 5 at, 6 (float) the index at `at`, read once.
    let (size, len, inner) = (param(0), param(1), param(2));
    let idx = || Fx::Var(6);
    let body = vec![
        Stmt::Let(0, Ix::Elem.rem(inner.clone())),
        Stmt::Let(1, Ix::Elem.div(inner.clone()).rem(size.clone())),
        Stmt::Let(2, Ix::Elem.div(inner.clone().mul(size.clone()))),
        Stmt::Let(3, v(2).mul(len.clone()).mul(inner.clone()).add(v(0))),
        Stmt::Reset(0),
        Stmt::For {
            var: 4,
            lo: Ix::Lit(0),
            hi: len,
            bound: Bound::Loop,
            body: vec![
                Stmt::Let(5, v(3).add(v(4).mul(inner))),
                Stmt::LetF(6, Fx::Index { input: 1, at: v(5) }),
                Stmt::If { cond: idx().eq(Fx::int(v(1))), body: vec![Stmt::Fold { acc: 0, value: Fx::load(0, v(5)) }] },
                Stmt::If {
                    cond: Fx::int(v(1)).eq(Fx::lit(0.0)),
                    body: vec![Stmt::If {
                        cond: Cond::Not(Box::new(idx().is_index(size))),
                        body: vec![Stmt::Fault(IndexProgram::ScatterAdd.fault())],
                    }],
                },
            ],
        },
    ];
    Program {
        name: "scatter_add",
        inputs: vec!["src", "idx"],
        params: vec!["size", "len", "inner"],
        accs: vec![Acc::Sum],
        body,
        out: Fx::Acc(0),
    }
}
