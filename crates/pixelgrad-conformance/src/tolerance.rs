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
//!
//! The `edges` family (every elementwise function on ±0, ±1e-20 ... ±1e10, ±inf, NaN) holds
//! each function to its own tolerance, [`edge`], far tighter than the family tolerances above
//! near zero: the absolute part is only the subnormal range (GPUs flush results below 2^-126
//! to zero), so `tanh(1e-20)` must be `1e-20` to 1e-5 relative, not merely close to 0. The
//! class of a result (NaN, +inf, -inf, finite) must always be the reference's.

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

/// Below this every result may be a flushed subnormal (2^-126 ≈ 1.18e-38, doubled).
const SUBNORMAL: f64 = 2.4e-38;

/// The per-function tolerance of the `edges` family at input `x` (the first input), for
/// every backend against the f64 reference. `func` is the op's short name
/// (`UnaryOp::name`, `BinaryOp::name`, or `where`).
///
/// | functions | rel | abs | why |
/// |---|---|---|---|
/// | `neg abs floor round_even max min max_scalar min_scalar gt ge eq gt_scalar where` | 0 | 0 | exact on every device |
/// | `add sub mul square` | 6e-8 | subnormal | one rounding |
/// | `affine` | 1.2e-7 | subnormal | two roundings, or one when the device fuses a multiply-add |
/// | `div div_scalar recip sqrt` | 3e-7 | subnormal | 2.5 ulp (WGSL's bound for `/` and `sqrt`) |
/// | `exp sigmoid tanh log` | 2e-6 | subnormal | a few ulp of the device's `exp` / `log` (WGSL allows `3 + 2|x|` ulp for `exp`) |
/// | `pow powf` | 2e-5 | subnormal | up to 63 roundings for whole exponents up to 64, `|y log2 x|` ulp beyond (see `pixelgrad_core::kernel::lower`); exact where the result is an integer below 2^24 |
/// | `sin cos`, `|x| <= 102,900` | 2e-6 | 1e-6 · min(1, `|x|`) | polynomial plus reduction error; relative near 0 |
/// | `sin cos`, `|x| > 102,900` | - | 2 | the f32 reduction runs out of bits: any value in [-1, 1] |
///
/// `None` for a function without a row: the `edges` family then fails and names it, so a new
/// elementwise function gets its tolerance written down here.
pub fn edge(func: &str, x: f64) -> Option<Tol> {
    Some(match func {
        "neg" | "abs" | "floor" | "round_even" | "max" | "min" | "max_scalar" | "min_scalar" | "gt" | "ge" | "eq" | "gt_scalar"
        | "where" => EXACT,
        "add" | "sub" | "mul" | "square" => Tol::new(6e-8, SUBNORMAL),
        "affine" => Tol::new(1.2e-7, SUBNORMAL),
        "div" | "div_scalar" | "recip" | "sqrt" => Tol::new(3e-7, SUBNORMAL),
        "exp" | "sigmoid" | "tanh" | "log" => Tol::new(2e-6, SUBNORMAL),
        "pow" | "powf" => Tol::new(2e-5, SUBNORMAL),
        "sin" | "cos" if x.abs() > TRIG_EXACT_RANGE => Tol::new(0.0, 2.0),
        "sin" | "cos" => Tol::new(2e-6, 1e-6 * x.abs().min(1.0)),
        _ => return None,
    })
}

/// Largest `|x|` for which the GPU backends' `sin`/`cos` argument reduction is exact
/// (`2^16 · pi/2`).
pub const TRIG_EXACT_RANGE: f64 = 102_900.0;
