//! im2col and col2im (programs rendered from `pixelgrad_core::kernel::columns`; col2im as a
//! gather over the windows covering each pixel, so no two fragments ever write the same
//! output), the depthwise convolution (`kernel::convolutions`) and the window programs
//! (`kernel::windows`: pooling, which reads its windows directly, and its gradients, which
//! gather like col2im).

use std::rc::Rc;

use pixelgrad_core::kernel::columns::ColumnProgram;
use pixelgrad_core::kernel::convolutions::ConvProgram;
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::windows::{Form, WindowProgram};
use pixelgrad_core::{Result, Shape, Window};

use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// The pass of a window program (rendered from its one definition, [`crate::glsl`]): input
/// `u_x` and the geometry uniforms the program declares, by their names.
fn program_pass(which: WindowProgram, x: &GlTensor, w: Window, h: usize, wd: usize, oh: usize, ow: usize) -> Pass<'_> {
    geometry(Pass::new(which.name(), which.name(), 0).input("u_x", x), w, h, wd, oh, ow)
}

/// The pass of a column program: its input `u_x` and the geometry uniforms.
fn column_pass(which: ColumnProgram, x: &GlTensor, w: Window, h: usize, wd: usize, oh: usize, ow: usize) -> Pass<'_> {
    geometry(Pass::new(which.name(), which.name(), 0).input("u_x", x), w, h, wd, oh, ow)
}

/// Whether `which` has a hand-written fast path in this mode's GLSL version (its configs
/// beyond 0, [`crate::glsl::configs`]: GLSL ES 3.00 only).
fn fast_path(sh: &Shared, which: KernelProgram) -> bool {
    crate::glsl::configs(which, sh.features.version) > 1
}

