//! Gather and scatter-add: the index programs rendered from their one definition
//! (`pixelgrad_core::kernel::indexing`, through [`crate::glsl`]). Scatter-add is written as a
//! gather (each output loops over the source positions of its column and sums those whose
//! index hits it), so it needs neither atomics nor float blending. A fragment cannot report a
//! bad index, so each op also renders a check of its indices ([`crate::checks`]).

use std::rc::Rc;

use pixelgrad_core::kernel::indexing::{gather_params, scatter_add_params, IndexProgram};
use pixelgrad_core::{Result, Shape};

use super::split_axis;
use crate::checks::Check;
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// The samplers and uniforms of each index program, in its `inputs` and `params` order
/// (`u_NAME`, as `crate::glsl` declares them; the test below holds them to the definitions).
const GATHER: ([&str; 2], [&str; 3]) = (["u_x", "u_idx"], ["u_len_x", "u_len_idx", "u_inner"]);
const SCATTER_ADD: ([&str; 2], [&str; 3]) = (["u_src", "u_idx"], ["u_size", "u_len", "u_inner"]);

fn names(which: IndexProgram) -> ([&'static str; 2], [&'static str; 3]) {
    match which {
        IndexProgram::Gather => GATHER,
        IndexProgram::ScatterAdd => SCATTER_ADD,
    }
}

/// The pass of `which` over inputs `ins` with parameters `params`.
fn program_pass<'a>(which: IndexProgram, ins: [&'a GlTensor; 2], params: [usize; 3]) -> Pass<'a> {
    let (inputs, uniforms) = names(which);
    let mut pass = Pass::new(which.name(), which.name(), 0);
    for (name, t) in inputs.into_iter().zip(ins) {
        pass = pass.input(name, t);
    }
    for (name, v) in uniforms.into_iter().zip(params) {
        pass = pass.int(name, v);
    }
    pass
}

/// Renders a 1-element flag: non-zero if any index is NaN, fractional or outside `0..bound`.
fn index_check(sh: &Rc<Shared>, op: &'static str, idx: &GlTensor, n: usize, bound: usize, axis: usize) -> Result<()> {
    let bad = sh.run(Pass::new(op, "check_index", 0).input("u_idx", idx).int("u_bound", bound), n)?;
    let flag = super::reduce_axis(sh, pixelgrad_core::ReduceOp::Max, &bad, 1, n.max(1), 1)?;
    let msg = format!("an index is out of range 0..{bound} on axis {axis} (or is not a whole number)");
    sh.push_check(Check { flag, op, msg, parts: Vec::new() })
}

pub(crate) fn gather(sh: &Rc<Shared>, x: &GlTensor, idx: &GlTensor, sx: &Shape, si: &Shape, axis: usize) -> Result<GlTensor> {
    let pass = program_pass(IndexProgram::Gather, [x, idx], gather_params(&sx.0, &si.0, axis));
    let out = sh.run(pass, si.numel())?;
    if si.numel() > 0 {
        index_check(sh, "gather", idx, si.numel(), sx.0[axis], axis)?;
    }
    Ok(out)
}

pub(crate) fn scatter_add(sh: &Rc<Shared>, src: &GlTensor, idx: &GlTensor, s: &Shape, axis: usize, size: usize) -> Result<GlTensor> {
    let (outer, j, inner) = split_axis(&s.0, axis);
    super::gl1::loop_bound(sh, "scatter_add", "webgl1 scatter_add loop (GLSL ES 1.00 constant bound)", j, crate::gl1::MAX_LOOP)?;
    let pass = program_pass(IndexProgram::ScatterAdd, [src, idx], scatter_add_params(&s.0, axis, size));
    let out = sh.run(pass, outer * size * inner)?;
    if s.numel() > 0 {
        index_check(sh, "scatter_add", idx, s.numel(), size, axis)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_names_are_the_programs_inputs_and_params() {
        for which in IndexProgram::ALL {
            let (p, (inputs, uniforms)) = (which.program(), names(which));
            let want: Vec<String> = p.inputs.iter().chain(&p.params).map(|n| format!("u_{n}")).collect();
            let got: Vec<String> = inputs.iter().chain(&uniforms).map(|n| n.to_string()).collect();
            assert_eq!(got, want, "{}", which.name());
        }
    }
}
