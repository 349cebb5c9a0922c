//! Large matmuls on 4x4 output blocks: one fragment computes 16 outputs and writes them to 4
//! render targets (`shaders/matmul_block.glsl`), after both operands are repacked into 4x4
//! blocks (`matmul_block_pack.glsl`); a last pass assembles the flat output
//! (`matmul_unblock.glsl`).
//!
//! Why: a fragment of the one-target kernel writes one texel, 4 outputs, and so needs 5 texel
//! fetches per 16 multiply-adds. On software rasterisers (Chromium's SwiftShader, llvmpipe)
//! fetches and their address arithmetic are the cost; 16 outputs per fragment need 8 fetches
//! per 64 multiply-adds. The 3 extra passes are O(size of A + B + C), so this path is only
//! taken when K and the product are large enough to repay them (`worth_it`).
//!
//! Operands already in a form the kernel can stream (A's rows with k contiguous, or A
//! transposed with m contiguous against B as rows of N; B as rows of N or with k contiguous;
//! every row on a texel, K a multiple of 4) skip both packing passes:
//! `Direct` picks the kernel's in-place configs, which do the same 8 fetches per step from
//! texel streams. On llvmpipe that was as fast or faster at every shape measured (a
//! convolution's forward product and weight gradient ~2x, 512^3 ~1.1x), and it takes a
//! convolution's product from 4 draws to 2.

use std::rc::Rc;

use pixelgrad_core::Result;

use super::matmul_io::{store, Epilogue, View};
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// Render targets of the blocked kernel (WebGL2 guarantees MAX_DRAW_BUFFERS >= 4).
const TARGETS: usize = 4;

/// Shortest K for which the block path packs its operands: below it the packing passes cost
/// more than the kernel saves.
const PACKED_MIN_K: usize = 32;

/// Shortest K for the block path with both operands read in place ([`Direct`]): a
/// convolution's input gradient `W^T dy` with 16 filters (K = 16) took 10.7 ms on the
/// one-target kernel in Chromium, 5.1 + 3.9 ms as the block product and its assembly.
const DIRECT_MIN_K: usize = 16;

/// Whether the blocked path is expected to beat the one-target kernel: the product must be
/// large and K long enough that the packing and assembling passes are a small share
/// ([`matmul`] still declines a K under [`PACKED_MIN_K`] whose operands need packing).
pub(crate) fn worth_it(sh: &Shared, batch: usize, m: usize, n: usize, k: usize) -> bool {
    sh.report.borrow().max_draw_buffers as usize >= TARGETS
        && k >= DIRECT_MIN_K
        && m >= 8
        && n >= 8
        && batch.saturating_mul(m).saturating_mul(n).saturating_mul(k) >= 1 << 20
}

/// Elements to ask for so the texture [`crate::layout`] picks a width that is a multiple of 4 (the
/// kernel reads 4 neighbouring texels and must never straddle a texture row), or `None` when
/// no such width fits `MAX_TEXTURE_SIZE`. Layouts at least 8 texels wide have such widths, so
/// asking for at least 64 texels is enough.
fn wide_len(sh: &Shared, texels: usize) -> Option<usize> {
    let want = texels.max(64);
    let (lw, _) = sh.layout(want * 4, "matmul").ok()?;
    (lw % 4 == 0).then_some(want * 4)
}

/// The operand `v` (rows g x cols k, batched) in 4x4 blocks: `form` 0 for A (texel = one row,
/// 4 k), 1 for B given as its transpose [N, K] (texel = one k, 4 columns).
///
/// `kin` is the length of one run of k: the k axis of `v` (`v.cols`) may be `batch` runs of
/// `kin` laid out `v.sb` apart (a product summed over its batch, its batch merged into k:
/// element (g, k) at `(k / kin) * sb + g * sr + (k % kin) * sc`); `kin == v.cols` otherwise.
fn pack(sh: &Rc<Shared>, x: &GlTensor, v: View, form: u32, kin: usize) -> Result<Option<GlTensor>> {
    // K padded to a multiple of 8: the kernel does two steps of 4 per loop iteration.
    let (gb, kq) = (v.rows.div_ceil(4), v.cols.div_ceil(8) * 2);
    let texels = v.batch * gb * kq * 4;
    let Some(len) = wide_len(sh, texels) else { return Ok(None) };
    let pass = Pass::new("matmul", "matmul_block_pack", form)
        .input("u_x", x)
        .int("u_texels", texels)
        .int("u_g", v.rows)
        .int("u_k", v.cols)
        .int("u_gb", gb)
        .int("u_kq", kq)
        .int("u_kin", kin)
        .sint("u_sb", v.sb)
        .sint("u_sg", v.sr)
        .sint("u_sk", v.sc);
    let t = sh.run(pass, len)?;
    // The layout rules live in texture.rs; never trust a width that is not a multiple of 4.
    Ok((t.w % 4 == 0).then_some(t))
}

