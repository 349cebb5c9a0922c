//! Quantised operators: `QuantizeLinear`, `DequantizeLinear`, `DynamicQuantizeLinear`, the
//! integer products `QLinearConv`, `QLinearMatMul`, `MatMulInteger`, `ConvInteger` and
//! com.microsoft's `QGemm`, `QLinearAdd`, `QLinearMul`, `QLinearConcat`,
//! `QLinearGlobalAveragePool`, `QLinearAveragePool`, `QLinearSigmoid`, `QLinearLeakyRelu` and
//! `QLinearSoftmax` (the last five: dequantised, computed in float, quantised again, which is
//! what onnxruntime's kernels and lookup tables compute; `QLinearAdd` and `QLinearMul` follow
//! onnxruntime's kernels' exact `f32` arithmetic, see [`super::qbinary`]).
//!
//! Quantised `uint8` / `int8` results are stored as 8-bit tensors where the backend has 8-bit
//! storage ([`Tensor::narrow8`], which rounds and saturates in the same pass): activations
//! between integer layers take a quarter of the memory of f32. Consumers widen them back
//! exactly when they read them ([`super::Cx::t`]). Elsewhere (WebGL1) and for `int32` values
//! they are integer-valued `f32`; the value's ONNX type travels with it either way. The integer products subtract the zero points, multiply
//! and accumulate exactly (every partial sum of 8-bit products stays far below 2^24, where `f32`
//! stops holding every integer), add the `int32` bias and requantise as onnxruntime does:
//! `saturate(round_half_even(acc · (x_scale · w_scale / y_scale)) + y_zero_point)`, the
//! multiplier computed in `f32` on the host in that order. Quantised graphs in the QDQ format
//! (`DequantizeLinear → Conv/MatMul/Gemm → QuantizeLinear`) are rewritten into these integer
//! operators when the model loads (`Model::fuse_qdq`), so they compute what onnxruntime's
//! fused kernels compute instead of a float product rounded afterwards.

use pixelgrad_core::Tensor;

use super::context::{upload, Cx, V};
use super::{conv, elementwise::round_half_even, linalg, pool, qbinary};
use crate::host::DType;
use crate::shapes::norm_axis;
use crate::Result;

/// The saturation range of an 8-bit (or 32-bit) integer type.
fn range(dt: DType) -> Option<(f32, f32)> {
    match dt {
        DType::U8 => Some((0.0, 255.0)),
        DType::I8 => Some((-128.0, 127.0)),
        _ => None,
    }
}

/// `QuantizeLinear`.
pub(super) fn quantize_linear(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axis", "saturate"])?;
    let x = cx.t(ins, 0)?;
    let dt = zero_point_type(cx, ins, 2)?;
    let axis = node.int("axis", 1)?;
    let s = param(cx, ins, 1, x.rank(), axis)?.ok_or_else(|| cx.err("y_scale is missing"))?;
    let z = param(cx, ins, 2, x.rank(), axis)?;
    one(quantize(cx, &x, &s, z.as_ref(), dt)?, dt)
}

/// `DequantizeLinear`.
pub(super) fn dequantize_linear(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axis"])?;
    let x = cx.t(ins, 0)?;
    let axis = node.int("axis", 1)?;
    let s = param(cx, ins, 1, x.rank(), axis)?.ok_or_else(|| cx.err("x_scale is missing"))?;
    let z = param(cx, ins, 2, x.rank(), axis)?;
    one(dequantize(&x, &s, z.as_ref())?, DType::F32)
}

/// `DynamicQuantizeLinear`.
pub(super) fn dynamic_quantize_linear(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&[])?;
    let (y, scale, z) = dynamic_quantize(cx, &cx.t(ins, 0)?)?;
    Ok(vec![V::dev(y, DType::U8), V::dev(scale, DType::F32), V::dev(z, DType::U8)])
}

