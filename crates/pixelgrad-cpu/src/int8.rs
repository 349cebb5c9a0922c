//! The exact integer matmul of 8-bit weights ([`pixelgrad_core::Op::MatMulI8`]):
//! `out[m, n] = (Σ_k a[m, k] * (b[k, n] as i32)) as f32`, products and sums in wrapping `i32`.
//!
//! On the fast path, when every `b` value fits in i16 (8-bit activations minus their zero
//! point always do), the product is an integer GEMM on i16 pairs with i32 accumulation in SIMD
//! ([`crate::igemm`]), exact for every K. Otherwise `b` (f32 or, on the reference, f64 whole
//! numbers) is converted to `i32` once per call, then one of two exact paths:
//!
//! - **f32 GEMM in exact blocks** (fast path, the usual case): a product of whole numbers
//!   whose partial sums all stay within 2^24 is computed exactly by any f32 GEMM, in any
//!   order. With `|a| <= 128` (255 for u8) and `|b| <= max_b`, a block of
//!   `kb = 2^24 / (128 * max_b)` inner indices is such a product (for 8-bit activations,
//!   `max_b = 255`, that is 513), so the matmul runs as `K / kb` calls of the backend's
//!   optimised GEMM ([`Element::gemm`]) on panels of 256 weight rows converted to f32, the
//!   block results summed in wrapping `i32`. Taken when blocks are long enough (at least 64,
//!   or all of K) and N is at least 8; the converted panel is the only extra memory.
//! - **direct `i32` loops** (otherwise, and always on the f64 reference): each run of output
//!   rows is accumulated in an `i32` buffer, `k` in blocks so that a block of `b`'s rows stays
//!   in cache while every row of the run reads it (`a[m, k]` broadcast over a row of `b`: a
//!   contiguous multiply-add the compiler vectorises). Runs of rows are independent: natively
//!   large outputs are split across rayon threads ([`crate::par::for_chunks`]).

use pixelgrad_core::Result;

use crate::byte::Byte;
use crate::element::Element;
use crate::igemm;
use crate::par::for_chunks;

/// Output rows accumulated together (they share each block of `b`).
const ROWS: usize = 8;
/// Rows of `b` per block.
const K_BLOCK: usize = 256;

/// Weight rows converted to f32 per GEMM call on the blocked path.
const ROW_PANEL: usize = 256;
/// Shortest exact block for which the blocked path is worth its GEMM calls.
const MIN_EXACT_BLOCK: usize = 64;
/// Narrowest N for the blocked path (a matrix-vector product is faster directly).
const MIN_GEMM_N: usize = 8;

/// `a [ga?, m, k]` (8-bit) times `b [gb?, k, n]` (whole numbers) into `out [.., m, n]`.
/// Shapes passed `Op::infer_shape` (a batch of one or a rank-2 operand broadcasts).
pub(crate) fn matmul_i8<A: Byte, T: Element>(a: &[A], a_dims: &[usize], b: &[T], b_dims: &[usize], out_dims: &[usize]) -> Result<Vec<T>> {
    let (m, k) = (a_dims[a_dims.len() - 2], a_dims[a_dims.len() - 1]);
    let n = b_dims[b_dims.len() - 1];
    let batch = if out_dims.len() == 3 { out_dims[0] } else { 1 };
    let a_batched = a_dims.len() == 3 && a_dims[0] > 1;
    let b_batched = b_dims.len() == 3 && b_dims[0] > 1;
    let b_len = b_dims.iter().product::<usize>();
    if T::FAST {
        if let Some(out) = pairs_gemm(a, b, &Geometry { m, k, n, batch, a_batched, b_batched }) {
            return Ok(out);
        }
    }
    // `as i32` truncates toward zero and saturates (NaN gives 0): whole numbers convert exactly.
    let bi: Vec<i32> = b[..b_len].iter().map(|&v| v.to_f64() as i32).collect();
    let mut out = vec![T::ZERO; batch * m * n];
    if n == 0 {
        return Ok(out);
    }
    if T::FAST && n >= MIN_GEMM_N {
        let max_b = bi.iter().map(|v| v.unsigned_abs() as u64).max().unwrap_or(0);
        let kb = (1u64 << 24).checked_div(A::MAX_ABS * max_b).map_or(k, |v| v as usize);
        if kb >= k.min(MIN_EXACT_BLOCK) && kb > 0 {
            let g = Geometry { m, k, n, batch, a_batched, b_batched };
            blocked_gemm(a, &bi, &g, kb.min(k.max(1)), &mut out)?;
            return Ok(out);
        }
    }
    for_chunks(&mut out, ROWS * n, |chunk, dst| {
        let rows = dst.len() / n;
        let first = chunk * ROWS;
        let mut acc = vec![0i32; rows * n];
        let mut k0 = 0;
        while k0 < k {
            let k1 = (k0 + K_BLOCK).min(k);
            for (r, acc_row) in acc.chunks_exact_mut(n).enumerate() {
                let row = first + r;
                let (g, i) = (row / m, row % m);
                let a_row = &a[(if a_batched { g * m * k } else { 0 }) + i * k..][..k];
                let b_base = if b_batched { g * k * n } else { 0 };
                for (p, &av) in a_row.iter().enumerate().take(k1).skip(k0) {
                    let av = av.widen();
                    if av == 0 {
                        continue;
                    }
                    let b_row = &bi[b_base + p * n..][..n];
                    for (c, &bv) in acc_row.iter_mut().zip(b_row) {
                        *c = c.wrapping_add(av.wrapping_mul(bv));
                    }
                }
            }
            k0 = k1;
        }
        for (d, &v) in dst.iter_mut().zip(&acc) {
            // Rounded to the nearest f32 first: the reference (f64) stores the same value as
            // the f32 backends.
            *d = T::from_f64(v as f32 as f64);
        }
    });
    Ok(out)
}

