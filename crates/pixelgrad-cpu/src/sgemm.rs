//! pixelgrad's own f32 GEMM for the browser: packed panels, a register-blocked `MR x NR`
//! micro-kernel on 4-lane f32 vectors, cache blocking on K, M and N.
//!
//! On `wasm32` with `simd128` the lanes are `core::arch::wasm32` `v128` values (`f32x4_mul` then
//! `f32x4_add`: wasm SIMD has no fused multiply-add, so each product is rounded like the plain
//! loops'). Everywhere else the same code runs on `[f32; 4]` arrays, so native unit tests cover
//! the blocking, packing and edge handling that the browser runs; natively the backend still
//! calls `matrixmultiply` (threaded, AVX/FMA).
//!
//! Each output element sums its products in increasing `p` order within each `KC` block (one
//! partial sum per block, added in block order); the few-rows-times-transposed-B case (a fully
//! connected layer) instead takes dot products with four running sums.

use std::cell::RefCell;

use pixelgrad_core::Result;

/// Rows of a micro-tile (broadcast values of A per K step).
pub(crate) const MR: usize = 4;
/// Columns of a micro-tile: two 4-lane vectors.
const NR: usize = 8;
/// K depth of one packed block: an `KC x NR` panel of B (8 KiB) stays in L1.
const KC: usize = 256;
/// Rows of A packed at once (`MC x KC`, 64 KiB: L2).
pub(crate) const MC: usize = 64;
/// Columns of B packed at once (`KC x NC`, 1 MiB at most).
const NC: usize = 1024;

use crate::simd::F4;

/// Reused packing buffers (the backend runs on one thread in the browser; natively each
/// thread has its own).
struct Packs {
    a: Vec<f32>,
    b: Vec<f32>,
}

thread_local! {
    static PACKS: RefCell<Packs> = const { RefCell::new(Packs { a: Vec::new(), b: Vec::new() }) };
}

/// Packs rows `i0..i0+mc`, depths `p0..p0+kc` of A into `MR`-row panels: panel `r`, step `p`
/// holds `A(i0 + r*MR + 0..MR, p0 + p)`, rows past `m` as zeros.
#[allow(clippy::too_many_arguments)]
fn pack_a(dst: &mut Vec<f32>, a: &[f32], rsa: usize, csa: usize, i0: usize, mc: usize, p0: usize, kc: usize) {
    let panels = mc.div_ceil(MR);
    dst.clear();
    dst.resize(panels * MR * kc, 0.0);
    for r in 0..panels {
        let panel = &mut dst[r * MR * kc..(r + 1) * MR * kc];
        let rows = (mc - r * MR).min(MR);
        let base = |ii: usize| (i0 + r * MR + ii) * rsa + p0 * csa;
        if rows == MR && csa == 1 {
            // Rows contiguous in A (weights of a convolution): interleave MR rows.
            let src: [&[f32]; MR] = std::array::from_fn(|ii| &a[base(ii)..base(ii) + kc]);
            for (p, d) in panel.chunks_exact_mut(MR).enumerate() {
                for (ii, v) in d.iter_mut().enumerate() {
                    *v = src[ii][p];
                }
            }
            continue;
        }
        for ii in 0..rows {
            let b0 = base(ii);
            for p in 0..kc {
                panel[p * MR + ii] = a[b0 + p * csa];
            }
        }
    }
}

/// Packs depths `p0..p0+kc`, columns `j0..j0+nc` of B into `NR`-column panels: panel `s`,
/// step `p` holds `B(p0 + p, j0 + s*NR + 0..NR)`, columns past `n` as zeros.
#[allow(clippy::too_many_arguments)]
fn pack_b(dst: &mut Vec<f32>, b: &[f32], rsb: usize, csb: usize, p0: usize, kc: usize, j0: usize, nc: usize) {
    let panels = nc.div_ceil(NR);
    dst.clear();
    dst.resize(panels * NR * kc, 0.0);
    for s in 0..panels {
        let cols = (nc - s * NR).min(NR);
        for p in 0..kc {
            let base = (p0 + p) * rsb + (j0 + s * NR) * csb;
            let at = (s * kc + p) * NR;
            if csb == 1 && cols == NR {
                // A fixed-size copy: two vector moves, not a call to memcpy.
                let d: &mut [f32; NR] = (&mut dst[at..at + NR]).try_into().expect("NR values");
                *d = b[base..base + NR].try_into().expect("NR values");
                continue;
            }
            for (jj, d) in dst[at..at + cols].iter_mut().enumerate() {
                *d = b[base + jj * csb];
            }
        }
    }
}

