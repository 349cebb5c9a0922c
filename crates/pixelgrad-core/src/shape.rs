//! Shapes, strides and broadcasting rules (NumPy semantics: align trailing axes, size 1
//! stretches).

use crate::{Error, Result};

/// A tensor shape: sizes of each axis, outermost first. Tensors are always stored contiguous,
/// row-major, so the shape alone describes the layout.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<usize>);

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Self {
        Shape(v)
    }
}
impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Self {
        Shape(v.to_vec())
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Self {
        Shape(v.to_vec())
    }
}
impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

impl Shape {
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape(dims.into())
    }
    pub fn scalar() -> Self {
        Shape(vec![])
    }
    pub fn dims(&self) -> &[usize] {
        &self.0
    }
    pub fn rank(&self) -> usize {
        self.0.len()
    }
    /// Number of elements (1 for a scalar), saturating at `usize::MAX` where the product
    /// overflows (so a size check against it fails instead of passing on a wrapped value).
    /// Shapes of tensors always fit: [`crate::Op::infer_shape`] refuses the others.
    pub fn numel(&self) -> usize {
        self.try_numel().unwrap_or(usize::MAX)
    }
    /// Number of elements, or `None` where the product overflows `usize` (a shape read from
    /// an untrusted file, say).
    pub fn try_numel(&self) -> Option<usize> {
        self.0.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }
    /// Size of `axis`; panics-free callers use [`Shape::axis`] first.
    pub fn dim(&self, axis: usize) -> usize {
        self.0[axis]
    }
    /// Row-major contiguous strides, in elements.
    pub fn strides(&self) -> Vec<usize> {
        contiguous_strides(&self.0)
    }
    /// The dims after `perm` when it is a valid permutation that moves only size-1 axes (the
    /// others keep their order, so the elements keep theirs): a reshape. `None` otherwise.
    pub fn permuted_in_place(&self, perm: &[usize]) -> Option<Vec<usize>> {
        let dims = self.dims();
        let mut seen = vec![false; dims.len()];
        let valid = perm.len() == dims.len() && perm.iter().all(|&p| p < dims.len() && !std::mem::replace(&mut seen[p], true));
        let kept: Vec<usize> = perm.iter().copied().filter(|&p| valid && dims[p] != 1).collect();
        (valid && kept.windows(2).all(|w| w[0] < w[1])).then(|| perm.iter().map(|&p| dims[p]).collect())
    }
    /// Resolves a possibly negative axis against this rank.
    pub fn axis(&self, op: &'static str, axis: isize) -> Result<usize> {
        let r = self.rank() as isize;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a >= r.max(1) || (r == 0) {
            return Err(Error::Shape {
                op,
                shapes: vec![self.0.clone()],
                backend: String::new(),
                msg: format!("axis {axis} is out of range for rank {r}"),
            });
        }
        Ok(a as usize)
    }
}

/// Most axes a tensor may have, on every backend ([`crate::Op::infer_shape`] refuses more).
/// GPU kernels pass shapes and strides as fixed-size uniform arrays of this length (after
/// merging axes that are contiguous in every operand, fewer are used).
pub const MAX_RANK: usize = 8;

/// Row-major contiguous strides of `dims`, in elements.
pub fn contiguous_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(dims[i + 1]);
    }
    s
}

/// The broadcast shape of several shapes, or `None` if they do not broadcast.
pub fn broadcast_shapes(shapes: &[&Shape]) -> Option<Shape> {
    let rank = shapes.iter().map(|s| s.rank()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let off = rank - s.rank();
        for (i, &d) in s.0.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return None;
            }
        }
    }
    Some(Shape(out))
}

/// Strides to read `input` as if it had been broadcast to `out` (0 on stretched axes). The
/// result has `out.rank()` entries. Backends pass these to kernels as uniforms.
pub fn broadcast_strides(input: &Shape, out: &Shape) -> Vec<usize> {
    let strides = input.strides();
    let off = out.rank() - input.rank();
    let mut res = vec![0; out.rank()];
    for i in 0..input.rank() {
        res[off + i] = if input.0[i] == 1 { 0 } else { strides[i] };
    }
    res
}

/// The strides of an operand of rank 4 or less read as broadcast along its size-1 axes, right
/// aligned to four axes: its contiguous strides with 0 where the size is 1 (what
/// [`broadcast_strides`] gives for the shape onto itself, as the array of four that kernels such
/// as the attention mask's read).
pub fn broadcast_strides4(dims: &[usize]) -> [usize; 4] {
    let mut st = [0; 4];
    let mut acc = 1;
    for (slot, &d) in (0..4).rev().zip(dims.iter().rev()) {
        st[slot] = if d == 1 { 0 } else { acc };
        acc *= d;
    }
    st
}

/// Drops size-1 axes and merges neighbouring axes that are contiguous in every operand
/// (`stride[i] == stride[i + 1] * dims[i + 1]` for all stride vectors). The element order is
/// unchanged, so a kernel iterating the merged box visits the same elements; merging keeps the
/// per-element index arithmetic short and makes higher-rank inputs fit in most cases.
pub fn coalesce(dims: &[usize], strides: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut out_dims: Vec<usize> = Vec::with_capacity(dims.len());
    let mut out_strides: Vec<Vec<usize>> = vec![Vec::with_capacity(dims.len()); strides.len()];
    for (ax, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        if !out_dims.is_empty() {
            let mergeable = strides.iter().zip(out_strides.iter()).all(|(s, os)| os.last().copied() == Some(s[ax] * d));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        let a = Shape::from([4, 1, 3]);
        let b = Shape::from([5, 1]);
        assert_eq!(broadcast_shapes(&[&a, &b]).unwrap(), Shape::from([4, 5, 3]));
        assert!(broadcast_shapes(&[&Shape::from([2]), &Shape::from([3])]).is_none());
        assert_eq!(broadcast_strides(&b, &Shape::from([4, 5, 3])), vec![0, 1, 0]);
        // a mask [B, 1, S, T] read at [B, N, S, T], and one of rank 2 right-aligned
        assert_eq!(broadcast_strides4(&[2, 1, 3, 5]), [15, 0, 5, 1]);
        assert_eq!(broadcast_strides4(&[3, 5]), [0, 0, 5, 1]);
        let m = Shape::from([2, 1, 3, 5]);
        assert_eq!(broadcast_strides4(m.dims()).to_vec(), broadcast_strides(&m, &m));
    }

    #[test]
    fn permutes_that_move_only_unit_axes() {
        let s = Shape::from([2, 5, 4, 1]);
        assert_eq!(s.permuted_in_place(&[0, 3, 1, 2]), Some(vec![2, 1, 5, 4]));
        assert_eq!(s.permuted_in_place(&[0, 1, 2, 3]), Some(vec![2, 5, 4, 1]));
        // A real reordering, a repeated axis, a wrong length, an axis out of range.
        for perm in [&[0, 3, 2, 1][..], &[0, 0, 1, 2], &[0, 1, 2], &[0, 1, 2, 4]] {
            assert_eq!(s.permuted_in_place(perm), None, "{perm:?}");
        }
        assert_eq!(Shape::from([1, 1]).permuted_in_place(&[1, 0]), Some(vec![1, 1]));
    }

    #[test]
    fn axes() {
        let s = Shape::from([2, 3]);
        assert_eq!(s.axis("t", -1).unwrap(), 1);
        assert!(s.axis("t", 2).is_err());
        assert_eq!(s.strides(), vec![3, 1]);
    }

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
