//! Data movement: reshapes, transposes, concatenation, slicing (with steps), padding (constant,
//! reflect, edge, wrap), gathers, expand/tile, split, depth/space rearrangements. Index lists
//! are computed on the host; the device runs slices, pads, permutes and gathers.

use pixelgrad_core::Tensor;

use super::context::{take, Cx, V};
use crate::hostops::{axes_arg, gather_indices, to_dims};
use crate::shapes::{broadcast, flatten_axis, norm_axis, reshape_target, slice_plan_from, squeeze_dims, transpose_perm, unsqueeze_dims};
use crate::{OnnxError, Result};

/// `Reshape`.
pub(super) fn reshape(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.stored(ins, 0)?;
    let target =
        if node.opset < 5 { node.ints("shape")?.ok_or_else(|| cx.err("needs shape"))? } else { cx.h(ins, 1, "shape")?.to_i64("shape")? };
    let dims = reshape_target(node, x.dims(), &target, node.int("allowzero", 0)? != 0)?;
    out(x.reshape(dims)?)
}

/// `Flatten`.
pub(super) fn flatten(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.stored(ins, 0)?;
    let a = flatten_axis(node, node.int("axis", 1)?, x.rank())?;
    let outer: usize = x.dims()[..a].iter().product();
    out(x.reshape([outer, x.numel() / outer.max(1)])?)
}

/// `Squeeze`, `Unsqueeze`.
pub(super) fn squeeze(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    // Host values of the optional arguments, for ops that read axes from an input.
    let hosts = |cx: &Cx| -> Result<Vec<Option<crate::host::HostTensor>>> {
        (0..ins.len()).map(|i| if i == 0 { Ok(None) } else { cx.opt_h(ins, i, "argument").map(|o| o.cloned()) }).collect()
    };
    let x = cx.stored(ins, 0)?;
    let h = hosts(cx)?;
    let hr: Vec<Option<&crate::host::HostTensor>> = h.iter().map(|o| o.as_ref()).collect();
    let axes = axes_arg(node, &hr, 1)?;
    let dims = if op == "Squeeze" {
        squeeze_dims(node, x.dims(), axes.as_deref())?
    } else {
        unsqueeze_dims(node, x.dims(), &axes.ok_or_else(|| cx.err("needs axes"))?)?
    };
    out(x.reshape(dims)?)
}

/// `Transpose`.
pub(super) fn transpose(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let perm = transpose_perm(node, r)?;
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return out(x);
    }
    out(x.permute(&perm)?)
}

/// `Concat`.
pub(super) fn concat(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    // empty parts (an empty constant some exporters concatenate) drop out: device
    // operators never see an empty tensor
    let full = |i: &usize| cx.opt(ins, *i).is_some_and(|v| crate::host::checked_numel(v.dims()) != Some(0));
    let ts: Vec<Tensor> = (0..ins.len()).filter(full).map(|i| cx.t(ins, i)).collect::<Result<_>>()?;
    let first = ts.first().ok_or_else(|| cx.err("no non-empty inputs"))?;
    let a = norm_axis(node, node.int("axis", 0)?, first.rank())?;
    let refs: Vec<&Tensor> = ts.iter().collect();
    out(Tensor::concat(&refs, a)?)
}

/// `Slice`.
pub(super) fn slice(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    // Host values of the optional arguments, for ops that read axes from an input.
    let hosts = |cx: &Cx| -> Result<Vec<Option<crate::host::HostTensor>>> {
        (0..ins.len()).map(|i| if i == 0 { Ok(None) } else { cx.opt_h(ins, i, "argument").map(|o| o.cloned()) }).collect()
    };
    let x = cx.t(ins, 0)?;
    let h = hosts(cx)?;
    let hr: Vec<Option<&crate::host::HostTensor>> = h.iter().map(|o| o.as_ref()).collect();
    let mut y = x.clone();
    for s in slice_plan_from(node, x.dims(), &hr)? {
        if s.len == 0 {
            return Err(cx.err("the slice is empty (zero-size tensors are not supported)"));
        }
        y = if s.step == 1 { y.slice(s.axis, s.start, s.start + s.len)? } else { take(&y, s.axis, &s.indices())? };
    }
    out(y)
}