/// Sets the uniforms of `pixelgrad_core::kernel::windows::WINDOW_PARAMS`.
fn geometry(mut pass: Pass<'_>, w: Window, h: usize, wd: usize, oh: usize, ow: usize) -> Pass<'_> {
    for (name, v) in UNIFORMS.into_iter().zip([h, wd, w.kh, w.kw, w.stride_h, w.stride_w, w.pad_h, w.pad_w, oh, ow]) {
        pass = pass.int(name, v);
    }
    pass
}

/// [`pixelgrad_core::Op::Window`]: any window program, rendered from its definition, one
/// element per fragment; in the `webgl1` mode its loops' trip counts are checked against their
/// constant bounds first (taps per axis, and for a gradient the covering windows per axis and
/// the work per pixel, as [`max_pool_grad`]).
pub(crate) fn window_program(
    sh: &Rc<Shared>,
    which: WindowProgram,
    ts: &[&GlTensor],
    s: &Shape,
    w: Window,
    out: &Shape,
) -> Result<GlTensor> {
    let op = which.name();
    let (h, wd) = (s.0[2], s.0[3]);
    let (oh, ow) = w.out_hw(h, wd).ok_or_else(|| sh.err(op, "window does not fit"))?;
    let (th, tw) = (taps(w.kh, h), taps(w.kw, wd));
    super::gl1::loop_bound(
        sh,
        op,
        "webgl1 window taps inside the image per axis (GLSL ES 1.00 constant bound)",
        th.max(tw),
        crate::gl1::MAX_WINDOW,
    )?;
    if which.form() == Form::PoolGrad {
        let (cy, cx) = (covering(w.kh, w.stride_h, oh), covering(w.kw, w.stride_w, ow));
        super::gl1::loop_bound(
            sh,
            op,
            "webgl1 windows covering a pixel per axis (GLSL ES 1.00 constant bound)",
            cy.max(cx),
            crate::gl1::MAX_LOOP,
        )?;
        let work = [cy, cx, th, tw].iter().fold(1usize, |a, &v| a.saturating_mul(v));
        super::gl1::loop_bound(sh, op, "webgl1 steps per pixel (covering windows x taps)", work, crate::gl1::MAX_WINDOW.pow(4))?;
    }
    let mut pass = program_pass(which, ts[0], w, h, wd, oh, ow);
    for t in ts.iter().skip(1).take(1) {
        pass = pass.input("u_b", t);
    }
    sh.run(pass, out.numel())
}

/// The uniform of each of `pixelgrad_core::kernel::windows::WINDOW_PARAMS`, in order (`u_NAME`,
/// as `crate::glsl` declares them).
const UNIFORMS: [&str; 10] = ["u_h", "u_w", "u_kh", "u_kw", "u_sh", "u_sw", "u_ph", "u_pw", "u_oh", "u_ow"];

/// [`pixelgrad_core::Op::Im2Col`]: on WebGL2 a texel at a time (`shaders/im2col_fast.glsl`,
/// CONFIG 1), on WebGL1 the rendered program.
pub(crate) fn im2col(sh: &Rc<Shared>, x: &GlTensor, s: &Shape, w: Window, out: &Shape) -> Result<GlTensor> {
    let (h, wd) = (s.0[2], s.0[3]);
    let (oh, ow) = w.out_hw(h, wd).ok_or_else(|| sh.err("im2col", "window does not fit"))?;
    let mut pass = column_pass(ColumnProgram::Im2Col, x, w, h, wd, oh, ow);
    if fast_path(sh, KernelProgram::Column(ColumnProgram::Im2Col)) {
        pass.spec.config = 1;
    }
    sh.run(pass, out.numel())
}

/// Taps of a window inside an image of `size` on one axis: at most `min(k, size)`, the trip
/// count of the window loops (over `tap_range`, shaders/header.glsl).
fn taps(k: usize, size: usize) -> usize {
    k.min(size)
}

/// Windows covering one pixel on one axis: at most `min(ceil(k / stride), o)`, the trip count
/// of the gathers' loops (col2im, max_pool_grad).
fn covering(k: usize, stride: usize, o: usize) -> usize {
    k.div_ceil(stride.max(1)).min(o)
}

pub(crate) fn col2im(sh: &Rc<Shared>, x: &GlTensor, w: Window, h: usize, wd: usize, out: &Shape) -> Result<GlTensor> {
    let (oh, ow) = w.out_hw(h, wd).ok_or_else(|| sh.err("col2im", "window does not fit"))?;
    let bound = "webgl1 col2im windows covering a pixel (GLSL ES 1.00 constant bound)";
    let n = covering(w.kh, w.stride_h, oh).max(covering(w.kw, w.stride_w, ow));
    super::gl1::loop_bound(sh, "col2im", bound, n, crate::gl1::MAX_WINDOW)?;
    let mut pass = column_pass(ColumnProgram::Col2Im, x, w, h, wd, oh, ow);
    // WebGL2: a texel at a time (`shaders/col2im_fast.glsl`), at stride 1 with no division
    // for the covering windows (CONFIG 2).
    if fast_path(sh, KernelProgram::Column(ColumnProgram::Col2Im)) {
        pass.spec.config = if (w.stride_h, w.stride_w) == (1, 1) { 2 } else { 1 };
    }
    sh.run(pass, out.numel())
}

/// [`pixelgrad_core::Op::DepthwiseConv`]: the program rendered from its one definition
/// (`pixelgrad_core::kernel::convolutions`), one output per fragment, in both modes; in the
/// `webgl1` mode its taps per axis are checked against the constant loop bound first.
pub(crate) fn depthwise(sh: &Rc<Shared>, x: &GlTensor, k: &GlTensor, s: &Shape, w: Window, out: &Shape) -> Result<GlTensor> {
    let which = ConvProgram::Depthwise;
    let (c, h, wd) = (s.0[1], s.0[2], s.0[3]);
    let bound = "webgl1 depthwise_conv taps inside the image per axis (GLSL ES 1.00 constant bound)";
    super::gl1::loop_bound(sh, which.name(), bound, taps(w.kh, h).max(taps(w.kw, wd)), crate::gl1::MAX_WINDOW)?;
    let (oh, ow) = w.out_hw(h, wd).ok_or_else(|| sh.err(which.name(), "window does not fit"))?;
    let pass = geometry(Pass::new(which.name(), which.name(), 0).input("u_x", x).input("u_k", k), w, h, wd, oh, ow);
    sh.run(pass.int("u_c", c), out.numel())
}

/// [`pixelgrad_core::Op::MaxPool`]: one window scan per output, over its taps inside the image.
pub(crate) fn max_pool(sh: &Rc<Shared>, x: &GlTensor, s: &Shape, w: Window, out: &Shape) -> Result<GlTensor> {
    let (h, wd) = (s.0[2], s.0[3]);
    let bound = "webgl1 max_pool taps inside the image per axis (GLSL ES 1.00 constant bound)";
    super::gl1::loop_bound(sh, "max_pool", bound, taps(w.kh, h).max(taps(w.kw, wd)), crate::gl1::MAX_WINDOW)?;
    let (oh, ow) = w.out_hw(h, wd).ok_or_else(|| sh.err("max_pool", "window does not fit"))?;
    let mut pass = program_pass(WindowProgram::MaxPool, x, w, h, wd, oh, ow);
    // 2x2 windows at stride 2 without padding: the four taps without loops (CONFIG 1).
    if fast_path(sh, KernelProgram::Window(WindowProgram::MaxPool))
        && (w.kh, w.kw, w.stride_h, w.stride_w, w.pad_h, w.pad_w) == (2, 2, 2, 2, 0, 0)
    {
        pass.spec.config = 1;
    }
    sh.run(pass, out.numel())
}

/// [`pixelgrad_core::Op::MaxPoolGrad`]: a gather over the windows covering each pixel, each
/// window's maximum recomputed over its taps inside the image.
pub(crate) fn max_pool_grad(sh: &Rc<Shared>, x: &GlTensor, dy: &GlTensor, s: &Shape, w: Window) -> Result<GlTensor> {
    let (h, wd) = (s.0[2], s.0[3]);
    let (oh, ow) = w.out_hw(h, wd).ok_or_else(|| sh.err("max_pool_grad", "window does not fit"))?;
    let (th, tw) = (taps(w.kh, h), taps(w.kw, wd));
    let (cy, cx) = (covering(w.kh, w.stride_h, oh), covering(w.kw, w.stride_w, ow));
    let bound = "webgl1 max_pool_grad taps inside the image per axis (GLSL ES 1.00 constant bound)";
    super::gl1::loop_bound(sh, "max_pool_grad", bound, th.max(tw), crate::gl1::MAX_WINDOW)?;
    let bound = "webgl1 max_pool_grad windows covering a pixel per axis (GLSL ES 1.00 constant bound)";
    super::gl1::loop_bound(sh, "max_pool_grad", bound, cy.max(cx), crate::gl1::MAX_LOOP)?;
    // Work per pixel: covering windows times their taps, no more than the window loops of
    // constant bound MAX_WINDOW on both axes of both could ever run (MAX_WINDOW^4).
    let work = [cy, cx, th, tw].iter().fold(1usize, |a, &v| a.saturating_mul(v));
    let bound = "webgl1 max_pool_grad steps per pixel (covering windows x taps)";
    super::gl1::loop_bound(sh, "max_pool_grad", bound, work, crate::gl1::MAX_WINDOW.pow(4))?;
    let mut pass = program_pass(WindowProgram::MaxPoolGrad, x, w, h, wd, oh, ow).input("u_b", dy);
    // 2x2 windows at stride 2 without padding: over rows of even length a texel (two pixel
    // pairs) at a time (CONFIG 1), otherwise the one window's four taps per pixel (CONFIG 2).
    let pairs = (w.kh, w.kw, w.stride_h, w.stride_w, w.pad_h, w.pad_w) == (2, 2, 2, 2, 0, 0);
    if pairs && fast_path(sh, KernelProgram::Window(WindowProgram::MaxPoolGrad)) {
        pass.spec.config = if wd % 2 == 0 && (oh, ow) == (h / 2, wd / 2) { 1 } else { 2 };
    }
    sh.run(pass, s.numel())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_uniforms_are_the_window_parameters() {
        let want: Vec<String> = pixelgrad_core::kernel::windows::WINDOW_PARAMS.iter().map(|p| format!("u_{p}")).collect();
        assert_eq!(super::UNIFORMS.to_vec(), want);
    }
}
