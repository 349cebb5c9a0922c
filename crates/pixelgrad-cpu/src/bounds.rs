//! Bounds checks done once per call, in release builds too, before a kernel indexes its
//! slices: the strided reads of the GEMMs (whose fast paths read through raw pointers) and the
//! window kernels' planes. Sizes are computed with checked arithmetic, so a slice too short
//! for the shape it is said to hold, or a shape whose size overflows, is a typed
//! [`Error::Shape`] instead of an out-of-bounds read, a wrapped size or a panic. The kernels'
//! own loops then index only inside what was checked here.

use pixelgrad_core::{Error, Result, Window};

const BACKEND: &str = "cpu";

fn shape_error(op: &'static str, shapes: Vec<Vec<usize>>, msg: String) -> Error {
    Error::Shape { op, shapes, backend: BACKEND.into(), msg }
}

/// One past the last element that `rows x cols` reads at `r * rs + c * cs` reach (0 when
/// there are none), or `None` when that overflows.
pub(crate) fn reach(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    (rows - 1).checked_mul(rs)?.checked_add((cols - 1).checked_mul(cs)?)?.checked_add(1)
}

/// Checks one strided product `c [m, n] = a [m, k] * b [k, n]`: element `(i, p)` of `a` at
/// `i * rsa + p * csa`, `(p, j)` of `b` at `p * rsb + j * csb`, `c` contiguous. Every read must
/// lie inside its slice, `c` must hold `m * n` values, and every stride must fit `isize` (the
/// pointer-based GEMMs offset by it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_gemm(
    m: usize,
    k: usize,
    n: usize,
    a_len: usize,
    rsa: usize,
    csa: usize,
    b_len: usize,
    rsb: usize,
    csb: usize,
    c_len: usize,
) -> Result<()> {
    let err = |msg: String| shape_error("matmul", vec![vec![m, k], vec![k, n]], msg);
    let out = m.checked_mul(n).ok_or_else(|| err(format!("a {m} x {n} result overflows the address space")))?;
    if c_len < out {
        return Err(err(format!("the result holds {c_len} values, {m} x {n} needs {out}")));
    }
    if [rsa, csa, rsb, csb].iter().any(|&s| isize::try_from(s).is_err()) {
        return Err(err(format!("strides ({rsa}, {csa}) and ({rsb}, {csb}) overflow isize")));
    }
    if out == 0 || k == 0 {
        return Ok(());
    }
    for (name, len, rows, cols, rs, cs) in [("a", a_len, m, k, rsa, csa), ("b", b_len, k, n, rsb, csb)] {
        match reach(rows, cols, rs, cs) {
            Some(r) if r <= len => {}
            Some(r) => return Err(err(format!("operand {name} holds {len} values, its strides ({rs}, {cs}) read up to {r}"))),
            None => return Err(err(format!("operand {name}'s strides ({rs}, {cs}) over {rows} x {cols} overflow"))),
        }
    }
    Ok(())
}

/// Checks a window op's image `x` (`dims` = `[N, C, H, W]`, `x_len` values) and its output
/// size `oh x ow` against the window: rank 4, the output size the window gives, and every
/// size (input, output) a product that fits and, for the input, is held by `x`.
pub(crate) fn check_window(op: &'static str, x_len: usize, dims: &[usize], w: &Window, oh: usize, ow: usize) -> Result<()> {
    let err = |msg: String| shape_error(op, vec![dims.to_vec()], msg);
    let &[n, c, h, wd] = dims else {
        return Err(err("expects an NCHW input of rank 4".into()));
    };
    if w.out_hw(h, wd) != Some((oh, ow)) {
        return Err(err(format!("{w:?} on {h} x {wd} does not give a {oh} x {ow} output")));
    }
    let need = [n, c, h, wd].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    match need {
        Some(need) if need <= x_len => {}
        Some(need) => return Err(err(format!("the input holds {x_len} values, its shape needs {need}"))),
        None => return Err(err("the input's size overflows".into())),
    }
    if [n, c, oh, ow].iter().try_fold(1usize, |a, &d| a.checked_mul(d)).is_none() {
        return Err(err(format!("a {oh} x {ow} output of {n} x {c} planes overflows")));
    }
    Ok(())
}

/// Checks that a window op's weights hold `filters x c x kh x kw` values (`k_len`).
pub(crate) fn check_weights(op: &'static str, k_len: usize, filters: usize, c: usize, w: &Window) -> Result<()> {
    let need = [filters, c, w.kh, w.kw].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    match need {
        Some(need) if need <= k_len => Ok(()),
        _ => Err(shape_error(
            op,
            vec![vec![filters, c, w.kh, w.kw]],
            format!("the weights hold {k_len} values, [{filters}, {c}, {}, {}] needs more", w.kh, w.kw),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reach_is_checked() {
        assert_eq!(reach(0, 5, 9, 9), Some(0));
        assert_eq!(reach(2, 3, 3, 1), Some(6));
        assert_eq!(reach(3, 2, 1, 3), Some(6));
        assert_eq!(reach(3, 2, usize::MAX / 2 + 1, 1), None);
        assert_eq!(reach(usize::MAX, 2, 2, 1), None);
    }

    #[test]
    fn gemm_checks_every_operand() {
        assert!(check_gemm(2, 3, 4, 6, 3, 1, 12, 4, 1, 8).is_ok());
        // Transposed a read with swapped strides.
        assert!(check_gemm(2, 3, 4, 6, 1, 2, 12, 4, 1, 8).is_ok());
        for (a, b, c) in [(5, 12, 8), (6, 11, 8), (6, 12, 7)] {
            let e = check_gemm(2, 3, 4, a, 3, 1, b, 4, 1, c).unwrap_err();
            assert!(matches!(e, Error::Shape { op: "matmul", .. }), "{e}");
        }
        // Strides whose reach wraps in release arithmetic: 1 + (2^63) * 2 wraps to 1.
        let half = 1usize << (usize::BITS - 1);
        assert!(check_gemm(3, 1, 1, 8, half, 1, 1, 1, 1, 3).is_err());
        assert!(check_gemm(1, 3, 1, 8, 1, half, 3, 1, 1, 1).is_err());
        assert!(check_gemm(usize::MAX, 1, 2, 8, 1, 1, 2, 1, 1, 8).is_err());
        // Empty products read nothing.
        assert!(check_gemm(0, 3, 4, 0, 3, 1, 0, 4, 1, 0).is_ok());
        assert!(check_gemm(2, 0, 4, 0, 3, 1, 0, 4, 1, 8).is_ok());
    }

    #[test]
    fn window_checks_shapes_sizes_and_lengths() {
        let w = Window::square(3, 1, 1);
        assert!(check_window("max_pool", 2 * 3 * 4 * 5, &[2, 3, 4, 5], &w, 4, 5).is_ok());
        assert!(check_window("max_pool", 2 * 3 * 4 * 5 - 1, &[2, 3, 4, 5], &w, 4, 5).is_err());
        assert!(check_window("max_pool", 120, &[2, 3, 4, 5], &w, 4, 6).is_err());
        assert!(check_window("max_pool", 120, &[2, 3, 20], &w, 4, 5).is_err());
        assert!(check_window("max_pool", usize::MAX, &[usize::MAX, 3, 4, 5], &w, 4, 5).is_err());
        assert!(check_weights("conv2d", 2 * 3 * 9, 2, 3, &w).is_ok());
        assert!(check_weights("conv2d", 2 * 3 * 9 - 1, 2, 3, &w).is_err());
        assert!(check_weights("conv2d", usize::MAX, usize::MAX, 3, &w).is_err());
    }
}