/// `Gather`.
pub(super) fn gather(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.t(ins, 0)?;
    let a = norm_axis(node, node.int("axis", 0)?, x.rank())?;
    out(gather_along(cx, &x, a, cx.v(ins, 1)?)?)
}

/// `x` gathered along axis `a` at the indices `idx` (host or device; negative ones wrap), as
/// `Gather` computes it: shape `x[..a] ++ idx ++ x[a + 1..]`.
pub(super) fn gather_along(cx: &Cx, x: &Tensor, a: usize, idx: &V) -> Result<Tensor> {
    let node = cx.node;
    let d = x.dims().to_vec();
    let mut shape = d[..a].to_vec();
    shape.extend_from_slice(idx.dims());
    shape.extend_from_slice(&d[a + 1..]);
    let y = match idx.as_host() {
        Some(t) => take(x, a, &gather_indices(node, t, d[a])?)?,
        None => {
            // Indices computed on the device: negative ones wrap, then one gather with
            // the indices broadcast over the other axes.
            let it = cx.to_dev(idx, 1)?;
            let k = it.numel();
            let n = d[a] as f32;
            let it = it.reshape([k])?;
            let it = it.add(&it.gt_scalar(-0.5)?.affine(-n, n)?)?;
            let outer: usize = d[..a].iter().product();
            let inner: usize = d[a + 1..].iter().product();
            let x3 = x.reshape([outer, d[a], inner])?;
            x3.gather(1, &it.reshape([1, k, 1])?.broadcast_to([outer, k, inner])?)?
        }
    };
    Ok(y.reshape(shape)?)
}

/// `ConstantOfShape`.
pub(super) fn constant_of_shape(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    // Folded on the host when small (hostops); a large one is made here, where the
    // device refuses one over its element cap before allocating (Op::Fill).
    let dims = to_dims(node, cx.h(ins, 0, "input")?)?;
    let (value, dtype) = match node.tensor_attr("value")? {
        None => (0.0, crate::host::DType::F32),
        Some(v) if v.numel() == 1 => (v.to_f32()[0], v.dtype),
        Some(_) => return Err(cx.err("attribute 'value' must hold one element")),
    };
    Ok(vec![V::dev(Tensor::full(cx.dev(), dims, value)?, dtype)])
}

/// `Expand`.
pub(super) fn expand(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.t(ins, 0)?;
    let target = to_dims(node, cx.h(ins, 1, "shape")?)?;
    // one primitive (Op::Expand), which the device checks against its element cap
    let shape = broadcast(node, &[x.dims(), &target])?;
    out(x.broadcast_to(shape)?)
}

/// `Tile`.
pub(super) fn tile(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.t(ins, 0)?;
    let reps = cx.h(ins, 1, "repeats")?.to_i64("repeats")?;
    if reps.len() != x.rank() || reps.iter().any(|&r| r < 1) {
        return Err(cx.err(format!("repeats {reps:?} do not fit rank {} (each must be at least 1)", x.rank())));
    }
    // checked up front: the tiling is several primitives, each smaller than the result
    let full: Vec<usize> = x.dims().iter().zip(&reps).map(|(&d, &r)| d.saturating_mul(usize::try_from(r).unwrap_or(usize::MAX))).collect();
    cx.check_size(&full)?;
    let mut y = x;
    for (a, &r) in reps.iter().enumerate() {
        if r == 1 {
            continue;
        }
        let d = y.dims().to_vec();
        let mut big = d.clone();
        let r = usize::try_from(r).unwrap_or(usize::MAX);
        big.insert(a, r);
        let mut fin = d.clone();
        fin[a] = fin[a].saturating_mul(r);
        y = y.unsqueeze(a)?.broadcast_to(big)?.reshape(fin)?;
    }
    out(y)
}

