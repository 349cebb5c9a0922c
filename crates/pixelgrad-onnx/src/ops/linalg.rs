//! `Gemm`, `MatMul` (NumPy batching on top of the rank-2/3 core matmul), normalisations and
//! reductions.

use pixelgrad_core::{Tensor, Window};

use super::context::{Cx, V};
use crate::host::DType;
use crate::hostops::axes_arg;
use crate::shapes::{broadcast, norm_axis};
use crate::Result;

/// `Gemm`.
pub(super) fn gemm(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["alpha", "beta", "transA", "transB", "broadcast"])?;
    let (a, b) = (cx.t(ins, 0)?, cx.t_weight(ins, 1)?);
    if a.rank() != 2 || b.rank() != 2 {
        return Err(cx.err(format!("expects rank-2 A and B, got {:?} and {:?}", a.dims(), b.dims())));
    }
    let (ta, tb) = (node.int("transA", 0)? != 0, node.int("transB", 0)? != 0);
    let (alpha, beta) = (node.float("alpha", 1.0)?, node.float("beta", 1.0)?);
    let mut y = a.matmul_t(&b, ta, tb)?;
    if alpha != 1.0 {
        y = y.mul_scalar(alpha)?;
    }
    if cx.opt(ins, 2).is_some() && beta != 0.0 {
        let mut c = cx.t(ins, 2)?;
        if beta != 1.0 {
            c = c.mul_scalar(beta)?;
        }
        y = y.add(&c)?;
    }
    out(y)
}

/// `MatMul`.
pub(super) fn matmul_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    // A 2-D constant B (a weight) may stay f16: the product reads it directly. Other
    // shapes are broadcast first, which needs f32.
    let a = cx.t(ins, 0)?;
    let b = cx.t_weight(ins, 1)?;
    let b = if b.rank() != 2 && b.storage_dtype() == pixelgrad_core::kernel::DType::F16 { b.widen()? } else { b };
    out(matmul(cx, &a, &b)?)
}

/// `BatchNormalization`.
pub(super) fn batch_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["epsilon", "momentum", "spatial", "training_mode", "is_test", "consumed_inputs"])?;
    if node.int("training_mode", 0)? != 0 || node.outputs.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(cx.err("training mode (running statistics outputs) is not supported; imported graphs run in inference mode"));
    }
    if node.int("spatial", 1)? != 1 {
        return Err(cx.err("spatial = 0 is not supported"));
    }
    let x = cx.t(ins, 0)?;
    if x.rank() < 2 {
        return Err(cx.err(format!("expects [N, C, ...], got {:?}", x.dims())));
    }
    let eps = node.float("epsilon", 1e-5)?;
    let mut cshape = vec![1usize; x.rank()];
    cshape[1] = x.dims()[1];
    let p = |i: usize| -> Result<Tensor> { Ok(cx.t(ins, i)?.reshape(cshape.clone())?) };
    let (scale, bias, mean, var) = (p(1)?, p(2)?, p(3)?, p(4)?);
    // onnxruntime's order, each step rounded to f32: s = (1 / sqrt(var + eps)) · scale,
    // y = x · s + (bias - mean · s). Quantised models requantise this result, and
    // another order rounds some values to the other side of a half.
    let s = var.add_scalar(eps)?.sqrt()?.recip()?.mul(&scale)?;
    out(x.mul(&s)?.add(&bias.sub(&mean.mul(&s)?)?)?)
}

/// `InstanceNormalization`.
pub(super) fn instance_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    if d.len() < 3 {
        return Err(cx.err(format!("expects [N, C, D1, ...], got {d:?}")));
    }
    let eps = node.float("epsilon", 1e-5)?;
    let h = x.reshape([d[0], d[1], d[2..].iter().product::<usize>()])?;
    let mu = h.mean_axis(2, true)?;
    let c = h.sub(&mu)?;
    let inv = c.square()?.mean_axis(2, true)?.add_scalar(eps)?.powf(-0.5)?;
    let s = cx.t(ins, 1)?.reshape([1, d[1], 1])?;
    let b = cx.t(ins, 2)?.reshape([1, d[1], 1])?;
    out(c.mul(&inv)?.mul(&s)?.add(&b)?.reshape(d)?)
}