/// `x` quantised per tensor to `uint8` as `DynamicQuantizeLinear` does: scale
/// `(max(0, max x) - min(0, min x)) / 255`, zero point `saturate(round(-min / scale))`.
/// Returns the quantised values, the scale and the zero point (both `[]`).
fn dynamic_quantize(cx: &Cx, x: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let flat = x.reshape([x.numel()])?;
    let hi = flat.max_axis(0, false)?.max_scalar(0.0)?;
    let lo = flat.min_axis(0, false)?.min_scalar(0.0)?;
    let scale = hi.sub(&lo)?.mul_scalar(1.0 / 255.0)?;
    let z = round_half_even(&lo.neg()?.div(&scale)?)?.max_scalar(0.0)?.min_scalar(255.0)?;
    let ones = vec![1usize; x.rank()];
    let y = quantize(cx, x, &scale.reshape(ones.clone())?, Some(&z.reshape(ones)?), DType::U8)?;
    Ok((y, scale, z))
}

/// `com.microsoft` `DynamicQuantizeMatMul`: `A` (f32) quantised per tensor to `uint8` at run
/// time as [`dynamic_quantize_linear`] does, its integer product with `B` (`int8` / `uint8`
/// `[K, N]`, zero point per tensor or per column) accumulated exactly, scaled by
/// `a_scale · b_scale` (per tensor or per column), plus the optional f32 `bias [N]`.
pub(super) fn dynamic_quantize_mat_mul(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    cx.node.only_attrs(&[])?;
    let dt = cx.dtype0(ins);
    if dt != DType::F32 {
        return Err(cx.err(format!("input A is {dt}; DynamicQuantizeMatMul takes float")));
    }
    let (q, a_scale, a_zero) = dynamic_quantize(cx, &cx.t(ins, 0)?)?;
    let rank = q.rank();
    let a = q.widen()?.sub(&a_zero.reshape(vec![1usize; rank])?)?;
    let b = centred(cx, ins, 1, 3, -1)?;
    if b.rank() != 2 {
        return Err(cx.err(format!("input B has shape {:?}; expected a [K, N] matrix", b.dims())));
    }
    let n = b.dims()[1];
    let acc = linalg::matmul(cx, &a, &b)?;
    let bs = param(cx, ins, 2, 1, 0)?.ok_or_else(|| cx.err("b_scale is missing"))?;
    if bs.numel() != 1 && bs.numel() != n {
        return Err(cx.err(format!("b_scale has {} values; expected 1 or N = {n}", bs.numel())));
    }
    let mut y = acc.mul(&bs.mul(&a_scale.reshape([1])?)?)?;
    if cx.opt(ins, 4).is_some() {
        let bias = cx.t(ins, 4)?;
        if bias.dims() != [n] {
            return Err(cx.err(format!("bias (input 4) has shape {:?}; expected [N] = [{n}]", bias.dims())));
        }
        y = y.add(&bias)?;
    }
    Ok(vec![V::dev(y, DType::F32)])
}

/// `QLinearConv`.
pub(super) fn q_linear_conv(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"])?;
    let dt = cx.v(ins, 7).map(|v| v.dtype()).unwrap_or(DType::U8);
    let bias = match cx.opt(ins, 8) {
        Some(_) => Some(int32_bias(cx, ins, 8)?),
        None => None,
    };
    let acc = match int8_conv(cx, ins, 0, 2, 3, 5)? {
        Some(acc) => match &bias {
            Some(b) => acc.add(&b.reshape([1, b.numel(), 1, 1])?)?,
            None => acc,
        },
        None => {
            let (x, w) = (centred(cx, ins, 0, 2, 1)?, centred(cx, ins, 3, 5, 0)?);
            conv::conv_tensors(cx, x, w, bias.as_ref())?
        }
    };
    let m = multiplier(cx, ins, [1, 4, 6], acc.rank(), 1, 1.0)?;
    one(requantize(cx, &acc, &m, ins, 7, 1, dt)?, dt)
}

/// `ConvInteger`.
pub(super) fn conv_integer(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"])?;
    if let Some(acc) = int8_conv(cx, ins, 0, 2, 1, 3)? {
        return one(acc, DType::I32);
    }
    let (x, w) = (centred(cx, ins, 0, 2, 1)?, centred(cx, ins, 1, 3, 0)?);
    one(conv::conv_tensors(cx, x, w, None)?, DType::I32)
}

