//! Selection and indexing operators: top-k, hard max, cumulative sums, one-hot, element-wise
//! and N-D gathers and scatters, triangular masks, sequence reversal, crops, `Compress`,
//! non-maximum suppression and `NonZero`. All run on the device except where a result's
//! length depends on the data: the session brings the inputs that decide it to the host
//! first (asynchronously where the device needs that, see [`super::reads_back`]);
//! `NonMaxSuppression` and `NonZero` then run on the host, `Compress` gathers on the device.

use pixelgrad_core::composite::topk;
use pixelgrad_core::Tensor;

use super::context::{take, Cx, V};
use crate::host::{DType, HostTensor};
use crate::shapes::norm_axis;
use crate::Result;

/// `TopK`.
pub(super) fn top_k(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    node.only_attrs(&["axis", "largest", "sorted"])?;
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let a = norm_axis(node, node.int("axis", -1)?, r)?;
    let k = match node.opset {
        ..=9 => node.int("k", 0)?,
        _ => scalar_int(cx, ins, 1, "K")?,
    };
    let n = x.dims()[a];
    if k < 1 || k as usize > n {
        return Err(cx.err(format!("K = {k} must be between 1 and the axis' size {n} (zero-size results are not supported)")));
    }
    // the axis moves last, where the core's top-k works
    let perm: Vec<usize> = (0..r).filter(|&i| i != a).chain([a]).collect();
    let mut inv = vec![0; r];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let largest = node.int("largest", 1)? != 0;
    let xt = x.permute(&perm)?;
    // smallest first = largest of the negation; ties stay in index order either way
    let (v, i) = topk(&if largest { xt } else { xt.neg()? }, k as usize)?;
    let v = if largest { v } else { v.neg()? };
    Ok(vec![V::dev(v.permute(&inv)?, dt), V::dev(i.permute(&inv)?, DType::I64)])
}

/// `Hardmax`.
pub(super) fn hardmax_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["axis"])?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    if node.opset < 13 {
        // before 13 the input is coerced to 2-D at `axis` (default 1)
        let a = norm_axis(node, node.int("axis", 1)?, d.len())?;
        let outer: usize = d[..a].iter().product();
        let flat = x.reshape([outer, x.numel() / outer.max(1)])?;
        return one(hardmax(&flat, 1)?.reshape(d)?, dt);
    }
    let a = norm_axis(node, node.int("axis", -1)?, d.len())?;
    one(hardmax(&x, a)?, dt)
}

/// `CumSum`.
pub(super) fn cum_sum(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["exclusive", "reverse"])?;
    let x = cx.t(ins, 0)?;
    let a = norm_axis(node, scalar_int(cx, ins, 1, "axis")?, x.rank())?;
    let reverse = node.int("reverse", 0)? != 0;
    let n = x.dims()[a];
    let mut y = if node.int("exclusive", 0)? != 0 { shift(&x, a, 1, reverse)? } else { x };
    // Hillis-Steele scan: after the round with offset s every element holds the sum
    // of the 2s values ending at it
    let mut s = 1;
    while s < n {
        y = y.add(&shift(&y, a, s, reverse)?)?;
        s *= 2;
    }
    one(y, dt)
}

/// `OneHot`.
pub(super) fn one_hot(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["axis"])?;
    let idx = cx.t(ins, 0)?;
    let depth = cx.h(ins, 1, "depth")?.to_f64();
    if depth.len() != 1 || !(1.0..=(1u64 << 24) as f64).contains(&depth[0]) {
        return Err(cx.err(format!("depth must be one positive number, got {depth:?}")));
    }
    let depth = depth[0] as usize;
    let r = idx.rank();
    let axis = node.int("axis", -1)?;
    let a = norm_axis(node, axis, r + 1)?;
    // negative indices count from the end; out-of-range ones match no position
    let idx = idx.add(&idx.neg()?.gt_scalar(0.0)?.mul_scalar(depth as f32)?)?;
    let mut ishape = idx.dims().to_vec();
    ishape.insert(a, 1);
    let mut rshape = vec![1; r + 1];
    rshape[a] = depth;
    let mut out_dims = idx.dims().to_vec();
    out_dims.insert(a, depth);
    cx.check_size(&out_dims)?;
    let hit = Tensor::arange(cx.dev(), depth)?.reshape(rshape)?.eq(&idx.reshape(ishape)?)?;
    let values = cx.v(ins, 2)?;
    if values.dims().iter().product::<usize>() != 2 {
        return Err(cx.err(format!("values must hold two elements [off, on], got shape {:?}", values.dims())));
    }
    let vt = cx.to_dev(values, 2)?.reshape([2])?;
    let (off, on) = (vt.slice(0, 0, 1)?, vt.slice(0, 1, 2)?);
    one(Tensor::select(&hit, &on, &off)?, values.dtype())
}

