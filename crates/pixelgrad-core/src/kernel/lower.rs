//! Edge semantics, defined once: every IEEE function of the IR rewritten into device
//! primitives whose results no GPU gets wrong.
//!
//! GPU built-ins are only trustworthy on part of their domain. Measured on Mesa (lavapipe,
//! llvmpipe) and SwiftShader, and allowed by the WGSL and GLSL ES specifications: `exp2`/`log2`
//! of NaN return numbers, `log`/`sqrt` of negatives are undefined, `max`/`min` drop or keep a
//! NaN at will, comparisons with a NaN may be folded away, `tanh` built from `exp` loses all
//! accuracy near 0, `sin`/`cos` are only specified to 2^-11. So a lowered kernel uses only:
//!
//! - operations hardware does exactly: `+ - *`, negation and `abs` (sign-bit flips), bit tests
//!   (`is_nan`, `is_inf`, `sign_bit`, rendered as integer tests of the float's bits, which no
//!   fast-math setting can fold), boolean logic, `select` and casts;
//! - the `Raw` built-ins ([`Op1::ExpRaw`], [`Op2::DivRaw`]...) only where their operands are
//!   known to be in the domain their doc comment gives; every other case is decided by an
//!   explicit `select`.
//!
//! The result on every backend is then the IEEE-754 result (what the CPU computes), up to the
//! rounding of the raw built-ins. The cases, per function:
//!
//! | function | special cases (all: NaN in → NaN out, unless listed) |
//! |---|---|
//! | `exp` | `+inf` above 88.72 (overflow), `0` below -103.98, `exp(-inf) = 0` |
//! | `log` | NaN below 0, `-inf` at `±0`, `+inf` at `+inf` |
//! | `sqrt` | NaN below 0, `sqrt(-0) = -0`, `+inf` at `+inf` |
//! | `a / b` | `0/0`, `inf/inf` NaN; `x/±0 = ±inf` (sign of `x` times sign of the zero); `x/±inf = ±0`; divisors beyond 2^125 scaled so the device's reciprocal does not flush |
//! | `max`, `min` | NaN if either side is NaN |
//! | `<`, `<=`, `==` | false if either side is NaN (so `where` treats a NaN condition as nonzero) |
//! | `pow(a, b)` | IEEE exceptions: `pow(x, ±0) = 1` and `pow(1, y) = 1` even for NaN; `|b| <= 64` as a whole power by repeated squaring (exact when representable: `pow(-2, 3) = -8`) times `sqrt` for halves or `2^(f log2|a|)` for other fractions `f`; negative `a` with fractional `b` NaN; `a = ±0` → `±0` / `±inf` by the sign of `b` and whether it is an odd integer; `a = ±inf` likewise; `b = ±inf` → `0`, `1` or `inf` by `|a|` against 1 |
//! | `tanh` | `x + x^3 P(x^2)` (Taylor to x^13) below `|x| = 0.5`, so `tanh(1e-20) = 1e-20`; `1 - 2/(e^(2|x|) + 1)` up to 9.1; `±1` beyond |
//! | `sin`, `cos` | Cody-Waite reduction by pi/2 (constant in three parts, the first with 8 significant bits, so `k * C1` is exact for `k < 2^16`), Taylor polynomials on `[-pi/4, pi/4]`; NaN at `±inf`. Accurate to ~1e-7 absolute up to `|x| = 2^16 * pi/2 ≈ 102,900`; beyond that the reduction has too few bits and the result is only guaranteed to be in `[-1, 1]` |
//! | `floor` | NaN and `±inf` pass through |
//! | `round_even` | NaN, `±inf` and `|x| >= 2^23` pass through; from `floor`, no device `round`/`roundEven` (GLSL ES 1.00 has none, GLSL ES 3.00 leaves ties to the driver): `f = floor(x)`, `d = x - f` (exact), `f + 1` when `d > 0.5` or `d = 0.5` and `f` is odd; a zero result takes the sign of `x` (`-0.4 -> -0`) |
//!
//! Accuracy, apart from the special cases: each raw built-in's own (WGSL: `exp`/`exp2`
//! `3 + 2|x|` ulp, `log` 3 ulp, `sqrt` and `/` 2.5 ulp; GLSL ES leaves them to the driver), plus
//! for `pow` the roundings it chains: up to 63 ulp for the squaring of whole parts up to 64,
//! about `|b log2|a||` ulp (at most ~150) for larger exponents. The conformance suite's
//! `edges` family holds every backend to the per-function tolerances in its `tolerance`
//! module.
//!
//! GPUs flush subnormal numbers (magnitude below 2^-126 ≈ 1.18e-38) to zero, in inputs and
//! results; the CPU keeps them. That difference is within every tolerance below 1e-37
//! absolute and is not hidden by the lowering.
//!
//! The CPU runs the unlowered kernels with Rust's IEEE functions; a unit test evaluates every
//! lowered definition on the CPU too (raw built-ins as Rust functions) and checks it against the
//! unlowered one on the edge inputs, so the tables above are tested without a GPU.

