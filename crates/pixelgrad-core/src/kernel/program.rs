//! Programs with loops: the part of the kernel IR for kernels that read at computed positions.
//!
//! An elementwise [`super::Kernel`] sees one element of each input at the output's position.
//! Window kernels (pooling and its gradient) instead compute indices, loop over a window's taps
//! and accumulate. A [`Program`] says that once, as data:
//!
//! - integer expressions ([`Ix`]) for indices and loop bounds, from the output element's flat
//!   index, integer parameters (uniforms) and variables;
//! - indexed loads ([`Fx::Load`]): element `at` of input `i`; and four at once
//!   ([`Stmt::Load4`]: elements `at .. at + 4`, `at` a multiple of 4: one texel on WebGL);
//! - bounded loops ([`Stmt::For`]) over `lo..hi`, each naming the constant [`Bound`] under
//!   which a dialect without dynamic loops (GLSL ES 1.00) runs it (the backend refuses trip
//!   counts above it);
//! - accumulators ([`Acc`]): a sum, a running maximum with its tie count, the first or last
//!   value, a log-sum-exp; folded by [`Stmt::Fold`], or by [`Stmt::FoldLane`] where `if`
//!   chains must not appear (a masked lane of a 4-lane load, written with selects).
//!
//! The CPU evaluates a program ([`super::program_eval`]); the GPU backends render it
//! ([`super::program_render`]) through a [`super::program_render::Spelling`] (WGSL in
//! `pixelgrad-wgpu`, GLSL ES 3.00 and 1.00 from one table in `pixelgrad-webgl`). The programs
//! themselves are in [`super::windows`], [`super::indexing`] and [`super::reductions`].

use std::ops::{Div as _, Mul as _, Sub as _};

/// Variable number: a `let` or a loop counter (one namespace per program).
pub type Var = u8;

/// Integer operations. `Div` truncates towards zero (every dialect's integer division; the
/// programs divide non-negative numbers, or multiply the result of a negative one by 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IxOp {
    Add,
    Sub,
    Mul,
    Div,
    Min,
    Max,
}

/// An integer expression: an index or a loop bound.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ix {
    Lit(i32),
    /// Integer parameter `i` ([`Program::params`] names it).
    Param(u8),
    /// An integer variable.
    Var(Var),
    /// The flat index of the output element being computed.
    Elem,
    Bin(IxOp, Box<Ix>, Box<Ix>),
    /// A float holding a whole number, as an integer: used only where [`Cond::Index`] has
    /// accepted it (what it gives for any other float differs between dialects).
    Of(Box<Fx>),
}

/// Float operations (the device's: the programs divide by tie counts `>= 1` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FxOp {
    Add,
    Mul,
    Div,
}

/// A float expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Fx {
    /// The bits of an `f32` literal (finite).
    Lit(u32),
    /// Element `at` of input `input` (flat index into the input tensor).
    Load {
        input: u8,
        at: Ix,
    },
    /// Element `at` of input `input` read as an index: exactly as stored (no precision
    /// emulation rounds it), to be vetted by [`Cond::Index`].
    Index {
        input: u8,
        at: Ix,
    },
    /// A float variable.
    Var(Var),
    /// The current value of accumulator `i`.
    Acc(u8),
    /// The tie count of a [`Acc::MaxTies`] accumulator, at least 1.
    Ties(u8),
    /// An integer as a float (exact below 2^24).
    Int(Ix),
    Bin(FxOp, Box<Fx>, Box<Fx>),
}

/// Conditions of [`Stmt::If`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cond {
    /// IEEE `a == b` (false when either is NaN).
    FEq(Fx, Fx),
    /// `value` is an index into `0..limit`: a whole number `>= 0` and `< limit` (false for
    /// NaN and infinities). How index tensors, which hold floats, are vetted.
    Index {
        value: Fx,
        limit: Ix,
    },
    Not(Box<Cond>),
    /// The value is a NaN (a test the compiler cannot fold away: see
    /// [`super::program_render::Spelling::is_nan`]).
    IsNan(Fx),
    /// Integer `a < b`.
    Lt(Ix, Ix),
    /// IEEE `a > b` (false when either is NaN).
    FGt(Fx, Fx),
    /// Both hold.
    And(Box<Cond>, Box<Cond>),
}

/// Kinds of accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Acc {
    /// `s += v`, from 0.
    Sum,
    /// The first value folded, then a later value replaces it only if greater (NaN never
    /// does), counting the values equal to the kept one: [`crate::ReduceOp::Max`]'s rule and
    /// its gradient's tie split. Empty: value 0, ties 1.
    MaxTies,
    /// The last value folded, exactly (a copy: `-0.0` stays `-0.0`); 0 when none was.
    Last,
    /// The first value folded, exactly; 0 when none was (argmax's first index of a maximum:
    /// a downward scan into [`Acc::Last`] says the same, but llvmpipe's compiler took minutes
    /// over a program with two loops over texels).
    First,
    /// The log-sum-exp of the values folded ([`crate::ReduceOp::LogSumExp`]), kept as the
    /// running maximum `m` and the sum `s` of `exp(v - m)`, so no exponent is positive: NaN
    /// wins (and stays), `+inf` is the result once seen, `-inf` adds nothing (`-inf` when
    /// only `-inf` was folded; 0 when nothing was). Folding partial log-sum-exps gives the
    /// whole one. The reductions ([`super::reductions`]) use it.
    LogSumExp,
}

/// The constant bound under which a loop runs where loops need one (GLSL ES 1.00); the backend
/// refuses trip counts above it before launching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// Taps of a window inside the image, per axis (`MAX_WINDOW`).
    Window,
    /// Longer loops (windows covering a pixel; `MAX_LOOP`).
    Loop,
}

