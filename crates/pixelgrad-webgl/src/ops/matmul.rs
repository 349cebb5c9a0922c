//! Batched matmul: each fragment writes one texel (4 outputs of the flat output layout); large
//! products go to the 4x4-block kernel of `matmul_block.rs` instead.
//!
//! The kernel (`shaders/matmul.glsl`) wants A with its k axis contiguous and every row starting
//! on a texel, and B either as rows of N (N % 4 == 0, "nn") or with its k axis contiguous too
//! ("nt", dot products). Operands in any other form (transposed A, K or N not a multiple of 4,
//! odd strides) are first repacked by one cheap O(size) pass each (`shaders/matmul_pack.glsl`)
//! into that form, zero-padding k to a multiple of 4: the O(M·N·K) loop then never divides and
//! reads whole texels only.

use std::rc::Rc;

use pixelgrad_core::{Result, Shape};

use super::matmul_io::{pack, store, with_strides, View};
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// The epilogue type, where `fusion.rs` names it.
pub(crate) use super::matmul_io::Epilogue;

/// Kernel configs (`CONFIG` in matmul.glsl).
const NN: u32 = 0;
const NT: u32 = 1;
const NT_ANY: u32 = 2;
const STRIDED: u32 = 3;
const NT_SHIFT: u32 = 4;
const NN_SHIFT: u32 = 5;

/// Largest product (batch * M * N * K multiply-adds) the strided kernel sums over its batch
/// in one draw (`STRIDED`, `u_reps`); larger ones take the block path or a reduction.
const STRIDED_MAX: usize = 1 << 18;

/// What one draw costs on a software rasteriser, in texel fetches: the strided kernel is
/// chosen over packing when its extra fetches cost less than the packing draws they save.
const DRAW_FETCHES: usize = 1 << 14;

/// Whether the strided kernel (one fetch per operand element: 2 per multiply-add) beats
/// packing `packed` elements in `packs` draws and running the packed kernel (at most 8
/// fetches per 16 multiply-adds).
fn strided_pays(macs: usize, packed: usize, packs: usize) -> bool {
    macs.saturating_mul(2) <= macs / 2 + packed + packs * DRAW_FETCHES
}

/// A `matmul.glsl` pass of `config` over `a` and `b` for an `[M, N]` product (per batch entry)
/// summing over `k`: the uniforms every config reads; the caller adds the operands' strides.
fn product_pass<'a>(config: u32, a: &'a GlTensor, b: &'a GlTensor, m: usize, n: usize, k: usize) -> Pass<'a> {
    Pass::new("matmul", "matmul", config).input("u_a", a).input("u_b", b).int("u_m", m).int("u_n", n).int("u_k", k)
}

/// The sum over the batch of a batched product `t` (`batch` matrices of `len` values), with
/// `epi` in the reduction's last pass.
fn sum_over_batch<'a>(
    sh: &Rc<Shared>,
    t: &GlTensor,
    batch: usize,
    len: usize,
    epi: Option<&Epilogue<'a>>,
) -> Result<(GlTensor, Option<GlTensor>)> {
    let shape = Shape(vec![batch, len]);
    super::reduce::reduce_epilogue(sh, pixelgrad_core::ReduceOp::Sum, super::reduce::Input::Texture(t), &shape, 0, epi)
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
    Ok(matmul_epilogue(sh, a, b, sa, sb, trans_a, trans_b, false, out, None)?.0)
}

