//! The window programs, each defined once (see [`super::program`]): what every GPU backend
//! renders for [`crate::Op::MaxPool`] and [`crate::Op::MaxPoolGrad`], and what the CPU
//! evaluates against them in the tests.
//!
//! Geometry parameters, in this order: `h, w` (input image), `kh, kw` (window), `sh, sw`
//! (stride), `ph, pw` (padding), `oh, ow` (output image). Tensors are NCHW; the element index
//! runs over `N * C` planes.

use std::ops::{Add, Div, Mul, Sub};

use super::program::{Acc, Bound, Fx, Ix, Program, Stmt, Var};
// The programs' names and shapes belong to the op set (`Op::Window` names one).
pub use crate::window_program::{Form, WindowProgram};

/// The geometry parameters, in [`Ix::Param`] order.
pub const WINDOW_PARAMS: [&str; 10] = ["h", "w", "kh", "kw", "sh", "sw", "ph", "pw", "oh", "ow"];

impl WindowProgram {
    /// The program itself, in the kernel IR.
    pub fn program(self) -> Program {
        match self {
            WindowProgram::MaxPool => max_pool(),
            WindowProgram::MaxPoolGrad => max_pool_grad(),
            WindowProgram::AvgPool => avg_pool(),
            WindowProgram::AvgPoolGrad => avg_pool_grad(),
        }
    }
}

