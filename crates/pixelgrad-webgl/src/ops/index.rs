//! Gather and scatter-add. Scatter-add is written as a gather (each output loops over the
//! source positions of its column and sums those whose index hits it), so it needs neither
//! atomics nor float blending.

use std::rc::Rc;

use pixelgrad_core::{Result, Shape};

use super::split_axis;
use crate::checks::Check;
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// Renders a 1-element flag: non-zero if any index is NaN, fractional or outside `0..bound`.
fn index_check(sh: &Rc<Shared>, op: &'static str, idx: &GlTensor, n: usize, bound: usize, axis: usize) -> Result<()> {
    let bad = sh.run(Pass::new(op, "check_index", 0).input("u_idx", idx).int("u_bound", bound), n)?;
    let flag = super::reduce_axis(sh, pixelgrad_core::ReduceOp::Max, &bad, 1, n.max(1), 1)?;
    let msg = format!("an index is out of range 0..{bound} on axis {axis} (or is not a whole number)");
    sh.push_check(Check { flag, op, msg, parts: Vec::new() })
}

pub(crate) fn gather(sh: &Rc<Shared>, x: &GlTensor, idx: &GlTensor, sx: &Shape, si: &Shape, axis: usize) -> Result<GlTensor> {
    let (_, j, inner) = split_axis(&si.0, axis);
    let pass =
        Pass::new("gather", "gather", 0).input("u_x", x).input("u_idx", idx).int("u_inner", inner).int("u_j", j).int("u_a", sx.0[axis]);
    let out = sh.run(pass, si.numel())?;
    if si.numel() > 0 {
        index_check(sh, "gather", idx, si.numel(), sx.0[axis], axis)?;
    }
    Ok(out)
}

pub(crate) fn scatter_add(sh: &Rc<Shared>, src: &GlTensor, idx: &GlTensor, s: &Shape, axis: usize, size: usize) -> Result<GlTensor> {
    let (outer, j, inner) = split_axis(&s.0, axis);
    super::gl1::loop_bound(sh, "scatter_add", "webgl1 scatter_add loop (GLSL ES 1.00 constant bound)", j, crate::gl1::MAX_LOOP)?;
    let pass = Pass::new("scatter_add", "scatter_add", 0)
        .input("u_src", src)
        .input("u_idx", idx)
        .int("u_inner", inner)
        .int("u_j", j)
        .int("u_s", size);
    let out = sh.run(pass, outer * size * inner)?;
    if s.numel() > 0 {
        index_check(sh, "scatter_add", idx, s.numel(), size, axis)?;
    }
    Ok(out)
}
