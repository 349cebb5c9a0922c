//! Gather and scatter-add. Scatter-add is written as a gather (each output loops over the
//! source positions of its column and sums those whose index hits it), so it needs neither
//! atomics nor float blending.

use std::rc::Rc;

use pixelgrad_core::{Result, Shape};

use super::split_axis;
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

pub(crate) fn gather(sh: &Rc<Shared>, x: &GlTensor, idx: &GlTensor, sx: &Shape, si: &Shape, axis: usize) -> Result<GlTensor> {
    let (_, j, inner) = split_axis(&si.0, axis);
    let pass = Pass::new("gather", "gather", 0)
        .input("u_x", x)
        .input("u_idx", idx)
        .int("u_inner", inner)
        .int("u_j", j)
        .int("u_a", sx.0[axis]);
    sh.run(pass, si.numel())
}

pub(crate) fn scatter_add(sh: &Rc<Shared>, src: &GlTensor, idx: &GlTensor, s: &Shape, axis: usize, size: usize) -> Result<GlTensor> {
    let (outer, j, inner) = split_axis(&s.0, axis);
    let pass = Pass::new("scatter_add", "scatter_add", 0)
        .input("u_src", src)
        .input("u_idx", idx)
        .int("u_inner", inner)
        .int("u_j", j)
        .int("u_s", size);
    sh.run(pass, outer * size * inner)
}
