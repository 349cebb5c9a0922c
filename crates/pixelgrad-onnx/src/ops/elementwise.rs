//! Elementwise operators and softmax. Broadcasting follows NumPy (the core binary ops
//! broadcast). A constant scalar operand becomes a scalar op parameter (`x * c` is one affine
//! op with `c` as a uniform, not a broadcast tensor).

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use crate::host::DType;
use crate::shapes::norm_axis;
use crate::Result;

/// The scalar value of a host input with one element whose rank does not exceed `other`'s.
fn host_scalar(v: &V, other_rank: usize) -> Option<f32> {
    match v.as_host() {
        Some(t) if t.numel() == 1 && t.rank() <= other_rank => t.to_f32().first().copied(),
        _ => None,
    }
}

/// `1 / c` is exact in f32 (and `x · (1 / c)` is `x / c`): `c` is a power of two whose
/// reciprocal is a normal number.
fn exact_reciprocal(c: f32) -> bool {
    c.is_normal() && c.to_bits() & 0x007f_ffff == 0 && (1.0 / c).is_normal()
}

/// The quotient of integer tensors `a / b` (whole numbers in f32), floored or truncated
/// toward zero. Exact for |a|, |b| < 2^24 (what integer tensors on the device hold): the f32
/// quotient of two such integers is never rounded onto a whole number it is not, since its
/// distance to the nearest one (at least 1/|b|) exceeds half an f32 step there. Division by
/// zero gives ±inf or NaN (onnxruntime's integer kernels leave it undefined).
fn int_quotient(a: &Tensor, b: &Tensor, floored: bool) -> Result<Tensor> {
    let q = a.div(b)?;
    if floored {
        return Ok(q.floor()?);
    }
    // trunc(q) = floor(q) for q > 0, -floor(-q) otherwise
    Ok(Tensor::select(&q.gt_scalar(0.0)?, &q.floor()?, &q.neg()?.floor()?.neg()?)?)
}

/// C's `fmod` of floats: `a - trunc(a / b) * b`, the remainder with the dividend's sign. When
/// `a / b` rounds across an integer, the remainder comes out with the wrong sign or as large as
/// `|b|`; one step of `|b|` toward the dividend's sign puts it back. What is left is the
/// rounding of `trunc(a / b) * b`: at most one ulp of `a`, so exact while the quotient stays
/// small, and about `|a / b| · 2^-24 · |b|` off for large ones. `b = 0` gives NaN, an infinite
/// `b` gives `a`, as `fmod` does.
fn float_fmod(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let q = int_quotient(a, b, false)?;
    let r = a.sub(&q.mul(b)?)?;
    let sign_a = a.gt_scalar(0.0)?.sub(&a.neg()?.gt_scalar(0.0)?)?;
    let abs_b = b.abs()?;
    let step = abs_b.mul(&sign_a)?;
    // r and a of opposite signs: the quotient was rounded past the true one
    let r = Tensor::select(&r.mul(a)?.neg()?.gt_scalar(0.0)?, &r.add(&step)?, &r)?;
    // |r| >= |b|: rounded short of it
    let over = abs_b.sub(&r.abs()?)?.gt_scalar(0.0)?.affine(-1.0, 1.0)?;
    let r = Tensor::select(&over, &r.sub(&step)?, &r)?;
    Ok(Tensor::select(&abs_b.gt_scalar(f32::MAX)?, a, &r)?)
}

