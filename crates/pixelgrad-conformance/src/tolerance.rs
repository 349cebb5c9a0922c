//! Per-op tolerances. A value `got` from the backend under test (f32) passes against the f64
//! reference `expected` when
//!
//! ```text
//! |got - expected| <= abs + rel * |expected|
//! ```
//!
//! | family                              | rel                | abs                |
//! |-------------------------------------|--------------------|--------------------|
//! | copies (fill, movement, gather...)  | 0                  | 0                  |
//! | elementwise arithmetic              | 1e-5               | 1e-6               |
//! | transcendental (exp, log, tanh...)  | 1e-4               | 1e-5               |
//! | reductions / matmul over `K` terms  | 2e-5 * sqrt(K)     | 2e-5 * sqrt(K)     |
//! | composites (softmax, conv, losses)  | 1e-4 (x sqrt(K))   | 1e-5 (x sqrt(K))   |
//! | training curve (loss per step)      | 1e-3               | 0                  |
//!
//! Gradients are checked with the forward tolerance times [`GRAD_FACTOR`] unless a case sets
//! its own: a backward pass chains a few ops, each adding its rounding error.

/// Absolute plus relative tolerance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tol {
    pub rel: f64,
    pub abs: f64,
}

impl Tol {
    pub const fn new(rel: f64, abs: f64) -> Self {
        Tol { rel, abs }
    }
    /// Both parts multiplied by `f`.
    pub fn scaled(self, f: f64) -> Self {
        Tol { rel: self.rel * f, abs: self.abs * f }
    }
    /// The allowed difference for an expected value.
    pub fn bound(&self, expected: f64) -> f64 {
        self.abs + self.rel * expected.abs()
    }
    /// True if `got` is within tolerance of `expected` (two NaNs, or two equal infinities, match).
    pub fn accepts(&self, got: f64, expected: f64) -> bool {
        if expected.is_nan() || got.is_nan() {
            return expected.is_nan() && got.is_nan();
        }
        if expected.is_infinite() || got.is_infinite() {
            return got == expected;
        }
        (got - expected).abs() <= self.bound(expected)
    }
}

/// Bit-exact copies: fill, permute, expand, slice, pad, concat, gather, scatter of one source.
pub const EXACT: Tol = Tol::new(0.0, 0.0);
/// Elementwise arithmetic (+, -, *, /, max, comparisons, affine, where).
pub const ELEMENTWISE: Tol = Tol::new(1e-5, 1e-6);
/// Transcendental functions (exp, log, sqrt, tanh, sigmoid, sin, cos, pow) and normal samples.
pub const TRANSCENDENTAL: Tol = Tol::new(1e-4, 1e-5);
/// Composite ops chaining several primitives (softmax, log_softmax, gelu, pools, losses).
pub const COMPOSITE: Tol = Tol::new(1e-4, 1e-5);
/// Loss values of the fixed-seed training curve, step by step.
pub const TRAINING_CURVE: Tol = Tol::new(1e-3, 0.0);
/// Gradient tolerance = forward tolerance times this.
pub const GRAD_FACTOR: f64 = 4.0;

/// Sums or dot products of `k` terms: rounding errors grow about like `sqrt(k)`.
pub fn accumulate(k: usize) -> Tol {
    let s = (k.max(1) as f64).sqrt();
    Tol::new(2e-5 * s, 2e-5 * s)
}
