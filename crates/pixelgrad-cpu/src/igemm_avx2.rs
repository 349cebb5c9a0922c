//! The AVX2 micro-kernel of the 8-bit integer GEMM (`crate::igemm`), chosen at run time on
//! x86_64 CPUs that have AVX2 (`is_x86_feature_detected!`; the Rust target's baseline is SSE2,
//! so a plain build cannot assume it). It reads the same packs as the portable kernel: one
//! step of a column panel (the i16 pairs of 8 columns, 16 values) is exactly one 256-bit
//! vector, so `vpmaddwd` (`_mm256_madd_epi16`) multiplies a broadcast pair word of one row of
//! `a` with all 8 columns' pairs at once and `vpaddd` adds the 8 pair sums to that row's 8
//! accumulators: twice the SSE2 kernel's width, the same products and the same wrapping
//! `i32` sums (integer addition in any order gives the same bits).

use core::arch::x86_64::*;

/// Columns of a panel (one 256-bit vector of eight i32 sums).
const NR: usize = 8;

/// Whether this CPU runs [`tile`] (std caches the answer: an atomic load after the first call).
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx2")
}

/// The sums of one tile, `MR` rows of `a` (its pair words, `MR` per step) by `P` panels of
/// `b` (16 values per step each), over all `k2` steps, into `out[q][r]` (panel `q`, row `r`).
/// The accumulators stay in registers from the first step to the last.
///
/// # Safety
/// The CPU must have AVX2 ([`available`]).
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn tile<const MR: usize, const P: usize>(a: &[i32], b: [&[i16]; P], k2: usize, out: &mut [[[i32; NR]; MR]; P]) {
    let a = &a[..k2 * MR];
    let b = b.map(|panel| &panel[..k2 * 2 * NR]);
    let mut c = [[_mm256_setzero_si256(); MR]; P];
    for p in 0..k2 {
        let aw = &a[p * MR..][..MR];
        for (cq, panel) in c.iter_mut().zip(&b) {
            let step = &panel[p * 2 * NR..][..2 * NR];
            // SAFETY: `step` is 16 readable i16 (32 bytes); `loadu` needs no alignment.
            let bv = unsafe { _mm256_loadu_si256(step.as_ptr() as *const __m256i) };
            for (cr, &w) in cq.iter_mut().zip(aw) {
                *cr = _mm256_add_epi32(*cr, _mm256_madd_epi16(_mm256_set1_epi32(w), bv));
            }
        }
    }
    for (cq, oq) in c.iter().zip(out.iter_mut()) {
        for (cr, or) in cq.iter().zip(oq.iter_mut()) {
            // SAFETY: `or` is 8 writable i32 (32 bytes); `storeu` needs no alignment.
            unsafe { _mm256_storeu_si256(or.as_mut_ptr() as *mut __m256i, *cr) };
        }
    }
}