/// `Add`, `Sub`, `Mul`, `Div`, `Pow`.
pub(super) fn arithmetic(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&[])?;
    let (a, b) = (cx.v(ins, 0)?, cx.v(ins, 1)?);
    if !a.dtype().is_float() && op == "Div" {
        // Integer division truncates toward zero.
        return out(int_quotient(&cx.to_dev(a, 0)?, &cx.to_dev(b, 1)?, false)?);
    }
    let (ra, rb) = (a.dims().len(), b.dims().len());
    // Division by a constant is a product only where its reciprocal is exact (a power
    // of two): `x · (1 / 6)` is not `x / 6` on about a third of all inputs, and a
    // quotient one step off can requantise to a different integer than onnxruntime's.
    // Otherwise it is the scalar quotient, still one elementwise op with no divisor to read.
    if let Some(c) = host_scalar(b, ra) {
        let x = cx.to_dev(a, 0)?;
        return out(match op {
            "Add" => x.add_scalar(c)?,
            "Sub" => x.add_scalar(-c)?,
            "Mul" => x.mul_scalar(c)?,
            "Div" if exact_reciprocal(c) => x.mul_scalar(1.0 / c)?,
            "Div" => x.div_scalar(c)?,
            _ if c == 1.0 => x,
            _ if c == 0.5 => x.sqrt()?,
            _ => x.powf(c)?,
        });
    }
    if let Some(c) = host_scalar(a, rb) {
        let y = cx.to_dev(b, 1)?;
        match op {
            "Add" => return out(y.add_scalar(c)?),
            "Sub" => return out(y.affine(-1.0, c)?),
            "Mul" => return out(y.mul_scalar(c)?),
            "Div" if c == 1.0 => return out(y.recip()?),
            _ => {}
        }
    }
    let (x, y) = (cx.to_dev(a, 0)?, cx.to_dev(b, 1)?);
    out(match op {
        "Add" => x.add(&y)?,
        "Sub" => x.sub(&y)?,
        "Mul" => x.mul(&y)?,
        "Div" => x.div(&y)?,
        _ => x.pow(&y)?,
    })
}

/// `Max`, `Min`, `Sum`, `Mean`.
pub(super) fn variadic(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let ts: Vec<Tensor> = (0..ins.len()).filter(|&i| cx.opt(ins, i).is_some()).map(|i| cx.t(ins, i)).collect::<Result<_>>()?;
    let mut acc = ts.first().cloned().ok_or_else(|| cx.err("needs at least one input"))?;
    for t in &ts[1..] {
        acc = match op {
            "Max" => acc.maximum(t)?,
            "Min" => acc.minimum(t)?,
            _ => acc.add(t)?,
        };
    }
    if op == "Mean" {
        acc = acc.mul_scalar(1.0 / ts.len() as f32)?;
    }
    out(acc)
}

/// `Equal`, `Less`, `Greater`, `LessOrEqual`, `GreaterOrEqual`.
pub(super) fn compare(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let bool_out = |t: Tensor| Ok(vec![V::dev(t, DType::Bool)]);
    let (a, b) = (cx.t(ins, 0)?, cx.t(ins, 1)?);
    bool_out(match op {
        "Equal" => a.eq(&b)?,
        "Greater" => a.gt(&b)?,
        "Less" => b.gt(&a)?,
        "GreaterOrEqual" => a.ge(&b)?,
        _ => b.ge(&a)?,
    })
}

/// `And`.
pub(super) fn and(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let bool_out = |t: Tensor| Ok(vec![V::dev(t, DType::Bool)]);
    bool_out(cx.t(ins, 0)?.mul(&cx.t(ins, 1)?)?)
}

/// `Or`.
pub(super) fn or(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let bool_out = |t: Tensor| Ok(vec![V::dev(t, DType::Bool)]);
    bool_out(cx.t(ins, 0)?.maximum(&cx.t(ins, 1)?)?)
}

/// `Not`.
pub(super) fn not(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let bool_out = |t: Tensor| Ok(vec![V::dev(t, DType::Bool)]);
    bool_out(cx.t(ins, 0)?.affine(-1.0, 1.0)?)
}

/// `Xor`.
pub(super) fn xor(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    // a != b on 0/1 values
    let bool_out = |t: Tensor| Ok(vec![V::dev(t, DType::Bool)]);
    bool_out(cx.t(ins, 0)?.sub(&cx.t(ins, 1)?)?.abs()?)
}

/// `IsNaN`.
pub(super) fn is_na_n(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let bool_out = |t: Tensor| Ok(vec![V::dev(t, DType::Bool)]);
    let x = cx.t(ins, 0)?;
    bool_out(x.eq(&x)?.affine(-1.0, 1.0)?)
}

