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
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn round_ties_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn exp2(self) -> Self {
                <$t>::exp2(self)
            }
            fn log2(self) -> Self {
                <$t>::log2(self)
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
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
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
