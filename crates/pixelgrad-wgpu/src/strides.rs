//! Index arithmetic shared by the launchers: merging axes so kernels see a small rank.

use pixelgrad_core::{Error, Result};

/// Largest rank the strided kernels accept (their parameter slots hold 8 sizes per operand).
pub(crate) const MAX_RANK: usize = 8;

/// Drops size-1 axes and merges neighbouring axes that are contiguous in every operand
/// (`stride[i] == stride[i + 1] * dims[i + 1]` for all stride vectors). The element order is
/// unchanged, so a kernel iterating the merged box visits the same elements; merging keeps the
/// per-element index arithmetic short and makes higher-rank inputs fit in most cases.
pub(crate) fn coalesce(dims: &[usize], strides: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut out_dims: Vec<usize> = Vec::with_capacity(dims.len());
    let mut out_strides: Vec<Vec<usize>> = vec![Vec::with_capacity(dims.len()); strides.len()];
    for (ax, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        if !out_dims.is_empty() {
            let mergeable = strides
                .iter()
                .zip(out_strides.iter())
                .all(|(s, os)| os.last().copied() == Some(s[ax] * d));
            if mergeable {
                let l = out_dims.len() - 1;
                out_dims[l] *= d;
                for (s, os) in strides.iter().zip(out_strides.iter_mut()) {
                    let l = os.len() - 1;
                    os[l] = s[ax];
                }
                continue;
            }
        }
        out_dims.push(d);
        for (s, os) in strides.iter().zip(out_strides.iter_mut()) {
            os.push(s[ax]);
        }
    }
    (out_dims, out_strides)
}

/// Checks a merged rank against [`MAX_RANK`].
pub(crate) fn check_rank(op: &'static str, rank: usize) -> Result<()> {
    if rank > MAX_RANK {
        return Err(Error::backend(
            op,
            crate::BACKEND,
            format!("needs {rank} axes after merging contiguous ones; kernels support {MAX_RANK}"),
        ));
    }
    Ok(())
}

/// Row-major strides of `dims`.
pub(crate) fn contiguous(dims: &[usize]) -> Vec<usize> {
    pixelgrad_core::shape::contiguous_strides(dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_contiguous_axes() {
        // A plain contiguous [2, 3, 4] is one axis of 24.
        let (d, s) = coalesce(&[2, 3, 4], &[vec![12, 4, 1]]);
        assert_eq!(d, vec![24]);
        assert_eq!(s, vec![vec![1]]);
        // Broadcast along the middle axis stays separate.
        let (d, s) = coalesce(&[2, 3, 4], &[vec![12, 4, 1], vec![4, 0, 1]]);
        assert_eq!(d, vec![2, 3, 4]);
        assert_eq!(s, vec![vec![12, 4, 1], vec![4, 0, 1]]);
        // Size-1 axes vanish.
        let (d, _) = coalesce(&[1, 5, 1], &[vec![5, 1, 1]]);
        assert_eq!(d, vec![5]);
    }
}
