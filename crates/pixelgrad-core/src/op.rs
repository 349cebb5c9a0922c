//! The primitive op set. Backends implement forward kernels for exactly these ops (matching the
//! enum exhaustively, so a new primitive fails to compile wherever it is missing); everything
//! else in pixelgrad (relu, softmax, cross-entropy, pooling, batch norm, optimizers) is composed
//! from them in core, and every primitive has one gradient rule in [`crate::autodiff`].
//!
//! All tensors hold `f32` values. Index tensors (for [`Op::Gather`], [`Op::ScatterAdd`]) hold
//! whole numbers stored as `f32` (exact up to 2^24), which keeps every backend's storage uniform
//! (WebGL textures are float anyway). The one exception is the first input of
//! [`Op::MatMulI8`]: 8-bit weights, on backends that store them (see
//! [`crate::Tensor::storage_dtype`]), and the input of [`Op::Widen`], which converts 8-bit or
//! f16 storage to f32; every other op refuses non-f32 inputs with a typed error.

use crate::shape::{broadcast_shapes, Shape, MAX_RANK};
use crate::{Error, Result};

/// Elementwise functions of one input. Scalar parameters are carried in the op (backends pass
/// them as uniforms, so they never cause a new kernel to be compiled). Each variant's meaning
/// is its definition in [`crate::kernel::defs`], the one table every backend runs.
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
    /// `x * x`
    Square,
    /// Largest whole number `<= x` (not differentiable: its gradient is 0 almost everywhere).
    Floor,
    /// Nearest whole number, ties to even (IEEE roundTiesToEven: `2.5 -> 2`, `-0.5 -> -0`);
    /// NaN, infinities, zeros and `|x| >= 2^23` pass through (no gradient, like floor).
    RoundEven,
    Sin,
    Cos,
    /// `x * mul + add`
    Affine {
        mul: f32,
        add: f32,
    },
    /// `x ^ p` (for negative `x` only whole `p` are meaningful)
    Powf(f32),
    /// `max(x, c)`
    MaxScalar(f32),
    /// `min(x, c)`
    MinScalar(f32),
    /// `1.0` where `x > c`, else `0.0`
    GtScalar(f32),
    /// `x / c`, the quotient itself: `x * (1 / c)` differs from it in the last bit for about a
    /// third of all `x` when `1 / c` is not exact (ONNX's `Div` by a constant, which quantised
    /// models then round to an integer), and a broadcast one-element divisor costs a read.
    DivScalar(f32),
}

/// Elementwise functions of two inputs, with broadcasting. Comparisons return `1.0` or `0.0`.
/// Definitions: [`crate::kernel::defs`].
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
    /// `log(sum(exp(x)))` in one pass, computed stably (`m + log(sum(exp(x - m)))` with `m` the
    /// running maximum, so `exp` never overflows): softmax and log-softmax need one reduction
    /// instead of a max and a sum. `+inf` when an element is `+inf`, `-inf` when every element
    /// is `-inf`; NaN in, NaN out. Its gradient is `softmax(x)`, i.e. `exp(x - out)`.
    LogSumExp,
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
        let hp = self.pad_h.checked_mul(2)?.checked_add(h)?;
        let wp = self.pad_w.checked_mul(2)?.checked_add(w)?;
        if hp < self.kh || wp < self.kw {
            return None;
        }
        Some(((hp - self.kh) / self.stride_h + 1, (wp - self.kw) / self.stride_w + 1))
    }
}

/// The geometry of a block-quantised weight ([`Op::MatMulNBits`]): `bits` per value (4 or
/// 8), `block` values along `k` per scale, `k` values per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NBits {
    pub bits: usize,
    pub block: usize,
    pub k: usize,
}

impl NBits {
    /// Blocks per row: `ceil(k / block)`.
    pub fn k_blocks(&self) -> usize {
        self.k.div_ceil(self.block.max(1))
    }
    /// Bytes per block: `block * bits / 8`.
    pub fn blob(&self) -> usize {
        self.block * self.bits / 8
    }
}

/// The options of [`Op::Attention`] (and [`crate::Tensor::attention`]), as the ONNX attention
/// operators define them. Query row `i`'s score for key `j` is built in this order:
/// `x = scale · q_i · k_j`; with a `softcap` `c` not after the masks, `x = c · tanh(x / c)`;
/// plus the additive mask; plus [`AttentionOpts::EXCLUDED`] where the `causal` option excludes
/// key `j` ([`AttentionOpts::excludes`]); with a `softcap` after the masks, `x = c · tanh(x /
/// c)`. The weights are `softmax(x)`, or with `smooth` `exp(x_j) / (1 + Σ exp(x))` (an extra
/// zero logit in the denominator). An excluded key therefore weighs exactly 0 unless the
/// softcap comes after the masks (then its score is `-c`, as the ONNX operator computes it),
/// and a row whose every key is excluded averages all its keys (as adding `-1e30` does).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionOpts {
    /// Multiplies `Q Kᵀ`; finite.
    pub scale: f32,
    /// `Some(offset)`: query row `i` sees key `j` only when `j <= i + offset` (the `S` queries
    /// are the last of `offset + S` positions: a decoder's offset is its past length).
    pub causal: Option<usize>,
    /// With `causal`: row `i` also sees key `j` only when `j + window >= i + offset` (a sliding
    /// window of `window + 1` keys, onnxruntime's `local_window_size`).
    pub window: Option<usize>,
    /// `c · tanh(x / c)` of the scores, `c` finite and above 0.
    pub softcap: Option<f32>,
    /// The softcap applies after the masks (opset-23 `Attention`) instead of before them
    /// (`GroupQueryAttention`).
    pub softcap_after_masks: bool,
    /// The smooth softmax: an extra zero logit in the denominator.
    pub smooth: bool,
}