/// `QLinearMatMul`.
pub(super) fn q_linear_mat_mul(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&[])?;
    let dt = cx.v(ins, 7).map(|v| v.dtype()).unwrap_or(DType::U8);
    let acc = match int8_matmul(cx, ins, 0, 2, 3, 5, false)? {
        Some(acc) => acc,
        None => linalg::matmul(cx, &centred(cx, ins, 0, 2, -2)?, &centred(cx, ins, 3, 5, -1)?)?,
    };
    let m = multiplier(cx, ins, [1, 4, 6], acc.rank(), -1, 1.0)?;
    one(requantize(cx, &acc, &m, ins, 7, -1, dt)?, dt)
}

/// `MatMulInteger`.
pub(super) fn mat_mul_integer(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&[])?;
    if let Some(acc) = int8_matmul(cx, ins, 0, 2, 1, 3, false)? {
        return one(acc, DType::I32);
    }
    let (a, b) = (centred(cx, ins, 0, 2, -2)?, centred(cx, ins, 1, 3, -1)?);
    one(linalg::matmul(cx, &a, &b)?, DType::I32)
}

/// `QGemm`.
pub(super) fn q_gemm(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["alpha", "transA", "transB"])?;
    let (ta, tb) = (node.int("transA", 0)? != 0, node.int("transB", 0)? != 0);
    let alpha = node.float("alpha", 1.0)?;
    let native = if ta { None } else { int8_matmul(cx, ins, 0, 2, 3, 5, tb)? };
    let mut acc = match native {
        Some(acc) => acc,
        None => {
            let a = centred(cx, ins, 0, 2, if ta { -1 } else { -2 })?;
            let b = centred(cx, ins, 3, 5, if tb { -2 } else { -1 })?;
            if a.rank() != 2 || b.rank() != 2 {
                return Err(cx.err(format!("expects rank-2 A and B, got {:?} and {:?}", a.dims(), b.dims())));
            }
            a.matmul_t(&b, ta, tb)?
        }
    };
    if cx.opt(ins, 6).is_some() {
        acc = acc.add(&int32_bias(cx, ins, 6)?)?;
    }
    if cx.opt(ins, 7).is_none() {
        // No output scale: the float result alpha · a_scale · b_scale · acc.
        let m = multiplier(cx, ins, [1, 4, usize::MAX], 2, -1, alpha)?;
        return one(acc.mul(&m)?, DType::F32);
    }
    let dt = cx.v(ins, 8).map(|v| v.dtype()).unwrap_or(DType::U8);
    let m = multiplier(cx, ins, [1, 4, 7], 2, -1, alpha)?;
    one(requantize(cx, &acc, &m, ins, 8, -1, dt)?, dt)
}

/// `QLinearAdd`, `QLinearMul`.
pub(super) fn qlinear_binary(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&[])?;
    // C has A's type (T); C_zero_point, when given, says it too.
    let dt = cx.v(ins, 7).or_else(|_| cx.v(ins, 0)).map(|v| v.dtype()).unwrap_or(DType::U8);
    // onnxruntime's own arithmetic, by table (constant scalar scales: always, in
    // models its quantiser writes); otherwise the float formula below.
    if let Some(q) = qbinary::run(cx, ins, op == "QLinearMul", dt)? {
        return one(saturate(cx, &q, dt)?, dt);
    }
    let a = dequantize_input(cx, ins, 0, 1, 2)?;
    let b = dequantize_input(cx, ins, 3, 4, 5)?;
    let y = if op == "QLinearAdd" { a.add(&b)? } else { a.mul(&b)? };
    one(quantize_output(cx, ins, &y, 6, 7, dt)?, dt)
}

/// `QLinearConcat`.
pub(super) fn q_linear_concat(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axis"])?;
    let n = ins.len().saturating_sub(2);
    if n == 0 || !n.is_multiple_of(3) {
        return Err(cx.err(format!("expects Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got {} inputs", ins.len())));
    }
    let parts = (0..n / 3).map(|k| dequantize_input(cx, ins, 2 + 3 * k, 3 + 3 * k, 4 + 3 * k)).collect::<Result<Vec<_>>>()?;
    let axis = norm_axis(node, node.int("axis", 0)?, parts[0].rank())?;
    let refs: Vec<&Tensor> = parts.iter().collect();
    let y = Tensor::concat(&refs, axis)?;
    let dt = cx.v(ins, 1).map(|v| v.dtype()).unwrap_or(DType::U8);
    one(quantize_output(cx, ins, &y, 0, 1, dt)?, dt)
}

