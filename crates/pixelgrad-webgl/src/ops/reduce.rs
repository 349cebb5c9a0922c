//! Reductions as multi-pass trees: each pass combines a group of consecutive elements along
//! the axis. On WebGL2 a group holds up to [`MAX_GROUP`](pixelgrad_core::kernel::reductions::MAX_GROUP) elements, balanced over the fewest
//! passes (an axis of up to 1024 elements is one pass, up to 2^20 two), because every draw
//! costs far more than a fragment's loop at these sizes. WebGL1's programs have the constant
//! loop bound [`GROUP`]: ceil(log_16 n) passes there. Sums are serial within a group (about
//! sqrt(group) roundings of error growth, 1e-6 relative at 1024 terms in practice). Every
//! pass is a program rendered from its one definition (`pixelgrad_core::kernel::reductions`).

use std::rc::Rc;

use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::reductions::{tree_group, ReduceProgram};
use pixelgrad_core::{ReduceOp, Result, Shape};

use super::elementwise::FusedRead;
use super::matmul_io::Epilogue;
use super::split_axis;
use crate::context::Shared;
use crate::dialect::{epilogue_config, reduce_config, ProgramSpec, REDUCE_EPI, REDUCE_FUSED};
use crate::launch::Pass;
use crate::texture::GlTensor;

/// Elements combined per output in one pass of the `webgl1` mode (its programs' constant
/// loop bound).
pub(crate) const GROUP: usize = 16;

/// The group size of a pass over an axis of `n` elements: core's tree rule
/// ([`tree_group`]), always [`GROUP`] in the `webgl1` mode.
pub(crate) fn group_for(sh: &Shared, n: usize) -> usize {
    if sh.features.constant_loop_bounds {
        return GROUP;
    }
    tree_group(n)
}

const SUM: ReduceProgram = ReduceProgram::Sum;
const MAX: ReduceProgram = ReduceProgram::Max;
const MIN: ReduceProgram = ReduceProgram::Min;
const FIRST_EQUAL: ReduceProgram = ReduceProgram::FirstEqual;
const LOG_SUM_EXP: ReduceProgram = ReduceProgram::LogSumExp;
const ARGMAX_GROUP: ReduceProgram = ReduceProgram::ArgMax;

/// What a reduction reads: a texture, or a pending elementwise computation read straight
/// into its first pass (a fused prologue: its values are never stored).
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    Texture(&'a GlTensor),
    Fused(&'a FusedRead<'a>),
}

impl<'a> Input<'a> {
    /// A pass of `which` reading this input.
    fn pass(self, which: ReduceProgram) -> Pass<'a> {
        match self {
            Input::Texture(t) => Pass::new("reduce", KernelProgram::Reduce(which).name(), 0).input("u_x", t),
            Input::Fused(f) => {
                let spec = ProgramSpec { name: REDUCE_FUSED, config: reduce_config(which) | (f.config << 4), kernel: f.kernel };
                f.uniforms(Pass::with_spec("reduce", spec))
            }
        }
    }
}

pub(crate) fn reduce(sh: &Rc<Shared>, op: ReduceOp, x: Input<'_>, shape: &Shape, axis: usize) -> Result<GlTensor> {
    let (outer, n, inner) = split_axis(&shape.0, axis);
    reduce_input(sh, op, x, outer, n, inner)
}

/// Whether [`reduce_epilogue`] can draw an epilogue for `op` (the tree reductions).
pub(crate) fn takes_epilogue(op: ReduceOp) -> bool {
    tree_config(op).is_some()
}

fn tree_config(op: ReduceOp) -> Option<ReduceProgram> {
    match op {
        ReduceOp::Sum => Some(SUM),
        ReduceOp::Max => Some(MAX),
        ReduceOp::Min => Some(MIN),
        ReduceOp::LogSumExp => Some(LOG_SUM_EXP),
        ReduceOp::ArgMax => None,
    }
}

/// [`reduce`] with `epi` applied in its last pass as it stores the result: `(result,
/// epilogue's result)`, the latter `None` where the last pass cannot take it (it reads a
/// fused prologue, or `op` is not a tree reduction): the caller draws it then.
pub(crate) fn reduce_epilogue<'a>(
    sh: &Rc<Shared>,
    op: ReduceOp,
    x: Input<'a>,
    shape: &Shape,
    axis: usize,
    epi: Option<&Epilogue<'a>>,
) -> Result<(GlTensor, Option<GlTensor>)> {
    let (outer, n, inner) = split_axis(&shape.0, axis);
    match (tree_config(op), epi) {
        (Some(config), Some(_)) => tree(sh, config, x, outer, n, inner, epi),
        _ => Ok((reduce_input(sh, op, x, outer, n, inner)?, None)),
    }
}