/// `Split`.
pub(super) fn split(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    let a = norm_axis(node, node.int("axis", 0)?, x.rank())?;
    let n = x.dims()[a];
    let parts = node.outputs.len();
    let sizes: Vec<usize> = match (node.ints("split")?, cx.opt_h(ins, 1, "split")?) {
        (Some(s), _) => s.iter().map(|&v| usize::try_from(v.max(0)).unwrap_or(usize::MAX)).collect(),
        (None, Some(t)) => t.to_i64("split")?.iter().map(|&v| usize::try_from(v.max(0)).unwrap_or(usize::MAX)).collect(),
        (None, None) => {
            let k = node.int("num_outputs", parts as i64)?;
            if k != parts as i64 {
                return Err(cx.err(format!("num_outputs {k} but the node has {parts} outputs")));
            }
            let each = n.div_ceil(parts.max(1));
            (0..parts).map(|i| each.min(n.saturating_sub(i.saturating_mul(each)))).collect()
        }
    };
    // sizes come from the file: their sum may overflow
    if sizes.len() != parts || sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s)) != Some(n) {
        return Err(cx.err(format!("split sizes {sizes:?} do not divide an axis of {n} into {parts} outputs")));
    }
    let mut outs = Vec::with_capacity(parts);
    let mut at = 0;
    for s in sizes {
        if s == 0 {
            return Err(cx.err("an empty split part (zero-size tensors are not supported)"));
        }
        outs.push(V::dev(x.slice(a, at, at + s)?, dt));
        at += s;
    }
    Ok(outs)
}

/// `Pad`.
pub(super) fn pad_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    out(pad(cx, ins)?)
}

/// `DepthToSpace`, `SpaceToDepth`.
pub(super) fn depth_space(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let b = node.int("blocksize", 0)?;
    if d.len() != 4 || b < 1 {
        return Err(cx.err(format!("expects NCHW input and blocksize >= 1, got {d:?}, blocksize {b}")));
    }
    let [n, c, h, w] = [d[0], d[1], d[2], d[3]];
    // a block no larger than the channels (DepthToSpace) or the image (SpaceToDepth),
    // so b * b and the sizes below cannot overflow
    let b = usize::try_from(b)
        .ok()
        .filter(|&b| b <= c.max(h).max(w))
        .ok_or_else(|| cx.err(format!("blocksize {b} is larger than the input {d:?}")))?;
    if op == "DepthToSpace" {
        if c % (b * b) != 0 {
            return Err(cx.err(format!("channels {c} are not a multiple of blocksize^2")));
        }
        let cc = c / (b * b);
        let y = if node.string("mode", "DCR")? == "CRD" {
            x.reshape([n, cc, b, b, h, w])?.permute(&[0, 1, 4, 2, 5, 3])?
        } else {
            x.reshape([n, b, b, cc, h, w])?.permute(&[0, 3, 4, 1, 5, 2])?
        };
        out(y.reshape([n, cc, h * b, w * b])?)
    } else {
        if h % b != 0 || w % b != 0 {
            return Err(cx.err(format!("height and width {h}x{w} are not multiples of blocksize {b}")));
        }
        let y = x.reshape([n, c, h / b, b, w / b, b])?.permute(&[0, 3, 5, 1, 2, 4])?;
        out(y.reshape([n, c * b * b, h / b, w / b])?)
    }
}