use super::ir::{Builder, DType, Kernel, Node, Op1, Op2, E};
use crate::{Error, Result};

/// The device primitives of one value a renderer must provide (everything a lowered kernel
/// may contain). The bit tests must be rendered as integer tests of the float's bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim1 {
    Neg,
    Abs,
    Not,
    IsNan,
    IsInf,
    SignBit,
    Exp,
    Log,
    Exp2,
    Log2,
    Sqrt,
    Floor,
}

/// The device primitives of two values a renderer must provide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim2 {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    Lt,
    Le,
    Eq,
    And,
    Or,
}

impl Op1 {
    /// The device primitive this op renders to, or `None` for an IEEE function that
    /// [`lower`] must rewrite first.
    pub fn prim(self) -> Option<Prim1> {
        Some(match self {
            Op1::Neg => Prim1::Neg,
            Op1::Abs => Prim1::Abs,
            Op1::Not => Prim1::Not,
            Op1::IsNan => Prim1::IsNan,
            Op1::IsInf => Prim1::IsInf,
            Op1::SignBit => Prim1::SignBit,
            Op1::ExpRaw => Prim1::Exp,
            Op1::LogRaw => Prim1::Log,
            Op1::Exp2Raw => Prim1::Exp2,
            Op1::Log2Raw => Prim1::Log2,
            Op1::SqrtRaw => Prim1::Sqrt,
            Op1::FloorRaw => Prim1::Floor,
            Op1::Floor | Op1::RoundEven | Op1::Exp | Op1::Log | Op1::Sqrt | Op1::Tanh | Op1::Sin | Op1::Cos => return None,
        })
    }
}

impl Op2 {
    /// The device primitive this op renders to, or `None` for an IEEE function that
    /// [`lower`] must rewrite first.
    pub fn prim(self) -> Option<Prim2> {
        Some(match self {
            Op2::Add => Prim2::Add,
            Op2::Sub => Prim2::Sub,
            Op2::Mul => Prim2::Mul,
            Op2::And => Prim2::And,
            Op2::Or => Prim2::Or,
            Op2::DivRaw => Prim2::Div,
            Op2::MaxRaw => Prim2::Max,
            Op2::MinRaw => Prim2::Min,
            Op2::LtRaw => Prim2::Lt,
            Op2::LeRaw => Prim2::Le,
            Op2::EqRaw => Prim2::Eq,
            Op2::Div | Op2::Max | Op2::Min | Op2::Pow | Op2::Lt | Op2::Le | Op2::Eq => return None,
        })
    }
}