/// `QLinearGlobalAveragePool`.
pub(super) fn q_linear_global_average_pool(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["channels_last"])?;
    let x = dequantize_input(cx, ins, 0, 1, 2)?;
    if x.rank() < 3 {
        return Err(cx.err(format!("expects [N, C, spatial...], got {:?}", x.dims())));
    }
    let d = x.dims().to_vec();
    let r = d.len();
    let y = if node.int("channels_last", 0)? != 0 {
        // [N, spatial..., C] → mean over the spatial axes, keeping them as ones
        let hw: usize = d[1..r - 1].iter().product();
        let mut out = vec![d[0]];
        out.extend(std::iter::repeat_n(1, r - 2));
        out.push(d[r - 1]);
        x.reshape([d[0], hw, d[r - 1]])?.mean_axis(1, true)?.reshape(out)?
    } else {
        let hw: usize = d[2..].iter().product();
        let mut out = vec![d[0], d[1]];
        out.extend(std::iter::repeat_n(1, r - 2));
        x.reshape([d[0], d[1], hw])?.mean_axis(2, true)?.reshape(out)?
    };
    let dt = cx.v(ins, 4).map(|v| v.dtype()).unwrap_or(DType::U8);
    one(quantize_output(cx, ins, &y, 3, 4, dt)?, dt)
}

/// `QLinearAveragePool`.
pub(super) fn q_linear_average_pool(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    // x, x_scale, x_zero_point, y_scale, y_zero_point; AveragePool's attributes
    let x = dequantize_input(cx, ins, 0, 1, 2)?;
    let last = node.int("channels_last", 0)? != 0;
    let r = x.rank();
    // channels last: [N, spatial..., C] -> [N, C, spatial...] and back
    let to_first: Vec<usize> = [0, r - 1].into_iter().chain(1..r - 1).collect();
    let to_last: Vec<usize> = [0].into_iter().chain(2..r).chain([1]).collect();
    let x = if last && r >= 3 { x.permute(&to_first)? } else { x };
    let mut pool = node.clone();
    pool.op_type = "AveragePool".into();
    pool.domain.clear();
    pool.attrs.remove("channels_last");
    let cx2 = Cx { consts: cx.consts, node: &pool };
    let y = match pool::average_pool(&cx2, &[Some(V::dev(x, DType::F32))])?.into_iter().next() {
        Some(V::Dev { t, .. }) => t,
        _ => return Err(cx.err("the pooling gave no device result")),
    };
    let y = if last && r >= 3 { y.permute(&to_last)? } else { y };
    let dt = cx.v(ins, 4).map(|v| v.dtype()).unwrap_or(DType::U8);
    one(quantize_output(cx, ins, &y, 3, 4, dt)?, dt)
}

/// `QLinearSigmoid`, `QLinearLeakyRelu`.
pub(super) fn qlinear_activation(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["alpha"])?;
    let x = dequantize_input(cx, ins, 0, 1, 2)?;
    let y = if op == "QLinearSigmoid" { x.sigmoid()? } else { x.leaky_relu(node.float("alpha", 0.01)?)? };
    let dt = cx.v(ins, 4).map(|v| v.dtype()).unwrap_or(DType::U8);
    one(quantize_output(cx, ins, &y, 3, 4, dt)?, dt)
}

/// `QLinearSoftmax`.
pub(super) fn q_linear_softmax(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dt: DType| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axis", "opset"])?;
    let x = dequantize_input(cx, ins, 0, 1, 2)?;
    let r = x.rank();
    let y = if node.int("opset", 13)? < 13 {
        let a = norm_axis(node, node.int("axis", 1)?, r)?;
        let outer: usize = x.dims()[..a].iter().product();
        x.reshape([outer, x.numel() / outer.max(1)])?.softmax(1)?.reshape(x.shape().clone())?
    } else {
        x.softmax(norm_axis(node, node.int("axis", -1)?, r)? as isize)?
    };
    let dt = cx.v(ins, 4).map(|v| v.dtype()).unwrap_or(DType::U8);
    one(softmax_output(cx, ins, &y, dt)?, dt)
}

