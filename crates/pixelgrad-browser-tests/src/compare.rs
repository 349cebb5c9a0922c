//! Elementwise comparison of a GPU result against the CPU reference.

use std::fmt;

/// Tolerance for `|got - want| <= abs + rel * |want|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub rel: f32,
    pub abs: f32,
}

impl Tolerance {
    /// Matmul outputs: 1e-4 relative (summation order differs between backends), with a small
    /// absolute floor for outputs that cancel to near zero.
    pub const MATMUL: Tolerance = Tolerance { rel: 1e-4, abs: 1e-5 };
    /// One training step: loss, gradients and updated weights go through more ops
    /// (exp/log/sigmoid on the GPU) than a matmul, so allow slightly more.
    pub const TRAIN: Tolerance = Tolerance { rel: 1e-4, abs: 1e-5 };
}

/// The worst element of a failed comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub what: String,
    pub index: usize,
    pub got: f32,
    pub want: f32,
    /// Number of elements outside the tolerance.
    pub count: usize,
    pub len: usize,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} of {} elements outside tolerance; worst at [{}]: got {} want {} (diff {:e})",
            self.what,
            self.count,
            self.len,
            self.index,
            self.got,
            self.want,
            (self.got - self.want).abs()
        )
    }
}

/// Largest relative error `|got - want| / max(|want|, tiny)` (for logging).
pub fn max_rel_error(got: &[f32], want: &[f32]) -> f32 {
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / w.abs().max(1e-12))
        .fold(0.0, f32::max)
}

/// Checks `got` against `want` elementwise. Lengths must match; NaN never matches.
pub fn check_close(what: &str, got: &[f32], want: &[f32], tol: Tolerance) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: length {} but the reference has {}", got.len(), want.len()));
    }
    let mut worst: Option<(usize, f32)> = None;
    let mut count = 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let diff = (g - w).abs();
        let allowed = tol.abs + tol.rel * w.abs();
        // NaN in either side counts as a mismatch (every comparison with NaN is false).
        if diff.is_nan() || diff > allowed {
            count += 1;
            let excess = if diff.is_nan() { f32::INFINITY } else { diff / allowed };
            if worst.is_none_or(|(_, e)| excess > e) {
                worst = Some((i, excess));
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((index, _)) => Err(Mismatch { what: what.to_string(), index, got: got[index], want: want[index], count, len: got.len() }
            .to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_pass() {
        assert!(check_close("x", &[1.0, -2.0, 0.0], &[1.0, -2.0, 0.0], Tolerance::MATMUL).is_ok());
    }

    #[test]
    fn relative_tolerance_scales_with_magnitude() {
        assert!(check_close("x", &[1000.05], &[1000.0], Tolerance::MATMUL).is_ok());
        let err = check_close("x", &[1.01, 2.0], &[1.0, 2.0], Tolerance::MATMUL).unwrap_err();
        assert!(err.contains("1 of 2") && err.contains("[0]"), "{err}");
    }

    #[test]
    fn nan_and_length_mismatch_fail() {
        assert!(check_close("x", &[f32::NAN], &[1.0], Tolerance::MATMUL).is_err());
        assert!(check_close("x", &[1.0], &[f32::NAN], Tolerance::MATMUL).is_err());
        assert!(check_close("x", &[1.0], &[1.0, 2.0], Tolerance::MATMUL).unwrap_err().contains("length"));
    }

    #[test]
    fn max_rel_error_reports_worst() {
        let e = max_rel_error(&[1.0, 2.2], &[1.0, 2.0]);
        assert!((e - 0.1).abs() < 1e-5, "{e}");
    }
}
