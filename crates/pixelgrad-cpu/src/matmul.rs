//! (Batched) matrix products. Transposes are free: a transposed operand is just read with
//! swapped row/column strides. The f32 path calls `matrixmultiply::sgemm` natively
//! (cache-blocked, AVX/FMA, threaded) and pixelgrad's own wasm SIMD GEMM (`crate::sgemm`) in
//! the browser; the f64 reference is a plain triple loop.

use crate::element::Element;

/// Plain-loop `c = a * b` (the reference; also the meaning of [`Element::gemm`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_loops<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    rsa: usize,
    csa: usize,
    b: &[T],
    rsb: usize,
    csb: usize,
    c: &mut [T],
) {
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        row.fill(T::ZERO);
        for p in 0..k {
            let aip = a[i * rsa + p * csa];
            for (j, cij) in row.iter_mut().enumerate() {
                *cij += aip * b[p * rsb + j * csb];
            }
        }
    }
}

/// `c = a * b` in f32 through `matrixmultiply`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_f32(m: usize, k: usize, n: usize, a: &[f32], rsa: usize, csa: usize, b: &[f32], rsb: usize, csb: usize, c: &mut [f32]) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return;
    }
    // The last elements the strides can reach must be inside the slices; sgemm trusts them.
    let a_last = (m - 1) * rsa + (k - 1) * csa;
    let b_last = (k - 1) * rsb + (n - 1) * csb;
    if a_last >= a.len() || b_last >= b.len() || c.len() < m * n {
        // Unreachable for shapes that passed `infer_shape`; fall back rather than read out of
        // bounds.
        return gemm_loops(m, k, n, a, rsa, csa, b, rsb, csb, c);
    }
    // In the browser: pixelgrad's own wasm SIMD kernel (src/sgemm.rs).
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        crate::sgemm::sgemm(m, k, n, a, rsa, csa, b, rsb, csb, c);
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    // SAFETY: the bounds checks above keep every access of sgemm inside `a`, `b` and `c`;
    // `c` is exclusively borrowed and beta = 0 means its old contents are not read.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// `[.., M, K] x [.., K, N]` with optional transposes and a broadcasting batch axis of size 1;
/// shapes were validated by `infer_shape`.
pub fn matmul<T: Element>(a: &[T], da: &[usize], b: &[T], db: &[usize], trans_a: bool, trans_b: bool) -> Vec<T> {
    let (ra, rb) = (da.len(), db.len());
    let (a0, a1) = (da[ra - 2], da[ra - 1]);
    let (b0, b1) = (db[rb - 2], db[rb - 1]);
    let (m, k) = if trans_a { (a1, a0) } else { (a0, a1) };
    let n = if trans_b { b0 } else { b1 };
    // A(i, p) lives at i*rsa + p*csa in its own row-major [a0, a1] block.
    let (rsa, csa) = if trans_a { (1, a1) } else { (a1, 1) };
    let (rsb, csb) = if trans_b { (1, b1) } else { (b1, 1) };
    let ba = if ra == 3 { da[0] } else { 1 };
    let bb = if rb == 3 { db[0] } else { 1 };
    let batch = if ba == 1 { bb } else { ba };
    let (sa, sb) = (if ba == 1 { 0 } else { a0 * a1 }, if bb == 1 { 0 } else { b0 * b1 });
    // `T::gemm` overwrites each product's block, and the blocks cover `out`.
    let mut out = T::output(batch * m * n);
    if m * n == 0 {
        return out;
    }
    let one = |bi: usize, c: &mut [T]| {
        T::gemm(m, k, n, &a[bi * sa..], rsa, csa, &b[bi * sb..], rsb, csb, c);
    };
    // Many small products (conv over a batch of images): one product per thread. Large
    // products are threaded inside sgemm instead.
    #[cfg(not(target_arch = "wasm32"))]
    if T::FAST && batch > 1 && m * n * k < 512 * 512 * 64 && crate::par::threaded() {
        use rayon::prelude::*;
        out.par_chunks_mut(m * n).enumerate().for_each(|(bi, c)| one(bi, c));
        return out;
    }
    for (bi, c) in out.chunks_mut(m * n).enumerate() {
        one(bi, c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast f32 GEMM and the plain loops agree for every transpose combination, batched
    /// and with a broadcast batch.
    #[test]
    fn sgemm_matches_loops() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..2 * m * k).map(|i| ((i * 37 % 11) as f32 - 5.0) / 4.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 13 % 7) as f32 - 3.0) / 2.0).collect();
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let da = if ta { [2, k, m] } else { [2, m, k] };
            let db = if tb { [n, k] } else { [k, n] };
            let fast = matmul(&a, &da, &b, &db, ta, tb);
            let a64: Vec<f64> = a.iter().map(|&v| v as f64).collect();
            let b64: Vec<f64> = b.iter().map(|&v| v as f64).collect();
            let slow = matmul(&a64, &da, &b64, &db, ta, tb);
            assert_eq!(fast.len(), 2 * m * n);
            for (f, s) in fast.iter().zip(&slow) {
                assert!((*f as f64 - s).abs() < 1e-4, "{ta} {tb}: {f} vs {s}");
            }
        }
    }

    #[test]
    fn known_product() {
        // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]; with b transposed: [17 23; 39 53].
        let a = [1.0f64, 2.0, 3.0, 4.0];
        let b = [5.0f64, 6.0, 7.0, 8.0];
        assert_eq!(matmul(&a, &[2, 2], &b, &[2, 2], false, false), vec![19.0, 22.0, 43.0, 50.0]);
        assert_eq!(matmul(&a, &[2, 2], &b, &[2, 2], false, true), vec![17.0, 23.0, 39.0, 53.0]);
    }
}