/// Sizes and batching of one [`matmul_i8`] call.
struct Geometry {
    m: usize,
    k: usize,
    n: usize,
    batch: usize,
    a_batched: bool,
    b_batched: bool,
}

/// The i16-pair integer GEMM ([`crate::igemm`]) over every batch entry; `None` (nothing
/// computed) where a `b` value does not fit in i16.
fn pairs_gemm<A: Byte, T: Element>(a: &[A], b: &[T], g: &Geometry) -> Option<Vec<T>> {
    let Geometry { m, k, n, batch, a_batched, b_batched } = *g;
    let b_packs =
        (0..if b_batched { batch } else { 1 }).map(|i| igemm::pack_b(&b[i * k * n..][..k * n], k, n)).collect::<Option<Vec<_>>>()?;
    let a_packs: Vec<Vec<i32>> = (0..if a_batched { batch } else { 1 }).map(|i| igemm::pack_a(&a[i * m * k..][..m * k], m, k)).collect();
    if m * n == 0 {
        return Some(vec![T::ZERO; batch * m * n]);
    }
    // Possibly a recycled buffer (`crate::pool`): the packed product writes every element.
    let mut out = T::output(batch * m * n);
    for (bat, dst) in out.chunks_exact_mut(m * n).enumerate() {
        let pa = &a_packs[if a_batched { bat } else { 0 }];
        let pb = &b_packs[if b_batched { bat } else { 0 }];
        igemm::matmul_packed(pa, pb, m, n, dst);
    }
    Some(out)
}

/// The blocked path (module docs): `kb` inner indices per f32 GEMM call, each exact.
fn blocked_gemm<A: Byte, T: Element>(a: &[A], bi: &[i32], g: &Geometry, kb: usize, out: &mut [T]) -> Result<()> {
    let Geometry { m, k, n, batch, a_batched, b_batched } = *g;
    // b back in T, exactly (whole numbers, |b| < 2^24 here), per batch entry.
    let bt: Vec<T> = bi.iter().map(|&v| T::from_f64(v as f64)).collect();
    let mut panel: Vec<T> = Vec::new();
    let mut part: Vec<T> = Vec::new();
    let mut acc: Vec<i32> = Vec::new();
    for bat in 0..batch {
        let a_base = if a_batched { bat * m * k } else { 0 };
        let b_mat = &bt[if b_batched { bat * k * n } else { 0 }..][..k * n];
        for r0 in (0..m).step_by(ROW_PANEL) {
            let rows = ROW_PANEL.min(m - r0);
            panel.clear();
            panel.extend(a[a_base + r0 * k..][..rows * k].iter().map(|&v| T::from_f64(v.widen() as f64)));
            part.resize(rows * n, T::ZERO);
            acc.clear();
            acc.resize(rows * n, 0);
            let mut k0 = 0;
            while k0 < k {
                let len = kb.min(k - k0);
                T::gemm(rows, len, n, &panel[k0..], k, 1, &b_mat[k0 * n..], n, 1, &mut part)?;
                // Every partial sum was below 2^24: `part` holds exact whole numbers.
                for (c, &p) in acc.iter_mut().zip(&part) {
                    *c = c.wrapping_add(p.to_f64() as i32);
                }
                k0 += len;
            }
            let dst = &mut out[(bat * m + r0) * n..][..rows * n];
            for (d, &v) in dst.iter_mut().zip(&acc) {
                *d = T::from_f64(v as f32 as f64);
            }
        }
    }
    Ok(())
}
