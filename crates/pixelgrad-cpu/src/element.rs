//! The element type kernels are generic over: `f32` for the fast path, `f64` for the reference.

use std::fmt::Debug;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// A floating-point element. Kernels are written once against this trait; the fast backend
/// instantiates them with `f32`, the reference backend with `f64`.
pub trait Element:
    Copy
    + Send
    + Sync
    + Debug
    + Default
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + 'static
{
    /// Whether kernels on this type may use threads (and the optimised GEMM). The f64
    /// reference stays single-threaded plain loops so it is easy to trust.
    const FAST: bool;
    const ZERO: Self;
    const ONE: Self;
    fn from_f32(v: f32) -> Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn from_usize(v: usize) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, p: Self) -> Self;
    /// `c = a * b` for one `m x k` by `k x n` product with arbitrary element strides of `a`
    /// and `b`; `c` is contiguous `m x n` and is overwritten.
    #[allow(clippy::too_many_arguments)]
    fn gemm(m: usize, k: usize, n: usize, a: &[Self], rsa: usize, csa: usize, b: &[Self], rsb: usize, csb: usize, c: &mut [Self]);
}

macro_rules! float_element {
    ($t:ty, $fast:expr, $gemm:path) => {
        impl Element for $t {
            const FAST: bool = $fast;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_usize(v: usize) -> Self {
                v as $t
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn powf(self, p: Self) -> Self {
                <$t>::powf(self, p)
            }
            fn gemm(m: usize, k: usize, n: usize, a: &[Self], rsa: usize, csa: usize, b: &[Self], rsb: usize, csb: usize, c: &mut [Self]) {
                $gemm(m, k, n, a, rsa, csa, b, rsb, csb, c)
            }
        }
    };
}

float_element!(f32, true, crate::matmul::gemm_f32);
float_element!(f64, false, crate::matmul::gemm_loops);