/// One statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// An integer variable.
    Let(Var, Ix),
    /// A float variable.
    LetF(Var, Fx),
    /// Four float variables `first .. first + 4`: elements `at .. at + 4` of input `input`,
    /// in order. `at` must be a multiple of 4 (the CPU evaluator refuses others), so a dialect
    /// storing four elements per texel reads them as one texel (WebGL); others load four
    /// times. Element `at` must be inside the input; lanes past its end are garbage (a
    /// texture's padding; NaN on the CPU), for the program to mask ([`Stmt::FoldLane`]). The
    /// reductions read their last-axis groups through it ([`super::reductions`]); each value
    /// is as [`Fx::Load`] reads it.
    Load4 {
        first: Var,
        input: u8,
        at: Ix,
    },
    /// `for var in lo..hi` (no iterations when `hi <= lo`), bounds evaluated once.
    For {
        var: Var,
        lo: Ix,
        hi: Ix,
        bound: Bound,
        body: Vec<Stmt>,
    },
    /// Empties accumulator `i`.
    Reset(u8),
    /// Folds a value into accumulator `acc`.
    Fold {
        acc: u8,
        value: Fx,
    },
    /// Folds `value` into accumulator `acc` where `keep` holds (always without one), as
    /// [`Stmt::Fold`] does, but written without branches: the accumulator's rule as selects
    /// (one `exp` for [`Acc::LogSumExp`]). How a program folds the lanes of a [`Stmt::Load4`],
    /// masking those outside its range, so that a loop over texels stays one basic block for
    /// the shader compiler (llvmpipe's LLVM took minutes over loops of `if` chains).
    FoldLane {
        acc: u8,
        value: Fx,
        keep: Option<Cond>,
    },
    If {
        cond: Cond,
        body: Vec<Stmt>,
    },
    /// Reports that the data is invalid (a bad index), as bit `1 << code` of the device's
    /// status word where the backend has one (WebGPU: the next readback fails, naming the op);
    /// the output element still gets a value. The CPU vets the data before it runs a program
    /// and WebGL in a pass of its own, so for them reaching it is an error / nothing.
    Fault(u8),
}

/// A program: computes element [`Ix::Elem`] of its output as `out` after running `body`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Program {
    /// Unique name (cache keys, pass labels).
    pub name: &'static str,
    /// Names of the inputs (the GLSL samplers are `u_NAME`, the WGSL buffers `NAME`).
    pub inputs: Vec<&'static str>,
    /// Names of the integer parameters, in order ([`Ix::Param`]; the GLSL uniforms `u_NAME`).
    pub params: Vec<&'static str>,
    /// The accumulators, numbered from 0.
    pub accs: Vec<Acc>,
    pub body: Vec<Stmt>,
    pub out: Fx,
}

impl Program {
    /// The number of parameter `name`, if the program has one.
    pub fn param(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| *p == name)
    }

    /// Whether the program can raise a [`Stmt::Fault`] (a backend binds its status word).
    pub fn faults(&self) -> bool {
        fn any(body: &[Stmt]) -> bool {
            body.iter().any(|s| match s {
                Stmt::Fault(_) => true,
                Stmt::For { body, .. } | Stmt::If { body, .. } => any(body),
                _ => false,
            })
        }
        any(&self.body)
    }
}

// Builders, so programs read as arithmetic.

impl Ix {
    fn bin(op: IxOp, a: Ix, b: Ix) -> Ix {
        Ix::Bin(op, Box::new(a), Box::new(b))
    }
    pub fn min(self, o: Ix) -> Ix {
        Ix::bin(IxOp::Min, self, o)
    }
    pub fn max(self, o: Ix) -> Ix {
        Ix::bin(IxOp::Max, self, o)
    }
}

impl Fx {
    pub fn lit(v: f32) -> Fx {
        Fx::Lit(v.to_bits())
    }
    pub fn load(input: u8, at: Ix) -> Fx {
        Fx::Load { input, at }
    }
    pub fn int(i: Ix) -> Fx {
        Fx::Int(i)
    }
    pub fn eq(self, o: Fx) -> Cond {
        Cond::FEq(self, o)
    }
    /// [`Cond::FGt`]: `self > o`.
    pub fn gt(self, o: Fx) -> Cond {
        Cond::FGt(self, o)
    }
    /// [`Cond::Index`]: `self` is an index into `0..limit`.
    pub fn is_index(self, limit: Ix) -> Cond {
        Cond::Index { value: self, limit }
    }
}

impl Ix {
    /// [`Cond::Lt`]: `self < o`.
    pub fn lt(self, o: Ix) -> Cond {
        Cond::Lt(self, o)
    }
}

impl Cond {
    /// [`Cond::And`].
    pub fn and(self, o: Cond) -> Cond {
        Cond::And(Box::new(self), Box::new(o))
    }
}

macro_rules! ix_op {
    ($($trait:ident $method:ident $op:ident),*) => {$(
        impl std::ops::$trait for Ix {
            type Output = Ix;
            fn $method(self, o: Ix) -> Ix {
                Ix::bin(IxOp::$op, self, o)
            }
        }
    )*};
}
ix_op!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);

/// `a % b` for `a >= 0`, `b > 0`, as `a - (a / b) * b` (no remainder operation of its own).
impl std::ops::Rem for Ix {
    type Output = Ix;
    fn rem(self, o: Ix) -> Ix {
        self.clone().sub(self.div(o.clone()).mul(o))
    }
}

impl std::ops::Div for Fx {
    type Output = Fx;
    fn div(self, o: Fx) -> Fx {
        Fx::Bin(FxOp::Div, Box::new(self), Box::new(o))
    }
}