/// `GatherElements`.
pub(super) fn gather_elements(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["axis"])?;
    let (x, idx) = (cx.t(ins, 0)?, cx.t(ins, 1)?);
    let a = norm_axis(node, node.int("axis", 0)?, x.rank())?;
    let x = fit_other_axes(cx, &x, idx.dims(), a)?;
    let n = x.dims()[a] as f32;
    let idx = idx.add(&idx.neg()?.gt_scalar(0.0)?.mul_scalar(n)?)?;
    one(x.gather(a, &idx)?, dt)
}

/// `ScatterElements`, `Scatter`.
pub(super) fn scatter_elements(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["axis", "reduction"])?;
    let (x, idx, upd) = (cx.t(ins, 0)?, cx.t(ins, 1)?, cx.t(ins, 2)?);
    let a = norm_axis(node, node.int("axis", 0)?, x.rank())?;
    if idx.dims() != upd.dims() || idx.rank() != x.rank() {
        return Err(cx.err(format!("indices {:?} and updates {:?} must have one shape, of the data's rank", idx.dims(), upd.dims())));
    }
    let d = x.dims().to_vec();
    if idx.dims().iter().zip(&d).enumerate().any(|(i, (&e, &n))| i != a && e > n) {
        return Err(cx.err(format!("indices {:?} exceed the data {d:?} on an axis other than {a}", idx.dims())));
    }
    // updates cover a corner of the data on the other axes: pad them (and their
    // indices) with zeros to the data's size there, adding nothing
    let after: Vec<usize> = idx.dims().iter().zip(&d).enumerate().map(|(i, (&e, &n))| if i == a { 0 } else { n - e }).collect();
    let before = vec![0; d.len()];
    let n = d[a] as f32;
    let idx = idx.add(&idx.neg()?.gt_scalar(0.0)?.mul_scalar(n)?)?.pad(&before, &after)?;
    let sums = upd.pad(&before, &after)?.scatter_add(a, d[a], &idx)?;
    let y = match node.string("reduction", "none")?.as_str() {
        "add" => x.add(&sums)?,
        "none" => {
            let touched = Tensor::ones(cx.dev(), upd.dims().to_vec())?.pad(&before, &after)?.scatter_add(a, d[a], &idx)?;
            Tensor::select(&touched.gt_scalar(0.0)?, &sums, &x)?
        }
        other => return Err(cx.err(format!("reduction '{other}' is not supported (none, add)"))),
    };
    one(y, dt)
}

/// `GatherND`.
pub(super) fn gather_nd(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["batch_dims"])?;
    let (x, idx) = (cx.t(ins, 0)?, cx.t(ins, 1)?);
    let b = node.int("batch_dims", 0)?.max(0) as usize;
    let (lin, rows, rest) = nd_rows(cx, &x, &idx, b)?;
    let n = lin.numel();
    let flat = x.reshape([rows, rest])?;
    let y = flat.gather(0, &lin.reshape([n, 1])?.broadcast_to([n, rest])?)?;
    // indices' leading shape, then the data's trailing axes
    let k = idx.dims()[idx.rank() - 1];
    let mut shape = idx.dims()[..idx.rank() - 1].to_vec();
    shape.extend_from_slice(&x.dims()[b + k..]);
    one(y.reshape(shape)?, dt)
}