/// `Pad`: negative pads crop; constant (any value), reflect, edge and wrap modes.
fn pad(cx: &Cx, ins: &[Option<V>]) -> Result<Tensor> {
    let node = cx.node;
    let x = cx.t(ins, 0)?;
    let r = x.rank();
    let mode = node.string("mode", "constant")?;
    let (pads, value) = if node.opset < 11 {
        (node.ints("pads")?.or(node.ints("paddings")?).ok_or_else(|| cx.err("needs pads"))?, node.float("value", 0.0)?)
    } else {
        let p = cx.h(ins, 1, "pads")?.to_i64("pads")?;
        let v = match cx.opt_h(ins, 2, "constant_value")? {
            Some(t) if t.numel() == 1 => t.to_f32()[0],
            Some(_) => return Err(cx.err("constant_value must be a scalar")),
            None => 0.0,
        };
        (p, v)
    };
    // opset 18 `axes`: pads list only those axes
    let axes: Vec<usize> = match cx.opt_h(ins, 3, "axes")? {
        Some(t) => t.to_i64("axes")?.iter().map(|&a| norm_axis(node, a, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(cx.err(format!("pads {pads:?} do not fit {} axes", axes.len())));
    }
    let k = axes.len();
    let mut before = vec![0i64; r];
    let mut after = vec![0i64; r];
    for (i, &a) in axes.iter().enumerate() {
        before[a] = pads[i];
        after[a] = pads[k + i];
    }
    // A constant pad whose negative side removes an axis's every element, while the other side
    // adds some, leaves only padding: the output is the value throughout.
    let gone = |a: usize| {
        let n = x.dims()[a] as i64;
        before[a].saturating_neg().max(0).saturating_add(after[a].saturating_neg().max(0)) >= n
    };
    if mode == "constant" && (0..r).any(gone) {
        let dims: Vec<i64> = (0..r).map(|a| (x.dims()[a] as i64).saturating_add(before[a]).saturating_add(after[a])).collect();
        if dims.iter().any(|&d| d <= 0) {
            return Err(cx.err(format!("pads {pads:?} leave an empty output {dims:?} (zero-size tensors are not supported)")));
        }
        let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        cx.check_size(&dims)?;
        return Ok(Tensor::full(x.device(), dims, value)?);
    }
    let mut y = x;
    // crop first (negative pads)
    for a in 0..r {
        let n = y.dims()[a] as i64;
        // pads come from the file: i64::MIN must not overflow (found by fuzzing)
        let (b, e) = (before[a].saturating_neg().max(0), after[a].saturating_neg().max(0));
        if b.saturating_add(e) >= n && (b > 0 || e > 0) {
            return Err(cx.err(format!("negative pads remove all of axis {a}")));
        }
        if b > 0 || e > 0 {
            y = y.slice(a, b as usize, (n - e) as usize)?;
        }
    }
    let pb: Vec<usize> = before.iter().map(|&v| v.max(0) as usize).collect();
    let pe: Vec<usize> = after.iter().map(|&v| v.max(0) as usize).collect();
    let full: Vec<usize> = (0..r).map(|a| y.dims()[a].saturating_add(pb[a]).saturating_add(pe[a])).collect();
    cx.check_size(&full)?;
    if pb.iter().chain(&pe).all(|&v| v == 0) {
        return Ok(y);
    }
    match mode.as_str() {
        "constant" => {
            let dims = y.dims().to_vec();
            let mut z = y.pad(&pb, &pe)?;
            if value != 0.0 {
                let ones = Tensor::ones(z.device(), dims)?.pad(&pb, &pe)?;
                z = z.add(&ones.affine(-value, value)?)?;
            }
            Ok(z)
        }
        "reflect" | "edge" | "wrap" => {
            for a in 0..r {
                if pb[a] == 0 && pe[a] == 0 {
                    continue;
                }
                let n = y.dims()[a] as i64;
                if n == 0 {
                    return Err(cx.err(format!("{mode} padding of an empty axis {a}")));
                }
                if mode == "reflect" && (pb[a] as i64 >= n || pe[a] as i64 >= n) {
                    return Err(cx.err(format!("reflect pads {}/{} need an axis longer than that (axis {a} has {n})", pb[a], pe[a])));
                }
                let idx: Vec<usize> = (-(pb[a] as i64)..n + pe[a] as i64)
                    .map(|i| {
                        (match mode.as_str() {
                            "reflect" => {
                                let period = 2 * (n - 1).max(1);
                                let j = i.rem_euclid(period);
                                if j >= n {
                                    period - j
                                } else {
                                    j
                                }
                            }
                            "edge" => i.clamp(0, n - 1),
                            _ => i.rem_euclid(n),
                        }) as usize
                    })
                    .collect();
                y = take(&y, a, &idx)?;
            }
            Ok(y)
        }
        other => Err(OnnxError::Node {
            op_type: node.op_type.clone(),
            node: node.name.clone(),
            opset: node.opset,
            msg: format!("mode '{other}' is not supported"),
        }),
    }
}
