//! What a kernel means on the host: every IR function on one value, with IEEE semantics, in
//! `f32` or `f64`, and [`eval_one`], a kernel on one element. This is the definition the CPU
//! backend's block evaluator (`pixelgrad-cpu`, node by node over blocks of elements) and the
//! lowered GPU kernels are tested against. Booleans are held as `1` / `0` of the float type.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::ir::{DType, Kernel, Lit, Node, Op1, Op2};
use crate::{Error, Result};

/// The float types kernels evaluate in, with IEEE semantics for every function.
pub trait Float:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Send
    + Sync
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    const NAN: Self;
    fn from_f32(v: f32) -> Self;
    fn floor(self) -> Self;
    fn round_ties_even(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn exp2(self) -> Self;
    fn log2(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, p: Self) -> Self;
    fn is_nan(self) -> bool;
    fn is_infinite(self) -> bool;
    fn is_sign_negative(self) -> bool;
}

macro_rules! float_impl {
    ($t:ty) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            #[inline]
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            #[inline]
            fn floor(self) -> Self {
                // x86_64 without SSE4.1 has no rounding instruction: std calls a software
                // `floorf`, one value at a time. Rounding to nearest (below) and stepping down
                // where that went up is exact and vectorises.
                #[cfg(all(target_arch = "x86_64", not(target_feature = "sse4.1")))]
                {
                    let r = Float::round_ties_even(self);
                    if r > self {
                        r - 1.0
                    } else {
                        r
                    }
                }
                #[cfg(not(all(target_arch = "x86_64", not(target_feature = "sse4.1"))))]
                <$t>::floor(self)
            }
            #[inline]
            fn round_ties_even(self) -> Self {
                // As in `floor`: below 2^(mantissa bits) adding and subtracting that power of two
                // rounds to the nearest integer, ties to even (the default rounding mode); at or
                // above it (and for inf and NaN) the value is already whole. Exact.
                #[cfg(all(target_arch = "x86_64", not(target_feature = "sse4.1")))]
                {
                    let c: $t = (1u64 << (<$t>::MANTISSA_DIGITS - 1)) as $t;
                    let a = <$t>::abs(self);
                    if a < c {
                        ((a + c) - c).copysign(self)
                    } else {
                        self
                    }
                }
                #[cfg(not(all(target_arch = "x86_64", not(target_feature = "sse4.1"))))]
                <$t>::round_ties_even(self)
            }
            #[inline]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline]
            fn exp2(self) -> Self {
                <$t>::exp2(self)
            }
            #[inline]
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline]
            fn powf(self, p: Self) -> Self {
                <$t>::powf(self, p)
            }
            #[inline]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline]
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            #[inline]
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
        }
    };
}

float_impl!(f32);
float_impl!(f64);

/// `1` for true, `0` for false.
pub fn flag<T: Float>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

pub fn truth<T: Float>(v: T) -> bool {
    v != T::ZERO
}

/// `op` on one value, with the IEEE meaning documented on [`Op1`]. Raw built-ins are
/// evaluated as the Rust function they stand for.
pub fn apply1<T: Float>(op: Op1, x: T) -> T {
    match op {
        Op1::Neg => -x,
        Op1::Abs => x.abs(),
        Op1::Floor | Op1::FloorRaw => x.floor(),
        Op1::RoundEven => x.round_ties_even(),
        Op1::Exp | Op1::ExpRaw => x.exp(),
        Op1::Log | Op1::LogRaw => x.ln(),
        Op1::Exp2Raw => x.exp2(),
        Op1::Log2Raw => x.log2(),
        Op1::Sqrt | Op1::SqrtRaw => x.sqrt(),
        Op1::Tanh => x.tanh(),
        Op1::Sin => x.sin(),
        Op1::Cos => x.cos(),
        Op1::IsNan => flag(x.is_nan()),
        Op1::IsInf => flag(x.is_infinite()),
        Op1::SignBit => flag(x.is_sign_negative()),
        Op1::Not => flag(!truth(x)),
    }
}

/// `op` on two values, with the IEEE meaning documented on [`Op2`].
pub fn apply2<T: Float>(op: Op2, a: T, b: T) -> T {
    match op {
        Op2::Add => a + b,
        Op2::Sub => a - b,
        Op2::Mul => a * b,
        Op2::Div | Op2::DivRaw => a / b,
        // NaN if either is; on ties (±0) the first. Written as `b` if it is NaN, else
        // `a < b ? b : a` (a NaN `a` falls through to `a`): wasm's `pmax` and a NaN test, three
        // SIMD instructions where the four-way test took seven.
        Op2::Max => {
            let r = if a < b { b } else { a };
            if b.is_nan() {
                b
            } else {
                r
            }
        }
        Op2::Min => {
            let r = if b < a { b } else { a };
            if b.is_nan() {
                b
            } else {
                r
            }
        }
        Op2::MaxRaw => {
            if a >= b {
                a
            } else {
                b
            }
        }
        Op2::MinRaw => {
            if a <= b {
                a
            } else {
                b
            }
        }
        Op2::Pow => a.powf(b),
        Op2::Lt | Op2::LtRaw => flag(a < b),
        Op2::Le | Op2::LeRaw => flag(a <= b),
        Op2::Eq | Op2::EqRaw => flag(a == b),
        Op2::And => flag(truth(a) && truth(b)),
        Op2::Or => flag(truth(a) || truth(b)),
    }
}