/// `ScatterND`.
pub(super) fn scatter_nd(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["reduction"])?;
    let (x, idx, upd) = (cx.t(ins, 0)?, cx.t(ins, 1)?, cx.t(ins, 2)?);
    let (lin, rows, rest) = nd_rows(cx, &x, &idx, 0)?;
    let n = lin.numel();
    if upd.numel() != n * rest {
        return Err(cx.err(format!("updates {:?} do not fit indices {:?} into data {:?}", upd.dims(), idx.dims(), x.dims())));
    }
    let at = lin.reshape([n, 1])?.broadcast_to([n, rest])?;
    let sums = upd.reshape([n, rest])?.scatter_add(0, rows, &at)?.reshape(x.dims().to_vec())?;
    let y = match node.string("reduction", "none")?.as_str() {
        "add" => x.add(&sums)?,
        "none" => {
            let touched = Tensor::ones(cx.dev(), [n, rest])?.scatter_add(0, rows, &at)?.reshape(x.dims().to_vec())?;
            Tensor::select(&touched.gt_scalar(0.0)?, &sums, &x)?
        }
        other => return Err(cx.err(format!("reduction '{other}' is not supported (none, add)"))),
    };
    one(y, dt)
}

/// `Compress`.
pub(super) fn compress(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["axis"])?;
    let x = cx.t(ins, 0)?;
    // the condition is on the host (ops::reads_back)
    let cond = match cx.v(ins, 1)? {
        V::Host { t, .. } => t.to_f64(),
        V::Dev { t, .. } => t.to_vec()?.into_iter().map(f64::from).collect(),
    };
    let (x, a) = match node.attrs.contains_key("axis") {
        true => {
            let a = norm_axis(node, node.int("axis", 0)?, x.rank())?;
            (x, a)
        }
        false => (x.reshape([x.numel()])?, 0),
    };
    let n = x.dims()[a];
    if cond.len() > n {
        return Err(cx.err(format!("condition has {} values for an axis of {n}", cond.len())));
    }
    let keep: Vec<usize> = (0..cond.len()).filter(|&i| cond[i] != 0.0).collect();
    if keep.is_empty() {
        return Err(cx.err("the condition selects nothing (zero-size tensors are not supported on the device)"));
    }
    one(take(&x, a, &keep)?, dt)
}

/// `ReverseSequence`.
pub(super) fn reverse_sequence(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["batch_axis", "time_axis"])?;
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let ba = norm_axis(node, node.int("batch_axis", 1)?, r)?;
    let ta = norm_axis(node, node.int("time_axis", 0)?, r)?;
    if r < 2 || ba == ta {
        return Err(cx.err(format!("needs distinct batch and time axes of a rank-2+ input, got {:?}", x.dims())));
    }
    let (nt, nb) = (x.dims()[ta], x.dims()[ba]);
    let lens = cx.t(ins, 1)?;
    if lens.dims() != [nb] {
        return Err(cx.err(format!("sequence_lens {:?} must have one length per batch entry ({nb})", lens.dims())));
    }
    // source time of (t, b): len_b - 1 - t inside the sequence, t past its end
    let t = Tensor::arange(cx.dev(), nt)?.reshape([nt, 1])?;
    let l = lens.reshape([1, nb])?;
    let idx = Tensor::select(&l.gt(&t)?, &l.sub(&t)?.add_scalar(-1.0)?, &t.broadcast_to([nt, nb])?)?;
    let mut shape = vec![1; r];
    shape[ta] = nt;
    shape[ba] = nb;
    let idx = if ta < ba { idx.reshape(shape)? } else { idx.permute(&[1, 0])?.reshape(shape)? };
    one(x.gather(ta, &idx.broadcast_to(x.dims().to_vec())?)?, dt)
}

