//! The one table of elementwise functions: every [`UnaryOp`], every [`BinaryOp`] and `where`
//! as a kernel expression. The CPU evaluates these kernels ([`super::eval`]), the GPU backends
//! render them ([`super::lower`](mod@super::lower) then their dialect), so each function is written exactly once.
//! The matches are exhaustive: a new variant does not compile until it has a definition here.
//!
//! Scalar arguments of an op (`Affine`'s `mul` and `add`, `Powf`'s exponent...) are kernel
//! parameters, not constants, so one compiled kernel serves every value.

use std::cell::RefCell;

use super::ir::{Builder, DType, Kernel, E};
use crate::op::{BinaryOp, UnaryOp};
use crate::Result;

/// An elementwise computation ready to launch: the kernel and its parameter values.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub kernel: Kernel,
    pub params: Vec<f32>,
}

fn f32s(n: usize) -> Vec<DType> {
    vec![DType::F32; n]
}

thread_local! {
    /// Each op's kernel by variant: its structure depends on the variant only (parameter
    /// values are read at run time), and every eager elementwise op asks for one.
    static UNARY_KERNELS: RefCell<Vec<Option<Kernel>>> = const { RefCell::new(Vec::new()) };
    static BINARY_KERNELS: RefCell<Vec<Option<Kernel>>> = const { RefCell::new(Vec::new()) };
}

/// The kernel of variant `i` from `cache`, built by `make` the first time on this thread.
fn cached(
    cache: &'static std::thread::LocalKey<RefCell<Vec<Option<Kernel>>>>,
    i: usize,
    make: impl FnOnce() -> Result<Kernel>,
) -> Result<Kernel> {
    if let Some(k) = cache.with(|c| c.borrow().get(i).cloned().flatten()) {
        return Ok(k);
    }
    let k = make()?;
    cache.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() <= i {
            c.resize(i + 1, None);
        }
        c[i] = Some(k.clone());
    });
    Ok(k)
}

/// Builds a kernel over `inputs` f32 inputs and `params` parameters.
fn build(inputs: usize, params: usize, body: impl for<'a> Fn(&'a Builder) -> E<'a>) -> Result<Kernel> {
    let b = Builder::new(&f32s(inputs), params);
    let out = body(&b);
    b.finish(out)
}

impl UnaryOp {
    /// The scalar arguments, in the order the kernel reads them as parameters.
    pub fn params(&self) -> Vec<f32> {
        match *self {
            UnaryOp::Affine { mul, add } => vec![mul, add],
            UnaryOp::Powf(p) | UnaryOp::MaxScalar(p) | UnaryOp::MinScalar(p) | UnaryOp::GtScalar(p) | UnaryOp::DivScalar(p) => vec![p],
            UnaryOp::Neg
            | UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Recip
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Abs
            | UnaryOp::Square
            | UnaryOp::Floor
            | UnaryOp::RoundEven
            | UnaryOp::Sin
            | UnaryOp::Cos => vec![],
        }
    }