/// Checks that `kernel` can be evaluated here with `inputs` inputs and `params` parameters:
/// the host evaluates `f32` kernels (bools as 1 / 0), in `f32` or `f64`.
pub fn check(kernel: &Kernel, inputs: usize, params: usize) -> Result<()> {
    if let Some(t) = kernel.inputs().iter().find(|t| **t != DType::F32) {
        return Err(Error::invalid("kernel", format!("the host evaluates f32 inputs only, not {t}")));
    }
    for node in kernel.nodes() {
        match *node {
            Node::Cast(DType::F32, a) if matches!(kernel.dtype(a), DType::F32 | DType::Bool) => {}
            Node::Cast(t, a) => return Err(Error::invalid("kernel", format!("the host does not convert {} to {t}", kernel.dtype(a)))),
            Node::Const(Lit::I32(_)) => return Err(Error::invalid("kernel", "the host has no i32 values")),
            _ => {}
        }
    }
    if kernel.inputs().len() != inputs || kernel.params() != params {
        return Err(Error::invalid(
            "kernel",
            format!("takes {} inputs and {} parameters, given {inputs} and {params}", kernel.inputs().len(), kernel.params()),
        ));
    }
    Ok(())
}

/// Evaluates `kernel` for one element, node by node.
pub fn eval_one<T: Float>(kernel: &Kernel, inputs: &[T], params: &[T]) -> Result<T> {
    check(kernel, inputs.len(), params.len())?;
    let mut vals: Vec<T> = Vec::with_capacity(kernel.nodes().len());
    for node in kernel.nodes() {
        let v = match *node {
            Node::Input(j) => inputs[j as usize],
            Node::Param(j) => params[j as usize],
            Node::Const(Lit::F32(bits)) => T::from_f32(f32::from_bits(bits)),
            Node::Const(Lit::Bool(b)) => flag(b),
            // `check` refuses i32 constants
            Node::Const(Lit::I32(_)) => T::NAN,
            Node::Op1(op, a) => apply1(op, vals[a as usize]),
            Node::Op2(op, a, b) => apply2(op, vals[a as usize], vals[b as usize]),
            Node::Select(c, a, b) => {
                if truth(vals[c as usize]) {
                    vals[a as usize]
                } else {
                    vals[b as usize]
                }
            }
            // f32 to f32, or a bool already held as 1 / 0 (the only casts `check` lets through)
            Node::Cast(_, a) => vals[a as usize],
        };
        vals.push(v);
    }
    Ok(vals[kernel.out() as usize])
}

#[cfg(test)]
mod rounding_tests {
    use super::Float;

    /// `floor` and `round_ties_even` agree bit for bit with std's on every exponent (a spread
    /// of mantissas each, both signs), halves, the 2^23 / 2^52 edges, zeros, inf and NaN: the
    /// x86_64 builds without SSE4.1 compute them without std's software routines.
    #[test]
    fn rounding_matches_std() {
        let mut xs32 =
            vec![0.0f32, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN_POSITIVE];
        for e in 0u32..255 {
            for m in [0u32, 1, 0x2a_aaaa, 0x40_0000, 0x40_0001, 0x7f_ffff, 0x55_5555, 0x3f_ffff] {
                xs32.push(f32::from_bits(e << 23 | m));
            }
        }
        xs32.extend([8388607.5f32, 8388608.0, 8388609.0, 16777216.0, 4194303.5, 4194304.5]);
        for &x in &xs32 {
            for x in [x, -x] {
                assert_eq!(Float::round_ties_even(x).to_bits(), x.round_ties_even().to_bits(), "round {x:e}");
                assert_eq!(Float::floor(x).to_bits(), x.floor().to_bits(), "floor {x:e}");
            }
        }
        let mut xs64 = vec![0.0f64, 0.5, 1.5, 2.5, f64::INFINITY, f64::NAN, 4503599627370495.5, 4503599627370496.0, 2251799813685247.5];
        for e in 0u64..2047 {
            for m in [0u64, 1, 0x8_0000_0000_0000, 0xf_ffff_ffff_ffff, 0x5_5555_5555_5555] {
                xs64.push(f64::from_bits(e << 52 | m));
            }
        }
        for &x in &xs64 {
            for x in [x, -x] {
                assert_eq!(Float::round_ties_even(x).to_bits(), x.round_ties_even().to_bits(), "round {x:e}");
                assert_eq!(Float::floor(x).to_bits(), x.floor().to_bits(), "floor {x:e}");
            }
        }
    }
}