/// `IsInf`.
pub(super) fn is_inf(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let bool_out = |t: Tensor| Ok(vec![V::dev(t, DType::Bool)]);
    node.only_attrs(&["detect_negative", "detect_positive"])?;
    let x = cx.t(ins, 0)?;
    let pos = x.gt_scalar(f32::MAX)?;
    let neg = x.neg()?.gt_scalar(f32::MAX)?;
    let zero = Tensor::zeros(x.device(), x.dims().to_vec())?;
    let p = if node.int("detect_positive", 1)? != 0 { pos } else { zero.clone() };
    let n = if node.int("detect_negative", 1)? != 0 { neg } else { zero };
    bool_out(p.maximum(&n)?)
}

/// `Where`.
pub(super) fn where_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let (c, a, b) = (cx.t(ins, 0)?, cx.t(ins, 1)?, cx.t(ins, 2)?);
    let dt = cx.v(ins, 1)?.dtype();
    Ok(vec![V::dev(Tensor::select(&c, &a, &b)?, dt)])
}

/// `Floor`, `Ceil`, `Round`.
pub(super) fn rounding(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let (x, dt) = (cx.t(ins, 0)?, cx.v(ins, 0)?.dtype());
    let y = match op {
        "Floor" => x.floor()?,
        // ceil(x) = -floor(-x), exact (negation is).
        "Ceil" => x.neg()?.floor()?.neg()?,
        _ => round_half_even(&x)?,
    };
    Ok(vec![V::dev(y, dt)])
}

/// `Sign`.
pub(super) fn sign(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    // (x > 0) - (x < 0), NaN kept (x == x fails only for NaN), as onnxruntime does
    let (x, dt) = (cx.t(ins, 0)?, cx.v(ins, 0)?.dtype());
    let s = x.gt_scalar(0.0)?.sub(&x.neg()?.gt_scalar(0.0)?)?;
    Ok(vec![V::dev(Tensor::select(&x.eq(&x)?, &s, &x)?, dt)])
}

/// `Mod`.
pub(super) fn mod_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["fmod"])?;
    let (a, b) = (cx.v(ins, 0)?, cx.v(ins, 1)?);
    if a.dtype().is_float() {
        if node.int("fmod", 0)? != 1 {
            return Err(cx.err("Mod of floats needs fmod = 1 (ONNX)"));
        }
        return out(float_fmod(&cx.to_dev(a, 0)?, &cx.to_dev(b, 1)?)?);
    }
    // fmod = 0: the remainder takes the divisor's sign (floored quotient); fmod = 1:
    // the dividend's (truncated quotient), as C's fmod.
    let floored = node.int("fmod", 0)? == 0;
    let (x, y) = (cx.to_dev(a, 0)?, cx.to_dev(b, 1)?);
    let q = int_quotient(&x, &y, floored)?;
    out(x.sub(&q.mul(&y)?)?)
}

/// `Softmax`, `LogSoftmax`.
pub(super) fn softmax(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axis"])?;
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let log = op == "LogSoftmax";
    if node.opset < 13 {
        // Before opset 13 the input is flattened to 2-D at `axis` and normalised over
        // the second dimension.
        let a = norm_axis(node, node.int("axis", 1)?, r)?;
        let outer: usize = x.dims()[..a].iter().product();
        let flat = x.reshape([outer, x.numel() / outer.max(1)])?;
        let y = if log { flat.log_softmax(1)? } else { flat.softmax(1)? };
        return out(y.reshape(x.shape().clone())?);
    }
    let a = norm_axis(node, node.int("axis", -1)?, r)? as isize;
    out(if log { x.log_softmax(a)? } else { x.softmax(a)? })
}