/// Zero points of constant 8-bit weights input `z` as a device vector, or `None` when they are
/// absent or all zero.
fn weight_zero_points(cx: &Cx, ins: &[Option<V>], z: usize) -> Result<Option<Tensor>> {
    match cx.opt(ins, z) {
        None => Ok(None),
        Some(v) => match v.as_host() {
            Some(h) if h.to_f64().iter().all(|&x| x == 0.0) => Ok(None),
            _ => {
                let t = cx.t(ins, z)?;
                Ok(Some(t.reshape([t.numel()])?))
            }
        },
    }
}

/// The 8-bit weights of input `w` when it is a constant and the device stores 8-bit values,
/// as a `[rows, cols]` matrix (transposed first when `transpose`).
fn int8_weights(cx: &Cx, ins: &[Option<V>], w: usize, transpose: bool) -> Result<Option<(Tensor, Vec<usize>)>> {
    let Some(V::Host { t, name: Some(name) }) = cx.opt(ins, w) else { return Ok(None) };
    Ok(cx.consts.cached_int8(name, t, transpose)?.map(|w8| (w8, t.shape.clone())))
}

/// What feeds [`Tensor::matmul_i8_packed`] instead of the centred activations `x - zx`, when
/// their range is known by construction: quantised `uint8` `x` in `[0, 255]` shifted to
/// `x - 128`, `int8` `x` as it is, both in `[-128, 127]`. `delta = zx - s` (`s` = 128 or 0),
/// shaped `[1; rank]`, turns the centred values into those (`(x - zx) + delta = x - s`; also
/// in `[-128, 127]`, so padding of the centred input, zeros, stays in range too), and
/// `Σ_k w·(x - zx) = Σ_k w·(x - s) - delta·Σ_k w` with `sums` the weight matrix's row sums,
/// precomputed once per weight. `None` keeps the unshifted `matmul_i8`: per-axis activation
/// zero points, weights other than a cached 8-bit matrix, or weights whose `Σ|w|` could let
/// the shifted accumulator pass 2^24, where f32 stops holding every integer (below it the
/// corrected result is the unshifted one, bit for bit).
fn packed_shift(
    cx: &Cx,
    ins: &[Option<V>],
    x: usize,
    xz: usize,
    w: usize,
    transpose: bool,
    rank: usize,
) -> Result<Option<(Tensor, Tensor)>> {
    let s = match cx.v(ins, x)?.dtype() {
        DType::U8 => 128.0,
        DType::I8 => 0.0,
        _ => return Ok(None),
    };
    let Some(V::Host { t, name: Some(name) }) = cx.opt(ins, w) else { return Ok(None) };
    let Some((sums, most)) = cx.consts.cached_int8_row_sums(name, t, transpose)? else { return Ok(None) };
    // |x - s| <= 128 and |delta| <= 255: both products' partial sums stay exact in f32.
    if most.saturating_mul(255) >= 1 << 24 {
        return Ok(None);
    }
    let ones = vec![1usize; rank];
    let delta = match cx.opt(ins, xz) {
        None => Tensor::from_vec(cx.dev(), &[-s], ones)?,
        Some(v) => match v.as_host() {
            Some(h) if h.numel() == 1 => Tensor::from_vec(cx.dev(), &[h.to_f32()[0] - s], ones)?,
            Some(_) => return Ok(None),
            None => {
                let z = cx.t(ins, xz)?;
                if z.numel() != 1 {
                    return Ok(None);
                }
                z.reshape(ones)?.add_scalar(-s)?
            }
        },
    };
    Ok(Some((delta, sums)))
}

