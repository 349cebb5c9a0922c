//! The element type kernels are generic over: `f32` for the fast path, `f64` for the reference.
//! The arithmetic and IEEE functions come from [`Float`], the type elementwise kernels are
//! evaluated in (`pixelgrad_core::kernel::eval`). Which kernels each type runs is
//! `crate::element_impls`, above the kernels themselves.

use std::fmt::Debug;
use std::ops::AddAssign;

use crate::blocks::Scratch;
pub use pixelgrad_core::kernel::eval::Float;

/// A floating-point element. Kernels are written once against this trait; the fast backend
/// instantiates them with `f32`, the reference backend with `f64`.
pub trait Element: Float + Debug + Default + AddAssign + pixelgrad_core::kernel::program_eval::Scalar {
    /// Whether kernels on this type may use threads (and the optimised GEMM). The f64
    /// reference stays single-threaded plain loops so it is easy to trust.
    const FAST: bool;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn from_usize(v: usize) -> Self;
    /// `c = a * b` for one `m x k` by `k x n` product with arbitrary element strides of `a`
    /// and `b`; `c` is contiguous `m x n` and is overwritten. Slices too short for the sizes
    /// and strides (checked once, with checked arithmetic) are an [`pixelgrad_core::Error::Shape`].
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: &[Self],
        rsa: usize,
        csa: usize,
        b: &[Self],
        rsb: usize,
        csb: usize,
        c: &mut [Self],
    ) -> pixelgrad_core::Result<()>;
    /// Depthwise convolution `x [N, C, H, W]` * `k [C, 1, kh, kw]` → `[N, C, oh, ow]`
    /// (`Op::DepthwiseConv`): the reference loops of `window::depthwise`, or their SIMD form.
    /// Slices shorter than the shapes are a typed error.
    fn depthwise(
        x: &[Self],
        dims: &[usize],
        k: &[Self],
        w: &pixelgrad_core::Window,
        oh: usize,
        ow: usize,
    ) -> pixelgrad_core::Result<Vec<Self>>;
    /// Dense convolution `x [N, C, H, W]` * `k [M, C, kh, kw]` → `[N, M, oh, ow]`
    /// (`Op::Conv2d`): im2col + GEMM on the reference, Winograd for 3x3 stride-1 windows on
    /// the fast path (`crate::winograd`). Slices shorter than the shapes are a typed error.
    #[allow(clippy::too_many_arguments)]
    fn conv(
        x: &[Self],
        dims: &[usize],
        k: &[Self],
        m: usize,
        w: &pixelgrad_core::Window,
        oh: usize,
        ow: usize,
    ) -> pixelgrad_core::Result<Vec<Self>>;
    /// Hands a scratch buffer back for reuse (the fast path's `crate::pool`; dropped on the
    /// reference).
    fn recycle(v: Vec<Self>);
    /// Runs `f` with this thread's elementwise scratch buffers (kept from call to call, so a
    /// fused kernel's per-node blocks are not allocated again for every chunk of every op).
    fn with_scratch<R>(f: impl FnOnce(&mut Scratch<Self>) -> R) -> R;
    /// An output buffer of `n` values for a kernel that writes every one of them: on the fast
    /// path possibly a recycled buffer holding old values (`crate::pool`), else zeros.
    fn output(n: usize) -> Vec<Self>;
}