impl AttentionOpts {
    /// What an excluded key adds to its score: far below any score, so its weight is 0.
    pub const EXCLUDED: f32 = -1e30;

    /// Plain attention: `softmax(scale · Q Kᵀ + mask)`.
    pub fn scaled(scale: f32) -> Self {
        AttentionOpts { scale, causal: None, window: None, softcap: None, softcap_after_masks: false, smooth: false }
    }

    /// With the causal exclusion at `offset` (see [`AttentionOpts::causal`]).
    pub fn causal(self, offset: usize) -> Self {
        AttentionOpts { causal: Some(offset), ..self }
    }

    /// No option but the scale.
    pub fn is_plain(&self) -> bool {
        *self == AttentionOpts::scaled(self.scale)
    }

    /// Whether the causal option excludes key `j` for query row `i`.
    pub fn excludes(&self, i: usize, j: usize) -> bool {
        match self.causal {
            None => false,
            Some(off) => {
                let pos = i.saturating_add(off);
                j > pos || self.window.is_some_and(|w| j.saturating_add(w) < pos)
            }
        }
    }

    /// Why these options are not meaningful, if they are not.
    pub fn problem(&self) -> Option<String> {
        if !self.scale.is_finite() {
            return Some(format!("scale {} is not a finite number", self.scale));
        }
        if let Some(c) = self.softcap {
            if !(c.is_finite() && c > 0.0) {
                return Some(format!("softcap {c} must be a finite number above 0"));
            }
        }
        if self.window.is_some() && self.causal.is_none() {
            return Some("a sliding window needs the causal option".into());
        }
        if self.softcap_after_masks && self.softcap.is_none() {
            return Some("softcap_after_masks without a softcap".into());
        }
        None
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
    /// Depthwise 2-D convolution (one filter per channel): two inputs `x [N, C, H, W]` and
    /// `w [C, 1, kh, kw]` → `[N, C, OH, OW]` with
    /// `out[n, c, oy, ox] = Σ_i Σ_j x[n, c, oy*sh + i - ph, ox*sw + j - pw] * w[c, 0, i, j]`
    /// (taps in the padding are skipped; summed over `i` then `j`, ascending). One pass on the GPU
    /// backends, without the `[N, C*kh*kw, OH*OW]` columns im2col would materialise.
    DepthwiseConv(Window),
    /// Dense 2-D convolution (one group): two inputs `x [N, C, H, W]` and `w [M, C, kh, kw]` →
    /// `[N, M, OH, OW]` with
    /// `out[n, m, oy, ox] = Σ_c Σ_i Σ_j x[n, c, oy*sh + i - ph, ox*sw + j - pw] * w[m, c, i, j]`
    /// (taps in the padding read 0). It means [`Op::Im2Col`] followed by [`Op::MatMul`] of
    /// `w` as `[M, C*kh*kw]`; the order of the sums is the backend's (the CPU runs 3x3
    /// stride-1 windows as Winograd F(2x2, 3x3), so results agree with that pair to rounding,
    /// not bit for bit). Only backends whose [`Caps::conv`](crate::Caps::conv) is true
    /// implement it; elsewhere callers use the pair.
    Conv2d(Window),
    /// Max pooling, one input `x [N, C, H, W]` → `[N, C, OH, OW]`:
    /// `out[n, c, oy, ox]` is the largest of the window's taps
    /// `x[n, c, oy*sh + i - ph, ox*sw + j - pw]` that lie inside the image (padding is never
    /// selected; the padding must be smaller than the window on both axes, so every window
    /// has a tap inside). Taps are visited in `(i, j)` order and a later one replaces the
    /// running maximum only if it is greater, as in [`ReduceOp::Max`]. One pass on the GPU
    /// backends, with no im2col columns.
    MaxPool(Window),
    /// The gradient of [`Op::MaxPool`]: two inputs `x [N, C, H, W]` (the pooled input) and
    /// `dy [N, C, OH, OW]` → `dx`, `x`'s shape. Every window passes its `dy` to the taps equal
    /// to its maximum, split evenly among ties (the gradient [`ReduceOp::Max`] gives), and each
    /// pixel sums what the windows covering it pass it. Recomputes the maxima from `x`. Not
    /// differentiable.
    MaxPoolGrad(Window),
    /// A window program defined once in [`crate::kernel::windows`] (indexed loads, bounded
    /// loops, accumulators), which every backend runs from that definition: its
    /// [`crate::kernel::windows::Form`] fixes the inputs and the output shape (`[N, C, H, W]`
    /// → `[N, C, OH, OW]`, or the gradient `(x, dy)` → `x`'s shape), its `grad` the gradient.
    /// The padding must be smaller than the window on both axes.
    Window { program: crate::window_program::WindowProgram, window: Window },
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
    /// Exact integer matrix product of 8-bit weights: two inputs `a [M, K]` or `[G, M, K]`
    /// whose storage is 8-bit ([`crate::kernel::DType::I8`] or [`crate::kernel::DType::U8`],
    /// see [`crate::Tensor::from_i8`]) and `b [K, N]`, `[G, K, N]` or `[B, K, N]` (f32 storage
    /// holding whole numbers); batching as [`Op::MatMul`] without transposes (a batch of one,
    /// or a rank-2 operand, broadcasts). Output f32 `[.., M, N]` with
    /// `out[m, n] = (Σ_k a[m, k] * (b[k, n] as i32)) as f32`: every `b` element is converted to
    /// `i32` (truncating; callers pass whole numbers, about ±65536), products and sums are
    /// `i32` (wrapping on overflow, which real models stay far from), and the final `i32` is
    /// rounded to the nearest `f32`. Not differentiable: its result records no gradient.
    /// Only backends whose [`Caps::int8`](crate::Caps::int8) is true implement it.
    ///
    /// `b_i8` is the caller's promise that every `b` element is a whole number in
    /// `[-128, 127]` ([`crate::Tensor::matmul_i8_packed`]): the result is the same, but a
    /// backend may then pack `b` four per word as well and multiply with packed 8-bit dot
    /// products (WebGPU's `dot4I8Packed`). Backends that can check it refuse a broken promise
    /// with an error rather than compute with truncated values.
    MatMulI8 { b_i8: bool },
    /// One input whose storage is not f32 ([`crate::kernel::DType::I8`],
    /// [`crate::kernel::DType::U8`] or [`crate::kernel::DType::F16`]); output an f32 tensor of
    /// the same shape holding the same values, converted exactly (every i8, u8 and f16 value,
    /// subnormals, ±0, ±inf and NaN included, is an f32). Not differentiable: its result
    /// records no gradient. Implemented by backends with 8-bit or f16 storage
    /// ([`Caps::int8`](crate::Caps::int8), [`Caps::f16_storage`](crate::Caps::f16_storage)).
    Widen,
    /// One f32 input; output the same values in half-precision storage
    /// ([`crate::kernel::DType::F16`]), each rounded to the nearest f16, ties to even: values
    /// beyond ±65504 (after rounding) become ±inf, small ones f16 subnormals or ±0, NaN stays
    /// NaN. The storage of mixed-precision training (activations saved for the backward
    /// pass, see [`crate::mixed_precision`]); [`Op::Widen`] reads it back. Not
    /// differentiable. Implemented by backends whose [`Caps::narrow_f16`](crate::Caps::narrow_f16)
    /// is true.
    NarrowF16,
    /// One f32 input; output the same values in 8-bit storage ([`crate::kernel::DType::I8`]
    /// when `signed`, [`crate::kernel::DType::U8`] otherwise): each value rounded to the
    /// nearest integer, ties to even, then saturated to `[-128, 127]` or `[0, 255]`; NaN gives
    /// 0. The storage of quantised activations between integer layers (the ONNX importer's
    /// `QuantizeLinear` and requantised products), a quarter of f32's; [`Op::Widen`] reads it
    /// back exactly. Not differentiable. Implemented by backends whose
    /// [`Caps::int8`](crate::Caps::int8) is true.
    Narrow8 { signed: bool },
    /// Matrix product with block-quantised weights kept packed (onnxruntime's `MatMulNBits`
    /// layout). Four inputs `(a, q, scales, zeros)`: `q [N, k_blocks * blob]` holds the
    /// weight's `N` rows of `k` values, `k_blocks = ceil(k / block)` blocks per row of
    /// `blob = block * bits / 8` bytes (storage [`crate::kernel::DType::U8`] where the
    /// backend has [`Caps::int8_storage`](crate::Caps::int8_storage), else f32 whole numbers
    /// 0 to 255); 4-bit values two to a byte, value `j` of a block in the low nibble of byte
    /// `j / 2` when `j` is even, the high nibble when odd; the unused tail of a row's last
    /// block is ignored. `scales` and `zeros` are f32 `[N, k_blocks]`. The weight is
    /// `W[k, n] = (q(n, k) - zeros[n, k / block]) * scales[n, k / block]`, never stored as
    /// f32: backends dequantise blocks inside the product. Without `trans`, `a [M, k]` ->
    /// `[M, N]`, `out = a W`; with `trans`, `a [M, N]` -> `[M, k]`, `out = a W^T` (the
    /// gradient of the former with respect to `a`). Differentiable in `a` only: `q`,
    /// `scales` and `zeros` are frozen weights. Implemented by the CPU, WebGPU and WebGL2; the
    /// WebGL1 mode refuses it with a typed error (the ONNX importer dequantises once there).
    MatMulNBits { bits: usize, block: usize, k: usize, trans: bool },
    /// Scaled dot-product attention in one op, without the `S × T` score matrix: inputs
    /// `q [B, N, S, H]`, `k [B, Nkv, T, H]`, `v [B, Nkv, T, Hv]` and, when `masked`, an
    /// additive `mask` of rank 4 broadcastable to `[B, N, S, T]` (each axis its size or 1).
    /// `N` is a multiple of `Nkv` (grouped heads): query head `n` reads key/value head
    /// `n / (N / Nkv)`. Output `[B, N, S, Hv]` with
    /// `out[b, n, i, :] = Σ_j w_j(z[b, n, i, :]) v[b, g, j, :]`, the scores `z` and weights `w`
    /// as [`AttentionOpts`] defines them (plainly: `z_j = scale · q[b, n, i, :] · k[b, g, j, :]
    /// + mask[b, n, i, j]`, `w = softmax(z)`).
    /// A row whose scores are all `-inf` (or NaN) gives NaN, as the softmax composite does (0
    /// with the smooth softmax); a large negative mask (`-1e30`) excludes a key exactly. Its
    /// gradient is the composition's (the scores are recomputed in the backward pass).
    /// Backends say where they run it ([`crate::Backend::fused_attention`]);
    /// [`crate::Tensor::attention`] composes it from products and a softmax elsewhere.
    Attention { opts: AttentionOpts, masked: bool },
}

impl Op {
    /// Short name used in errors, logs and cache keys.
    pub fn name(&self) -> &'static str {
        Op::NAMES[self.index()]
    }

