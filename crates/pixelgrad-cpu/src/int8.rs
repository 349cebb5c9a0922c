//! The exact integer matmul of 8-bit weights ([`pixelgrad_core::Op::MatMulI8`]):
//! `out[m, n] = (Σ_k a[m, k] * (b[k, n] as i32)) as f32`, products and sums in wrapping `i32`.
//!
//! `b` (f32 or, on the reference, f64 whole numbers) is converted to `i32` once per call; then
//! each run of output rows is accumulated in an `i32` buffer, `k` in blocks so that a block of
//! `b`'s rows stays in cache while every row of the run reads it (`a[m, k]` broadcast over a
//! row of `b`: the inner loop is a contiguous multiply-add the compiler vectorises). Runs of
//! rows are independent: natively large outputs are split across rayon threads
//! ([`crate::par::for_chunks`]).

use crate::element::Element;
use crate::par::for_chunks;

/// Output rows accumulated together (they share each block of `b`).
const ROWS: usize = 8;
/// Rows of `b` per block.
const K_BLOCK: usize = 256;

/// One 8-bit weight widened to `i32`.
pub(crate) trait Byte: Copy + Sync {
    fn widen(self) -> i32;
}

impl Byte for i8 {
    #[inline]
    fn widen(self) -> i32 {
        self as i32
    }
}

impl Byte for u8 {
    #[inline]
    fn widen(self) -> i32 {
        self as i32
    }
}

/// `a [ga?, m, k]` (8-bit) times `b [gb?, k, n]` (whole numbers) into `out [.., m, n]`.
/// Shapes passed `Op::infer_shape` (a batch of one or a rank-2 operand broadcasts).
pub(crate) fn matmul_i8<A: Byte, T: Element>(a: &[A], a_dims: &[usize], b: &[T], b_dims: &[usize], out_dims: &[usize]) -> Vec<T> {
    let (m, k) = (a_dims[a_dims.len() - 2], a_dims[a_dims.len() - 1]);
    let n = b_dims[b_dims.len() - 1];
    let batch = if out_dims.len() == 3 { out_dims[0] } else { 1 };
    let a_batched = a_dims.len() == 3 && a_dims[0] > 1;
    let b_batched = b_dims.len() == 3 && b_dims[0] > 1;
    let b_len = b_dims.iter().product::<usize>();
    // `as i32` truncates toward zero and saturates (NaN gives 0): whole numbers convert exactly.
    let bi: Vec<i32> = b[..b_len].iter().map(|&v| v.to_f64() as i32).collect();
    let mut out = vec![T::ZERO; batch * m * n];
    if n == 0 {
        return out;
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
    out
}