/// Reduces `x` viewed as `[outer, n, inner]` over the middle axis into `[outer, 1, inner]`.
pub(crate) fn reduce_axis(sh: &Rc<Shared>, op: ReduceOp, x: &GlTensor, outer: usize, n: usize, inner: usize) -> Result<GlTensor> {
    reduce_input(sh, op, Input::Texture(x), outer, n, inner)
}

fn reduce_input(sh: &Rc<Shared>, op: ReduceOp, x: Input<'_>, outer: usize, n: usize, inner: usize) -> Result<GlTensor> {
    match op {
        ReduceOp::Sum => Ok(tree(sh, SUM, x, outer, n, inner, None)?.0),
        ReduceOp::Max => Ok(tree(sh, MAX, x, outer, n, inner, None)?.0),
        ReduceOp::Min => Ok(tree(sh, MIN, x, outer, n, inner, None)?.0),
        // Each pass takes the log-sum-exp of its group: later passes combine partial ones.
        ReduceOp::LogSumExp => Ok(tree(sh, LOG_SUM_EXP, x, outer, n, inner, None)?.0),
        // A short axis is one group: one pass finds the first maximum.
        ReduceOp::ArgMax if n <= group_for(sh, n) => {
            let pass = x.pass(ARGMAX_GROUP).int("u_n", n).int("u_m", 1).int("u_inner", inner).int("u_group", n.max(1));
            sh.run(pass, outer * inner)
        }
        ReduceOp::ArgMax => {
            // Max tree first, then the first index per group that hits the maximum (3e38 when
            // none does), then a min tree over those candidates: the first maximum overall.
            let best = tree(sh, MAX, x, outer, n, inner, None)?.0;
            let group = group_for(sh, n);
            let m = n.div_ceil(group);
            let pass = x.pass(FIRST_EQUAL).input("u_best", &best).int("u_n", n).int("u_m", m).int("u_inner", inner).int("u_group", group);
            let cand = sh.run(pass, outer * m * inner)?;
            if m == 1 {
                Ok(cand)
            } else {
                Ok(tree(sh, MIN, Input::Texture(&cand), outer, m, inner, None)?.0)
            }
        }
    }
}

/// A reduction tree; its last pass applies `epi` when it reads a texture (an epilogue and a
/// fused prologue would share uniform names): `(result, epilogue's result)`.
#[allow(clippy::too_many_arguments)]
fn tree<'a>(
    sh: &Rc<Shared>,
    which: ReduceProgram,
    x: Input<'a>,
    outer: usize,
    mut n: usize,
    inner: usize,
    epi: Option<&Epilogue<'a>>,
) -> Result<(GlTensor, Option<GlTensor>)> {
    // Each pass reads the previous pass's texture and renders into a fresh pooled one; the
    // previous one goes back to the pool as soon as it is consumed (ping-pong). Only the
    // first reads the input itself (which may be a fused read).
    let mut cur: Option<GlTensor> = None;
    loop {
        let group = group_for(sh, n);
        let m = n.div_ceil(group);
        let src = match &cur {
            Some(t) => Input::Texture(t),
            None => x,
        };
        let len = outer * m * inner;
        if let (1, Some(e), Input::Texture(t)) = (m, epi, src) {
            let config = epilogue_config(reduce_config(which), e.given, e.read.config);
            let spec = ProgramSpec { name: REDUCE_EPI, config, kernel: e.read.kernel };
            let pass =
                Pass::with_spec("reduce", spec).input("u_x", t).int("u_n", n).int("u_m", m).int("u_inner", inner).int("u_group", group);
            let pass = e.read.uniforms(pass);
            let result = sh.alloc(len, "reduce")?;
            let applied = sh.alloc(len, "fused")?;
            sh.draw_many(&pass, &[&result, &applied], len)?;
            return Ok((result, Some(applied)));
        }
        let pass = src.pass(which).int("u_n", n).int("u_m", m).int("u_inner", inner).int("u_group", group);
        let next = sh.run(pass, len)?;
        cur = Some(next);
        n = m;
        if m == 1 {
            break;
        }
    }
    Ok((cur.ok_or_else(|| sh.err("reduce", "internal: empty reduction tree"))?, None))
}