/// C = A B with A as `va` ([M, K] views) and B as `vbt` (B transposed: [N, K] views), with
/// `epi` applied as the assembling pass stores C (`(C, epilogue's result)`); `None` when the
/// operands cannot be laid out for this path (the caller uses the one-target kernel). `kin`:
/// see [`pack`] (runs of k of a product summed over its batch).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul<'a>(
    sh: &Rc<Shared>,
    a: &GlTensor,
    b: &GlTensor,
    va: View,
    vbt: View,
    batch: usize,
    kin: usize,
    len: usize,
    epi: Option<&Epilogue<'a>>,
) -> Result<Option<(GlTensor, Option<GlTensor>)>> {
    let (m, n, k) = (va.rows, vbt.rows, va.cols);
    let (mb, nb, kq) = (m.div_ceil(4), n.div_ceil(4), k.div_ceil(8) * 2);
    let targets = |blocks: usize| (0..TARGETS).map(|_| sh.alloc(blocks * 4, "matmul")).collect::<Result<Vec<_>>>();
    let direct = Direct::of(va, vbt, kin);
    if direct.is_none() && k < PACKED_MIN_K {
        return Ok(None);
    }
    if let Some(direct) = direct {
        // Both operands read where they lie (A through a one-pass repack when its rows are
        // not aligned but k is): no block packing passes.
        let packed_a;
        let (ta, va) = if direct.a_in_place {
            (a, va)
        } else {
            let (t, v) = super::matmul_io::pack(sh, a, va)?;
            packed_a = t;
            (&packed_a, v)
        };
        let blocks = batch * mb * nb;
        let targets = targets(blocks)?;
        let pass = Pass::new("matmul", "matmul_block", direct.config)
            .input("u_a", ta)
            .input("u_b", b)
            .int("u_mb", mb)
            .int("u_nb", nb)
            .int("u_m", m)
            .int("u_n", n)
            .int("u_kin", kin)
            .int("u_reps", k / kin)
            .sint("u_a_sb", va.sb)
            .sint("u_a_sm", va.sr)
            .sint("u_a_sk", va.sc)
            .sint("u_b_sb", vbt.sb)
            .sint("u_b_sk", vbt.sc)
            .sint("u_b_sn", vbt.sr);
        sh.draw_many(&pass, &targets.iter().collect::<Vec<_>>(), blocks * 4)?;
        return unblock(sh, &targets, m, n, mb, nb, len, epi).map(Some);
    }
    let Some(pa) = pack(sh, a, va, 0, kin)? else { return Ok(None) };
    let Some(pb) = pack(sh, b, vbt, 1, kin)? else { return Ok(None) };
    let blocks = batch * mb * nb;
    let targets = targets(blocks)?;
    let pass = Pass::new("matmul", "matmul_block", 0)
        .input("u_a", &pa)
        .input("u_b", &pb)
        .int("u_mb", mb)
        .int("u_nb", nb)
        .int("u_kq", kq)
        .int("u_a_batched", usize::from(va.batch > 1))
        .int("u_b_batched", usize::from(vbt.batch > 1));
    // All four targets in one draw; inside a step the draw's framebuffer is planned with them.
    sh.draw_many(&pass, &targets.iter().collect::<Vec<_>>(), blocks * 4)?;
    unblock(sh, &targets, m, n, mb, nb, len, epi).map(Some)
}

/// The assembling pass: the flat `[batch, m, n]` product (`len` values) from the kernel's 4
/// targets, with `epi` drawn as it is stored.
#[allow(clippy::too_many_arguments)]
fn unblock<'a>(
    sh: &Rc<Shared>,
    targets: &[GlTensor],
    m: usize,
    n: usize,
    mb: usize,
    nb: usize,
    len: usize,
    epi: Option<&Epilogue<'a>>,
) -> Result<(GlTensor, Option<GlTensor>)> {
    let config = if n.is_multiple_of(4) { 0 } else { 1 };
    let pass = Pass::new("matmul", "matmul_unblock", config)
        .input("u_c0", &targets[0])
        .input("u_c1", &targets[1])
        .input("u_c2", &targets[2])
        .input("u_c3", &targets[3])
        .int("u_m", m)
        .int("u_n", n)
        .int("u_mb", mb)
        .int("u_nb", nb);
    store(sh, pass, epi, len)
}

/// The block kernel's in-place configs (`CONFIG` 1 and 2 of `matmul_block.glsl`): when they
/// apply to A (`va`, [M, K] views) and B (`vbt`, its transpose [N, K]) with k in runs of
/// `kin`.
struct Direct {
    config: u32,
    /// A is read where it lies; otherwise it is repacked into aligned rows first (one pass,
    /// only for a single run of k).
    a_in_place: bool,
}

impl Direct {
    fn of(va: View, vbt: View, kin: usize) -> Option<Direct> {
        let aligned = |s: i64| s % 4 == 0;
        if !kin.is_multiple_of(4) {
            return None;
        }
        let config = if vbt.sc == 1 && aligned(vbt.sr) && aligned(vbt.sb) {
            // B^T rows with k contiguous ("nt": a convolution's weight gradient).
            2
        } else if vbt.sr == 1 && vbt.rows.is_multiple_of(4) && aligned(vbt.sc) && aligned(vbt.sb) {
            // B as rows of N ("nn": a dense or convolution forward pass).
            1
        } else {
            return None;
        };
        let a_in_place = va.sc == 1 && aligned(va.sr) && aligned(va.sb);
        if !a_in_place && config == 1 && va.sr == 1 && aligned(va.sc) && aligned(va.sb) {
            // A transposed, m contiguous, B as rows of N ("tn": a dense layer's weight
            // gradient x^T dy): both read where they lie.
            return Some(Direct { config: 3, a_in_place: true });
        }
        (a_in_place || kin == va.cols).then_some(Direct { config, a_in_place })
    }
}