/// One `MR x NR` tile: `acc = sum_p a_p (x) b_p` over `kc` steps, then stored into (or, when
/// `add`, added to) the `rows x cols` corner of `c` (row stride `ldc`). Row `i` of step `p` of
/// A is at `a + i * a_row + p * a_step` (a packed panel: 1 and MR; A itself: its strides);
/// step `p` of B at `b + p * ldb` (a packed panel, or B's own rows).
///
/// # Safety
/// Every `a + i * a_row + p * a_step` (`i < MR`, `p < kc`) and `b + p * ldb .. + NR` is
/// readable; `c` has `rows` rows of `cols` writable values `ldc` apart, `rows <= MR`,
/// `cols <= NR`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn tile(
    kc: usize,
    a: *const f32,
    a_row: usize,
    a_step: usize,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    add: bool,
) {
    let mut acc = [[F4::zero(); 2]; MR];
    for p in 0..kc {
        let b0 = F4::load(b.add(p * ldb));
        let b1 = F4::load(b.add(p * ldb + 4));
        let ap = a.add(p * a_step);
        for (i, row) in acc.iter_mut().enumerate() {
            let ai = F4::splat(*ap.add(i * a_row));
            row[0] = row[0].mul_add(ai, b0);
            row[1] = row[1].mul_add(ai, b1);
        }
    }
    if rows == MR && cols == NR {
        for (i, row) in acc.iter().enumerate() {
            let ci = c.add(i * ldc);
            if add {
                F4::load(ci).add(row[0]).store(ci);
                F4::load(ci.add(4)).add(row[1]).store(ci.add(4));
            } else {
                row[0].store(ci);
                row[1].store(ci.add(4));
            }
        }
        return;
    }
    let mut tmp = [0.0f32; MR * NR];
    for (i, row) in acc.iter().enumerate() {
        row[0].store(tmp.as_mut_ptr().add(i * NR));
        row[1].store(tmp.as_mut_ptr().add(i * NR + 4));
    }
    for i in 0..rows {
        let ci = c.add(i * ldc);
        for j in 0..cols {
            let v = tmp[i * NR + j];
            if add {
                *ci.add(j) += v;
            } else {
                *ci.add(j) = v;
            }
        }
    }
}

