//! Normalisations: batch, instance, layer, group, mean-variance, Lp and local response.

use pixelgrad_core::{Tensor, Window};

use super::context::{Cx, V};
use crate::host::DType;
use crate::shapes::norm_axis;
use crate::Result;

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
    let (x, d) = cx.spatial(ins, 0)?;
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
    // the optional Mean and InvStdDev outputs keep the normalised axes as size 1; one value per
    // output position, as the session pairs results with outputs by position (an omitted Mean
    // before a named InvStdDev left it uncomputed)
    let stat: Vec<usize> = d.iter().enumerate().map(|(i, &n)| if i < a { n } else { 1 }).collect();
    let mut outs = vec![V::dev(y, dt), V::dev(mu.reshape(stat.clone())?, DType::F32), V::dev(inv.reshape(stat)?, DType::F32)];
    outs.truncate(node.outputs.len());
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
