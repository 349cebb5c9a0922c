//! Index arithmetic shared by the launchers: merging axes so kernels see a small rank.

use pixelgrad_core::{Error, Result};

/// Largest rank the strided kernels accept (their parameter slots hold this many sizes per
/// operand): the engine-wide limit.
pub(crate) use pixelgrad_core::MAX_RANK;

pub(crate) use pixelgrad_core::shape::coalesce;

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
