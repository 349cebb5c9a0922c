//! (Batched) matrix products. Transposes are free: a transposed operand is just read with
//! swapped row/column strides. The f32 path calls `matrixmultiply::sgemm` natively
//! (cache-blocked, AVX/FMA, threaded) and pixelgrad's own wasm SIMD GEMM (`crate::sgemm`) in
//! the browser; the f64 reference is a plain triple loop.

use pixelgrad_core::{Error, Result};

use crate::bounds::check_gemm;
use crate::element::Element;

/// Plain-loop `c = a * b` (the reference; also the meaning of [`Element::gemm`]). The
/// slices are checked against the sizes and strides first (`crate::bounds::check_gemm`).
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
) -> Result<()> {
    check_gemm(m, k, n, a.len(), rsa, csa, b.len(), rsb, csb, c.len())?;
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
    Ok(())
}

/// `c = a * b` in f32 through `matrixmultiply` (natively) or `crate::sgemm` (wasm SIMD).
/// Both read through raw pointers: the one check below, in release builds too and with
/// checked arithmetic, keeps every read inside `a` and `b` and every write inside `c`; slices
/// too short for the sizes and strides are a typed error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_f32(
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
    check_gemm(m, k, n, a.len(), rsa, csa, b.len(), rsb, csb, c.len())?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return Ok(());
    }
    // In the browser: pixelgrad's own wasm SIMD kernel (src/sgemm.rs).
    // (the `return` is the block's last statement only in this build: the native block below
    // follows it everywhere else)
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[allow(clippy::needless_return)]
    {
        #[cfg(target_feature = "atomics")]
        if let Some(rows) = row_split(m, k, n) {
            // Blocks of whole `sgemm::MC`-row panels, each computed exactly as in one call.
            return crate::par::try_chunks(&mut c[..m * n], rows * n, |bi, block| {
                crate::sgemm::sgemm(block.len() / n, k, n, &a[bi * rows * rsa..], rsa, csa, b, rsb, csb, block)
            });
        }
        return crate::sgemm::sgemm(m, k, n, a, rsa, csa, b, rsb, csb, c);
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        // SAFETY: `check_gemm` showed that A's last element (m - 1, k - 1) at
        // (m - 1) * rsa + (k - 1) * csa and B's (k - 1, n - 1) lie inside `a` and `b` (every
        // other element is at a smaller offset: strides are unsigned), that `c` holds m * n
        // values and that every stride fits isize; `c` is exclusively borrowed and beta = 0
        // means its old contents are not read.
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
        Ok(())
    }
}

/// Rows per thread for one large product in a threaded wasm build, or None to run it in one
/// call. Blocks are whole multiples of `sgemm::MC` rows, and a last block of fewer than
/// `sgemm::MR` rows (which `sgemm` would compute by dot products instead of its tiles) is
/// avoided, so every element is computed by the same instructions as in one call: the result
/// is bit-identical to one thread.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", target_feature = "atomics"))]
fn row_split(m: usize, k: usize, n: usize) -> Option<usize> {
    use crate::sgemm::{MC, MR};
    let threads = crate::threads::threads();
    if threads < 2 || m < 2 * MC || m.saturating_mul(n).saturating_mul(k) < 1 << 18 {
        return None;
    }
    let mut rows = m.div_ceil(threads).div_ceil(MC) * MC;
    while rows < m {
        let last = m % rows;
        if last == 0 || last >= MR {
            return Some(rows);
        }
        rows += MC;
    }
    None
}

