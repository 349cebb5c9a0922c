//! The `webgl1` mode's own op paths: the strided matmul (no repacking passes, no 4-target
//! kernel) and the checks of the GLSL ES 1.00 loops' constant bounds.

use std::rc::Rc;

use pixelgrad_core::{Error, Result, Shape};

use super::matmul::View;
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// In the `webgl1` mode, fails with [`Error::Limit`] (named `limit_name`) when a loop of `n` iterations
/// exceeds the constant bound `bound` its GLSL ES 1.00 program was written with.
pub(crate) fn loop_bound(sh: &Shared, op: &'static str, limit_name: &'static str, n: usize, bound: usize) -> Result<()> {
    if sh.gl1 && n > bound {
        return Err(Error::Limit { op, backend: sh.name.clone(), limit_name, limit: bound as u64, requested: n as u64 });
    }
    Ok(())
}

/// C = A B for views `va` ([M, K] matrices) and `vb` ([K, N]), read through their strides.
pub(crate) fn matmul(sh: &Rc<Shared>, a: &GlTensor, b: &GlTensor, va: View, vb: View, out: &Shape) -> Result<GlTensor> {
    let (m, k, n) = (va.rows, va.cols, vb.cols);
    loop_bound(sh, "matmul", "webgl1 matmul K (a GLSL ES 1.00 constant loop bound)", k, crate::gl1::MAX_LOOP)?;
    let pass = Pass::new("matmul", "matmul", 0)
        .input("u_a", a)
        .input("u_b", b)
        .int("u_m", m)
        .int("u_n", n)
        .int("u_k", k)
        .sint("u_a_sb", va.sb)
        .sint("u_a_sm", va.sr)
        .sint("u_a_sk", va.sc)
        .sint("u_b_sb", vb.sb)
        .sint("u_b_sk", vb.sr)
        .sint("u_b_sn", vb.sc);
    sh.run(pass, out.numel())
}
