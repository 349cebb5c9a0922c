//! Batched matmul: each fragment writes one texel (4 outputs). Transposes and batch
//! broadcasting are strides; a fast path is picked when the 4 outputs of a texel share a row
//! and B's rows are texel-aligned.

use std::rc::Rc;

use pixelgrad_core::{Result, Shape};

use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// Strides of an operand as (batch, row, col) where (row, col) are the logical (possibly
/// transposed) matrix axes, plus its logical (rows, cols).
fn operand(s: &Shape, trans: bool) -> (i64, i64, i64, usize, usize) {
    let r = s.rank();
    let (d0, d1) = (s.0[r - 2], s.0[r - 1]);
    let batch = if r == 3 { s.0[0] } else { 1 };
    let sb = if batch > 1 { (d0 * d1) as i64 } else { 0 };
    if trans {
        (sb, 1, d1 as i64, d1, d0)
    } else {
        (sb, d1 as i64, 1, d0, d1)
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul(
    sh: &Rc<Shared>,
    a: &GlTensor,
    b: &GlTensor,
    sa: &Shape,
    sb: &Shape,
    trans_a: bool,
    trans_b: bool,
    out: &Shape,
) -> Result<GlTensor> {
    let (a_sb, a_sm, a_sk, m, k) = operand(sa, trans_a);
    let (b_sb, b_sk, b_sn, _, n) = operand(sb, trans_b);
    let b_rows_aligned = n % 4 == 0 && b_sn == 1 && b_sk % 4 == 0 && b_sb % 4 == 0;
    let a_rows_aligned = a_sk == 1 && k % 4 == 0 && a_sm % 4 == 0 && a_sb % 4 == 0;
    let config = match (b_rows_aligned, a_rows_aligned) {
        (true, true) => 2,
        (true, false) => 1,
        _ => 0,
    };
    let pass = Pass::new("matmul", "matmul", config)
        .input("u_a", a)
        .input("u_b", b)
        .int("u_m", m)
        .int("u_n", n)
        .int("u_k", k)
        .sint("u_a_sb", a_sb)
        .sint("u_a_sm", a_sm)
        .sint("u_a_sk", a_sk)
        .sint("u_b_sb", b_sb)
        .sint("u_b_sk", b_sk)
        .sint("u_b_sn", b_sn);
    sh.run(pass, out.numel())
}
