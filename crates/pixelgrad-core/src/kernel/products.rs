//! The matrix product, defined once (see [`super::program`]): what WebGL renders for
//! [`crate::Op::MatMul`] where no hand-written kernel measured faster.
//!
//! One output element per invocation: element `(b, m, n)` of a batch of `[M, N]` products is
//! the sum over `k` in `0..K`, in that order, of `A[b, m, k] * B[b, k, n]`, each operand read
//! through three element strides given as parameters ([`PRODUCT_PARAMS`]). A transposed
//! operand is its strides swapped, a matrix broadcast over the batch has batch stride 0, so
//! one program covers every form the op takes. Summing in `k` order from 0 is the plain loop
//! `s += a * b`: the CPU's evaluation of the program ([`super::program_eval`]) is bit for bit
//! that loop (`program_tests::product_program_is_the_plain_loop`).

use std::ops::{Add, Div, Mul, Rem};

use super::program::{Acc, Bound, Fx, FxOp, Ix, Program, Stmt, Var};

/// The parameters of [`ProductProgram::MatMul`], in [`Ix::Param`] order: the product's `M`,
/// `N` and `K`, then A's strides (batch, row `m`, column `k`) and B's (batch, row `k`, column
/// `n`), in elements.
pub const PRODUCT_PARAMS: [&str; 9] = ["m", "n", "k", "a_sb", "a_sm", "a_sk", "b_sb", "b_sk", "b_sn"];

/// A product program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProductProgram {
    /// [`crate::Op::MatMul`]: inputs `a` and `b`, output `[batch, M, N]` (flat), one bounded
    /// loop over `k` ([`Bound::Loop`]) with a [`Acc::Sum`] per output element.
    MatMul,
}

impl ProductProgram {
    pub const ALL: [ProductProgram; 1] = [ProductProgram::MatMul];

    /// The program's (and its GPU programs') name.
    pub fn name(self) -> &'static str {
        match self {
            ProductProgram::MatMul => "matmul_program",
        }
    }

    pub fn program(self) -> Program {
        match self {
            ProductProgram::MatMul => matmul(),
        }
    }
}

/// One operand as the program reads it: element `(b, r, c)` at `b * sb + r * sr + c * sc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    pub sb: i64,
    pub sr: i64,
    pub sc: i64,
}

impl Strides {
    /// The strides of a row-major `[rows, cols]` matrix (`trans` false), or of the transpose of
    /// a row-major `[cols, rows]` one (`trans`), batched `batch` times (batch stride 0 when
    /// `batch` is 1: broadcast).
    pub fn of(batch: usize, rows: usize, cols: usize, trans: bool) -> Strides {
        let sb = if batch > 1 { (rows * cols) as i64 } else { 0 };
        if trans {
            Strides { sb, sr: 1, sc: rows as i64 }
        } else {
            Strides { sb, sr: cols as i64, sc: 1 }
        }
    }
}

/// The values of [`PRODUCT_PARAMS`] for `[M, K] x [K, N]` products with A read through `a`
/// and B through `b`.
pub fn product_params(m: usize, n: usize, k: usize, a: Strides, b: Strides) -> [i64; 9] {
    [m as i64, n as i64, k as i64, a.sb, a.sr, a.sc, b.sb, b.sr, b.sc]
}

fn p(name: &str) -> Ix {
    Ix::Param(PRODUCT_PARAMS.iter().position(|n| *n == name).expect("a product parameter") as u8)
}

fn v(i: Var) -> Ix {
    Ix::Var(i)
}

/// `out[b, m, n]` = the sum over `k` in `0..K`, in order, of `A[b, m, k] * B[b, k, n]`.
fn matmul() -> Program {
    // 0 b, 1 the element within its matrix, 2 m, 3 n, 4 A's row start, 5 B's column start,
    // 6 k.
    let mn = p("m").mul(p("n"));
    let body = vec![
        Stmt::Let(0, Ix::Elem.div(mn.clone())),
        Stmt::Let(1, Ix::Elem.rem(mn)),
        Stmt::Let(2, v(1).div(p("n"))),
        Stmt::Let(3, v(1).rem(p("n"))),
        Stmt::Let(4, v(0).mul(p("a_sb")).add(v(2).mul(p("a_sm")))),
        Stmt::Let(5, v(0).mul(p("b_sb")).add(v(3).mul(p("b_sn")))),
        Stmt::For {
            var: 6,
            lo: Ix::Lit(0),
            hi: p("k"),
            bound: Bound::Loop,
            body: vec![Stmt::Fold {
                acc: 0,
                value: Fx::Bin(
                    FxOp::Mul,
                    Box::new(Fx::load(0, v(4).add(v(6).mul(p("a_sk"))))),
                    Box::new(Fx::load(1, v(5).add(v(6).mul(p("b_sk"))))),
                ),
            }],
        },
    ];
    Program { name: "matmul_program", inputs: vec!["a", "b"], params: PRODUCT_PARAMS.to_vec(), accs: vec![Acc::Sum], body, out: Fx::Acc(0) }
}