/// [`matmul`], with `epi` (if any) applied as the product is stored: `(product, epilogue's
/// result)`. With `sum_batch` the product of a batched matmul is summed over its batch
/// (`[M, N]`: a convolution's weight gradient), in the same draws where the strided kernel or
/// the block path takes the product, else by a reduction after it. `None` for the epilogue's
/// result when this path could not apply it (the `webgl1` mode, a summed product reduced
/// after the matmul): the caller draws it then.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_epilogue<'a>(
    sh: &Rc<Shared>,
    a: &'a GlTensor,
    b: &'a GlTensor,
    sa: &Shape,
    sb: &Shape,
    trans_a: bool,
    trans_b: bool,
    sum_batch: bool,
    out: &Shape,
    epi: Option<&Epilogue<'a>>,
) -> Result<(GlTensor, Option<GlTensor>)> {
    let va = View::of(sa, trans_a);
    let vb = View::of(sb, trans_b);
    let (m, k, n) = (va.rows, va.cols, vb.cols);
    let batch = va.batch.max(vb.batch);
    let macs = batch.saturating_mul(m).saturating_mul(n).saturating_mul(k);
    if super::matmul_rendered::chosen(sh) {
        // The program rendered from the product's one definition (the only product of the
        // `webgl1` mode); a sum over the batch after.
        let t = super::matmul_rendered::product(sh, a, b, va, vb, batch * m * n)?;
        if !sum_batch || batch == 1 {
            return Ok((t, None));
        }
        return sum_over_batch(sh, &t, batch, m * n, epi);
    }
    if sum_batch && macs > STRIDED_MAX && !super::matmul_block::worth_it(sh, 1, m, n, batch * k) {
        // The batched product, then its sum over the batch (one reduction).
        let full = Shape(vec![batch, m, n]);
        let t = matmul(sh, a, b, sa, sb, trans_a, trans_b, &full)?;
        if batch == 1 {
            return Ok((t, None));
        }
        return sum_over_batch(sh, &t, batch, m * n, epi);
    }
    if sum_batch && macs > STRIDED_MAX {
        // One matrix product with the batch merged into k: k' = b*K + k.
        let merge = |v: View| View { batch: 1, cols: batch * v.cols, ..v };
        if let Some(t) = super::matmul_block::matmul(sh, a, b, merge(va), merge(vb.t()), 1, k, m * n, epi)? {
            return Ok(t);
        }
        let full = Shape(vec![batch, m, n]);
        let t = matmul(sh, a, b, sa, sb, trans_a, trans_b, &full)?;
        return sum_over_batch(sh, &t, batch, m * n, epi);
    }
    if !sum_batch && super::matmul_block::worth_it(sh, batch, m, n, k) {
        if let Some(t) = super::matmul_block::matmul(sh, a, b, va, vb.t(), batch, k, out.numel(), epi)? {
            return Ok(t);
        }
    }
    let bt = vb.t();
    let pack_a = !va.rows_aligned();
    let pack_b = !(bt.rows_aligned() || vb.rows_aligned() && n % 4 == 0);
    if !sum_batch && (pack_a || pack_b) && va.sc == 1 && bt.sc == 1 {
        // Both operands have k contiguous, only not starting rows on a texel: read in place.
        let pass =
            product_pass(NT_SHIFT, a, b, m, n, k).sint("u_a_sb", va.sb).sint("u_a_sm", va.sr).sint("u_b_sb", bt.sb).sint("u_b_sn", bt.sr);
        return store(sh, pass, epi, out.numel());
    }
    if !sum_batch && pack_a && va.sc == 1 && vb.rows_aligned() && n % 4 == 0 {
        // A has k contiguous but rows not starting on a texel, B is rows of N: read in place.
        let pass =
            product_pass(NN_SHIFT, a, b, m, n, k).sint("u_a_sb", va.sb).sint("u_a_sm", va.sr).sint("u_b_sb", vb.sb).sint("u_b_sk", vb.sr);
        return store(sh, pass, epi, out.numel());
    }
    let packed = if pack_a { va.batch * m * k } else { 0 } + if pack_b { vb.batch * k * n } else { 0 };
    if sum_batch || ((pack_a || pack_b) && strided_pays(macs, packed, usize::from(pack_a) + usize::from(pack_b))) {
        // Small: read both operands where they lie, one element per fetch, in this one pass
        // (summing the batch: each output walks its row and column in every batch entry).
        let pass = product_pass(STRIDED, a, b, m, n, k).int("u_reps", if sum_batch { batch } else { 1 });
        return store(sh, with_strides(pass, &va, &vb), epi, out.numel());
    }
    // A [M, K] with k contiguous and aligned rows, or a packed copy.
    let packed_a;
    let (ta, va) = if !pack_a {
        (a, va)
    } else {
        let (t, v) = pack(sh, a, va)?;
        packed_a = t;
        (&packed_a, v)
    };
    // B as rows of N ("nn", the forward pass of a dense layer: no copy), else as [N, K] with k
    // contiguous (a transposed operand, as backprop's dA = G B^T, often already is), else packed
    // into that form.
    let packed_b;
    let (tb, config, b_sk, b_sn, b_sb) = if vb.rows_aligned() && n % 4 == 0 {
        (b, NN, vb.sr, 1, vb.sb)
    } else {
        let (t, v) = if bt.rows_aligned() {
            (b, bt)
        } else {
            let (t, v) = pack(sh, b, bt)?;
            packed_b = t;
            (&packed_b, v)
        };
        (t, if n % 4 == 0 { NT } else { NT_ANY }, 1, v.sr, v.sb)
    };
    let pass = product_pass(config, ta, tb, m, n, k)
        .sint("u_a_sb", va.sb)
        .sint("u_a_sm", va.sr)
        .sint("u_b_sb", b_sb)
        .sint("u_b_sk", b_sk)
        .sint("u_b_sn", b_sn);
    store(sh, pass, epi, out.numel())
}