    /// The definition: input 0 is `x`, parameters are [`UnaryOp::params`].
    pub fn kernel(&self) -> Result<Kernel> {
        let op = *self;
        build(1, self.params().len(), move |b| {
            let x = b.input(0);
            let p = |i| b.param(i);
            match op {
                UnaryOp::Neg => -x,
                UnaryOp::Exp => x.exp(),
                UnaryOp::Log => x.log(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Recip => 1.0 / x,
                UnaryOp::Tanh => x.tanh(),
                // With e = exp(-|x|) in (0, 1], 1 / (1 + e) for x >= 0 and e / (1 + e) below:
                // no overflow, and accurate as sigmoid(x) -> 0 (where 1 - 1/(1 + e^x) would
                // cancel). NaN fails `x >= 0` and propagates through e.
                UnaryOp::Sigmoid => {
                    let e = (-x.abs()).exp();
                    let s = 1.0 / (1.0 + e);
                    x.ge(0.0).select(s, e * s)
                }
                UnaryOp::Abs => x.abs(),
                UnaryOp::Square => x * x,
                UnaryOp::Floor => x.floor(),
                UnaryOp::RoundEven => x.round_even(),
                UnaryOp::Sin => x.sin(),
                UnaryOp::Cos => x.cos(),
                UnaryOp::Affine { .. } => x * p(0) + p(1),
                UnaryOp::Powf(_) => x.pow(p(0)),
                UnaryOp::MaxScalar(_) => x.max(p(0)),
                UnaryOp::MinScalar(_) => x.min(p(0)),
                // NaN > c is false: 0.
                UnaryOp::GtScalar(_) => x.gt(p(0)).cast(DType::F32),
                UnaryOp::DivScalar(_) => x / p(0),
            }
        })
    }

    /// [`UnaryOp::kernel`] with [`UnaryOp::params`].
    pub fn launch(&self) -> Result<Launch> {
        let kernel = cached(&UNARY_KERNELS, self.variant_index(), || self.kernel())?;
        Ok(Launch { kernel, params: self.params() })
    }

    /// One instance of every variant (parameters arbitrary): for warming up caches and for
    /// tests that must cover every function. [`UnaryOp::variant_index`] keeps it complete.
    pub const ALL: [UnaryOp; 19] = [
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Recip,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Abs,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Affine { mul: 1.0, add: 0.0 },
        UnaryOp::Powf(2.0),
        UnaryOp::MaxScalar(0.0),
        UnaryOp::MinScalar(0.0),
        UnaryOp::GtScalar(0.0),
        UnaryOp::Square,
        UnaryOp::Floor,
        UnaryOp::RoundEven,
        UnaryOp::DivScalar(3.0),
    ];

    /// Position of this variant in [`UnaryOp::ALL`] (exhaustive, so a new variant must be
    /// added there too; a test checks the two agree).
    pub fn variant_index(&self) -> usize {
        match self {
            UnaryOp::Neg => 0,
            UnaryOp::Exp => 1,
            UnaryOp::Log => 2,
            UnaryOp::Sqrt => 3,
            UnaryOp::Recip => 4,
            UnaryOp::Tanh => 5,
            UnaryOp::Sigmoid => 6,
            UnaryOp::Abs => 7,
            UnaryOp::Sin => 8,
            UnaryOp::Cos => 9,
            UnaryOp::Affine { .. } => 10,
            UnaryOp::Powf(_) => 11,
            UnaryOp::MaxScalar(_) => 12,
            UnaryOp::MinScalar(_) => 13,
            UnaryOp::GtScalar(_) => 14,
            UnaryOp::Square => 15,
            UnaryOp::Floor => 16,
            UnaryOp::RoundEven => 17,
            UnaryOp::DivScalar(_) => 18,
        }
    }

    /// Short lower-case name, e.g. `sigmoid` (logs, labels, test names).
    pub fn name(&self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Recip => "recip",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Abs => "abs",
            UnaryOp::Square => "square",
            UnaryOp::Floor => "floor",
            UnaryOp::RoundEven => "round_even",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Affine { .. } => "affine",
            UnaryOp::Powf(_) => "powf",
            UnaryOp::MaxScalar(_) => "max_scalar",
            UnaryOp::MinScalar(_) => "min_scalar",
            UnaryOp::GtScalar(_) => "gt_scalar",
            UnaryOp::DivScalar(_) => "div_scalar",
        }
    }
}

impl BinaryOp {
    /// The definition: inputs 0 and 1 are `a` and `b` (broadcast by the backend).
    pub fn kernel(&self) -> Result<Kernel> {
        let op = *self;
        build(2, 0, move |bd| {
            let (a, b) = (bd.input(0), bd.input(1));
            match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div => a / b,
                BinaryOp::Max => a.max(b),
                BinaryOp::Min => a.min(b),
                BinaryOp::Pow => a.pow(b),
                // Comparisons with a NaN are false: 0.
                BinaryOp::Gt => a.gt(b).cast(DType::F32),
                BinaryOp::Ge => a.ge(b).cast(DType::F32),
                BinaryOp::Eq => a.eq(b).cast(DType::F32),
            }
        })
    }

    /// [`BinaryOp::kernel`] (binary ops take no parameters).
    pub fn launch(&self) -> Result<Launch> {
        Ok(Launch { kernel: cached(&BINARY_KERNELS, self.variant_index(), || self.kernel())?, params: Vec::new() })
    }

    /// Every variant; [`BinaryOp::variant_index`] keeps it complete.
    pub const ALL: [BinaryOp; 10] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Pow,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::Eq,
    ];

    /// Position of this variant in [`BinaryOp::ALL`].
    pub fn variant_index(&self) -> usize {
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

    /// Short lower-case name, e.g. `pow`.
    pub fn name(&self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Pow => "pow",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::Eq => "eq",
        }
    }
}

