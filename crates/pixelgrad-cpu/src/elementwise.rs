//! Elementwise kernels: unary maps, binary ops with broadcasting, and `where`.
//!
//! Binary ops take a fast path when both shapes are equal or one side is a single element;
//! otherwise the output is walked row by row (rows of its last axis), reading each input
//! through broadcast strides (0 on stretched axes).

use pixelgrad_core::shape::broadcast_strides;
use pixelgrad_core::{BinaryOp, Shape, UnaryOp};

use crate::element::Element;
use crate::par::{for_chunks, offset_of, FLAT_CHUNK};

fn map<T: Element>(x: &[T], f: impl Fn(T) -> T + Sync + Send) -> Vec<T> {
    let mut out = vec![T::ZERO; x.len()];
    for_chunks(&mut out, FLAT_CHUNK, |i, dst| {
        let src = &x[i * FLAT_CHUNK..i * FLAT_CHUNK + dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f(s);
        }
    });
    out
}

fn flag<T: Element>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

/// One input, same shape out.
pub fn unary<T: Element>(op: UnaryOp, x: &[T]) -> Vec<T> {
    match op {
        UnaryOp::Neg => map(x, |v| -v),
        UnaryOp::Exp => map(x, T::exp),
        UnaryOp::Log => map(x, T::ln),
        UnaryOp::Sqrt => map(x, T::sqrt),
        UnaryOp::Recip => map(x, |v| T::ONE / v),
        UnaryOp::Tanh => map(x, T::tanh),
        // 1 / (1 + e^-x): for very negative x, e^-x is +inf and the result a clean 0.
        UnaryOp::Sigmoid => map(x, |v| T::ONE / (T::ONE + (-v).exp())),
        UnaryOp::Abs => map(x, T::abs),
        UnaryOp::Sin => map(x, T::sin),
        UnaryOp::Cos => map(x, T::cos),
        UnaryOp::Affine { mul, add } => {
            let (m, a) = (T::from_f32(mul), T::from_f32(add));
            map(x, move |v| v * m + a)
        }
        UnaryOp::Powf(p) => {
            let p = T::from_f32(p);
            map(x, move |v| v.powf(p))
        }
        UnaryOp::MaxScalar(c) => {
            let c = T::from_f32(c);
            map(x, move |v| if v > c { v } else { c })
        }
        UnaryOp::MinScalar(c) => {
            let c = T::from_f32(c);
            map(x, move |v| if v < c { v } else { c })
        }
        UnaryOp::GtScalar(c) => {
            let c = T::from_f32(c);
            map(x, move |v| flag(v > c))
        }
    }
}

/// `f` applied to `a` and `b` broadcast to `out`.
fn zip<T: Element>(a: &[T], sa: &Shape, b: &[T], sb: &Shape, out: &Shape, f: impl Fn(T, T) -> T + Sync + Send) -> Vec<T> {
    let n = out.numel();
    let mut res = vec![T::ZERO; n];
    if sa == sb {
        for_chunks(&mut res, FLAT_CHUNK, |i, dst| {
            let base = i * FLAT_CHUNK;
            let (xa, xb) = (&a[base..base + dst.len()], &b[base..base + dst.len()]);
            for ((d, &u), &v) in dst.iter_mut().zip(xa).zip(xb) {
                *d = f(u, v);
            }
        });
    } else if b.len() == 1 && sa == out {
        let v = b[0];
        for_chunks(&mut res, FLAT_CHUNK, |i, dst| {
            let xa = &a[i * FLAT_CHUNK..i * FLAT_CHUNK + dst.len()];
            for (d, &u) in dst.iter_mut().zip(xa) {
                *d = f(u, v);
            }
        });
    } else if a.len() == 1 && sb == out {
        let u = a[0];
        for_chunks(&mut res, FLAT_CHUNK, |i, dst| {
            let xb = &b[i * FLAT_CHUNK..i * FLAT_CHUNK + dst.len()];
            for (d, &v) in dst.iter_mut().zip(xb) {
                *d = f(u, v);
            }
        });
    } else {
        let r = out.rank();
        let (ta, tb) = (broadcast_strides(sa, out), broadcast_strides(sb, out));
        let inner = out.0[r - 1];
        let (la, lb) = (ta[r - 1], tb[r - 1]);
        let outer = &out.0[..r - 1];
        for_chunks(&mut res, inner, |row, dst| {
            let oa = offset_of(row, outer, &ta[..r - 1]);
            let ob = offset_of(row, outer, &tb[..r - 1]);
            for (j, d) in dst.iter_mut().enumerate() {
                *d = f(a[oa + j * la], b[ob + j * lb]);
            }
        });
    }
    res
}