/// The values of [`WINDOW_PARAMS`] for images `h` x `w` under `win`, or `None` when the window
/// does not fit.
pub fn window_params(h: usize, w: usize, win: &crate::Window) -> Option<[usize; 10]> {
    let (oh, ow) = win.out_hw(h, w)?;
    Some([h, w, win.kh, win.kw, win.stride_h, win.stride_w, win.pad_h, win.pad_w, oh, ow])
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

/// Folds the taps of window `(oy, ox)` of the plane starting at `base` of input 0 inside the
/// image into accumulator `acc`, in `(i, j)` order: rows `ky` with `0 <= ys + ky < h`, columns
/// likewise (at most `min(k, size)` per axis however large the window or its padding).
/// Uses variables `first..first + 5`.
fn window_taps(first: Var, base: Ix, oy: Ix, ox: Ix, acc: u8) -> Vec<Stmt> {
    window_taps_of(first, base, oy, ox, acc, |at, _, _| Fx::load(0, at))
}

/// [`window_taps`] folding `value(at, ky, kx)` for the tap at window row `ky`, column `kx`,
/// element `at` of input 0 (the depthwise convolution multiplies it by its weight).
pub(super) fn window_taps_of(first: Var, base: Ix, oy: Ix, ox: Ix, acc: u8, value: impl Fn(Ix, Ix, Ix) -> Fx) -> Vec<Stmt> {
    let (ys, xs, ky, row, kx) = (first, first + 1, first + 2, first + 3, first + 4);
    vec![
        Stmt::Let(ys, oy.mul(p("sh")).sub(p("ph"))),
        Stmt::Let(xs, ox.mul(p("sw")).sub(p("pw"))),
        Stmt::Reset(acc),
        Stmt::For {
            var: ky,
            lo: lit(0).max(lit(0).sub(v(ys))).min(p("kh")),
            hi: p("kh").min(p("h").sub(v(ys))),
            bound: Bound::Window,
            body: vec![
                Stmt::Let(row, base.add(v(ys).add(v(ky)).mul(p("w"))).add(v(xs))),
                Stmt::For {
                    var: kx,
                    lo: lit(0).max(lit(0).sub(v(xs))).min(p("kw")),
                    hi: p("kw").min(p("w").sub(v(xs))),
                    bound: Bound::Window,
                    body: vec![Stmt::Fold { acc, value: value(v(row).add(v(kx)), v(ky), v(kx)) }],
                },
            ],
        },
    ]
}

/// The prologue of a program over window outputs `[planes, oh, ow]` of `[planes, h, w]`
/// images: variable 0 the plane, 1 the position in it, 2 `oy`, 3 `ox`, 4 the plane's first
/// input element.
pub(super) fn output_position() -> Vec<Stmt> {
    let ohw = p("oh").mul(p("ow"));
    vec![
        Stmt::Let(0, Ix::Elem.div(ohw.clone())),
        Stmt::Let(1, Ix::Elem.sub(v(0).mul(ohw))),
        Stmt::Let(2, v(1).div(p("ow"))),
        Stmt::Let(3, v(1).sub(v(2).mul(p("ow")))),
        Stmt::Let(4, v(0).mul(p("h")).mul(p("w"))),
    ]
}

/// `out[plane, oy, ox]` = the maximum of the window's taps inside the image (a later tap
/// replaces the running maximum only if greater).
fn max_pool() -> Program {
    // 0 plane, 1 p, 2 oy, 3 ox, 4 base, 5.. the window.
    let mut body = output_position();
    body.extend(window_taps(5, v(4), v(2), v(3), 0));
    Program { name: "max_pool", inputs: vec!["x"], params: WINDOW_PARAMS.to_vec(), accs: vec![Acc::MaxTies], body, out: Fx::Acc(0) }
}

/// `ceil(a / s)` for `a >= 0`, `s > 0`, without adding `s - 1` to `a` (a stride may be large):
/// `min(a, 1) * ((a - 1) / s + 1)` (for `a = 0` the quotient of `-1` is multiplied by 0).
pub(super) fn ceil_div(a: Ix, s: Ix) -> Ix {
    a.clone().min(lit(1)).mul(a.sub(lit(1)).div(s).add(lit(1)))
}

/// `dx[plane, y, x]`: every window covering the pixel, in ascending `(oy, ox)` order,
/// recomputes its maximum and tie count and passes `dy / ties` where the pixel equals it.
fn max_pool_grad() -> Program {
    // 0 plane, 1 q, 2 y, 3 ty, 4 tx, 5 base, 6 oy, 7 ox, 8.. the window; float 20: x at the pixel.
    let hw = p("h").mul(p("w"));
    let first = |t: Ix, k: &str, s: &str| ceil_div(t.add(lit(1)).sub(p(k)).max(lit(0)), p(s));
    let last = |t: Ix, s: &str, o: &str| t.div(p(s)).add(lit(1)).min(p(o));
    let dy = Fx::load(1, v(0).mul(p("oh")).add(v(6)).mul(p("ow")).add(v(7)));
    let mut window = window_taps(8, v(5), v(6), v(7), 1);
    window.push(Stmt::If { cond: Fx::Var(20).eq(Fx::Acc(1)), body: vec![Stmt::Fold { acc: 0, value: dy.div(Fx::Ties(1)) }] });
    let body = vec![
        Stmt::Let(0, Ix::Elem.div(hw.clone())),
        Stmt::Let(1, Ix::Elem.sub(v(0).mul(hw.clone()))),
        Stmt::Let(2, v(1).div(p("w"))),
        Stmt::Let(3, v(2).add(p("ph"))),
        Stmt::Let(4, v(1).sub(v(2).mul(p("w"))).add(p("pw"))),
        Stmt::Let(5, v(0).mul(hw)),
        Stmt::LetF(20, Fx::load(0, Ix::Elem)),
        Stmt::Reset(0),
        Stmt::For {
            var: 6,
            lo: first(v(3), "kh", "sh"),
            hi: last(v(3), "sh", "oh"),
            bound: Bound::Loop,
            body: vec![Stmt::For { var: 7, lo: first(v(4), "kw", "sw"), hi: last(v(4), "sw", "ow"), bound: Bound::Loop, body: window }],
        },
    ];
    Program {
        name: "max_pool_grad",
        inputs: vec!["x", "b"],
        params: WINDOW_PARAMS.to_vec(),
        accs: vec![Acc::Sum, Acc::MaxTies],
        body,
        out: Fx::Acc(0),
    }
}

/// `out[plane, oy, ox]` = the sum of the window's taps inside the image over `kh * kw`.
fn avg_pool() -> Program {
    // 0 plane, 1 p, 2 oy, 3 ox, 4 base, 5.. the window.
    let mut body = output_position();
    body.extend(window_taps(5, v(4), v(2), v(3), 0));
    let out = Fx::Acc(0).div(Fx::int(p("kh").mul(p("kw"))));
    Program { name: "avg_pool", inputs: vec!["x"], params: WINDOW_PARAMS.to_vec(), accs: vec![Acc::Sum], body, out }
}

/// `dx[plane, y, x]`: the sum, over the windows covering the pixel in ascending `(oy, ox)`
/// order, of `dy / (kh * kw)`.
fn avg_pool_grad() -> Program {
    // 0 plane, 1 q, 2 y, 3 ty, 4 tx, 5 kk, 6 oy, 7 ox.
    let hw = p("h").mul(p("w"));
    let first = |t: Ix, k: &str, s: &str| ceil_div(t.add(lit(1)).sub(p(k)).max(lit(0)), p(s));
    let last = |t: Ix, s: &str, o: &str| t.div(p(s)).add(lit(1)).min(p(o));
    let dy = Fx::load(1, v(0).mul(p("oh")).add(v(6)).mul(p("ow")).add(v(7)));
    let body = vec![
        Stmt::Let(0, Ix::Elem.div(hw.clone())),
        Stmt::Let(1, Ix::Elem.sub(v(0).mul(hw))),
        Stmt::Let(2, v(1).div(p("w"))),
        Stmt::Let(3, v(2).add(p("ph"))),
        Stmt::Let(4, v(1).sub(v(2).mul(p("w"))).add(p("pw"))),
        Stmt::LetF(5, Fx::int(p("kh").mul(p("kw")))),
        Stmt::Reset(0),
        Stmt::For {
            var: 6,
            lo: first(v(3), "kh", "sh"),
            hi: last(v(3), "sh", "oh"),
            bound: Bound::Loop,
            body: vec![Stmt::For {
                var: 7,
                lo: first(v(4), "kw", "sw"),
                hi: last(v(4), "sw", "ow"),
                bound: Bound::Loop,
                body: vec![Stmt::Fold { acc: 0, value: dy.div(Fx::Var(5)) }],
            }],
        },
    ];
    Program { name: "avg_pool_grad", inputs: vec!["x", "b"], params: WINDOW_PARAMS.to_vec(), accs: vec![Acc::Sum], body, out: Fx::Acc(0) }
}