/// `where(cond, a, b)`: `a` where `cond` is nonzero, else `b`. A NaN condition is nonzero
/// (it is not equal to 0), so it picks `a`.
pub fn where_kernel() -> Result<Kernel> {
    build(3, 0, |b| {
        let (c, x, y) = (b.input(0), b.input(1), b.input(2));
        c.eq(0.0).not().select(x, y)
    })
}

/// [`where_kernel`] ready to launch.
pub fn where_launch() -> Result<Launch> {
    Ok(Launch { kernel: where_kernel()?, params: Vec::new() })
}

/// The identity of one input: a kernel that reads its input broadcast to the output is
/// `expand` (fusing backends use it so an expand composes like any elementwise op).
pub fn identity_launch() -> Result<Launch> {
    Ok(Launch { kernel: build(1, 0, |b| b.input(0))?, params: Vec::new() })
}

/// Every element `value` (parameter 0): `fill`, for backends that fuse it into its consumers.
pub fn fill_launch(value: f32) -> Result<Launch> {
    Ok(Launch { kernel: build(0, 1, |b| b.param(0))?, params: vec![value] })
}

/// The Box-Muller transform the GPU backends' `Op::Random` kernels use for normal samples:
/// two uniforms `u1` in `(0, 1]`, `u2` in `[0, 1)` to a standard normal
/// `sqrt(-2 ln u1) cos(2 pi u2)` (`crate::rng::normal` computes the same in f64).
pub fn box_muller_kernel() -> Result<Kernel> {
    build(2, 0, |b| {
        let (u1, u2) = (b.input(0), b.input(1));
        (u1.log() * -2.0).sqrt() * (u2 * std::f32::consts::TAU).cos()
    })
}

/// The inputs every backend's elementwise functions are tested on (the conformance suite's
/// `edges` family and this crate's lowering test): signed zeros, tiny and huge magnitudes,
/// the ends of the f32 `exp` range, whole numbers and halves (for `pow`), infinities and NaN.
pub const EDGE_VALUES: &[f32] = &[
    0.0,
    -0.0,
    1e-20,
    -1e-20,
    1e-6,
    -1e-6,
    0.25,
    -0.25,
    0.5,
    -0.5,
    1.0,
    -1.0,
    1.5,
    -1.5,
    2.0,
    -2.0,
    2.5,
    -2.5,
    3.0,
    -3.0,
    9.5,
    -9.5,
    20.0,
    -20.0,
    64.0,
    -64.0,
    88.0,
    -88.0,
    100.0,
    -100.0,
    1e4,
    -1e4,
    1e10,
    -1e10,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
];

/// Scalar arguments the one-parameter unary functions (`powf`, `max_scalar`, ...) are tested
/// with: whole and half exponents of both signs, the squaring limit (64) and one past it,
/// zero, NaN and the infinities.
pub const EDGE_PARAMS: &[f32] =
    &[0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 1.5, 64.0, 65.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];

/// Every elementwise definition of the primitive set, with a label: one per [`UnaryOp`] and
/// [`BinaryOp`] variant and `where`.
pub fn all() -> Result<Vec<(String, Kernel)>> {
    let mut out = Vec::new();
    for u in UnaryOp::ALL {
        out.push((format!("unary.{}", u.name()), u.kernel()?));
    }
    for b in BinaryOp::ALL {
        out.push((format!("binary.{}", b.name()), b.kernel()?));
    }
    out.push(("where".to_string(), where_kernel()?));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_lists_are_complete() {
        for (i, u) in UnaryOp::ALL.iter().enumerate() {
            assert_eq!(u.variant_index(), i, "{u:?}");
        }
        for (i, b) in BinaryOp::ALL.iter().enumerate() {
            assert_eq!(b.variant_index(), i, "{b:?}");
        }
    }

    #[test]
    fn every_definition_builds_and_is_f32() {
        let all = all().unwrap();
        assert_eq!(all.len(), UnaryOp::ALL.len() + BinaryOp::ALL.len() + 1);
        for (name, k) in &all {
            assert_eq!(k.out_dtype(), DType::F32, "{name}");
            assert!(k.is_semantic(), "{name} uses a device built-in");
        }
        // Parameters are uniforms: the kernel does not depend on their values.
        assert_eq!(UnaryOp::Powf(2.0).kernel().unwrap(), UnaryOp::Powf(0.5).kernel().unwrap());
        assert_eq!(UnaryOp::Affine { mul: 2.0, add: 1.0 }.launch().unwrap().params, vec![2.0, 1.0]);
    }
}