/// `EyeLike`.
pub(super) fn eye_like(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["dtype", "k"])?;
    let d = cx.v(ins, 0)?.dims().to_vec();
    if d.len() != 2 {
        return Err(cx.err(format!("needs a rank-2 input, got {d:?}")));
    }
    let k = node.int("k", 0)?;
    let eye: Vec<f32> = (0..d[0] * d[1]).map(|p| f32::from((p % d[1]) as i64 - (p / d[1]) as i64 == k)).collect();
    let out_dt = match node.attrs.contains_key("dtype") {
        true => DType::from_onnx(node.int("dtype", 1)? as i32, &format!("EyeLike node '{}'", node.name))?,
        false => dt,
    };
    one(Tensor::from_vec(cx.dev(), &eye, d)?, out_dt)
}

/// `CenterCropPad`.
pub(super) fn center_crop_pad(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["axes"])?;
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let target = cx.h(ins, 1, "shape")?.to_i64("shape")?;
    let axes: Vec<usize> = match node.ints("axes")? {
        Some(a) => a.iter().map(|&v| norm_axis(node, v, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    if target.len() != axes.len() || target.iter().any(|&s| s < 1) {
        return Err(cx.err(format!("shape {target:?} must give one positive size per axis ({} axes)", axes.len())));
    }
    let mut y = x;
    for (&a, &s) in axes.iter().zip(&target) {
        let (n, s) = (y.dims()[a], s as usize);
        if s < n {
            // a centred window, the extra element on the right
            let start = (n - s) / 2;
            y = y.slice(a, start, start + s)?;
        } else if s > n {
            let (mut before, mut after) = (vec![0; r], vec![0; r]);
            before[a] = (s - n) / 2;
            after[a] = s - n - before[a];
            cx.check_size(&y.dims().iter().enumerate().map(|(i, &d)| if i == a { s } else { d }).collect::<Vec<_>>())?;
            y = y.pad(&before, &after)?;
        }
    }
    one(y, dt)
}

/// `Trilu`.
pub(super) fn trilu(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    node.only_attrs(&["upper"])?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    if d.len() < 2 {
        return Err(cx.err(format!("needs rank 2 or more, got {d:?}")));
    }
    let k = match cx.opt(ins, 1) {
        Some(_) => scalar_int(cx, ins, 1, "k")?,
        None => 0,
    };
    let (rows, cols) = (d[d.len() - 2], d[d.len() - 1]);
    let upper = node.int("upper", 1)? != 0;
    let keep: Vec<f32> = (0..rows * cols)
        .map(|p| {
            let off = (p % cols) as i64 - (p / cols) as i64;
            f32::from(if upper { off >= k } else { off <= k })
        })
        .collect();
    let mask = Tensor::from_vec(cx.dev(), &keep, [rows, cols])?;
    one(Tensor::select(&mask, &x, &Tensor::scalar(cx.dev(), 0.0)?)?, dt)
}

/// `NonMaxSuppression`.
pub(super) fn non_max_suppression(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["center_point_box"])?;
    // the session brings boxes and scores to the host first (ops::reads_back)
    let host = |i: usize| -> Result<Vec<f32>> {
        match cx.v(ins, i)? {
            V::Host { t, .. } => Ok(t.to_f32()),
            V::Dev { t, .. } => Ok(t.to_vec()?),
        }
    };
    let (bd, sd) = (cx.v(ins, 0)?.dims().to_vec(), cx.v(ins, 1)?.dims().to_vec());
    if bd.len() != 3 || bd[2] != 4 || sd.len() != 3 || sd[0] != bd[0] || sd[2] != bd[1] {
        return Err(cx.err(format!("expects boxes [B, N, 4] and scores [B, C, N], got {bd:?} and {sd:?}")));
    }
    let max_out = match cx.opt(ins, 2) {
        Some(_) => scalar_int(cx, ins, 2, "max_output_boxes_per_class")?.max(0) as usize,
        None => 0,
    };
    let host_f = |i: usize, what: &str| -> Result<Option<f32>> {
        match cx.opt_h(ins, i, what)? {
            None => Ok(None),
            Some(t) if t.numel() == 1 => Ok(Some(t.to_f32()[0])),
            Some(t) => Err(cx.err(format!("{what} must be a scalar, got shape {:?}", t.shape))),
        }
    };
    let iou_threshold = host_f(3, "iou_threshold")?.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&iou_threshold) {
        return Err(cx.err(format!("iou_threshold {iou_threshold} must be in [0, 1]")));
    }
    let score_threshold = host_f(4, "score_threshold")?;
    let centre = match node.int("center_point_box", 0)? {
        0 => false,
        1 => true,
        other => return Err(cx.err(format!("center_point_box must be 0 or 1, got {other}"))),
    };
    let (nb, nc, n) = (bd[0], sd[1], bd[1]);
    let (bv, sv) = (host(0)?, host(1)?);
    let mut sel = Vec::new();
    for b in 0..nb {
        let corners: Vec<[f32; 4]> = (0..n).map(|i| box_corners(&bv[(b * n + i) * 4..(b * n + i) * 4 + 4], centre)).collect();
        for c in 0..nc {
            let s = &sv[(b * nc + c) * n..(b * nc + c + 1) * n];
            for i in greedy_nms(&corners, s, max_out, iou_threshold, score_threshold) {
                sel.extend([b as i64, c as i64, i as i64]);
            }
        }
    }
    Ok(vec![V::host(HostTensor::i64(vec![sel.len() / 3, 3], sel))])
}

