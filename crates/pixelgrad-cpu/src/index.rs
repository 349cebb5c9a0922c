//! Gather and scatter-add along one axis. Index tensors hold whole numbers stored as floats;
//! every index is checked (whole, finite, in range) before any data moves, and a bad one is a
//! typed error naming the op, the position and the allowed range.
//!
//! The GPU backends render these ops from one definition (`pixelgrad_core::kernel::indexing`);
//! the CPU keeps its loops because they are measured faster than evaluating that definition
//! (`examples/index_program_bench.rs`, one thread, 2026-12-06): the interpreter took 18x the
//! loops' time on a 2048-row embedding gather (101 vs 5.6 ms) and 4250x on its scatter
//! (output-driven, as the GPUs need: 21.9 s vs 5.2 ms).

use pixelgrad_core::{Error, Result};

use crate::element::Element;
use crate::par::{for_chunks, FLAT_CHUNK};

/// Sizes of the `[outer, axis, inner]` view of `dims`.
fn split(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    (dims[..axis].iter().product(), dims[axis], dims[axis + 1..].iter().product())
}

/// Converts every index to `usize`, or reports the first bad one.
fn check_indices<T: Element>(op: &'static str, backend: &str, idx: &[T], limit: usize) -> Result<Vec<usize>> {
    idx.iter()
        .enumerate()
        .map(|(pos, &v)| {
            let f = v.to_f64();
            if f.is_finite() && f.fract() == 0.0 && f >= 0.0 && f < limit as f64 {
                Ok(f as usize)
            } else {
                Err(Error::backend(op, backend, format!("index {f} at position {pos} is not a whole number in 0..{limit}")))
            }
        })
        .collect()
}

/// Checks every index like [`check_indices`] without building a copy: one vectorisable pass
/// over the floats (the common case: all good), the slow conversion only to name a bad one.
fn validate_indices<T: Element>(op: &'static str, backend: &str, idx: &[T], limit: usize) -> Result<()> {
    let lim = T::from_usize(limit);
    // Exactly representable limits only (f32 holds whole numbers to 2^24 exactly).
    if limit < (1 << 24) && idx.iter().all(|&v| v >= T::ZERO && v < lim && v.floor() == v) {
        return Ok(());
    }
    check_indices(op, backend, idx, limit).map(|_| ())
}

/// `out[o, j, i] = x[o, idx[o, j, i], i]`; output has the index tensor's shape.
pub fn gather<T: Element>(backend: &str, x: &[T], dx: &[usize], idx: &[T], didx: &[usize], axis: usize) -> Result<Vec<T>> {
    let nx = dx[axis];
    let (_, ni, inner) = split(didx, axis);
    validate_indices("gather", backend, idx, nx)?;
    let mut out = vec![T::ZERO; idx.len()];
    if inner == 0 || ni == 0 {
        return Ok(out);
    }
    // Chunks of whole (o, j) rows of `inner` elements, at least a few thousand values each (a
    // lookup table gathers with `inner` = 1: one call per value would cost more than the
    // lookup); indices are whole numbers in 0..nx here.
    let rows_per_chunk = (FLAT_CHUNK / inner).max(1);
    for_chunks(&mut out, rows_per_chunk * inner, |chunk, dst| {
        let first = chunk * rows_per_chunk;
        // (o, j) of the chunk's first row, then stepped (no division per row).
        let (mut o, mut j) = (first / ni, first % ni);
        if inner == 1 {
            // A lookup table: one value per row, read straight from the table of outer index o.
            for (r, d) in dst.iter_mut().enumerate() {
                *d = x[o * nx + idx[first + r].to_f64() as usize];
                j += 1;
                if j == ni {
                    (o, j) = (o + 1, 0);
                }
            }
            return;
        }
        for (r, dst) in dst.chunks_mut(inner).enumerate() {
            let pos = (first + r) * inner;
            let base = o * nx * inner;
            for (i, (d, &v)) in dst.iter_mut().zip(&idx[pos..pos + inner]).enumerate() {
                *d = x[base + v.to_f64() as usize * inner + i];
            }
            j += 1;
            if j == ni {
                (o, j) = (o + 1, 0);
            }
        }
    });
    Ok(out)
}

/// Zeros with `axis` resized to `size`, then `out[o, idx[o, j, i], i] += src[o, j, i]`.
/// Sequential: different sources may add into the same destination.
pub fn scatter_add<T: Element>(backend: &str, src: &[T], dsrc: &[usize], idx: &[T], axis: usize, size: usize) -> Result<Vec<T>> {
    let (outer, n, inner) = split(dsrc, axis);
    let k = check_indices("scatter_add", backend, idx, size)?;
    let mut out = vec![T::ZERO; outer * size * inner];
    for o in 0..outer {
        for j in 0..n {
            let pos = (o * n + j) * inner;
            for i in 0..inner {
                out[(o * size + k[pos + i]) * inner + i] += src[pos + i];
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_and_scatter_along_rows() {
        let x = [10.0f32, 11.0, 12.0, 20.0, 21.0, 22.0]; // [2, 3]
        let idx = [2.0f32, 0.0, 1.0, 1.0]; // [2, 2]
        assert_eq!(gather("cpu", &x, &[2, 3], &idx, &[2, 2], 1).unwrap(), vec![12.0, 10.0, 21.0, 21.0]);
        let src = [1.0f32, 2.0, 3.0, 4.0];
        assert_eq!(scatter_add("cpu", &src, &[2, 2], &idx, 1, 3).unwrap(), vec![2.0, 0.0, 1.0, 0.0, 7.0, 0.0]);
    }

    /// Chunks of many rows (a lookup table's `inner` = 1 and rows that do not divide the
    /// chunk, so chunks start inside an outer index) give what the definition does.
    #[test]
    fn gather_in_multi_row_chunks_matches_the_definition() {
        for (outer, nx, ni, inner) in [(5000, 4, 3, 1), (1, 256, 10007, 1), (7, 5, 9, 3), (3, 2, 1500, 5)] {
            let x: Vec<f32> = (0..outer * nx * inner).map(|v| v as f32).collect();
            let idx: Vec<f32> = (0..outer * ni * inner).map(|v| ((v * 7 + v / 3) % nx) as f32).collect();
            let got = gather("cpu", &x, &[outer, nx, inner], &idx, &[outer, ni, inner], 1).unwrap();
            for o in 0..outer {
                for j in 0..ni {
                    for i in 0..inner {
                        let at = (o * ni + j) * inner + i;
                        assert_eq!(got[at], x[(o * nx + idx[at] as usize) * inner + i], "{outer} {nx} {ni} {inner} at {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn bad_indices_are_errors() {
        let x = [1.0f64, 2.0];
        for bad in [2.0, -1.0, 0.5, f64::NAN, f64::INFINITY] {
            let e = gather("cpu", &x, &[2], &[bad], &[1], 0).unwrap_err();
            assert!(matches!(e, Error::Backend { op: "gather", .. }), "{e}");
            assert!(scatter_add("cpu", &x[..1], &[1], &[bad], 0, 2).is_err());
        }
    }
}
