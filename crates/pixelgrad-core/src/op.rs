//! The primitive op set. Backends implement forward kernels for exactly these ops (matching the
//! enum exhaustively, so a new primitive fails to compile wherever it is missing); everything
//! else in pixelgrad (relu, softmax, cross-entropy, pooling, batch norm, optimizers) is composed
//! from them in core, and every primitive has one gradient rule in [`crate::autodiff`].
//!
//! All tensors hold `f32` values. Index tensors (for [`Op::Gather`], [`Op::ScatterAdd`]) hold
//! whole numbers stored as `f32` (exact up to 2^24), which keeps every backend's storage uniform
//! (WebGL textures are float anyway).

use crate::shape::{broadcast_shapes, Shape};
use crate::{Error, Result};

/// Elementwise functions of one input. Scalar parameters are carried in the op (backends pass
/// them as uniforms, so they never cause a new kernel to be compiled).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    Neg,
    Exp,
    Log,
    Sqrt,
    Recip,
    Tanh,
    Sigmoid,
    Abs,
    Sin,
    Cos,
    /// `x * mul + add`
    Affine { mul: f32, add: f32 },
    /// `x ^ p` (for negative `x` only whole `p` are meaningful)
    Powf(f32),
    /// `max(x, c)`
    MaxScalar(f32),
    /// `min(x, c)`
    MinScalar(f32),
    /// `1.0` where `x > c`, else `0.0`
    GtScalar(f32),
}