/// Activations and other one-input functions (`PRelu` and `Clip` read their other inputs too).
pub(super) fn unary(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let (node, op) = (cx.node, cx.node.op_type.as_str());
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    let y = match op {
        "Sqrt" => x.sqrt()?,
        "Neg" => x.neg()?,
        "Abs" => x.abs()?,
        "Exp" => x.exp()?,
        "Log" => x.log()?,
        "Reciprocal" => x.recip()?,
        "Sin" => x.sin()?,
        "Cos" => x.cos()?,
        "Tan" => x.sin()?.div(&x.cos()?)?,
        "Atan" => atan(&x)?,
        "Asin" => asin(&x)?,
        // acos(x) = pi/2 - asin(x)
        "Acos" => asin(&x)?.affine(-1.0, std::f32::consts::FRAC_PI_2)?,
        "Sinh" => sinh(&x)?,
        // (e^x + e^-x) / 2
        "Cosh" => x.exp()?.add(&x.neg()?.exp()?)?.mul_scalar(0.5)?,
        // sign(x) * log(|x| + sqrt(x^2 + 1)), on |x| so large negative values do not cancel
        "Asinh" => {
            let ax = x.abs()?;
            let m = ax.add(&ax.square()?.add_scalar(1.0)?.sqrt()?)?.log()?;
            Tensor::select(&x.gt_scalar(0.0)?, &m, &m.neg()?)?
        }
        // log(x + sqrt(x^2 - 1)); NaN below 1
        "Acosh" => x.add(&x.square()?.add_scalar(-1.0)?.sqrt()?)?.log()?,
        // log((1 + x) / (1 - x)) / 2; ±inf at ±1, NaN outside
        "Atanh" => x.add_scalar(1.0)?.div(&x.affine(-1.0, 1.0)?)?.log()?.mul_scalar(0.5)?,
        "Tanh" => x.tanh()?,
        "Sigmoid" => x.sigmoid()?,
        "Relu" => x.relu()?,
        "LeakyRelu" => {
            node.only_attrs(&["alpha"])?;
            x.leaky_relu(node.float("alpha", 0.01)?)?
        }
        "PRelu" => {
            let slope = cx.t(ins, 1)?;
            x.relu()?.add(&x.min_scalar(0.0)?.mul(&slope)?)?
        }
        "Elu" => {
            let a = node.float("alpha", 1.0)?;
            x.relu()?.add(&x.min_scalar(0.0)?.exp()?.affine(a, -a)?)?
        }
        "Selu" => {
            let a = node.float("alpha", 1.673_263_2)?;
            let g = node.float("gamma", 1.050_701)?;
            x.relu()?.add(&x.min_scalar(0.0)?.exp()?.affine(a, -a)?)?.mul_scalar(g)?
        }
        "Celu" => {
            let a = node.float("alpha", 1.0)?;
            x.relu()?.add(&x.min_scalar(0.0)?.mul_scalar(1.0 / a)?.exp()?.affine(a, -a)?)?
        }
        "Clip" => clip(cx, ins, &x)?,
        "HardSigmoid" => {
            node.only_attrs(&["alpha", "beta"])?;
            let (a, b) = (node.float("alpha", 0.2)?, node.float("beta", 0.5)?);
            x.affine(a, b)?.max_scalar(0.0)?.min_scalar(1.0)?
        }
        "HardSwish" => x.mul(&x.affine(1.0 / 6.0, 0.5)?.max_scalar(0.0)?.min_scalar(1.0)?)?,
        "Softplus" => softplus(&x)?,
        "Softsign" => x.div(&x.abs()?.add_scalar(1.0)?)?,
        "Erf" => erf(&x)?,
        "Gelu" => match node.string("approximate", "none")?.as_str() {
            "tanh" => x.gelu()?,
            "none" => gelu_erf(&x)?,
            other => return Err(cx.err(format!("approximate '{other}' is not supported"))),
        },
        "ThresholdedRelu" => {
            node.only_attrs(&["alpha"])?;
            let zero = Tensor::scalar(x.device(), 0.0)?;
            Tensor::select(&x.gt_scalar(node.float("alpha", 1.0)?)?, &x, &zero)?
        }
        "Shrink" => {
            // x + bias below -lambd, x - bias above lambd, 0 between
            node.only_attrs(&["bias", "lambd"])?;
            let (bias, lambd) = (node.float("bias", 0.0)?, node.float("lambd", 0.5)?);
            let zero = Tensor::scalar(x.device(), 0.0)?;
            let hi = Tensor::select(&x.gt_scalar(lambd)?, &x.add_scalar(-bias)?, &zero)?;
            Tensor::select(&x.neg()?.gt_scalar(lambd)?, &x.add_scalar(bias)?, &hi)?
        }
        "Mish" => x.mul(&softplus(&x)?.tanh()?)?,
        _ => return Err(cx.unsupported()),
    };
    Ok(vec![V::dev(y, dt)])
}