/// `kernel` with every IEEE function rewritten into device primitives (see the module docs).
/// Lowering a lowered kernel changes nothing.
pub fn lower(kernel: &Kernel) -> Result<Kernel> {
    let b = Builder::new(kernel.inputs(), kernel.params());
    let mut map: Vec<E> = Vec::with_capacity(kernel.nodes().len());
    for node in kernel.nodes() {
        let v = |i: u16| map[i as usize];
        let e = match *node {
            Node::Input(i) => b.input(i as usize),
            Node::Param(i) => b.param(i as usize),
            Node::Const(l) => match l {
                super::ir::Lit::F32(bits) => b.f32(f32::from_bits(bits)),
                super::ir::Lit::Bool(x) => b.bool(x),
                super::ir::Lit::I32(_) => return Err(Error::invalid("kernel", "i32 constants are not lowered yet")),
            },
            Node::Op1(op, a) => lower1(op, v(a)),
            Node::Op2(op, x, y) => lower2(op, v(x), v(y)),
            Node::Select(c, x, y) => v(c).select(v(x), v(y)),
            Node::Cast(t, a) => v(a).cast(t),
        };
        map.push(e);
    }
    let out = map[kernel.out() as usize];
    b.finish(out)
}

fn lower1<'a>(op: Op1, x: E<'a>) -> E<'a> {
    match op {
        Op1::Floor => floor(x),
        Op1::RoundEven => round_even(x),
        Op1::Exp => exp(x),
        Op1::Log => log(x),
        Op1::Sqrt => sqrt(x),
        Op1::Tanh => tanh(x),
        Op1::Sin => sincos(x).0,
        Op1::Cos => sincos(x).1,
        Op1::Neg => -x,
        Op1::Abs => x.abs(),
        Op1::IsNan => x.is_nan(),
        Op1::IsInf => x.is_inf(),
        Op1::SignBit => x.sign_bit(),
        Op1::Not => x.not(),
        Op1::ExpRaw => x.exp_raw(),
        Op1::LogRaw => x.log_raw(),
        Op1::Exp2Raw => x.exp2_raw(),
        Op1::Log2Raw => x.log2_raw(),
        Op1::SqrtRaw => x.sqrt_raw(),
        Op1::FloorRaw => x.floor_raw(),
    }
}

fn lower2<'a>(op: Op2, a: E<'a>, b: E<'a>) -> E<'a> {
    match op {
        Op2::Div => div(a, b),
        Op2::Max => either_nan(a, b).select(nan(a), a.max_raw(b)),
        Op2::Min => either_nan(a, b).select(nan(a), a.min_raw(b)),
        Op2::Pow => pow(a, b),
        Op2::Lt => neither_nan(a, b).and(a.lt_raw(b)),
        Op2::Le => neither_nan(a, b).and(a.le_raw(b)),
        Op2::Eq => neither_nan(a, b).and(a.eq_raw(b)),
        Op2::Add => a + b,
        Op2::Sub => a - b,
        Op2::Mul => a * b,
        Op2::And => a.and(b),
        Op2::Or => a.or(b),
        Op2::DivRaw => a.div_raw(b),
        Op2::MaxRaw => a.max_raw(b),
        Op2::MinRaw => a.min_raw(b),
        Op2::LtRaw => a.lt_raw(b),
        Op2::LeRaw => a.le_raw(b),
        Op2::EqRaw => a.eq_raw(b),
    }
}