/// `LayerNormalization`.
pub(super) fn layer_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    node.only_attrs(&["axis", "epsilon", "stash_type"])?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let a = norm_axis(node, node.int("axis", -1)?, d.len())?;
    let eps = node.float("epsilon", 1e-5)?;
    let outer: usize = d[..a].iter().product();
    let h = x.reshape([outer, d[a..].iter().product::<usize>()])?;
    let mu = h.mean_axis(1, true)?;
    let c = h.sub(&mu)?;
    let inv = c.square()?.mean_axis(1, true)?.add_scalar(eps)?.powf(-0.5)?;
    let mut y = c.mul(&inv)?.reshape(d.clone())?;
    y = y.mul(&cx.t(ins, 1)?)?;
    if cx.opt(ins, 2).is_some() {
        y = y.add(&cx.t(ins, 2)?)?;
    }
    // the optional Mean and InvStdDev outputs keep the normalised axes as size 1
    let stat: Vec<usize> = d.iter().enumerate().map(|(i, &n)| if i < a { n } else { 1 }).collect();
    let mut outs = vec![V::dev(y, dt)];
    for (i, t) in [mu, inv].into_iter().enumerate() {
        if node.outputs.get(i + 1).is_some_and(|o| !o.is_empty()) {
            outs.push(V::dev(t.reshape(stat.clone())?, DType::F32));
        }
    }
    Ok(outs)
}

/// `GroupNormalization`.
pub(super) fn group_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["epsilon", "num_groups", "stash_type"])?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let g = node.int("num_groups", 0)?;
    if d.len() < 3 || g < 1 || d[1] % g as usize != 0 {
        return Err(cx.err(format!("expects [N, C, D1, ...] with C divisible by num_groups = {g}, got {d:?}")));
    }
    let (g, c) = (g as usize, d[1]);
    let eps = node.float("epsilon", 1e-5)?;
    let h = x.reshape([d[0], g, x.numel() / (d[0] * g)])?;
    let mu = h.mean_axis(2, true)?;
    let cen = h.sub(&mu)?;
    let inv = cen.square()?.mean_axis(2, true)?.add_scalar(eps)?.powf(-0.5)?;
    let y = cen.mul(&inv)?.reshape(d.clone())?;
    // scale and bias: one per channel (opset 21), or one per group (opset 18)
    let per = |i: usize, what: &str| -> Result<Tensor> {
        let t = cx.t(ins, i)?;
        let mut cs = vec![1usize; d.len()];
        cs[1] = c;
        match t.numel() {
            n if n == c => Ok(t.reshape(cs)?),
            n if n == g => Ok(t.reshape([g, 1])?.broadcast_to([g, c / g])?.reshape(cs)?),
            n => Err(cx.err(format!("{what} has {n} values; expected {c} (channels) or {g} (groups)"))),
        }
    };
    out(y.mul(&per(1, "scale")?)?.add(&per(2, "bias")?)?)
}

/// `MeanVarianceNormalization`.
pub(super) fn mean_variance_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axes"])?;
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let axes = match node.ints("axes")? {
        Some(a) => a.iter().map(|&a| norm_axis(node, a, r)).collect::<Result<Vec<_>>>()?,
        None => vec![0, 2, 3].into_iter().filter(|&a| a < r).collect(),
    };
    let mean = |t: &Tensor| -> Result<Tensor> { axes.iter().try_fold(t.clone(), |acc, &a| Ok(acc.mean_axis(a as isize, true)?)) };
    let c = x.sub(&mean(&x)?)?;
    // onnxruntime divides by sqrt(var) + 1e-9
    out(c.div(&mean(&c.square()?)?.sqrt()?.add_scalar(1e-9)?)?)
}

/// `LpNormalization`.
pub(super) fn lp_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axis", "p"])?;
    let x = cx.t(ins, 0)?;
    let a = norm_axis(node, node.int("axis", -1)?, x.rank())? as isize;
    let norm = match node.int("p", 2)? {
        1 => x.abs()?.sum_axis(a, true)?,
        2 => x.square()?.sum_axis(a, true)?.sqrt()?,
        p => return Err(cx.err(format!("p = {p} is not supported (1 or 2)"))),
    };
    // a zero vector stays zero
    let zero = Tensor::scalar(cx.dev(), 0.0)?;
    out(Tensor::select(&norm.gt_scalar(0.0)?, &x.div(&norm.max_scalar(f32::MIN_POSITIVE)?)?, &zero)?)
}