/// `QLinearConv` / `ConvInteger`'s accumulator on 8-bit weights (`None`: the f32 path).
fn int8_conv(cx: &Cx, ins: &[Option<V>], x: usize, xz: usize, w: usize, wz: usize) -> Result<Option<Tensor>> {
    let Some((w8, wdims)) = int8_weights(cx, ins, w, false)? else { return Ok(None) };
    let xc = centred(cx, ins, x, xz, 1)?;
    let shift = packed_shift(cx, ins, x, xz, w, false, 4)?;
    let shift = shift.as_ref().map(|(d, s)| (d, s));
    conv::conv_i8(cx, &xc, &w8, &wdims, weight_zero_points(cx, ins, wz)?.as_ref(), shift)
}

/// `A · B` accumulated in `int32` with `B` constant 8-bit weights `[K, N]` (`[N, K]` when
/// `trans_b`) and `A` `[.., M, K]`, computed as `(B^T · A^T)^T` on [`Tensor::matmul_i8`]
/// (`None`: the f32 path).
fn int8_matmul(cx: &Cx, ins: &[Option<V>], a: usize, az: usize, b: usize, bz: usize, trans_b: bool) -> Result<Option<Tensor>> {
    let Some(bv) = cx.opt(ins, b) else { return Ok(None) };
    if bv.dims().len() != 2 {
        return Ok(None);
    }
    let Some((bt, _)) = int8_weights(cx, ins, b, !trans_b)? else { return Ok(None) };
    let ac = centred(cx, ins, a, az, -2)?;
    let r = ac.rank();
    if !(2..=3).contains(&r) || ac.dims()[r - 1] != bt.dims()[1] {
        return Ok(None);
    }
    let perm: Vec<usize> = if r == 2 { vec![1, 0] } else { vec![0, 2, 1] };
    let at = ac.permute(&perm)?; // [.., K, M]
    let mut acc = match packed_shift(cx, ins, a, az, b, !trans_b, r)? {
        Some((delta, sums)) => {
            // Σ_k w·(a - za) = Σ_k w·(a - s) - delta·Σ_k w, with a - s = (a - za) + delta.
            let acc = bt.matmul_i8_packed(&at.add(&delta)?)?; // [.., N, M]
            let mut sd = vec![1usize; r];
            sd[r - 2] = sums.numel();
            acc.sub(&sums.reshape(sd)?.mul(&delta)?)?
        }
        None => bt.matmul_i8(&at)?, // [.., N, M]
    };
    if let Some(z) = weight_zero_points(cx, ins, bz)? {
        // Σ_k a[m,k]·(b[k,n] - z[n]) = Σ_k a·b - z[n]·Σ_k a[m,k]
        let rows = ac.sum_axis(-1, true)?.permute(&perm)?; // [.., 1, M]
        let mut zs = vec![1usize; r];
        zs[r - 2] = z.numel();
        acc = acc.sub(&rows.mul(&z.reshape(zs)?)?)?;
    }
    Ok(Some(acc.permute(&perm)?))
}

/// The element type a quantiser writes: its zero point's (`uint8` when there is none).
fn zero_point_type(cx: &Cx, ins: &[Option<V>], i: usize) -> Result<DType> {
    let dt = cx.opt(ins, i).map(|v| v.dtype()).unwrap_or(DType::U8);
    if range(dt).is_none() {
        return Err(cx.err(format!("quantising to {dt} is not supported (uint8 and int8 are)")));
    }
    Ok(dt)
}

/// Scale or zero point input `i` shaped to broadcast against a rank-`rank` tensor: a scalar
/// (one element) everywhere, a vector along `axis`. `None` when the input is absent.
fn param(cx: &Cx, ins: &[Option<V>], i: usize, rank: usize, axis: i64) -> Result<Option<Tensor>> {
    if cx.opt(ins, i).is_none() {
        return Ok(None);
    }
    let t = cx.t(ins, i)?;
    if t.numel() == 1 {
        return Ok(Some(t.reshape(vec![1usize; rank.max(1)])?));
    }
    if t.rank() != 1 {
        return Err(cx.err(format!("input {i}: per-axis scales and zero points must be 1-D, got {:?}", t.dims())));
    }
    let a = norm_axis(cx.node, axis, rank)?;
    let mut shape = vec![1usize; rank];
    shape[a] = t.numel();
    Ok(Some(t.reshape(shape)?))
}