/// Elementwise functions of two inputs, with broadcasting. Comparisons return `1.0` or `0.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    /// `a ^ b`
    Pow,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a == b`
    Eq,
}

/// Reductions along one axis; the axis is kept with size 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// Index of the first maximum, as `f32`. Not differentiable.
    ArgMax,
}

impl UnaryOp {
    /// Stable numeric code and scalar parameters `(code, p0, p1)`: GPU kernels receive these as
    /// uniforms (or specialisation constants), and every backend's shaders use these codes.
    pub fn code(&self) -> (u32, f32, f32) {
        match *self {
            UnaryOp::Neg => (0, 0.0, 0.0),
            UnaryOp::Exp => (1, 0.0, 0.0),
            UnaryOp::Log => (2, 0.0, 0.0),
            UnaryOp::Sqrt => (3, 0.0, 0.0),
            UnaryOp::Recip => (4, 0.0, 0.0),
            UnaryOp::Tanh => (5, 0.0, 0.0),
            UnaryOp::Sigmoid => (6, 0.0, 0.0),
            UnaryOp::Abs => (7, 0.0, 0.0),
            UnaryOp::Sin => (8, 0.0, 0.0),
            UnaryOp::Cos => (9, 0.0, 0.0),
            UnaryOp::Affine { mul, add } => (10, mul, add),
            UnaryOp::Powf(p) => (11, p, 0.0),
            UnaryOp::MaxScalar(c) => (12, c, 0.0),
            UnaryOp::MinScalar(c) => (13, c, 0.0),
            UnaryOp::GtScalar(c) => (14, c, 0.0),
        }
    }
}

impl BinaryOp {
    /// Stable numeric code shared by every backend's shaders.
    pub fn code(&self) -> u32 {
        match self {
            BinaryOp::Add => 0,
            BinaryOp::Sub => 1,
            BinaryOp::Mul => 2,
            BinaryOp::Div => 3,
            BinaryOp::Max => 4,
            BinaryOp::Min => 5,
            BinaryOp::Pow => 6,
            BinaryOp::Gt => 7,
            BinaryOp::Ge => 8,
            BinaryOp::Eq => 9,
        }
    }
}

/// Distributions of [`Op::Random`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// Uniform in `[low, high)`.
    Uniform { low: f32, high: f32 },
    /// Normal with the given mean and standard deviation (Box-Muller).
    Normal { mean: f32, std: f32 },
}

/// Geometry of a 2-D sliding window (convolution and pooling), NCHW layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    pub kh: usize,
    pub kw: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub pad_h: usize,
    pub pad_w: usize,
}

impl Window {
    /// A square window with equal stride and padding on both axes.
    pub fn square(k: usize, stride: usize, pad: usize) -> Self {
        Window { kh: k, kw: k, stride_h: stride, stride_w: stride, pad_h: pad, pad_w: pad }
    }

    /// Output height and width for an input of `h` x `w`, or `None` if the window does not fit.
    pub fn out_hw(&self, h: usize, w: usize) -> Option<(usize, usize)> {
        if self.kh == 0 || self.kw == 0 || self.stride_h == 0 || self.stride_w == 0 {
            return None;
        }
        let hp = h + 2 * self.pad_h;
        let wp = w + 2 * self.pad_w;
        if hp < self.kh || wp < self.kw {
            return None;
        }
        Some(((hp - self.kh) / self.stride_h + 1, (wp - self.kw) / self.stride_w + 1))
    }
}

/// One primitive operation. Inputs are passed separately, in the order documented per variant.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// No inputs. Every element is `value`.
    Fill { value: f32, shape: Shape },
    /// No inputs. Counter-based random numbers (see [`crate::rng`]): element `i` is a pure
    /// function of `(seed, i)`, so every backend draws the same numbers.
    Random { seed: u64, dist: Distribution, shape: Shape },
    /// One input.
    Unary(UnaryOp),
    /// Two inputs, broadcast against each other.
    Binary(BinaryOp),
    /// Three inputs `(cond, a, b)`, broadcast: `cond != 0 ? a : b`.
    Where,
    /// One input; reduces `axis`, keeping it with size 1.
    Reduce { op: ReduceOp, axis: usize },
    /// Two inputs `a [.., M, K]` (or `[.., K, M]` with `trans_a`) and `b [.., K, N]` (or
    /// `[.., N, K]` with `trans_b`); rank 2 or 3. A leading batch axis of size 1 broadcasts.
    /// Output `[.., M, N]`.
    MatMul { trans_a: bool, trans_b: bool },
    /// One input `[N, C, H, W]` → `[N, C*kh*kw, OH*OW]` (row index `c*kh*kw + i*kw + j`);
    /// padded positions read 0.
    Im2Col(Window),
    /// The adjoint of [`Op::Im2Col`]: one input `[N, C*kh*kw, OH*OW]` → `[N, C, h, w]`,
    /// overlapping window positions summed.
    Col2Im { window: Window, h: usize, w: usize },
    /// Two inputs `(x, idx)` of equal rank, equal sizes except on `axis`:
    /// `out[.., j, ..] = x[.., idx[.., j, ..], ..]`. Output has `idx`'s shape.
    Gather { axis: usize },
    /// Two inputs `(src, idx)` of equal shape; output is `src`'s shape with `axis` of size `size`,
    /// zero-filled, then `out[.., idx[.., j, ..], ..] += src[.., j, ..]`.
    ScatterAdd { axis: usize, size: usize },
    /// One input; new shape with the same number of elements. Free (no data moves).
    Reshape(Shape),
    /// One input; axes reordered: output axis `i` is input axis `perm[i]`.
    Permute(Vec<usize>),
    /// One input; size-1 axes stretched (and new leading axes added) to `shape`.
    Expand(Shape),
    /// One input; the sub-box `starts[i]..ends[i]` on every axis.
    Slice { starts: Vec<usize>, ends: Vec<usize> },
    /// One input; zeros added `before[i]` and `after[i]` on every axis.
    Pad { before: Vec<usize>, after: Vec<usize> },
    /// Any number (≥ 1) of inputs joined along `axis`.
    Concat { axis: usize },
}

impl Op {
    /// Short name used in errors, logs and cache keys.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Fill { .. } => "fill",
            Op::Random { .. } => "random",
            Op::Unary(_) => "unary",
            Op::Binary(_) => "binary",
            Op::Where => "where",
            Op::Reduce { .. } => "reduce",
            Op::MatMul { .. } => "matmul",
            Op::Im2Col(_) => "im2col",
            Op::Col2Im { .. } => "col2im",
            Op::Gather { .. } => "gather",
            Op::ScatterAdd { .. } => "scatter_add",
            Op::Reshape(_) => "reshape",
            Op::Permute(_) => "permute",
            Op::Expand(_) => "expand",
            Op::Slice { .. } => "slice",
            Op::Pad { .. } => "pad",
            Op::Concat { .. } => "concat",
        }
    }

    /// Number of inputs the op takes (`None`: any number ≥ 1).
    pub fn arity(&self) -> Option<usize> {
        match self {
            Op::Fill { .. } | Op::Random { .. } => Some(0),
            Op::Unary(_)
            | Op::Reduce { .. }
            | Op::Im2Col(_)
            | Op::Col2Im { .. }
            | Op::Reshape(_)
            | Op::Permute(_)
            | Op::Expand(_)
            | Op::Slice { .. }
            | Op::Pad { .. } => Some(1),
            Op::Binary(_) | Op::MatMul { .. } | Op::Gather { .. } | Op::ScatterAdd { .. } => Some(2),
            Op::Where => Some(3),
            Op::Concat { .. } => None,
        }
    }

    /// Checks the inputs and computes the output shape. Every backend can rely on the shapes it
    /// is given having passed this check.
    pub fn infer_shape(&self, inputs: &[&Shape]) -> Result<Shape> {
        let err = |msg: String| Error::Shape {
            op: self.name(),
            shapes: inputs.iter().map(|s| s.0.clone()).collect(),
            backend: String::new(),
            msg,
        };
        match self.arity() {
            Some(n) if n != inputs.len() => {
                return Err(err(format!("expects {n} inputs, got {}", inputs.len())))
            }
            None if inputs.is_empty() => return Err(err("expects at least one input".into())),
            _ => {}
        }
        let rank_is = |r: usize| -> Result<()> {
            if inputs[0].rank() != r {
                return Err(err(format!("expects a rank-{r} input")));
            }
            Ok(())
        };
        match self {
            Op::Fill { shape, .. } | Op::Random { shape, .. } => Ok(shape.clone()),
            Op::Unary(_) => Ok(inputs[0].clone()),
            Op::Binary(_) | Op::Where => {
                broadcast_shapes(inputs).ok_or_else(|| err("shapes do not broadcast".into()))
            }
            Op::Reduce { axis, .. } => {
                let s = inputs[0];
                if *axis >= s.rank() {
                    return Err(err(format!("axis {axis} out of range")));
                }
                if s.0[*axis] == 0 {
                    return Err(err("cannot reduce an empty axis".into()));
                }
                let mut o = s.0.clone();
                o[*axis] = 1;
                Ok(Shape(o))
            }
            Op::MatMul { trans_a, trans_b } => {
                let (a, b) = (inputs[0], inputs[1]);
                if !(2..=3).contains(&a.rank()) || !(2..=3).contains(&b.rank()) {
                    return Err(err("matmul takes rank-2 or rank-3 inputs".into()));
                }
                let ad = &a.0[a.rank() - 2..];
                let bd = &b.0[b.rank() - 2..];
                let (m, k1) = if *trans_a { (ad[1], ad[0]) } else { (ad[0], ad[1]) };
                let (k2, n) = if *trans_b { (bd[1], bd[0]) } else { (bd[0], bd[1]) };
                if k1 != k2 {
                    return Err(err(format!("inner sizes differ ({k1} vs {k2})")));
                }
                let ba = if a.rank() == 3 { a.0[0] } else { 1 };
                let bb = if b.rank() == 3 { b.0[0] } else { 1 };
                if ba != bb && ba != 1 && bb != 1 {
                    return Err(err(format!("batch sizes differ ({ba} vs {bb})")));
                }
                if a.rank() == 2 && b.rank() == 2 {
                    Ok(Shape(vec![m, n]))
                } else {
                    Ok(Shape(vec![ba.max(bb), m, n]))
                }
            }
            Op::Im2Col(w) => {
                rank_is(4)?;
                let d = &inputs[0].0;
                let (oh, ow) =
                    w.out_hw(d[2], d[3]).ok_or_else(|| err(format!("window {w:?} does not fit")))?;
                Ok(Shape(vec![d[0], d[1] * w.kh * w.kw, oh * ow]))
            }
            Op::Col2Im { window: w, h, w: wd } => {
                rank_is(3)?;
                let d = &inputs[0].0;
                let (oh, ow) =
                    w.out_hw(*h, *wd).ok_or_else(|| err(format!("window {w:?} does not fit")))?;
                let kk = w.kh * w.kw;
                if d[1] % kk != 0 || d[2] != oh * ow {
                    return Err(err(format!(
                        "expects [N, C*{kk}, {}] for a {h}x{wd} image",
                        oh * ow
                    )));
                }
                Ok(Shape(vec![d[0], d[1] / kk, *h, *wd]))
            }
            Op::Gather { axis } => {
                let (x, idx) = (inputs[0], inputs[1]);
                if x.rank() != idx.rank() || *axis >= x.rank() {
                    return Err(err(format!("needs equal ranks and axis < rank (axis {axis})")));
                }
                for i in 0..x.rank() {
                    if i != *axis && x.0[i] != idx.0[i] {
                        return Err(err(format!("sizes differ on axis {i}")));
                    }
                }
                Ok(idx.clone())
            }
            Op::ScatterAdd { axis, size } => {
                let (src, idx) = (inputs[0], inputs[1]);
                if src != idx || *axis >= src.rank() {
                    return Err(err(format!("needs equal shapes and axis < rank (axis {axis})")));
                }
                let mut o = src.0.clone();
                o[*axis] = *size;
                Ok(Shape(o))
            }
            Op::Reshape(s) => {
                if s.numel() != inputs[0].numel() {
                    return Err(err(format!("cannot reshape to {s} (element counts differ)")));
                }
                Ok(s.clone())
            }
            Op::Permute(p) => {
                let s = inputs[0];
                let mut seen = vec![false; s.rank()];
                if p.len() != s.rank() || p.iter().any(|&a| a >= s.rank() || std::mem::replace(&mut seen[a], true)) {
                    return Err(err(format!("{p:?} is not a permutation of the axes")));
                }
                Ok(Shape(p.iter().map(|&a| s.0[a]).collect()))
            }
            Op::Expand(shape) => {
                let s = inputs[0];
                if shape.rank() < s.rank() {
                    return Err(err(format!("cannot expand to lower rank {shape}")));
                }
                let off = shape.rank() - s.rank();
                for i in 0..s.rank() {
                    if s.0[i] != 1 && s.0[i] != shape.0[off + i] {
                        return Err(err(format!("cannot expand to {shape}")));
                    }
                }
                Ok(shape.clone())
            }
            Op::Slice { starts, ends } => {
                let s = inputs[0];
                if starts.len() != s.rank() || ends.len() != s.rank() {
                    return Err(err("slice needs a start and end per axis".into()));
                }
                let mut o = Vec::with_capacity(s.rank());
                for i in 0..s.rank() {
                    if starts[i] > ends[i] || ends[i] > s.0[i] {
                        return Err(err(format!("range {}..{} out of bounds on axis {i}", starts[i], ends[i])));
                    }
                    o.push(ends[i] - starts[i]);
                }
                Ok(Shape(o))
            }
            Op::Pad { before, after } => {
                let s = inputs[0];
                if before.len() != s.rank() || after.len() != s.rank() {
                    return Err(err("pad needs before and after sizes per axis".into()));
                }
                Ok(Shape((0..s.rank()).map(|i| s.0[i] + before[i] + after[i]).collect()))
            }
            Op::Concat { axis } => {
                let first = inputs[0];
                if *axis >= first.rank() {
                    return Err(err(format!("axis {axis} out of range")));
                }
                let mut total = 0;
                for s in inputs {
                    if s.rank() != first.rank()
                        || (0..first.rank()).any(|i| i != *axis && s.0[i] != first.0[i])
                    {
                        return Err(err(format!("sizes differ off axis {axis}")));
                    }
                    total += s.0[*axis];
                }
                let mut o = first.0.clone();
                o[*axis] = total;
                Ok(Shape(o))
            }
        }
    }
}
