//! The convolution programs, each defined once (see [`super::program`]): what the GPU backends
//! render for [`crate::Op::DepthwiseConv`].
//!
//! Parameters: [`super::windows::WINDOW_PARAMS`], then the channel count `c` ([`CONV_PARAMS`]).
//! The element index runs over the output's `N * C` planes of `OH * OW` positions; plane
//! `n * C + ch` reads image plane `n * C + ch` of `x` and filter `ch` of the weights.
//!
//! Its gradients are not programs: [`crate::autodiff`] writes them as im2col, a product and
//! col2im (or a sum), each of which is.

use std::ops::{Add, Mul, Rem};

use super::program::{Acc, Fx, FxOp, Ix, Program, Stmt, Var};
use super::windows::{output_position, window_taps_of};

/// The parameters of the convolution programs, in [`Ix::Param`] order: the window geometry,
/// then the channel count.
pub const CONV_PARAMS: [&str; 11] = ["h", "w", "kh", "kw", "sh", "sw", "ph", "pw", "oh", "ow", "c"];

/// A convolution program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvProgram {
    /// [`crate::Op::DepthwiseConv`]: inputs `x [N, C, H, W]` and `k [C, 1, kh, kw]`, one
    /// window scan per output element, summing `x * k` over the taps inside the image in
    /// `(i, j)` order (taps in the padding are never visited).
    Depthwise,
}

impl ConvProgram {
    pub const ALL: [ConvProgram; 1] = [ConvProgram::Depthwise];

    /// The program's (and its GPU programs') name.
    pub fn name(self) -> &'static str {
        match self {
            ConvProgram::Depthwise => "depthwise_conv",
        }
    }

    pub fn program(self) -> Program {
        match self {
            ConvProgram::Depthwise => depthwise(),
        }
    }
}

/// The values of [`CONV_PARAMS`] for `x` of dims `[N, C, H, W]` under `win`, or `None` when
/// the window does not fit (or `x` is not 4-D).
pub fn conv_params(x: &[usize], win: &crate::Window) -> Option<[usize; 11]> {
    let &[_, c, h, w] = x else { return None };
    let g = super::windows::window_params(h, w, win)?;
    let mut all = [0; 11];
    all[..10].copy_from_slice(&g);
    all[10] = c;
    Some(all)
}

fn p(name: &str) -> Ix {
    Ix::Param(CONV_PARAMS.iter().position(|n| *n == name).expect("a convolution parameter") as u8)
}

fn v(i: Var) -> Ix {
    Ix::Var(i)
}

/// `out[plane, oy, ox]` = the sum over the window's taps `(i, j)` inside the image, in that
/// order, of `x[plane, oy * sh + i - ph, ox * sw + j - pw] * k[plane % c, 0, i, j]`.
fn depthwise() -> Program {
    // 0 plane, 1 p, 2 oy, 3 ox, 4 base, 5 the filter's first tap, 6.. the window.
    let mut body = output_position();
    body.push(Stmt::Let(5, v(0).rem(p("c")).mul(p("kh").mul(p("kw")))));
    body.extend(window_taps_of(6, v(4), v(2), v(3), 0, |at, ky, kx| {
        let weight = Fx::load(1, v(5).add(ky.mul(p("kw"))).add(kx));
        Fx::Bin(FxOp::Mul, Box::new(Fx::load(0, at)), Box::new(weight))
    }));
    Program { name: "depthwise_conv", inputs: vec!["x", "k"], params: CONV_PARAMS.to_vec(), accs: vec![Acc::Sum], body, out: Fx::Acc(0) }
}
