//! The column programs, each defined once (see [`super::program`]): what the GPU backends
//! render for [`crate::Op::Im2Col`] and its adjoint [`crate::Op::Col2Im`], the two halves of a
//! convolution as a matrix product.
//!
//! Parameters: [`super::windows::WINDOW_PARAMS`] (the channel count is not one: both programs
//! run over `N * C` planes, each plane's `kh * kw` column rows contiguous). Columns are
//! `[N, C * kh * kw, OH * OW]`: row `c * kh * kw + i * kw + j`, column `oy * OW + ox` holds
//! `x[n, c, oy * sh + i - ph, ox * sw + j - pw]`, 0 in the padding.

use std::ops::{Add, Div, Mul, Sub};

use super::program::{Acc, Bound, Fx, Ix, Program, Stmt, Var};
use super::windows::{ceil_div, WINDOW_PARAMS};

/// A column program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnProgram {
    /// [`crate::Op::Im2Col`]: input `x [N, C, H, W]`, one copied tap (or 0) per output.
    Im2Col,
    /// [`crate::Op::Col2Im`] as a gather, so no two invocations write one element: input
    /// `x`, the columns `[N, C * kh * kw, OH * OW]`; each pixel sums the column entries of the windows
    /// covering it in ascending `(i, j)` order (the order of the CPU's scatter).
    Col2Im,
}

impl ColumnProgram {
    pub const ALL: [ColumnProgram; 2] = [ColumnProgram::Im2Col, ColumnProgram::Col2Im];

    /// The program's (and its GPU programs') name.
    pub fn name(self) -> &'static str {
        match self {
            ColumnProgram::Im2Col => "im2col",
            ColumnProgram::Col2Im => "col2im",
        }
    }

    pub fn program(self) -> Program {
        match self {
            ColumnProgram::Im2Col => im2col(),
            ColumnProgram::Col2Im => col2im(),
        }
    }
}

fn p(name: &str) -> Ix {
    Ix::Param(WINDOW_PARAMS.iter().position(|n| *n == name).expect("a window parameter") as u8)
}

fn v(i: Var) -> Ix {
    Ix::Var(i)
}

fn lit(i: i32) -> Ix {
    Ix::Lit(i)
}

/// `out[plane, i * kw + j, oy * ow + ox] = x[plane, oy * sh + i - ph, ox * sw + j - pw]`, 0
/// outside the image.
fn im2col() -> Program {
    // 0 plane, 1 rest, 2 row, 3 position, 4 i, 5 j, 6 oy, 7 ox, 8 y, 9 x.
    let ohw = p("oh").mul(p("ow"));
    let body = vec![
        Stmt::Let(0, Ix::Elem.div(p("kh").mul(p("kw")).mul(ohw.clone()))),
        Stmt::Let(1, Ix::Elem.sub(v(0).mul(p("kh").mul(p("kw")).mul(ohw.clone())))),
        Stmt::Let(2, v(1).div(ohw.clone())),
        Stmt::Let(3, v(1).sub(v(2).mul(ohw))),
        Stmt::Let(4, v(2).div(p("kw"))),
        Stmt::Let(5, v(2).sub(v(4).mul(p("kw")))),
        Stmt::Let(6, v(3).div(p("ow"))),
        Stmt::Let(7, v(3).sub(v(6).mul(p("ow")))),
        Stmt::Let(8, v(6).mul(p("sh")).add(v(4)).sub(p("ph"))),
        Stmt::Let(9, v(7).mul(p("sw")).add(v(5)).sub(p("pw"))),
        Stmt::Reset(0),
        Stmt::If {
            cond: Fx::int(v(8)).is_index(p("h")),
            body: vec![Stmt::If {
                cond: Fx::int(v(9)).is_index(p("w")),
                body: vec![Stmt::Fold { acc: 0, value: Fx::load(0, v(0).mul(p("h")).add(v(8)).mul(p("w")).add(v(9))) }],
            }],
        },
    ];
    Program { name: "im2col", inputs: vec!["x"], params: WINDOW_PARAMS.to_vec(), accs: vec![Acc::Last], body, out: Fx::Acc(0) }
}

/// `dx[plane, y, x]`: with `t = y + ph`, the windows covering row `y` are those at rows `oy`
/// with `oy * sh <= t < oy * sh + kh` and `oy < oh` (at most `min(ceil(kh / sh), oh)` of them
/// however large the window), at window row `i = t - oy * sh`; likewise for columns. They are
/// visited with `oy` descending, so `i` ascends.
fn col2im() -> Program {
    // 0 plane, 1 q, 2 y, 3 ty, 4 tx, 5 row base, 6 first oy, 7 oy end, 8 first ox, 9 ox end,
    // 10 d (oy loop), 11 oy, 12 column base, 13 e (ox loop), 14 ox.
    let hw = p("h").mul(p("w"));
    let first = |t: Ix, k: &str, s: &str| ceil_div(t.add(lit(1)).sub(p(k)).max(lit(0)), p(s));
    let last = |t: Ix, s: &str, o: &str| t.div(p(s)).add(lit(1)).min(p(o));
    let ohw = p("oh").mul(p("ow"));
    let at = v(12).add(v(4).sub(v(14).mul(p("sw")))).mul(ohw).add(v(11).mul(p("ow"))).add(v(14));
    let body = vec![
        Stmt::Let(0, Ix::Elem.div(hw.clone())),
        Stmt::Let(1, Ix::Elem.sub(v(0).mul(hw))),
        Stmt::Let(2, v(1).div(p("w"))),
        Stmt::Let(3, v(2).add(p("ph"))),
        Stmt::Let(4, v(1).sub(v(2).mul(p("w"))).add(p("pw"))),
        Stmt::Let(5, v(0).mul(p("kh")).mul(p("kw"))),
        Stmt::Let(6, first(v(3), "kh", "sh")),
        Stmt::Let(7, last(v(3), "sh", "oh")),
        Stmt::Let(8, first(v(4), "kw", "sw")),
        Stmt::Let(9, last(v(4), "sw", "ow")),
        Stmt::Reset(0),
        Stmt::For {
            var: 10,
            lo: v(6),
            hi: v(7),
            bound: Bound::Loop,
            body: vec![
                Stmt::Let(11, v(6).add(v(7)).sub(lit(1)).sub(v(10))),
                Stmt::Let(12, v(5).add(v(3).sub(v(11).mul(p("sh"))).mul(p("kw")))),
                Stmt::For {
                    var: 13,
                    lo: v(8),
                    hi: v(9),
                    bound: Bound::Loop,
                    body: vec![Stmt::Let(14, v(8).add(v(9)).sub(lit(1)).sub(v(13))), Stmt::Fold { acc: 0, value: Fx::load(0, at) }],
                },
            ],
        },
    ];
    Program { name: "col2im", inputs: vec!["x"], params: WINDOW_PARAMS.to_vec(), accs: vec![Acc::Sum], body, out: Fx::Acc(0) }
}