    /// The name of every primitive, in [`Op::index`] order (the conformance suite checks that
    /// every one of them is exercised).
    pub const NAMES: [&'static str; 28] = [
        "fill",
        "random",
        "unary",
        "binary",
        "where",
        "reduce",
        "matmul",
        "im2col",
        "col2im",
        "gather",
        "scatter_add",
        "reshape",
        "permute",
        "expand",
        "slice",
        "pad",
        "concat",
        "depthwise_conv",
        "matmul_i8",
        "widen",
        "narrow_f16",
        "max_pool",
        "max_pool_grad",
        "conv2d",
        "narrow8",
        "window",
        "matmul_nbits",
        "attention",
    ];

    /// Position of this primitive in [`Op::NAMES`]. Exhaustive: a new primitive must be
    /// numbered here, and [`Op::NAMES`] must grow with it (a unit test checks both agree).
    pub fn index(&self) -> usize {
        match self {
            Op::Fill { .. } => 0,
            Op::Random { .. } => 1,
            Op::Unary(_) => 2,
            Op::Binary(_) => 3,
            Op::Where => 4,
            Op::Reduce { .. } => 5,
            Op::MatMul { .. } => 6,
            Op::Im2Col(_) => 7,
            Op::Col2Im { .. } => 8,
            Op::Gather { .. } => 9,
            Op::ScatterAdd { .. } => 10,
            Op::Reshape(_) => 11,
            Op::Permute(_) => 12,
            Op::Expand(_) => 13,
            Op::Slice { .. } => 14,
            Op::Pad { .. } => 15,
            Op::Concat { .. } => 16,
            Op::DepthwiseConv(_) => 17,
            Op::MatMulI8 { .. } => 18,
            Op::Widen => 19,
            Op::NarrowF16 => 20,
            Op::MaxPool(_) => 21,
            Op::MaxPoolGrad(_) => 22,
            Op::Conv2d(_) => 23,
            Op::Narrow8 { .. } => 24,
            Op::Window { .. } => 25,
            Op::MatMulNBits { .. } => 26,
            Op::Attention { .. } => 27,
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
            | Op::Pad { .. }
            | Op::Widen
            | Op::NarrowF16
            | Op::Narrow8 { .. }
            | Op::MaxPool(_) => Some(1),
            Op::Binary(_)
            | Op::MatMul { .. }
            | Op::MatMulI8 { .. }
            | Op::Gather { .. }
            | Op::ScatterAdd { .. }
            | Op::DepthwiseConv(_)
            | Op::Conv2d(_)
            | Op::MaxPoolGrad(_) => Some(2),
            Op::Where => Some(3),
            Op::MatMulNBits { .. } => Some(4),
            Op::Attention { masked, .. } => Some(3 + usize::from(*masked)),
            Op::Window { program, .. } => Some(program.form().arity()),
            Op::Concat { .. } => None,
        }
    }