/// `c = a * b` (`m x k` times `k x n`, element strides `rsa, csa` / `rsb, csb`; `c` contiguous
/// `m x n`). Checks once, in release builds too (`crate::bounds::check_gemm`), that every
/// strided access is inside `a` and `b` and that `c` holds `m * n` values: the micro-kernel's
/// raw reads and writes below stay inside what was checked.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    rsa: usize,
    csa: usize,
    b: &[f32],
    rsb: usize,
    csb: usize,
    c: &mut [f32],
) -> Result<()> {
    crate::bounds::check_gemm(m, k, n, a.len(), rsa, csa, b.len(), rsb, csb, c.len())?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return Ok(());
    }
    if m < MR && rsb == 1 {
        // A few rows times a B whose columns are contiguous (a fully connected layer's
        // `x W^T`): one dot product per output beats packing all of B for a tile that would be
        // mostly zero rows.
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = dot(&a[i * rsa..], csa, &b[j * csb..j * csb + k]);
            }
        }
        return Ok(());
    }
    PACKS.with(|packs| {
        // A re-entrant call (none today) would find the buffers borrowed: give it fresh ones.
        let mut fresh;
        let mut guard = packs.try_borrow_mut();
        let packs: &mut Packs = match guard.as_deref_mut() {
            Ok(p) => p,
            Err(_) => {
                fresh = Packs { a: Vec::new(), b: Vec::new() };
                &mut fresh
            }
        };
        for j0 in (0..n).step_by(NC) {
            let nc = (n - j0).min(NC);
            for p0 in (0..k).step_by(KC) {
                let kc = (k - p0).min(KC);
                // Rows of B contiguous (an im2col matrix, a 1x1 conv's image): whole NR-column
                // panels are read in place and only a last partial one is packed, which saves
                // a copy of B (about 10% of the PP-OCR detector in Chromium). Rows a power of
                // two apart alias in L1 when walked down a panel: those are packed as before.
                let in_place = csb == 1 && !rsb.is_power_of_two();
                let full_cols = if in_place { nc / NR } else { 0 };
                if full_cols * NR < nc {
                    pack_b(&mut packs.b, b, rsb, csb, p0, kc, j0 + full_cols * NR, nc - full_cols * NR);
                }
                for i0 in (0..m).step_by(MC) {
                    let mc = (m - i0).min(MC);
                    // Whole MR-row panels read A in place (rows of a conv's weights); a last
                    // partial panel is packed with zero rows.
                    let full_rows = mc / MR;
                    if full_rows * MR < mc {
                        pack_a(&mut packs.a, a, rsa, csa, i0 + full_rows * MR, mc - full_rows * MR, p0, kc);
                    }
                    for s in 0..nc.div_ceil(NR) {
                        let cols = (nc - s * NR).min(NR);
                        let (bp, ldb) = if s < full_cols {
                            (&b[p0 * rsb + j0 + s * NR..], rsb)
                        } else {
                            (&packs.b[(s - full_cols) * NR * kc..(s - full_cols + 1) * NR * kc], NR)
                        };
                        debug_assert!(bp.len() >= (kc - 1) * ldb + NR);
                        for r in 0..mc.div_ceil(MR) {
                            let rows = (mc - r * MR).min(MR);
                            let (ap, a_row, a_step) =
                                if r < full_rows { (&a[(i0 + r * MR) * rsa + p0 * csa..], rsa, csa) } else { (&packs.a[..MR * kc], 1, MR) };
                            debug_assert!(ap.len() > (MR - 1) * a_row + (kc - 1) * a_step);
                            let (ci, cj) = (i0 + r * MR, j0 + s * NR);
                            let at = ci * n + cj;
                            // The tile's last element is inside `c`: rows and cols are clipped
                            // to m and n.
                            debug_assert!(at + (rows - 1) * n + cols <= m * n);
                            // SAFETY: `ap` is a packed panel (kc * MR values) or A's rows
                            // ci..ci+MR from depth p0, whose last read is A's element
                            // (ci + MR - 1, p0 + kc - 1), inside `a` (`check_gemm` above);
                            // `bp` is a whole packed panel (kc * NR values) or, read in place, B's
                            // columns cj..cj+NR (all < n) of rows p0..p0+kc, inside `b`
                            // (`check_gemm` above); the rows x cols corner at
                            // (ci, cj) lies inside the m x n matrix `c`, row stride n.
                            unsafe {
                                tile(kc, ap.as_ptr(), a_row, a_step, bp.as_ptr(), ldb, c.as_mut_ptr().add(at), n, rows, cols, p0 > 0)
                            };
                        }
                    }
                }
            }
        }
    });
    Ok(())
}