/// `LRN`.
pub(super) fn lrn(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["alpha", "beta", "bias", "size"])?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    if d.len() != 4 {
        return Err(cx.err(format!("expects [N, C, H, W], got {d:?}")));
    }
    let size = node.int("size", 0)?;
    if size < 1 {
        return Err(cx.err("size must be at least 1"));
    }
    let size = size as usize;
    let (alpha, beta, bias) = (node.float("alpha", 1e-4)?, node.float("beta", 0.75)?, node.float("bias", 1.0)?);
    // Sum of squares over a window of channels: channels become the rows of a
    // one-column image, so im2col with a size x 1 window gathers each neighbourhood.
    let (before, after) = ((size - 1) / 2, size / 2);
    let hw = d[2] * d[3];
    let sq = x.square()?.reshape([d[0], 1, d[1], hw])?.pad(&[0, 0, before, 0], &[0, 0, after, 0])?;
    let win = Window { kh: size, kw: 1, stride_h: 1, stride_w: 1, pad_h: 0, pad_w: 0 };
    let sums = sq.im2col(win)?.sum_axis(1, true)?.reshape(d.clone())?;
    let den = sums.affine(alpha / size as f32, bias)?.powf(-beta)?;
    out(x.mul(&den)?)
}

/// `ReduceMean`, `ReduceSum`, `ReduceMax`, `ReduceMin`, `ReduceL1`, `ReduceL2`, `ReduceSumSquare`, `ReduceLogSum`, `ReduceLogSumExp`, `ReduceProd`.
pub(super) fn reduce(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["axes", "keepdims", "noop_with_empty_axes"])?;
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let axes_from_input = node.opset >= 18 || (op == "ReduceSum" && node.opset >= 13);
    let axes = if axes_from_input {
        match cx.opt_h(ins, 1, "axes")? {
            Some(t) => Some(t.to_i64("axes")?),
            None => None,
        }
    } else {
        axes_arg(node, &[], 1)?
    };
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => a.iter().map(|&v| norm_axis(node, v, r)).collect::<Result<_>>()?,
        // No axes: the input as it is, squared for ReduceSumSquare (as the ONNX
        // reference and onnxruntime have it).
        _ if node.int("noop_with_empty_axes", 0)? != 0 => return out(if op == "ReduceSumSquare" { x.square()? } else { x }),
        _ => (0..r).collect(),
    };
    let keep = node.int("keepdims", 1)? != 0;
    if op == "ReduceProd" {
        return out(reduce_prod(&x, &axes, keep)?);
    }
    let mut y = match op {
        "ReduceL2" | "ReduceSumSquare" => x.square()?,
        "ReduceL1" => x.abs()?,
        _ => x.clone(),
    };
    for &a in &axes {
        let ai = a as isize;
        y = match op {
            "ReduceMean" => y.mean_axis(ai, true)?,
            "ReduceMax" => y.max_axis(ai, true)?,
            "ReduceMin" => y.min_axis(ai, true)?,
            // One axis at a time: the log-sum-exp of partial log-sum-exps is the whole.
            "ReduceLogSumExp" => y.logsumexp(ai, true)?,
            _ => y.sum_axis(ai, true)?,
        };
    }
    match op {
        "ReduceL2" => y = y.sqrt()?,
        "ReduceLogSum" => y = y.log()?,
        _ => {}
    }
    if !keep {
        let dims: Vec<usize> = y.dims().iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect();
        y = y.reshape(dims)?;
    }
    out(y)
}