/// `NonZero`.
pub(super) fn non_zero(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&[])?;
    let v = cx.v(ins, 0)?;
    let d = v.dims().to_vec();
    let vals = match v.as_host() {
        Some(h) => h.to_f64(),
        None => cx.to_dev(v, 0)?.to_vec()?.into_iter().map(f64::from).collect(),
    };
    let nz: Vec<usize> = vals.iter().enumerate().filter(|(_, &x)| x != 0.0).map(|(i, _)| i).collect();
    // one row per axis: the coordinates of the non-zero elements in row-major order
    let mut out = vec![0i64; d.len() * nz.len()];
    for (j, &flat) in nz.iter().enumerate() {
        let mut rem = flat;
        for ax in (0..d.len()).rev() {
            out[ax * nz.len() + j] = (rem % d[ax]) as i64;
            rem /= d[ax];
        }
    }
    Ok(vec![V::host(HostTensor::i64(vec![d.len(), nz.len()], out))])
}

/// `(min_a, min_b, max_a, max_b)` of one box: two corners in any order, or (centre format)
/// `[x_centre, y_centre, width, height]`.
fn box_corners(v: &[f32], centre: bool) -> [f32; 4] {
    let (p, q) = if centre {
        ([v[0] - v[2] / 2.0, v[1] - v[3] / 2.0], [v[0] + v[2] / 2.0, v[1] + v[3] / 2.0])
    } else {
        ([v[0], v[1]], [v[2], v[3]])
    };
    [p[0].min(q[0]), p[1].min(q[1]), p[0].max(q[0]), p[1].max(q[1])]
}

/// Greedy non-maximum suppression of one class: candidates scoring above `threshold` (NaN
/// never), highest score first (equal scores in index order); a candidate is kept unless its
/// intersection over union with a kept box exceeds `iou`; at most `max_out` kept.
fn greedy_nms(boxes: &[[f32; 4]], scores: &[f32], max_out: usize, iou: f32, threshold: Option<f32>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| !scores[i].is_nan() && threshold.is_none_or(|t| scores[i] > t)).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let area = |r: &[f32; 4]| (r[2] - r[0]) * (r[3] - r[1]);
    let mut kept: Vec<usize> = Vec::new();
    for i in order {
        if kept.len() >= max_out {
            break;
        }
        let a = &boxes[i];
        let overlaps = kept.iter().any(|&k| {
            let b = &boxes[k];
            let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
            let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
            let inter = w * h;
            let union = area(a) + area(b) - inter;
            union > 0.0 && inter / union > iou
        });
        if !overlaps {
            kept.push(i);
        }
    }
    kept
}

/// A host integer argument with one element.
fn scalar_int(cx: &Cx, ins: &[Option<V>], i: usize, what: &str) -> Result<i64> {
    let v = cx.h(ins, i, what)?.to_i64(what)?;
    match v[..] {
        [k] => Ok(k),
        _ => Err(cx.err(format!("{what} must hold one value, got {} values", v.len()))),
    }
}