/// Two inputs broadcast against each other.
pub fn binary<T: Element>(op: BinaryOp, a: &[T], sa: &Shape, b: &[T], sb: &Shape, out: &Shape) -> Vec<T> {
    match op {
        BinaryOp::Add => zip(a, sa, b, sb, out, |x, y| x + y),
        BinaryOp::Sub => zip(a, sa, b, sb, out, |x, y| x - y),
        BinaryOp::Mul => zip(a, sa, b, sb, out, |x, y| x * y),
        BinaryOp::Div => zip(a, sa, b, sb, out, |x, y| x / y),
        BinaryOp::Max => zip(a, sa, b, sb, out, |x, y| if x >= y { x } else { y }),
        BinaryOp::Min => zip(a, sa, b, sb, out, |x, y| if x <= y { x } else { y }),
        BinaryOp::Pow => zip(a, sa, b, sb, out, |x, y| x.powf(y)),
        BinaryOp::Gt => zip(a, sa, b, sb, out, |x, y| flag(x > y)),
        BinaryOp::Ge => zip(a, sa, b, sb, out, |x, y| flag(x >= y)),
        BinaryOp::Eq => zip(a, sa, b, sb, out, |x, y| flag(x == y)),
    }
}

/// `cond != 0 ? a : b`, all three broadcast to `out`.
pub fn where_<T: Element>(ins: [(&[T], &Shape); 3], out: &Shape) -> Vec<T> {
    let n = out.numel();
    let mut res = vec![T::ZERO; n];
    if n == 0 {
        return res;
    }
    let r = out.rank();
    if r == 0 {
        res[0] = if ins[0].0[0] != T::ZERO { ins[1].0[0] } else { ins[2].0[0] };
        return res;
    }
    let st: Vec<Vec<usize>> = ins.iter().map(|(_, s)| broadcast_strides(s, out)).collect();
    let inner = out.0[r - 1];
    let outer = &out.0[..r - 1];
    let ((c, a, b), (lc, la, lb)) = ((ins[0].0, ins[1].0, ins[2].0), (st[0][r - 1], st[1][r - 1], st[2][r - 1]));
    for_chunks(&mut res, inner, |row, dst| {
        let oc = offset_of(row, outer, &st[0][..r - 1]);
        let oa = offset_of(row, outer, &st[1][..r - 1]);
        let ob = offset_of(row, outer, &st[2][..r - 1]);
        for (j, d) in dst.iter_mut().enumerate() {
            *d = if c[oc + j * lc] != T::ZERO { a[oa + j * la] } else { b[ob + j * lb] };
        }
    });
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(d: &[usize]) -> Shape {
        Shape::from(d)
    }

    #[test]
    fn broadcast_paths_agree() {
        let a: Vec<f64> = (0..6).map(|i| i as f64).collect(); // [2, 3]
        let row = [10.0, 20.0, 30.0]; // [3]
        let col = [100.0, 200.0]; // [2, 1]
        assert_eq!(binary(BinaryOp::Add, &a, &s(&[2, 3]), &row, &s(&[3]), &s(&[2, 3])), vec![10., 21., 32., 13., 24., 35.]);
        assert_eq!(binary(BinaryOp::Sub, &col, &s(&[2, 1]), &a, &s(&[2, 3]), &s(&[2, 3])), vec![100., 99., 98., 197., 196., 195.]);
        assert_eq!(binary(BinaryOp::Mul, &a, &s(&[2, 3]), &[2.0], &s(&[]), &s(&[2, 3])), vec![0., 2., 4., 6., 8., 10.]);
        // Outer product through two stretched axes.
        assert_eq!(binary(BinaryOp::Mul, &col, &s(&[2, 1]), &row, &s(&[1, 3]), &s(&[2, 3])), vec![1e3, 2e3, 3e3, 2e3, 4e3, 6e3]);
    }

    #[test]
    fn comparisons_and_where() {
        let a = [1.0f32, 2.0, 3.0];
        let b = [2.0f32];
        assert_eq!(binary(BinaryOp::Ge, &a, &s(&[3]), &b, &s(&[1]), &s(&[3])), vec![0.0, 1.0, 1.0]);
        assert_eq!(unary(UnaryOp::GtScalar(1.5), &a), vec![0.0, 1.0, 1.0]);
        let c = [1.0f32, 0.0, 1.0];
        assert_eq!(where_([(&c, &s(&[3])), (&a, &s(&[3])), (&[9.0], &s(&[]))], &s(&[3])), vec![1.0, 9.0, 3.0]);
    }

    #[test]
    fn sigmoid_saturates_cleanly() {
        let y = unary(UnaryOp::Sigmoid, &[-1000.0f32, 0.0, 1000.0]);
        assert_eq!(y, vec![0.0, 0.5, 1.0]);
    }
}
