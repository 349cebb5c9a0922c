//! Reductions as multi-pass trees: each pass combines up to [`GROUP`] consecutive elements
//! along the axis, so a sum of n values takes ceil(log_16 n) passes and every partial sum
//! adds at most 16 terms (which also keeps f32 rounding error low on long sums).

use std::rc::Rc;

use pixelgrad_core::{ReduceOp, Result, Shape};

use super::split_axis;
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// Elements combined per output in one pass.
pub(crate) const GROUP: usize = 16;

const SUM: u32 = 0;
const MAX: u32 = 1;
const MIN: u32 = 2;
const FIRST_EQUAL: u32 = 3;

pub(crate) fn reduce(sh: &Rc<Shared>, op: ReduceOp, x: &GlTensor, shape: &Shape, axis: usize) -> Result<GlTensor> {
    let (outer, n, inner) = split_axis(&shape.0, axis);
    reduce_axis(sh, op, x, outer, n, inner)
}

/// Reduces `x` viewed as `[outer, n, inner]` over the middle axis into `[outer, 1, inner]`.
pub(crate) fn reduce_axis(sh: &Rc<Shared>, op: ReduceOp, x: &GlTensor, outer: usize, n: usize, inner: usize) -> Result<GlTensor> {
    match op {
        ReduceOp::Sum => tree(sh, SUM, x, outer, n, inner),
        ReduceOp::Max => tree(sh, MAX, x, outer, n, inner),
        ReduceOp::Min => tree(sh, MIN, x, outer, n, inner),
        ReduceOp::ArgMax => {
            // Max tree first, then the first index per group that hits the maximum (3e38 when
            // none does), then a min tree over those candidates: the first maximum overall.
            let best = tree(sh, MAX, x, outer, n, inner)?;
            let m = n.div_ceil(GROUP);
            let pass = Pass::new("reduce", "reduce", FIRST_EQUAL)
                .input("u_x", x)
                .input("u_best", &best)
                .int("u_n", n)
                .int("u_m", m)
                .int("u_inner", inner)
                .int("u_group", GROUP);
            let cand = sh.run(pass, outer * m * inner)?;
            if m == 1 {
                Ok(cand)
            } else {
                tree(sh, MIN, &cand, outer, m, inner)
            }
        }
    }
}

fn tree(sh: &Rc<Shared>, config: u32, x: &GlTensor, outer: usize, mut n: usize, inner: usize) -> Result<GlTensor> {
    // Each pass reads the previous pass's texture and renders into a fresh pooled one; the
    // previous one goes back to the pool as soon as it is consumed (ping-pong).
    let mut cur: Option<GlTensor> = None;
    loop {
        let m = n.div_ceil(GROUP);
        let src = cur.as_ref().unwrap_or(x);
        let pass = Pass::new("reduce", "reduce", config)
            .input("u_x", src)
            .int("u_n", n)
            .int("u_m", m)
            .int("u_inner", inner)
            .int("u_group", GROUP);
        let next = sh.run(pass, outer * m * inner)?;
        cur = Some(next);
        n = m;
        if m == 1 {
            break;
        }
    }
    cur.ok_or_else(|| sh.err("reduce", "internal: empty reduction tree"))
}
