//! Data movement: permute, expand, slice, pad, concat. Permute, expand and slice are one
//! kernel, a strided read (output axis `a` steps the source by `strides[a]`, 0 for stretched
//! axes); pad and concat copy contiguous runs into place.

use pixelgrad_core::shape::{broadcast_strides, contiguous_strides};
use pixelgrad_core::Shape;

use crate::element::Element;
use crate::par::{for_chunks, offset_of};

/// `out[i0, .., ir] = src[base + sum_a i_a * strides[a]]` over `out_dims`.
fn strided_read<T: Element>(src: &[T], base: usize, strides: &[usize], out_dims: &[usize]) -> Vec<T> {
    let n: usize = out_dims.iter().product();
    let mut out = vec![T::ZERO; n];
    let r = out_dims.len();
    if r == 0 {
        if n == 1 {
            out[0] = src[base];
        }
        return out;
    }
    let (outer, last) = (&out_dims[..r - 1], strides[r - 1]);
    for_chunks(&mut out, out_dims[r - 1], |row, dst| {
        let off = base + offset_of(row, outer, &strides[..r - 1]);
        if last == 1 {
            dst.copy_from_slice(&src[off..off + dst.len()]);
        } else {
            for (j, d) in dst.iter_mut().enumerate() {
                *d = src[off + j * last];
            }
        }
    });
    out
}

/// `[batch, m, n]` → `[batch, n, m]` in 32x32 tiles, so both the reads and the writes of a
/// tile stay within a few cache lines (a row-by-row strided read would miss on every element).
fn transpose_last2<T: Element>(x: &[T], batch: usize, m: usize, n: usize) -> Vec<T> {
    const TILE: usize = 16;
    let mut out = vec![T::ZERO; batch * m * n];
    for_chunks(&mut out, m * n, |b, dst| {
        let src = &x[b * m * n..(b + 1) * m * n];
        for i0 in (0..m).step_by(TILE) {
            for j0 in (0..n).step_by(TILE) {
                for i in i0..(i0 + TILE).min(m) {
                    for j in j0..(j0 + TILE).min(n) {
                        dst[j * m + i] = src[i * n + j];
                    }
                }
            }
        }
    });
    out
}

/// Output axis `i` is input axis `perm[i]`.
pub fn permute<T: Element>(x: &[T], dims: &[usize], perm: &[usize], out: &Shape) -> Vec<T> {
    let r = dims.len();
    // Swapping the last two axes (the common transpose) gets the tiled kernel.
    if r >= 2 && perm[r - 1] == r - 2 && perm[r - 2] == r - 1 && (0..r - 2).all(|i| perm[i] == i) {
        let batch = dims[..r - 2].iter().product();
        return transpose_last2(x, batch, dims[r - 2], dims[r - 1]);
    }
    let st = contiguous_strides(dims);
    let strides: Vec<usize> = perm.iter().map(|&p| st[p]).collect();
    strided_read(x, 0, &strides, &out.0)
}

/// Size-1 axes stretched (stride 0) and leading axes added.
pub fn expand<T: Element>(x: &[T], shape: &Shape, out: &Shape) -> Vec<T> {
    strided_read(x, 0, &broadcast_strides(shape, out), &out.0)
}

/// The sub-box `starts..ends`.
pub fn slice<T: Element>(x: &[T], dims: &[usize], starts: &[usize], out: &Shape) -> Vec<T> {
    let st = contiguous_strides(dims);
    let base = starts.iter().zip(&st).map(|(s, t)| s * t).sum();
    strided_read(x, base, &st, &out.0)
}

/// Zeros `before[a]` and `after[a]` around every axis.
pub fn pad<T: Element>(x: &[T], dims: &[usize], before: &[usize], out: &Shape) -> Vec<T> {
    let od = &out.0;
    let mut res = vec![T::ZERO; out.numel()];
    let r = dims.len();
    if r == 0 {
        res.copy_from_slice(x);
        return res;
    }
    let st = contiguous_strides(dims);
    let (b_last, w_last) = (before[r - 1], dims[r - 1]);
    for_chunks(&mut res, od[r - 1], |row, dst| {
        // Find the source row, or leave zeros if this output row lies in the padding.
        let (mut rem, mut off) = (row, 0);
        for a in (0..r - 1).rev() {
            let c = rem % od[a];
            rem /= od[a];
            if c < before[a] || c >= before[a] + dims[a] {
                return;
            }
            off += (c - before[a]) * st[a];
        }
        dst[b_last..b_last + w_last].copy_from_slice(&x[off..off + w_last]);
    });
    res
}

/// Inputs joined along `axis`: each output "outer" row is the inputs' rows one after another.
pub fn concat<T: Element>(xs: &[&[T]], shapes: &[&Shape], axis: usize, out: &Shape) -> Vec<T> {
    let inner: usize = out.0[axis + 1..].iter().product();
    let row_len = out.0[axis] * inner;
    let mut res = vec![T::ZERO; out.numel()];
    for_chunks(&mut res, row_len, |o, dst| {
        let mut at = 0;
        for (x, s) in xs.iter().zip(shapes) {
            let len = s.0[axis] * inner;
            dst[at..at + len].copy_from_slice(&x[o * len..(o + 1) * len]);
            at += len;
        }
    });
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_slice_pad_concat() {
        let x: Vec<f64> = (0..6).map(|i| i as f64).collect(); // [2, 3]
        assert_eq!(permute(&x, &[2, 3], &[1, 0], &Shape::from([3, 2])), vec![0., 3., 1., 4., 2., 5.]);
        // The tiled transpose agrees with the general strided path on tile-straddling sizes.
        let (b, m, n) = (2, 37, 45);
        let y: Vec<f64> = (0..b * m * n).map(|i| i as f64).collect();
        let tiled = permute(&y, &[b, m, n], &[0, 2, 1], &Shape::from([b, n, m]));
        let general = strided_read(&y, 0, &[m * n, 1, n], &[b, n, m]);
        assert_eq!(tiled, general);
        assert_eq!(slice(&x, &[2, 3], &[1, 1], &Shape::from([1, 2])), vec![4., 5.]);
        assert_eq!(pad(&x[..2], &[1, 2], &[1, 0], &Shape::from([2, 3])), vec![0., 0., 0., 0., 1., 0.]);
        assert_eq!(expand(&x[..3], &Shape::from([3]), &Shape::from([2, 3])), vec![0., 1., 2., 0., 1., 2.]);
        let (a, b) = (&x[..2], &x[2..6]); // [2, 1] and [2, 2]
        let out = concat(&[a, b], &[&Shape::from([2, 1]), &Shape::from([2, 2])], 1, &Shape::from([2, 3]));
        assert_eq!(out, vec![0., 2., 3., 1., 4., 5.]);
    }
}