    /// Checks the inputs and computes the output shape. Every backend can rely on the shapes it
    /// is given having passed this check: among others, no input or output has more than
    /// [`MAX_RANK`] axes, on any backend.
    pub fn infer_shape(&self, inputs: &[&Shape]) -> Result<Shape> {
        let out = self.infer_shape_any_size(inputs)?;
        if out.try_numel().is_none() {
            return Err(Error::Shape {
                op: self.name(),
                shapes: inputs.iter().map(|s| s.0.clone()).collect(),
                backend: String::new(),
                msg: format!("the result {out} has more elements than this machine can count"),
            });
        }
        Ok(out)
    }

    /// [`Op::infer_shape`] without its last check, that the result's element count fits a
    /// `usize`: [`crate::Tensor::apply`] first weighs that count against the device's element
    /// cap, so a result too large for the machine is refused as too large for the budget.
    pub(crate) fn infer_shape_any_size(&self, inputs: &[&Shape]) -> Result<Shape> {
        let too_many = |s: &Shape| s.rank() > MAX_RANK;
        let rank_error = |what: String| Error::Shape {
            op: self.name(),
            shapes: inputs.iter().map(|s| s.0.clone()).collect(),
            backend: String::new(),
            msg: format!("{what} has more than {MAX_RANK} axes, the most any backend supports"),
        };
        if let Some(i) = inputs.iter().position(|s| too_many(s)) {
            return Err(rank_error(format!("input {i}")));
        }
        let out = self.infer_shape_unchecked(inputs)?;
        if too_many(&out) {
            return Err(rank_error(format!("the result {out}")));
        }
        Ok(out)
    }