/// `[.., M, K] x [.., K, N]` with optional transposes and a broadcasting batch axis of size 1.
/// Shapes that do not multiply, or slices shorter than their shapes, are a typed error.
pub fn matmul<T: Element>(a: &[T], da: &[usize], b: &[T], db: &[usize], trans_a: bool, trans_b: bool) -> Result<Vec<T>> {
    let err = |msg: String| Error::Shape { op: "matmul", shapes: vec![da.to_vec(), db.to_vec()], backend: "cpu".into(), msg };
    let (ra, rb) = (da.len(), db.len());
    if !(2..=3).contains(&ra) || !(2..=3).contains(&rb) {
        return Err(err("expects operands of rank 2 or 3".into()));
    }
    let (a0, a1) = (da[ra - 2], da[ra - 1]);
    let (b0, b1) = (db[rb - 2], db[rb - 1]);
    let (m, k) = if trans_a { (a1, a0) } else { (a0, a1) };
    let (kb, n) = if trans_b { (b1, b0) } else { (b0, b1) };
    let ba = if ra == 3 { da[0] } else { 1 };
    let bb = if rb == 3 { db[0] } else { 1 };
    if kb != k || (ba != bb && ba != 1 && bb != 1) {
        return Err(err("the shapes do not multiply".into()));
    }
    // A(i, p) lives at i*rsa + p*csa in its own row-major [a0, a1] block.
    let (rsa, csa) = if trans_a { (1, a1) } else { (a1, 1) };
    let (rsb, csb) = if trans_b { (1, b1) } else { (b1, 1) };
    let batch = if ba == 1 { bb } else { ba };
    // Every block of both operands inside its slice (each product checks its own reads too).
    let (la, lb) = (a0.checked_mul(a1), b0.checked_mul(b1));
    match (la.and_then(|l| l.checked_mul(ba)), lb.and_then(|l| l.checked_mul(bb))) {
        (Some(na), Some(nb)) if na <= a.len() && nb <= b.len() => {}
        _ => return Err(err(format!("the operands hold {} and {} values, fewer than their shapes", a.len(), b.len()))),
    }
    // Both products fit (checked above): the offset of block `bi` is below the slice's length.
    let (sa, sb) = (if ba == 1 { 0 } else { a0 * a1 }, if bb == 1 { 0 } else { b0 * b1 });
    let len = batch.checked_mul(m).and_then(|v| v.checked_mul(n)).ok_or_else(|| err("the result's size overflows".into()))?;
    // `T::gemm` overwrites each product's block, and the blocks cover `out`.
    let mut out = T::output(len);
    if m * n == 0 {
        return Ok(out);
    }
    let one = |bi: usize, c: &mut [T]| T::gemm(m, k, n, &a[bi * sa..], rsa, csa, &b[bi * sb..], rsb, csb, c);
    // Many small products (conv over a batch of images): one product per thread. Large
    // products are threaded inside sgemm instead.
    #[cfg(any(not(target_arch = "wasm32"), target_feature = "atomics"))]
    if T::FAST && batch > 1 && m * n * k < 512 * 512 * 64 && crate::par::threaded() {
        crate::par::try_chunks(&mut out, m * n, one)?;
        return Ok(out);
    }
    for (bi, c) in out.chunks_mut(m * n).enumerate() {
        one(bi, c)?;
    }
    Ok(out)
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
            let fast = matmul(&a, &da, &b, &db, ta, tb).unwrap();
            let a64: Vec<f64> = a.iter().map(|&v| v as f64).collect();
            let b64: Vec<f64> = b.iter().map(|&v| v as f64).collect();
            let slow = matmul(&a64, &da, &b64, &db, ta, tb).unwrap();
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
        assert_eq!(matmul(&a, &[2, 2], &b, &[2, 2], false, false).unwrap(), vec![19.0, 22.0, 43.0, 50.0]);
        assert_eq!(matmul(&a, &[2, 2], &b, &[2, 2], false, true).unwrap(), vec![17.0, 23.0, 39.0, 53.0]);
    }

    /// The fast GEMM's raw-pointer path gets only reads its check proved in bounds: slices too
    /// short, strides whose reach wraps in release arithmetic (the old pre-check wrapped, then
    /// read out of bounds), and strides beyond isize are typed errors, and `c` is untouched.
    #[test]
    fn gemm_bounds_are_checked_in_release_builds() {
        let (m, k, n) = (4, 3, 5);
        let a = vec![1.0f32; m * k];
        let b = vec![1.0f32; k * n];
        let mut c = vec![7.0f32; m * n];
        assert!(gemm_f32(m, k, n, &a[..m * k - 1], k, 1, &b, n, 1, &mut c).is_err());
        assert!(gemm_f32(m, k, n, &a, k, 1, &b[..k * n - 1], n, 1, &mut c).is_err());
        assert!(gemm_f32(m, k, n, &a, k, 1, &b, n, 1, &mut c[..m * n - 1]).is_err());
        // (m - 1) * rsa + (k - 1) * csa wraps around to 2 with this stride.
        let wrap = (usize::MAX / (m - 1)) + 1;
        assert!(gemm_f32(m, k, n, &a, wrap, 1, &b, n, 1, &mut c).is_err());
        assert!(gemm_f32(1, k, n, &a, 0, 1, &b, n, isize::MAX as usize + 1, &mut c).is_err());
        assert!(gemm_f32(usize::MAX, 2, 2, &a, 1, 1, &b, 1, 1, &mut c).is_err());
        assert!(gemm_loops(m, k, n, &a, wrap, 1, &b, n, 1, &mut c).is_err());
        assert!(c.iter().all(|&v| v == 7.0), "nothing was written");
        gemm_f32(m, k, n, &a, k, 1, &b, n, 1, &mut c).unwrap();
        assert!(c.iter().all(|&v| v == 3.0));
    }

    /// Operands shorter than their shapes, batches that do not match and sizes that overflow
    /// are typed errors, not index panics.
    #[test]
    fn matmul_checks_its_operands() {
        let a = vec![1.0f32; 12];
        let b = vec![1.0f32; 12];
        assert!(matmul(&a, &[3, 4], &b, &[4, 3], false, false).is_ok());
        assert!(matmul(&a[..11], &[3, 4], &b, &[4, 3], false, false).is_err());
        assert!(matmul(&a, &[3, 4], &b[..11], &[4, 3], false, false).is_err());
        assert!(matmul(&a, &[2, 3, 4], &b, &[4, 3], false, false).is_err(), "two batches of a need 24 values");
        assert!(matmul(&a, &[3, 4], &b, &[3, 4], false, false).is_err(), "inner sizes differ");
        assert!(matmul(&a, &[3, 4], &b, &[usize::MAX, 4, 3], false, false).is_err());
        assert!(matmul(&a, &[12], &b, &[4, 3], false, false).is_err());
        let e = matmul(&a, &[usize::MAX, 2], &b, &[2, 3], false, false).unwrap_err();
        assert!(matches!(e, Error::Shape { op: "matmul", .. }), "{e}");
    }
}