/// `saturate(round_half_even(x / s) + z)` for an 8-bit type.
fn quantize(cx: &Cx, x: &Tensor, s: &Tensor, z: Option<&Tensor>, dt: DType) -> pixelgrad_core::Result<Tensor> {
    let mut q = round_half_even(&x.div(s)?)?;
    if let Some(z) = z {
        q = q.add(z)?;
    }
    saturate(cx, &q, dt)
}

/// Whole numbers `q` saturated to the 8-bit type `dt`: into 8-bit storage where the session
/// keeps them so ([`Tensor::narrow8`] saturates as it stores), otherwise clamped in f32.
fn saturate(cx: &Cx, q: &Tensor, dt: DType) -> pixelgrad_core::Result<Tensor> {
    let (lo, hi) = range(dt).unwrap_or((0.0, 255.0));
    if cx.consts.int8_activations() {
        return q.narrow8(dt == DType::I8);
    }
    q.max_scalar(lo)?.min_scalar(hi)
}

/// `(q - z) · s`.
fn dequantize(q: &Tensor, s: &Tensor, z: Option<&Tensor>) -> pixelgrad_core::Result<Tensor> {
    match z {
        Some(z) => q.sub(z)?.mul(s),
        None => q.mul(s),
    }
}

/// Quantised input `x` minus its zero point `z` (per-axis along `axis` when a vector); exact.
fn centred(cx: &Cx, ins: &[Option<V>], x: usize, z: usize, axis: i64) -> Result<Tensor> {
    let t = cx.t(ins, x)?;
    let dt = cx.v(ins, x)?.dtype();
    if range(dt).is_none() {
        return Err(cx.err(format!("input {x} is {dt}; integer products take uint8 or int8")));
    }
    match param(cx, ins, z, t.rank(), axis)? {
        Some(zp) => Ok(t.sub(&zp)?),
        None => Ok(t),
    }
}

/// The `int32` bias of an integer product on the device. Constant biases beyond 2^24 (a
/// channel whose weight scale is tiny) are rounded to f32, which moves the requantised result
/// by less than 2^-24 of the output range (the bias times its multiplier stays within it), far
/// below one quantisation step; other integer values must be exact, as everywhere.
fn int32_bias(cx: &Cx, ins: &[Option<V>], i: usize) -> Result<Tensor> {
    if let V::Host { t, name } = cx.v(ins, i)? {
        if t.dtype == DType::I32 && t.to_f64().iter().any(|v| v.abs() > (1u32 << 24) as f64) {
            let rounded = crate::host::HostTensor::f32(t.shape.clone(), t.to_f32());
            return match name {
                Some(n) => cx.consts.cached(&format!("{n}#rounded-to-f32"), &rounded),
                None => upload(cx.dev(), &rounded, "bias"),
            };
        }
    }
    cx.t(ins, i)
}

fn dequantize_input(cx: &Cx, ins: &[Option<V>], x: usize, s: usize, z: usize) -> Result<Tensor> {
    let t = cx.t(ins, x)?;
    let st = param(cx, ins, s, t.rank(), 1)?.ok_or_else(|| cx.err(format!("scale input {s} is missing")))?;
    let zt = param(cx, ins, z, t.rank(), 1)?;
    Ok(dequantize(&t, &st, zt.as_ref())?)
}

fn quantize_output(cx: &Cx, ins: &[Option<V>], y: &Tensor, s: usize, z: usize, dt: DType) -> Result<Tensor> {
    if range(dt).is_none() {
        return Err(cx.err(format!("output type {dt} is not supported (uint8 and int8 are)")));
    }
    let st = param(cx, ins, s, y.rank(), 1)?.ok_or_else(|| cx.err(format!("scale input {s} is missing")))?;
    let zt = param(cx, ins, z, y.rank(), 1)?;
    Ok(quantize(cx, y, &st, zt.as_ref(), dt)?)
}