/// `ArgMax`, `ArgMin`.
pub(super) fn arg_extreme(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    node.only_attrs(&["axis", "keepdims", "select_last_index"])?;
    let x = cx.t(ins, 0)?;
    let a = norm_axis(node, node.int("axis", 0)?, x.rank())?;
    let keep = node.int("keepdims", 1)? != 0;
    let src = if op == "ArgMin" { x.neg()? } else { x };
    if node.int("select_last_index", 0)? == 0 {
        return Ok(vec![V::dev(src.argmax(a as isize, keep)?, DType::I64)]);
    }
    // the largest index holding the extreme value
    let n = src.dims()[a];
    let mut shape = vec![1; src.rank()];
    shape[a] = n;
    let ids = Tensor::arange(cx.dev(), n)?.reshape(shape)?;
    let at_max = src.eq(&src.max_axis(a as isize, true)?)?;
    let last = Tensor::select(&at_max, &ids, &Tensor::scalar(cx.dev(), -1.0)?)?.max_axis(a as isize, keep)?;
    Ok(vec![V::dev(last, DType::I64)])
}

/// The product over `axes`, from magnitudes and signs: `exp(sum(ln|x|))`, negated where an
/// odd number of factors is negative. A zero factor gives `ln 0 = -inf` and a product of 0;
/// NaN stays NaN. Relative error grows with the number of factors (about n·ε·max|ln|x||),
/// unlike a chain of multiplications, which no backend has as a reduction.
fn reduce_prod(x: &Tensor, axes: &[usize], keep: bool) -> Result<Tensor> {
    let mut logs = x.abs()?.log()?;
    let mut negatives = x.neg()?.gt_scalar(0.0)?;
    for &a in axes {
        logs = logs.sum_axis(a as isize, true)?;
        negatives = negatives.sum_axis(a as isize, true)?;
    }
    // (-1)^k as 1 - 2 (k mod 2), k an exact small integer in f32.
    let odd = negatives.sub(&negatives.mul_scalar(0.5)?.floor()?.mul_scalar(2.0)?)?;
    let mut y = logs.exp()?.mul(&odd.affine(-2.0, 1.0)?)?;
    if !keep {
        let dims: Vec<usize> = y.dims().iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect();
        y = y.reshape(dims)?;
    }
    Ok(y)
}

/// NumPy `matmul` on the core's rank-2/3 matmul: 1-D operands gain and lose an axis, batch
/// axes broadcast and are flattened into one.
pub fn matmul(cx: &Cx, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (ra, rb) = (a.rank(), b.rank());
    if ra == 0 || rb == 0 {
        return Err(cx.err("MatMul of a scalar"));
    }
    let a2 = if ra == 1 { a.reshape([1, a.dims()[0]])? } else { a.clone() };
    let b2 = if rb == 1 { b.reshape([b.dims()[0], 1])? } else { b.clone() };
    let (ad, bd) = (a2.dims().to_vec(), b2.dims().to_vec());
    let (m, k) = (ad[ad.len() - 2], ad[ad.len() - 1]);
    let (k2, n) = (bd[bd.len() - 2], bd[bd.len() - 1]);
    if k != k2 {
        return Err(cx.err(format!("inner sizes differ: {:?} x {:?}", a.dims(), b.dims())));
    }
    let (ba, bb) = (&ad[..ad.len() - 2], &bd[..bd.len() - 2]);
    let batch = broadcast(cx.node, &[ba, bb])?;
    let nb: usize = batch.iter().product();
    let y = if bb.iter().product::<usize>() == 1 && bd.len() <= 3 || bb.is_empty() {
        // [.., M, K] x [K, N]: one 2-D product over all rows of A.
        let b2d = b2.reshape([k, n])?;
        if ba.iter().product::<usize>() == nb {
            a2.reshape([nb * m, k])?.matmul(&b2d)?
        } else {
            let mut full = batch.clone();
            full.extend([m, k]);
            a2.broadcast_to(full)?.reshape([nb * m, k])?.matmul(&b2d)?
        }
    } else {
        let expand = |t: &Tensor, inner: [usize; 2], own: &[usize]| -> Result<Tensor> {
            let mut full = batch.clone();
            full.extend(inner);
            if own.iter().product::<usize>() == 1 {
                return Ok(t.reshape([1, inner[0], inner[1]])?);
            }
            Ok(t.broadcast_to(full)?.reshape([nb, inner[0], inner[1]])?)
        };
        let a3 = expand(&a2, [m, k], ba)?;
        let b3 = expand(&b2, [k, n], bb)?;
        a3.matmul(&b3)?
    };
    let mut dims = batch;
    if ra > 1 {
        dims.push(m);
    }
    if rb > 1 {
        dims.push(n);
    }
    Ok(y.reshape(dims)?)
}
