//! What every matmul path shares (`matmul.rs`, `matmul_block.rs`, the reductions that take a
//! matmul's epilogue): operands seen as strided batches of matrices, their repacking into the
//! aligned form the packed kernels read, and the draw that stores the product with its
//! epilogue.

use std::rc::Rc;

use pixelgrad_core::{Result, Shape};

use super::elementwise::FusedRead;
use crate::context::Shared;
use crate::dialect::{epilogue_config, ProgramSpec, MATMUL_EPI, MATMUL_UNBLOCK_EPI};
use crate::launch::Pass;
use crate::texture::GlTensor;

/// One operand seen as a batch of logical matrices `rows x cols`: element (b, r, c) sits at
/// `b*sb + r*sr + c*sc` of its storage (sb = 0 broadcasts a single matrix over the batch).
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub batch: usize,
    pub rows: usize,
    pub cols: usize,
    pub sb: i64,
    pub sr: i64,
    pub sc: i64,
}

impl View {
    /// The logical (possibly transposed) matrix of a rank-2 or rank-3 shape.
    pub(super) fn of(s: &Shape, trans: bool) -> View {
        let r = s.rank();
        let (d0, d1) = (s.0[r - 2], s.0[r - 1]);
        let batch = if r == 3 { s.0[0] } else { 1 };
        let sb = if batch > 1 { (d0 * d1) as i64 } else { 0 };
        if trans {
            View { batch, rows: d1, cols: d0, sb, sr: 1, sc: d1 as i64 }
        } else {
            View { batch, rows: d0, cols: d1, sb, sr: d1 as i64, sc: 1 }
        }
    }

    /// The same matrices with rows and columns swapped (no data moves).
    pub(super) fn t(self) -> View {
        View { rows: self.cols, cols: self.rows, sr: self.sc, sc: self.sr, ..self }
    }

    /// Rows that are contiguous and start on a texel: what the kernel reads 4 at a time.
    pub(super) fn rows_aligned(&self) -> bool {
        self.sc == 1 && self.sr % 4 == 0 && self.sb % 4 == 0
    }
}

/// `pass` with the strides of both operands as the strided readers name them: A's
/// `u_a_sb`, `u_a_sm`, `u_a_sk` from `va` ([M, K]) and B's `u_b_sb`, `u_b_sk`, `u_b_sn` from
/// `vb` ([K, N]).
pub(super) fn with_strides<'a>(pass: Pass<'a>, va: &View, vb: &View) -> Pass<'a> {
    pass.sint("u_a_sb", va.sb).sint("u_a_sm", va.sr).sint("u_a_sk", va.sc).sint("u_b_sb", vb.sb).sint("u_b_sk", vb.sr).sint("u_b_sn", vb.sc)
}

/// Copies `v` of `x` into a fresh texture in the aligned form: `[batch, rows, cols4]` with
/// `cols4 = cols` rounded up to a multiple of 4 and zeros in the padding.
pub(super) fn pack(sh: &Rc<Shared>, x: &GlTensor, v: View) -> Result<(GlTensor, View)> {
    let cols4 = v.cols.div_ceil(4) * 4;
    let pass = Pass::new("matmul", "matmul_pack", 0)
        .input("u_x", x)
        .int("u_r", v.rows)
        .int("u_c", v.cols)
        .int("u_c4", cols4)
        .sint("u_sb", v.sb)
        .sint("u_sr", v.sr)
        .sint("u_sc", v.sc);
    let t = sh.run(pass, v.batch * v.rows * cols4)?;
    let sb = if v.batch > 1 { (v.rows * cols4) as i64 } else { 0 };
    Ok((t, View { sb, sr: cols4 as i64, sc: 1, ..v }))
}

/// A pending elementwise computation drawn in the pass that stores the product (see
/// `dialect::MATMUL_EPI`): the read of its inputs other than the product, and which kernel
/// input the product is.
pub(crate) struct Epilogue<'a> {
    pub read: FusedRead<'a>,
    pub given: usize,
}

/// Draws `pass` (the `matmul` or `matmul_unblock` pass writing the flat product of `len`
/// elements): alone, or with `epi` as its second output.
pub(super) fn store<'a>(sh: &Rc<Shared>, pass: Pass<'a>, epi: Option<&Epilogue<'a>>, len: usize) -> Result<(GlTensor, Option<GlTensor>)> {
    let Some(e) = epi else { return Ok((sh.run(pass, len)?, None)) };
    let name = if pass.spec.name == "matmul" { MATMUL_EPI } else { MATMUL_UNBLOCK_EPI };
    let spec = ProgramSpec { name, config: epilogue_config(pass.spec.config, e.given, e.read.config), kernel: e.read.kernel };
    let pass = e.read.uniforms(Pass { spec, ..pass });
    let product = sh.alloc(len, "matmul")?;
    let result = sh.alloc(len, "fused")?;
    sh.draw_many(&pass, &[&product, &result], len)?;
    Ok((product, Some(result)))
}