    fn infer_shape_unchecked(&self, inputs: &[&Shape]) -> Result<Shape> {
        let err = |msg: String| Error::Shape {
            op: self.name(),
            shapes: inputs.iter().map(|s| s.0.clone()).collect(),
            backend: String::new(),
            msg,
        };
        match self.arity() {
            Some(n) if n != inputs.len() => return Err(err(format!("expects {n} inputs, got {}", inputs.len()))),
            None if inputs.is_empty() => return Err(err("expects at least one input".into())),
            _ => {}
        }
        let overflow = || err("sizes overflow".into());
        let rank_is = |r: usize| -> Result<()> {
            if inputs[0].rank() != r {
                return Err(err(format!("expects a rank-{r} input")));
            }
            Ok(())
        };
        match self {
            Op::Fill { shape, .. } | Op::Random { shape, .. } => Ok(shape.clone()),
            Op::Unary(_) | Op::Widen | Op::NarrowF16 | Op::Narrow8 { .. } => Ok(inputs[0].clone()),
            Op::Binary(_) | Op::Where => broadcast_shapes(inputs).ok_or_else(|| err("shapes do not broadcast".into())),
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
            Op::MatMul { .. } | Op::MatMulI8 { .. } => {
                let (trans_a, trans_b) = match self {
                    Op::MatMul { trans_a, trans_b } => (trans_a, trans_b),
                    _ => (&false, &false),
                };
                let (a, b) = (inputs[0], inputs[1]);
                if !(2..=3).contains(&a.rank()) || !(2..=3).contains(&b.rank()) {
                    return Err(err(format!("{} takes rank-2 or rank-3 inputs", self.name())));
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
                    // a batch of one broadcasts (against an empty batch too)
                    Ok(Shape(vec![if ba == 1 { bb } else { ba }, m, n]))
                }
            }
            Op::MatMulNBits { bits, block, k, trans } => {
                let (bits, block, k) = (*bits, *block, *k);
                if bits != 4 && bits != 8 {
                    return Err(err(format!("bits is {bits}; 4 and 8 are supported")));
                }
                let block_bits = block.checked_mul(bits).ok_or_else(overflow)?;
                if block == 0 || !block_bits.is_multiple_of(8) {
                    return Err(err(format!("block {block} of {bits}-bit values is not a whole number of bytes")));
                }
                let k_blocks = k.div_ceil(block);
                let blob = block_bits / 8;
                let row = k_blocks.checked_mul(blob).ok_or_else(overflow)?;
                let (a, q, s, z) = (inputs[0], inputs[1], inputs[2], inputs[3]);
                if a.rank() != 2 || q.rank() != 2 {
                    return Err(err("expects a rank-2 a and packed weights [N, k_blocks * blob]".into()));
                }
                let n = q.0[0];
                if q.0[1] != row {
                    return Err(err(format!("packed weights must be [N, {row}] for k = {k}, block {block}, {bits} bits")));
                }
                let blocks = Shape(vec![n, k_blocks]);
                if s != &blocks || z != &blocks {
                    return Err(err(format!("scales and zeros must be {blocks} (N x k_blocks)")));
                }
                let (inner, outer) = if *trans { (n, k) } else { (k, n) };
                if a.0[1] != inner {
                    return Err(err(format!("a's last axis is {}; it must be {inner}", a.0[1])));
                }
                Ok(Shape(vec![a.0[0], outer]))
            }
            Op::Attention { opts, .. } => {
                if let Some(p) = opts.problem() {
                    return Err(err(p));
                }
                let (q, k, v) = (&inputs[0].0, &inputs[1].0, &inputs[2].0);
                if q.len() != 4 || k.len() != 4 || v.len() != 4 {
                    return Err(err("expects q [B, N, S, H], k [B, Nkv, T, H] and v [B, Nkv, T, Hv] (rank 4)".into()));
                }
                let (b, n, s, h) = (q[0], q[1], q[2], q[3]);
                let (nkv, t) = (k[1], k[2]);
                if k[0] != b || k[3] != h {
                    return Err(err(format!("k must be [{b}, Nkv, T, {h}] (q's batch and head size)")));
                }
                if v[0] != b || v[1] != nkv || v[2] != t {
                    return Err(err(format!("v must be [{b}, {nkv}, {t}, Hv] (k's batch, heads and length)")));
                }
                if nkv == 0 || !n.is_multiple_of(nkv) {
                    return Err(err(format!("{n} query heads are not a multiple of {nkv} key/value heads")));
                }
                if t == 0 {
                    return Err(err("needs at least one key (T = 0)".into()));
                }
                if let Some(m) = inputs.get(3) {
                    let full = [b, n, s, t];
                    if m.rank() != 4 || m.0.iter().zip(full).any(|(&d, f)| d != f && d != 1) {
                        return Err(err(format!(
                            "the mask {m} does not broadcast to [{b}, {n}, {s}, {t}] (rank 4, each axis its size or 1)"
                        )));
                    }
                }
                Ok(Shape(vec![b, n, s, v[3]]))
            }
            Op::Im2Col(w) => {
                rank_is(4)?;
                let d = &inputs[0].0;
                let (oh, ow) = w.out_hw(d[2], d[3]).ok_or_else(|| err(format!("window {w:?} does not fit")))?;
                let rows = d[1].checked_mul(w.kh).and_then(|v| v.checked_mul(w.kw)).ok_or_else(overflow)?;
                Ok(Shape(vec![d[0], rows, oh.checked_mul(ow).ok_or_else(overflow)?]))
            }
            Op::Col2Im { window: w, h, w: wd } => {
                rank_is(3)?;
                let d = &inputs[0].0;
                let (oh, ow) = w.out_hw(*h, *wd).ok_or_else(|| err(format!("window {w:?} does not fit")))?;
                let kk = w.kh.checked_mul(w.kw).ok_or_else(overflow)?;
                let cols = oh.checked_mul(ow).ok_or_else(overflow)?;
                if !d[1].is_multiple_of(kk) || d[2] != cols {
                    return Err(err(format!("expects [N, C*{kk}, {cols}] for a {h}x{wd} image")));
                }
                Ok(Shape(vec![d[0], d[1] / kk, *h, *wd]))
            }
            Op::DepthwiseConv(w) => {
                let (x, k) = (&inputs[0].0, &inputs[1].0);
                if x.len() != 4 || k.len() != 4 {
                    return Err(err("expects x [N, C, H, W] and weights [C, 1, kh, kw]".into()));
                }
                if k != &[x[1], 1, w.kh, w.kw] {
                    return Err(err(format!(
                        "weights must be [{}, 1, {}, {}] for {} channels and a {}x{} window",
                        x[1], w.kh, w.kw, x[1], w.kh, w.kw
                    )));
                }
                let (oh, ow) = w.out_hw(x[2], x[3]).ok_or_else(|| err(format!("window {w:?} does not fit")))?;
                Ok(Shape(vec![x[0], x[1], oh, ow]))
            }
            Op::Conv2d(w) => {
                let (x, k) = (&inputs[0].0, &inputs[1].0);
                if x.len() != 4 || k.len() != 4 {
                    return Err(err("expects x [N, C, H, W] and weights [M, C, kh, kw]".into()));
                }
                if k[1] != x[1] || k[2] != w.kh || k[3] != w.kw {
                    return Err(err(format!(
                        "weights must be [M, {}, {}, {}] for {} input channels and a {}x{} window",
                        x[1], w.kh, w.kw, x[1], w.kh, w.kw
                    )));
                }
                let (oh, ow) = w.out_hw(x[2], x[3]).ok_or_else(|| err(format!("window {w:?} does not fit")))?;
                Ok(Shape(vec![x[0], k[0], oh, ow]))
            }
            Op::MaxPool(w) | Op::MaxPoolGrad(w) | Op::Window { window: w, .. } => {
                rank_is(4)?;
                if w.pad_h >= w.kh || w.pad_w >= w.kw {
                    return Err(err(format!("padding {}x{} must be smaller than the {}x{} window", w.pad_h, w.pad_w, w.kh, w.kw)));
                }
                let d = &inputs[0].0;
                let (oh, ow) = w.out_hw(d[2], d[3]).ok_or_else(|| err(format!("window {w:?} does not fit")))?;
                let pooled = Shape(vec![d[0], d[1], oh, ow]);
                let pool = match self {
                    Op::Window { program, .. } => program.form() == crate::window_program::Form::Pool,
                    op => matches!(op, Op::MaxPool(_)),
                };
                match self {
                    _ if pool => Ok(pooled),
                    _ if inputs[1] != &pooled => Err(err(format!("the gradient must be {pooled} (the pooled shape)"))),
                    _ => Ok(inputs[0].clone()),
                }
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
                let dims = (0..s.rank()).map(|i| s.0[i].checked_add(before[i])?.checked_add(after[i])).collect::<Option<Vec<_>>>();
                Ok(Shape(dims.ok_or_else(overflow)?))
            }
            Op::Concat { axis } => {
                let first = inputs[0];
                if *axis >= first.rank() {
                    return Err(err(format!("axis {axis} out of range")));
                }
                let mut total = 0;
                for s in inputs {
                    if s.rank() != first.rank() || (0..first.rank()).any(|i| i != *axis && s.0[i] != first.0[i]) {
                        return Err(err(format!("sizes differ off axis {axis}")));
                    }
                    total = s.0[*axis].checked_add(total).ok_or_else(overflow)?;
                }
                let mut o = first.0.clone();
                o[*axis] = total;
                Ok(Shape(o))
            }
        }
    }
}