/// For `GatherND` / `ScatterND`: the row of each index tuple (the last axis of `idx`, `k`
/// coordinates after `b` batch axes, negative ones counting from the end) in `x` viewed as
/// `[rows, rest]`, where a row is one `x[batch.., i_1, .., i_k]` slice of `rest` elements.
fn nd_rows(cx: &Cx, x: &Tensor, idx: &Tensor, b: usize) -> Result<(Tensor, usize, usize)> {
    let (xd, id) = (x.dims().to_vec(), idx.dims().to_vec());
    let k = id.last().copied().unwrap_or(0);
    if id.is_empty() || k == 0 || b + k > xd.len() || b >= id.len() || xd[..b] != id[..b] {
        return Err(cx.err(format!("indices {id:?} do not index data {xd:?} (batch_dims {b})")));
    }
    let rows: usize = xd[..b + k].iter().product();
    let rest: usize = xd[b + k..].iter().product();
    // row = batch * prod(d_b..d_{b+k}) + sum_j i_j * stride_j
    let dims = &xd[b..b + k];
    let mut strides = vec![1f32; k];
    for j in (0..k.saturating_sub(1)).rev() {
        strides[j] = strides[j + 1] * dims[j + 1] as f32;
    }
    let sizes: Vec<f32> = dims.iter().map(|&d| d as f32).collect();
    let size_row = Tensor::from_vec(cx.dev(), &sizes, [1, k])?;
    let m: usize = id[..id.len() - 1].iter().product();
    let i2 = idx.reshape([m, k])?;
    let i2 = i2.add(&i2.neg()?.gt_scalar(0.0)?.mul(&size_row)?)?;
    let mut lin = i2.mul(&Tensor::from_vec(cx.dev(), &strides, [1, k])?)?.sum_axis(1, false)?;
    if b > 0 {
        let nb: usize = id[..b].iter().product();
        let per = m / nb;
        let block: usize = dims.iter().product();
        let offs: Vec<f32> = (0..m).map(|r| ((r / per) * block) as f32).collect();
        lin = lin.add(&Tensor::from_vec(cx.dev(), &offs, [m])?)?;
    }
    if rows > 1 << 24 {
        return Err(cx.err(format!("data {xd:?} has more index rows than f32 indices hold exactly (2^24)")));
    }
    Ok((lin, rows, rest))
}

/// One-hot of the first largest value along `axis` (same shape as `x`).
fn hardmax(x: &Tensor, axis: usize) -> Result<Tensor> {
    let a = axis as isize;
    let first = x.eq(&x.max_axis(a, true)?)?.argmax(a, true)?;
    let mut shape = vec![1; x.rank()];
    shape[axis] = x.dims()[axis];
    Ok(Tensor::arange(x.device(), shape[axis])?.reshape(shape)?.eq(&first)?)
}

/// `x` moved `by` places along `axis` (toward larger indices, or smaller when `reverse`),
/// zeros filling the vacated places.
fn shift(x: &Tensor, axis: usize, by: usize, reverse: bool) -> Result<Tensor> {
    let n = x.dims()[axis];
    let mut pad = vec![0; x.rank()];
    pad[axis] = by;
    let zeros = vec![0; x.rank()];
    Ok(if reverse { x.pad(&zeros, &pad)?.slice(axis, by, n + by)? } else { x.pad(&pad, &zeros)?.slice(axis, 0, n)? })
}

/// `x` cut to `dims` on every axis but `axis` (GatherElements' indices may cover a corner).
fn fit_other_axes(cx: &Cx, x: &Tensor, dims: &[usize], axis: usize) -> Result<Tensor> {
    if dims.len() != x.rank() {
        return Err(cx.err(format!("indices {dims:?} must have the data's rank {}", x.rank())));
    }
    let mut y = x.clone();
    for (i, (&e, &n)) in dims.iter().zip(x.dims()).enumerate() {
        if i != axis && e != n {
            if e > n {
                return Err(cx.err(format!("indices {dims:?} exceed the data {:?} on axis {i}", x.dims())));
            }
            y = y.slice(i, 0, e)?;
        }
    }
    Ok(y)
}