/// A quiet NaN constant of `x`'s builder.
fn nan(x: E<'_>) -> E<'_> {
    lit(x, f32::NAN)
}

fn inf(x: E<'_>) -> E<'_> {
    lit(x, f32::INFINITY)
}

/// A constant in the builder `x` belongs to.
fn lit(x: E<'_>, v: f32) -> E<'_> {
    x.lit(v)
}

fn either_nan<'a>(a: E<'a>, b: E<'a>) -> E<'a> {
    a.is_nan().or(b.is_nan())
}

fn neither_nan<'a>(a: E<'a>, b: E<'a>) -> E<'a> {
    either_nan(a, b).not()
}

/// NaN or ±inf.
fn non_finite(x: E<'_>) -> E<'_> {
    x.is_nan().or(x.is_inf())
}

fn floor(x: E<'_>) -> E<'_> {
    non_finite(x).select(x, x.floor_raw())
}

/// Every f32 from 2^23 on is a whole number.
const WHOLE_FROM: f32 = 8_388_608.0;

/// Ties to even, from the exact device floor. For finite `|x| < 2^23`, `f = floor(x)`, `f + 1`
/// and the evenness test `floor(f / 2) == f / 2` are exact, and so is `d = x - f` in `[0, 1)`
/// except for `x` in `(-0.5, 0)`, where `x + 1` may round, but only to `0.5` from above or
/// to `1`: there `f = -1` is odd and every such `d` rounds up, to `-0`, as it should.
fn round_even(x: E<'_>) -> E<'_> {
    let f = x.floor_raw();
    let d = x - f;
    let half = f * 0.5;
    let odd = half.floor_raw().eq_raw(half).not();
    let up = d.gt_raw(0.5).or(d.eq_raw(0.5).and(odd));
    let r = up.select(f + 1.0, f);
    // -0.4 and -0.5 round to -0 (floor gives -1, and -1 + 1 = +0).
    let zero = lit(x, 0.0);
    let r = r.eq_raw(0.0).select(x.sign_bit().select(-zero, zero), r);
    let keep = non_finite(x).or(x.abs().lt_raw(WHOLE_FROM).not());
    keep.select(x, r)
}

/// Largest and smallest arguments with a normal f32 result range handled by the device:
/// `e^88.72284 ≈ 3.4028e38` (the largest finite f32); below -103.98 even the smallest
/// subnormal rounds to 0.
const EXP_HI: f32 = 88.722_84;
const EXP_LO: f32 = -103.972_08;

fn exp(x: E<'_>) -> E<'_> {
    let finite = x.gt_raw(EXP_HI).select(inf(x), x.lt_raw(EXP_LO).select(0.0, x.exp_raw()));
    x.is_nan().select(x, finite)
}

fn log(x: E<'_>) -> E<'_> {
    // -0 is not below 0: log(-0) = -inf like log(+0).
    let r = x.eq_raw(0.0).select(-inf(x), x.is_inf().select(inf(x), x.log_raw()));
    x.is_nan().or(x.lt_raw(0.0)).select(nan(x), r)
}

fn sqrt(x: E<'_>) -> E<'_> {
    let r = x.eq_raw(0.0).select(x, x.is_inf().select(inf(x), x.sqrt_raw()));
    x.is_nan().or(x.lt_raw(0.0)).select(nan(x), r)
}

/// IEEE division. The device divides only finite by finite nonzero (many GPUs compute
/// `a * (1 / b)`, and `1 / b` flushes to 0 once `|b| > 2^126`, so large divisors are scaled).
fn div<'a>(a: E<'a>, b: E<'a>) -> E<'a> {
    let negative = a.sign_bit().select(b.sign_bit().not(), b.sign_bit());
    let signed = |v: E<'a>| negative.select(-v, v);
    let big = b.abs().gt_raw(4.253_529_6e37); // 2^125
    let (sa, sb) = (big.select(a * 0.25, a), big.select(b * 0.25, b));
    let q = sa.div_raw(sb);
    // a finite, b = ±0: ±inf; a = ±0 too: NaN.
    let by_zero = a.eq_raw(0.0).select(nan(a), signed(inf(a)));
    // b = ±inf: ±0 for finite a, NaN for infinite a.
    let by_inf = a.is_inf().select(nan(a), signed(lit(a, 0.0)));
    // a = ±inf, b finite nonzero: ±inf.
    let r = b.eq_raw(0.0).select(by_zero, b.is_inf().select(by_inf, a.is_inf().select(signed(inf(a)), q)));
    either_nan(a, b).select(nan(a), r)
}

/// Exponents whose whole part is at most this large split into a whole power, computed by
/// repeated squaring (exact whenever the result is representable), times a fractional power.
const POW_INT_MAX: f32 = 64.0;
/// Bits of the whole part the squaring loop looks at (`2^7 > 64`).
const POW_INT_BITS: usize = 7;

fn pow<'a>(x: E<'a>, y: E<'a>) -> E<'a> {
    let ax = x.abs();
    let ay = y.abs();
    let y_finite = non_finite(y).not();
    let whole = y_finite.and(y.floor_raw().eq_raw(y));
    // Odd whole numbers; every f32 from 2^24 on is even.
    let half = y * 0.5;
    let odd = whole.and(half.floor_raw().eq_raw(half).not());
    let negative = x.sign_bit();
    let flip = negative.and(odd);

    // |x|^n for n = trunc(|y|) <= 64, by squaring.
    let n = ay.floor_raw();
    let mut r = lit(x, 1.0);
    let mut base = ax;
    let mut rest = n;
    for _ in 0..POW_INT_BITS {
        let next = (rest * 0.5).floor_raw();
        let bit = (rest - next * 2.0).gt_raw(0.5);
        r = bit.select(r * base, r);
        base = base * base;
        rest = next;
    }
    // |x|^f for the fraction f = |y| - n in [0, 1): 1, sqrt for halves, else 2^(f log2|x|)
    // (|f log2|x|| < 150, so that exp2 neither overflows nor underflows much).
    let f = ay - n;
    let frac = f.eq_raw(0.0).select(1.0, f.eq_raw(0.5).select(ax.sqrt_raw(), (f * ax.log2_raw()).exp2_raw()));
    let split = r * frac;
    // Negative exponents: 1 / |x|^|y| (an overflowed power gives 0, an underflowed one inf).
    let recip = split.eq_raw(0.0).select(inf(x), split.is_inf().select(lit(x, 0.0), lit(x, 1.0).div_raw(split)));
    let split = y.lt_raw(0.0).select(recip, split);
    // Larger exponents: 2^(y log2|x|), with the overflow and underflow of exp2 decided here.
    let t = y * ax.log2_raw();
    let general = t.gt_raw(128.0).select(inf(x), t.lt_raw(-150.0).select(0.0, t.exp2_raw()));
    let magnitude = ay.le_raw(POW_INT_MAX).select(split, general);
    // x < 0 (finite, nonzero): negative for odd y, NaN for fractional y.
    let mut res = flip.select(-magnitude, magnitude);
    res = negative.and(whole.not()).select(nan(x), res);
    // x = ±0: 0 for y > 0, inf for y < 0, negative when x = -0 and y is odd.
    let zero = y.gt_raw(0.0).select(lit(x, 0.0), inf(x));
    res = x.eq_raw(0.0).select(flip.select(-zero, zero), res);
    // x = ±inf: inf for y > 0, 0 for y < 0, negative for x = -inf and odd y.
    let infinite = y.gt_raw(0.0).select(inf(x), lit(x, 0.0));
    res = x.is_inf().select(flip.select(-infinite, infinite), res);
    // y = ±inf: 1 for |x| = 1, else 0 or inf by whether |x| > 1 agrees with y > 0.
    let grows = ax.gt_raw(1.0).select(y.gt_raw(0.0), y.lt_raw(0.0));
    let y_inf = ax.eq_raw(1.0).select(lit(x, 1.0), grows.select(inf(x), lit(x, 0.0)));
    res = y.is_inf().select(y_inf, res);
    res = either_nan(x, y).select(nan(x), res);
    // The IEEE exceptions to NaN in, NaN out: pow(1, y) = 1 and pow(x, ±0) = 1.
    let one = x.is_nan().not().and(x.eq_raw(1.0)).or(y.is_nan().not().and(y.eq_raw(0.0)));
    one.select(1.0, res)
}

/// Where the Taylor series of tanh takes over from the exponential form.
const TANH_SERIES_BELOW: f32 = 0.5;
/// tanh(x) rounds to ±1 in f32 beyond 9.01; the exponential form is used up to here.
const TANH_ONE_ABOVE: f32 = 9.1;

fn tanh(x: E<'_>) -> E<'_> {
    let a = x.abs();
    let x2 = x * x;
    // x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925 + 21844x^13/6081075:
    // the next term is below 4.5e-8 at |x| = 0.5.
    let p = -1.0 / 3.0
        + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0 + x2 * (-1382.0 / 155_925.0 + x2 * (21_844.0 / 6_081_075.0)))));
    let series = x + x * x2 * p;
    // 1 - 2 / (e^(2|x|) + 1) never overflows for |x| <= 9.1 and does not cancel above 0.5.
    let e = (a * 2.0).min_raw(2.0 * TANH_ONE_ABOVE).exp_raw();
    let t = 1.0 - lit(x, 2.0).div_raw(e + 1.0);
    let mag = a.gt_raw(TANH_ONE_ABOVE).select(1.0, t);
    let big = x.sign_bit().select(-mag, mag);
    let r = a.lt_raw(TANH_SERIES_BELOW).select(series, big);
    x.is_nan().select(x, r)
}

/// Cody-Waite pieces of pi/2: the first has 8 significant bits, so `k * PIO2_1` is exact for
/// `|k| < 2^16`; together they carry pi/2 to about 2^-60.
const PIO2_1: f32 = 1.570_312_5;
const PIO2_2: f32 = 4.837_513e-4;
const PIO2_3: f32 = 7.549_79e-8;
const TWO_OVER_PI: f32 = std::f32::consts::FRAC_2_PI;

/// (sin x, cos x).
fn sincos(x: E<'_>) -> (E<'_>, E<'_>) {
    let k = (x * TWO_OVER_PI + 0.5).floor_raw();
    let r = x - k * PIO2_1;
    let r = r - k * PIO2_2;
    let r = r - k * PIO2_3;
    // Within the exact range |r| <= pi/4 plus rounding; beyond it the remainder can be far
    // outside, and clamping keeps the polynomials bounded (the documented result: some value
    // in [-1, 1]). At 0.8 both series are still accurate to 3e-9.
    let r = r.max_raw(-0.8).min_raw(0.8);
    let r2 = r * r;
    let s = r * (1.0 + r2 * (-0.166_666_67 + r2 * (8.333_333e-3 + r2 * (-1.984_127e-4 + r2 * 2.755_731_9e-6))));
    let c = 1.0 + r2 * (-0.5 + r2 * (4.166_666_8e-2 + r2 * (-1.388_888_9e-3 + r2 * (2.480_158_7e-5 - r2 * 2.755_732e-7))));
    // x = k pi/2 + r: the quadrant is k mod 4, taken in floats (exact for |k| < 2^24).
    let q = k - (k * 0.25).floor_raw() * 4.0;
    let (q0, q1, q2) = (q.eq_raw(0.0), q.eq_raw(1.0), q.eq_raw(2.0));
    let sin = q0.select(s, q1.select(c, q2.select(-s, -c)));
    let cos = q0.select(c, q1.select(-s, q2.select(-c, s)));
    let bad = non_finite(x);
    (bad.select(nan(x), sin), bad.select(nan(x), cos))
}

/// True if every node of `kernel` has a device primitive (the form renderers accept).
pub fn is_lowered(kernel: &Kernel) -> bool {
    kernel.nodes().iter().all(|n| match n {
        Node::Op1(o, _) => o.prim().is_some(),
        Node::Op2(o, _, _) => o.prim().is_some(),
        Node::Const(super::ir::Lit::I32(_)) => false,
        _ => true,
    }) && kernel.inputs().iter().all(|t| *t == DType::F32)
}