/// The checks every backend's [`crate::Backend::execute`] makes before running an op (the
/// trait is public, so a caller may skip [`crate::Tensor::apply`]): one shape per input, the
/// shapes pass [`Op::infer_shape`] (which also enforces [`MAX_RANK`]), `out` is its result,
/// and storage `i` holds at least `lens[i]` >= its shape's element count. One function, so
/// every backend refuses the same calls with the same [`Error::Shape`]; backends add only
/// their own device limits.
pub fn check_execute(op: &Op, lens: &[usize], shapes: &[&Shape], out: &Shape, backend: &str) -> Result<()> {
    let err = |msg: String| Error::Shape {
        op: op.name(),
        shapes: shapes.iter().map(|s| s.0.clone()).collect(),
        backend: backend.to_string(),
        msg,
    };
    if lens.len() != shapes.len() {
        return Err(err(format!("{} inputs for {} shapes", lens.len(), shapes.len())));
    }
    let inferred = op.infer_shape(shapes).map_err(|e| e.with_backend(backend))?;
    if &inferred != out {
        return Err(err(format!("output shape {out} given, the op produces {inferred}")));
    }
    for (i, (&n, s)) in lens.iter().zip(shapes).enumerate() {
        if n < s.numel() {
            return Err(err(format!("input {i} holds {n} elements, its shape {s} needs {}", s.numel())));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_indices_agree() {
        let w = Window::square(1, 1, 0);
        let s = Shape::from([1]);
        let one = || vec![0usize];
        let all = [
            Op::Fill { value: 0.0, shape: s.clone() },
            Op::Random { seed: 0, dist: Distribution::Uniform { low: 0.0, high: 1.0 }, shape: s.clone() },
            Op::Unary(UnaryOp::Neg),
            Op::Binary(BinaryOp::Add),
            Op::Where,
            Op::Reduce { op: ReduceOp::Sum, axis: 0 },
            Op::MatMul { trans_a: false, trans_b: false },
            Op::Im2Col(w),
            Op::Col2Im { window: w, h: 1, w: 1 },
            Op::Gather { axis: 0 },
            Op::ScatterAdd { axis: 0, size: 1 },
            Op::Reshape(s.clone()),
            Op::Permute(one()),
            Op::Expand(s.clone()),
            Op::Slice { starts: one(), ends: one() },
            Op::Pad { before: one(), after: one() },
            Op::Concat { axis: 0 },
            Op::DepthwiseConv(w),
            Op::MatMulI8 { b_i8: false },
            Op::Widen,
            Op::NarrowF16,
            Op::MaxPool(w),
            Op::MaxPoolGrad(w),
            Op::Conv2d(w),
            Op::Narrow8 { signed: false },
            Op::Window { program: crate::window_program::WindowProgram::MaxPool, window: w },
            Op::MatMulNBits { bits: 4, block: 16, k: 1, trans: false },
            Op::Attention { opts: AttentionOpts::scaled(1.0), masked: false },
        ];
        assert_eq!(all.len(), Op::NAMES.len());
        for (i, op) in all.iter().enumerate() {
            assert_eq!(op.index(), i, "{op:?}");
        }
    }

    #[test]
    fn attention_shapes_are_checked() {
        let s = |d: &[usize]| Shape::from(d);
        let op = |masked| Op::Attention { opts: AttentionOpts::scaled(0.5), masked };
        let o = AttentionOpts::scaled(0.5);
        let with = |opts| Op::Attention { opts, masked: false };
        let (q, k, v) = (s(&[2, 4, 3, 8]), s(&[2, 2, 5, 8]), s(&[2, 2, 5, 6]));
        let full = AttentionOpts { causal: Some(1), window: Some(2), softcap: Some(5.0), softcap_after_masks: true, smooth: true, ..o };
        assert_eq!(with(full).infer_shape(&[&q, &k, &v]).unwrap(), s(&[2, 4, 3, 6]));
        assert_eq!(op(false).infer_shape(&[&q, &k, &v]).unwrap(), s(&[2, 4, 3, 6]));
        assert_eq!(op(true).infer_shape(&[&q, &k, &v, &s(&[1, 1, 3, 5])]).unwrap(), s(&[2, 4, 3, 6]));
        let bad = [
            (op(false), vec![s(&[2, 4, 3]), k.clone(), v.clone()], "rank 4"),
            (op(false), vec![q.clone(), s(&[2, 2, 5, 7]), v.clone()], "head size"),
            (op(false), vec![q.clone(), k.clone(), s(&[2, 2, 4, 6])], "k's batch"),
            (op(false), vec![q.clone(), s(&[2, 3, 5, 8]), s(&[2, 3, 5, 6])], "not a multiple"),
            (op(false), vec![q.clone(), s(&[2, 2, 0, 8]), s(&[2, 2, 0, 6])], "T = 0"),
            (op(true), vec![q.clone(), k.clone(), v.clone(), s(&[2, 4, 3, 4])], "does not broadcast"),
            (op(true), vec![q.clone(), k.clone(), v.clone(), s(&[3, 5])], "does not broadcast"),
            (op(true), vec![q.clone(), k.clone(), v.clone()], "expects 4 inputs"),
            (with(AttentionOpts { softcap: Some(0.0), ..o }), vec![q.clone(), k.clone(), v.clone()], "softcap 0"),
            (with(AttentionOpts { softcap: Some(f32::NAN), ..o }), vec![q.clone(), k.clone(), v.clone()], "softcap NaN"),
            (with(AttentionOpts { window: Some(2), ..o }), vec![q.clone(), k.clone(), v.clone()], "needs the causal"),
            (with(AttentionOpts { softcap_after_masks: true, ..o }), vec![q.clone(), k.clone(), v.clone()], "without a softcap"),
            (with(AttentionOpts::scaled(f32::INFINITY)), vec![q.clone(), k.clone(), v.clone()], "scale inf"),
        ];
        for (op, shapes, want) in bad {
            let refs: Vec<&Shape> = shapes.iter().collect();
            let e = op.infer_shape(&refs).unwrap_err().to_string();
            assert!(e.contains("attention") && e.contains(want), "{op:?}: {e}");
        }
    }

    #[test]
    fn attention_exclusions_follow_the_positions() {
        let plain = AttentionOpts::scaled(1.0);
        assert!(plain.is_plain() && !(0..4).any(|j| plain.excludes(0, j)));
        // row i sits at position i + 2: keys after it are excluded
        let c = plain.causal(2);
        assert!(!c.is_plain());
        let seen: Vec<bool> = (0..6).map(|j| !c.excludes(1, j)).collect();
        assert_eq!(seen, [true, true, true, true, false, false]);
        // a window of 1: key j is seen when pos - 1 <= j <= pos (pos = 3)
        let w = AttentionOpts { window: Some(1), ..c };
        let seen: Vec<bool> = (0..6).map(|j| !w.excludes(1, j)).collect();
        assert_eq!(seen, [false, false, true, true, false, false]);
        assert!(w.problem().is_none());
    }

    #[test]
    fn matmul_nbits_shapes_are_checked() {
        let s = |d: &[usize]| Shape::from(d);
        let op = |bits, block, k, trans| Op::MatMulNBits { bits, block, k, trans };
        // k = 40 in blocks of 16: 3 blocks of 8 bytes (4-bit)
        let (a, q, p) = (s(&[2, 40]), s(&[5, 24]), s(&[5, 3]));
        assert_eq!(op(4, 16, 40, false).infer_shape(&[&a, &q, &p, &p]).unwrap(), s(&[2, 5]));
        assert_eq!(op(4, 16, 40, true).infer_shape(&[&s(&[2, 5]), &q, &p, &p]).unwrap(), s(&[2, 40]));
        let bad = [
            (op(3, 16, 40, false), vec![a.clone(), q.clone(), p.clone(), p.clone()], "bits"),
            (op(4, 0, 40, false), vec![a.clone(), q.clone(), p.clone(), p.clone()], "whole number of bytes"),
            (op(4, usize::MAX, 40, false), vec![a.clone(), q.clone(), p.clone(), p.clone()], "overflow"),
            (op(4, 16, 40, false), vec![a.clone(), s(&[5, 23]), p.clone(), p.clone()], "packed weights"),
            (op(4, 16, 40, false), vec![a.clone(), q.clone(), s(&[5, 2]), p.clone()], "scales and zeros"),
            (op(4, 16, 40, false), vec![s(&[2, 41]), q.clone(), p.clone(), p.clone()], "last axis"),
            (op(8, 16, 40, false), vec![a.clone(), q.clone(), p.clone(), p.clone()], "packed weights"),
        ];
        for (op, shapes, want) in bad {
            let refs: Vec<&Shape> = shapes.iter().collect();
            let e = op.infer_shape(&refs).unwrap_err().to_string();
            assert!(e.contains("matmul_nbits") && e.contains(want), "{op:?}: {e}");
        }
    }
}