/// `sinh(x)`: `(e^x - e^-x) / 2`, and its Taylor series `x + x^3/6 + x^5/120` below
/// `|x| < 0.1`, where the difference of exponentials loses the value's leading digits.
fn sinh(x: &Tensor) -> Result<Tensor> {
    let wide = x.exp()?.sub(&x.neg()?.exp()?)?.mul_scalar(0.5)?;
    let x2 = x.square()?;
    let small = x.mul(&x2.mul(&x2.affine(1.0 / 120.0, 1.0 / 6.0)?)?.add_scalar(1.0)?)?;
    Ok(Tensor::select(&x.abs()?.gt_scalar(0.1)?, &wide, &small)?)
}

/// `atan(x)` to f32 accuracy from the primitives: reflected into `|x| <= 1`
/// (`atan(x) = pi/2 - atan(1/x)` above), halved (`atan(t) = 2 atan(t / (1 + sqrt(1 + t^2)))`,
/// so `|t| <= tan(pi/8)`), then the odd Taylor series to `t^15` (error below 2e-8).
fn atan(x: &Tensor) -> Result<Tensor> {
    let ax = x.abs()?;
    let big = ax.gt_scalar(1.0)?;
    // 1 / |x| where |x| > 1 (|x| itself elsewhere, so no division by zero is selected)
    let r = Tensor::select(&big, &ax.recip()?, &ax)?;
    let t = r.div(&r.square()?.add_scalar(1.0)?.sqrt()?.add_scalar(1.0)?)?;
    let t2 = t.square()?;
    let mut poly = t2.mul_scalar(-1.0 / 15.0)?;
    for k in (1..7).rev() {
        let c = if k % 2 == 0 { 1.0 } else { -1.0 } / (2 * k + 1) as f32;
        poly = poly.add_scalar(c)?.mul(&t2)?;
    }
    let a = t.mul(&poly.add_scalar(1.0)?)?.mul_scalar(2.0)?;
    let a = Tensor::select(&big, &a.affine(-1.0, std::f32::consts::FRAC_PI_2)?, &a)?;
    // odd: the sign of x (NaN stays NaN through the arithmetic above)
    Ok(Tensor::select(&x.neg()?.gt_scalar(0.0)?, &a.neg()?, &a)?)
}

/// `asin(x) = 2 atan(x / (1 + sqrt(1 - x^2)))`: the argument stays in `[-1, 1]` (no division
/// by zero at `|x| = 1`); NaN outside `[-1, 1]` through the square root.
fn asin(x: &Tensor) -> Result<Tensor> {
    let d = x.square()?.affine(-1.0, 1.0)?.sqrt()?.add_scalar(1.0)?;
    Ok(atan(&x.div(&d)?)?.mul_scalar(2.0)?)
}

/// The exact GELU, `x (erf(x / sqrt 2) / 2 + 1 / 2)` (ONNX `Gelu` and onnxruntime's
/// `Gelu` and `BiasGelu`).
pub(super) fn gelu_erf(x: &Tensor) -> Result<Tensor> {
    x.mul(&erf(&x.mul_scalar(std::f32::consts::FRAC_1_SQRT_2)?)?.affine(0.5, 0.5)?).map_err(Into::into)
}