/// `QLinearSoftmax`'s output from the probabilities `p`, as onnxruntime's kernel computes it
/// (a com.microsoft op: that kernel is its definition): `q = round_half_even(p · floor(1 /
/// y_scale)) + y_zero_point` in `i32`, then for `uint8` `min(q, 255)`, and for `int8` a cast
/// that keeps the low 8 bits for `q` up to 255 and gives -1 above: it does not saturate, so
/// with the quantiser's int8 output parameters (scale 1/256, zero point -128) a probability
/// of at least 511/512 comes out as -128, i.e. 0. pixelgrad follows it so that imported models
/// give onnxruntime's outputs; the book's quantised-models chapter says so.
fn softmax_output(cx: &Cx, ins: &[Option<V>], p: &Tensor, dt: DType) -> Result<Tensor> {
    if range(dt).is_none() {
        return Err(cx.err(format!("output type {dt} is not supported (uint8 and int8 are)")));
    }
    let s = param(cx, ins, 3, p.rank(), 1)?.ok_or_else(|| cx.err("y_scale (input 3) is missing"))?;
    let mut q = round_half_even(&p.mul(&s.recip()?.floor()?)?)?;
    if let Some(z) = param(cx, ins, 4, p.rank(), 1)? {
        q = q.add(&z)?;
    }
    let q = match dt {
        DType::I8 => {
            // q >= -128 (p >= 0): 128..=255 wrap to q - 256, anything above is -1.
            let wrapped = q.sub(&q.gt_scalar(127.0)?.mul_scalar(256.0)?)?;
            wrapped.sub(&wrapped.add_scalar(1.0)?.mul(&q.gt_scalar(255.0)?)?)?
        }
        _ => q,
    };
    Ok(saturate(cx, &q, dt)?)
}

/// The requantisation multiplier `alpha · a_scale · b_scale / y_scale` (`y_scale` at index
/// `usize::MAX`: none) in `f32`, in that order, on the host when the scales are constants (as
/// onnxruntime computes it), shaped along `axis` of the rank-`rank` result.
fn multiplier(cx: &Cx, ins: &[Option<V>], idx: [usize; 3], rank: usize, axis: i64, alpha: f32) -> Result<Tensor> {
    let host = |i: usize| -> Option<Vec<f32>> {
        if i == usize::MAX {
            return Some(vec![1.0]);
        }
        cx.opt(ins, i).and_then(|v| v.as_host()).map(|h| h.to_f32())
    };
    if let (Some(a), Some(b), Some(y)) = (host(idx[0]), host(idx[1]), host(idx[2])) {
        let n = a.len().max(b.len()).max(y.len());
        let at = |v: &[f32], k: usize| if v.len() == 1 { v[0] } else { v[k] };
        if [a.len(), b.len(), y.len()].iter().any(|&l| l != 1 && l != n) {
            return Err(cx.err(format!("scales of {}, {} and {} elements do not broadcast", a.len(), b.len(), y.len())));
        }
        let m: Vec<f32> = (0..n).map(|k| alpha * at(&a, k) * at(&b, k) / at(&y, k)).collect();
        let t = Tensor::from_vec(cx.dev(), &m, [n])?;
        return Ok(if n == 1 {
            t.reshape(vec![1usize; rank.max(1)])?
        } else {
            let mut shape = vec![1usize; rank];
            shape[norm_axis(cx.node, axis, rank)?] = n;
            t.reshape(shape)?
        });
    }
    let p = |i: usize| param(cx, ins, i, rank, axis)?.ok_or_else(|| cx.err(format!("scale input {i} is missing")));
    let mut m = p(idx[0])?.mul(&p(idx[1])?)?;
    if alpha != 1.0 {
        m = m.mul_scalar(alpha)?;
    }
    if idx[2] != usize::MAX {
        m = m.div(&p(idx[2])?)?;
    }
    Ok(m)
}

/// `saturate(round_half_even(acc · m) + y_zero_point)`.
fn requantize(cx: &Cx, acc: &Tensor, m: &Tensor, ins: &[Option<V>], z: usize, axis: i64, dt: DType) -> Result<Tensor> {
    if range(dt).is_none() {
        return Err(cx.err(format!("output type {dt} is not supported (uint8 and int8 are)")));
    }
    let mut q = round_half_even(&acc.mul(m)?)?;
    if let Some(zp) = param(cx, ins, z, acc.rank(), axis)? {
        q = q.add(&zp)?;
    }
    Ok(saturate(cx, &q, dt)?)
}