/// `sum_p a[p * csa] * b[p]` over `b.len()` terms: four running sums when `a` is contiguous.
fn dot(a: &[f32], csa: usize, b: &[f32]) -> f32 {
    let k = b.len();
    if csa != 1 {
        return b.iter().enumerate().map(|(p, &v)| a[p * csa] * v).fold(0.0, |s, t| s + t);
    }
    let a = &a[..k];
    let mut acc = F4::zero();
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (a4.remainder(), b4.remainder());
    for (x, y) in a4.zip(b4) {
        // SAFETY: both chunks hold 4 values.
        acc = acc.mul_add(unsafe { F4::load(x.as_ptr()) }, unsafe { F4::load(y.as_ptr()) });
    }
    let mut lanes = [0.0f32; 4];
    // SAFETY: `lanes` holds 4 values.
    unsafe { acc.store(lanes.as_mut_ptr()) };
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).fold(0.0, |s, t| s + t);
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::gemm_loops;

    fn check(m: usize, k: usize, n: usize, ta: bool, tb: bool) {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 23) as f32 - 11.0) / 8.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 13 % 19) as f32 - 9.0) / 4.0).collect();
        let (rsa, csa) = if ta { (1, m) } else { (k, 1) };
        let (rsb, csb) = if tb { (1, k) } else { (n, 1) };
        let mut got = vec![f32::NAN; m * n];
        sgemm(m, k, n, &a, rsa, csa, &b, rsb, csb, &mut got).unwrap();
        let a64: Vec<f64> = a.iter().map(|&v| v as f64).collect();
        let b64: Vec<f64> = b.iter().map(|&v| v as f64).collect();
        let mut want = vec![0.0f64; m * n];
        gemm_loops(m, k, n, &a64, rsa, csa, &b64, rsb, csb, &mut want).unwrap();
        for (idx, (g, w)) in got.iter().zip(&want).enumerate() {
            // Inputs are multiples of 1/8 and 1/4 with small numerators: every partial sum is
            // exact in f32 for these sizes, so the results are equal.
            assert!((*g as f64 - w).abs() <= 1e-6 * w.abs().max(1.0), "{m}x{k}x{n} ta{ta} tb{tb} at {idx}: {g} vs {w}");
        }
    }

    /// Awkward shapes around the tile and block sizes, every transpose combination, K = 0 / 1.
    #[test]
    fn matches_the_plain_loops_on_awkward_shapes() {
        for &(m, k, n) in &[
            (1, 1, 1),
            (1, 0, 5),
            (3, 0, 1),
            (1, 3, 1),
            (3, 1, 17),
            (17, 3, 65),
            (65, 17, 3),
            (4, 8, 8),
            (5, 9, 9),
            (MR, KC + 1, NR + 1),
            (MC + 3, 2 * KC + 5, 7),
            (2, 3, NC + 9),
        ] {
            for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
                check(m, k, n, ta, tb);
            }
        }
    }

    /// K = 0 overwrites `c` with zeros (it starts as garbage).
    #[test]
    fn empty_k_writes_zeros() {
        let mut c = vec![7.0f32; 6];
        sgemm(2, 0, 3, &[], 0, 1, &[], 3, 1, &mut c).unwrap();
        assert_eq!(c, vec![0.0; 6]);
    }

    /// Sums run in k order, as in the plain f32 loops.
    #[test]
    fn sums_in_k_order() {
        // 1e8 + 1 - 1e8 in k order is 0 in f32 (1 is lost), like the plain loops in f32.
        let a = [1.0f32, 1.0, 1.0];
        let b = [1e8f32, 1.0, -1e8];
        let mut c = [f32::NAN];
        sgemm(1, 3, 1, &a, 3, 1, &b, 1, 1, &mut c).unwrap();
        let mut want = [f32::NAN];
        gemm_loops(1, 3, 1, &a, 3, 1, &b, 1, 1, &mut want).unwrap();
        assert_eq!(c, want);
    }

    /// Slices too short for the sizes and strides, and strides whose reach wraps in release
    /// arithmetic, are typed errors: nothing is read or written.
    #[test]
    fn short_slices_and_wrapping_strides_are_errors() {
        let (m, k, n) = (9, 5, 11);
        let a = vec![1.0f32; m * k];
        let b = vec![1.0f32; k * n];
        let mut c = vec![7.0f32; m * n];
        for (al, bl, cl) in [(m * k - 1, k * n, m * n), (m * k, k * n - 1, m * n), (m * k, k * n, m * n - 1)] {
            let e = sgemm(m, k, n, &a[..al], k, 1, &b[..bl], n, 1, &mut c[..cl]).unwrap_err();
            assert!(matches!(e, pixelgrad_core::Error::Shape { op: "matmul", .. }), "{e}");
        }
        // (m - 1) * rsa wraps to a small number in release builds.
        let wrap = usize::MAX / (m - 1) + 2;
        assert!(sgemm(m, k, n, &a, wrap, 1, &b, n, 1, &mut c).is_err());
        assert!(sgemm(m, k, n, &a, k, 1, &b, n, wrap, &mut c).is_err());
        // The few-rows dot path too.
        assert!(sgemm(2, k, n, &a[..k], k, 1, &b, 1, k, &mut c).is_err());
        assert!(c.iter().all(|&v| v == 7.0), "nothing was written");
    }
}