/// `log(1 + exp(x))` without overflow: `relu(x) + log(1 + exp(-|x|))`.
fn softplus(x: &Tensor) -> Result<Tensor> {
    Ok(x.relu()?.add(&x.abs()?.neg()?.exp()?.add_scalar(1.0)?.log()?)?)
}

/// `erf` by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7):
/// `erf(|x|) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-x^2)`, `t = 1 / (1 + p |x|)`,
/// odd in `x`.
fn erf(x: &Tensor) -> Result<Tensor> {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [0.254_829_6, -0.284_496_74, 1.421_413_7, -1.453_152_1, 1.061_405_4];
    let ax = x.abs()?;
    let t = ax.affine(P, 1.0)?.recip()?;
    let mut poly = t.mul_scalar(A[4])?;
    for &a in A[..4].iter().rev() {
        poly = poly.add_scalar(a)?.mul(&t)?;
    }
    let e = poly.mul(&x.square()?.neg()?.exp()?)?.affine(-1.0, 1.0)?;
    // sign(x): 1 for x > 0, -1 for x < 0
    let sign = x.gt_scalar(0.0)?.affine(2.0, -1.0)?;
    let far = e.mul(&sign)?;
    // Below 0.5 the formula above is off by up to ~2e-7 absolute, which near 0 is no relative
    // accuracy at all (erf(0) came out as 1.8e-7). Maclaurin's series there: odd, so erf(0) = 0
    // exactly, and within 2e-8 relative at 0.5.
    const T: [f32; 5] = [-1.0 / 3.0, 1.0 / 10.0, -1.0 / 42.0, 1.0 / 216.0, -1.0 / 1320.0];
    let z = x.square()?;
    let mut series = z.mul_scalar(T[4])?;
    for &c in T[..4].iter().rev() {
        series = series.add_scalar(c)?.mul(&z)?;
    }
    let near = series.add_scalar(1.0)?.mul(x)?.mul_scalar(std::f32::consts::FRAC_2_SQRT_PI)?;
    Ok(Tensor::select(&ax.affine(-1.0, 0.5)?.gt_scalar(0.0)?, &near, &far)?)
}

fn clip(cx: &Cx, ins: &[Option<V>], x: &Tensor) -> Result<Tensor> {
    let node = cx.node;
    if node.opset < 11 {
        let lo = node.float("min", f32::NEG_INFINITY)?;
        let hi = node.float("max", f32::INFINITY)?;
        let mut y = x.clone();
        if lo > f32::NEG_INFINITY {
            y = y.max_scalar(lo)?;
        }
        if hi < f32::INFINITY {
            y = y.min_scalar(hi)?;
        }
        return Ok(y);
    }
    let mut y = x.clone();
    for (i, is_min) in [(1usize, true), (2, false)] {
        let Some(v) = cx.opt(ins, i) else { continue };
        match v.as_host() {
            Some(t) if t.numel() == 1 => {
                let c = t.to_f32()[0];
                y = if is_min { y.max_scalar(c)? } else { y.min_scalar(c)? };
            }
            _ => {
                let c = cx.to_dev(v, i)?;
                y = if is_min { y.maximum(&c)? } else { y.minimum(&c)? };
            }
        }
    }
    Ok(y)
}

/// Rounds toward zero (a float → integer `Cast`): `floor` for x ≥ 0, `-floor(-x)` below,
/// exact. Values outside the target integer type's range are not wrapped or saturated (ONNX
/// leaves them undefined).
pub fn trunc(x: &Tensor) -> Result<Tensor> {
    let neg = x.neg()?.gt_scalar(0.0)?;
    Ok(Tensor::select(&neg, &x.neg()?.floor()?.neg()?, &x.floor()?)?)
}

/// ONNX `Round`: to the nearest integer, halves to the even one (IEEE roundTiesToEven, what
/// onnxruntime computes). One elementwise primitive, [`Tensor::round_even`], exact on every
/// backend: ±0, ±inf, NaN and `|x| >= 2^23` (already whole) pass through.
pub(crate) fn round_half_even(x: &Tensor) -> pixelgrad_core::Result<Tensor> {
    x.round_even()
}
