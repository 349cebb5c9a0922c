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
    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        self.0.iter().product()
    }
    /// Size of `axis`; panics-free callers use [`Shape::axis`] first.
    pub fn dim(&self, axis: usize) -> usize {
        self.0[axis]
    }
    /// Row-major contiguous strides, in elements.
    pub fn strides(&self) -> Vec<usize> {
        contiguous_strides(&self.0)
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

/// Row-major contiguous strides of `dims`, in elements.
pub fn contiguous_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
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
    }

    #[test]
    fn axes() {
        let s = Shape::from([2, 3]);
        assert_eq!(s.axis("t", -1).unwrap(), 1);
        assert!(s.axis("t", 2).is_err());
        assert_eq!(s.strides(), vec![3, 1]);
    }
}
