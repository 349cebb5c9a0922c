//! Rotary position embeddings: onnxruntime's `com.microsoft` `RotaryEmbedding` (what its
//! transformer optimiser writes for LLaMA-style decoders) and the default domain's
//! `RotaryEmbedding` of opset 23. Both rotate pairs of features of each head by the angle of
//! the token's position, `(x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)`, with the cosines
//! and sines read from caches. The pairs are the two halves of the rotated features, or
//! neighbours (`interleaved`); features past `rotary_embedding_dim` pass through unchanged.
//!
//! Written with the tensor primitives (a gather of the caches' rows, slices, products and a
//! concatenation), so every backend runs it and autodiff differentiates it with respect to the
//! input (and the caches, which are ordinary constants).

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use super::movement::gather_along;
use crate::host::{DType, HostTensor};
use crate::Result;

/// What `pixelgrad inspect` says of `com.microsoft` `RotaryEmbedding`.
pub const MS_ROTARY_NOTE: &str = "the scale attribute has no effect (as in onnxruntime's CPU kernel: the caches are never grown); \
     position ids computed on the device are not range-checked (negative ones wrap, as in Gather)";

/// `com.microsoft` `RotaryEmbedding` (onnxruntime's contrib schema, version 1): `input`
/// `[batch, sequence, hidden]` or `[batch, num_heads, sequence, head_size]`, `position_ids`
/// (`int64`) one start position (shape `[]` or `[1]`: token `s` is at `start + s`) or
/// `[batch, sequence]`, and `cos_cache`, `sin_cache` `[max_sequence, rotary_embedding_dim / 2]`.
/// Without `rotary_embedding_dim` the head size is twice the caches' width and every feature
/// rotates; with it, `num_heads` is required and the head size is `hidden / num_heads`.
///
/// `scale` only scales positions when onnxruntime would grow the caches for a sequence longer
/// than they are, which neither onnxruntime's CPU kernel nor pixelgrad does (a longer sequence
/// is an error), so it has no effect; `is_packed_batching` (ragged batches) is refused.
/// Positions read on the host are checked against the caches' length; positions computed on
/// the device are not read back (as for `Gather`, negative ones wrap).
pub(super) fn ms_rotary_embedding(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["interleaved", "is_packed_batching", "num_heads", "rotary_embedding_dim", "scale"])?;
    let interleaved = flag(cx, "interleaved")?;
    if node.int("is_packed_batching", 0)? != 0 {
        return Err(cx.err("is_packed_batching (ragged batches) is not supported; give padded [batch, sequence, ...] inputs"));
    }
    let num_heads = non_negative(cx, "num_heads")?;
    let rd_attr = non_negative(cx, "rotary_embedding_dim")?;
    let scale = node.float("scale", 1.0)?;
    if !scale.is_finite() {
        return Err(cx.err(format!("scale {scale} is not a finite number")));
    }
    if rd_attr > 0 && num_heads == 0 {
        return Err(cx.err("num_heads must be given with rotary_embedding_dim"));
    }
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let (batch, seq, hidden) = match d.len() {
        3 => (d[0], d[1], d[2]),
        4 => (d[0], d[2], d[1] * d[3]),
        _ => {
            return Err(cx.err(format!("input has shape {d:?}; expected [batch, sequence, hidden] or [batch, heads, sequence, head_size]")))
        }
    };
    let (cos, sin) = caches(cx, ins, 2, 3)?;
    let (max_seq, width) = (cos.dims()[0], cos.dims()[1]);
    let head = if rd_attr == 0 { 2 * width } else { hidden / num_heads };
    let heads = if num_heads > 0 { num_heads } else { hidden / head.max(1) };
    if head == 0 || heads * head != hidden {
        return Err(cx.err(format!(
            "input {d:?} does not split into heads: hidden size {hidden}, head size {head} ({})",
            if rd_attr == 0 { "twice the caches' width" } else { "hidden / num_heads" }
        )));
    }
    if d.len() == 4 && (d[1] != heads || d[3] != head) {
        return Err(cx.err(format!("input {d:?} is not [batch, {heads} heads, sequence, head size {head}]")));
    }
    let rd = if rd_attr > 0 { rd_attr } else { head };
    if rd > head || rd % 2 != 0 {
        return Err(cx.err(format!("rotary_embedding_dim {rd} must be even and at most the head size {head}")));
    }
    if width != rd / 2 {
        return Err(cx.err(format!(
            "cos_cache and sin_cache are {:?}; expected [max_sequence, {}] (rotary_embedding_dim / 2)",
            cos.dims(),
            rd / 2
        )));
    }
    if seq > max_seq {
        return Err(cx.err(format!("sequence length {seq} is longer than the caches ({max_seq} positions)")));
    }
    let pos = positions(cx, ins, 1, batch, seq, max_seq)?;
    let pb = pos.dims()[0];
    let cs = |c: &Tensor| -> Result<Tensor> {
        let rows = gather_along(cx, c, 0, &pos)?;
        Ok(if d.len() == 3 { rows.reshape([pb, seq, 1, rd / 2])? } else { rows.reshape([pb, 1, seq, rd / 2])? })
    };
    let x4 = if d.len() == 3 { x.reshape([batch, seq, heads, head])? } else { x };
    let y = rotate(&x4, &cs(&cos)?, &cs(&sin)?, rd, interleaved)?;
    Ok(vec![V::dev(y.reshape(d)?, dt)])
}

/// `RotaryEmbedding` (opset 23): `X` `[batch, num_heads, sequence, head_size]`, or
/// `[batch, sequence, hidden]` with `num_heads` given; `cos_cache` and `sin_cache`
/// `[max_position, rotary_embedding_dim / 2]` read at `position_ids` (`int64`
/// `[batch, sequence]`), or without `position_ids` already `[batch, sequence,
/// rotary_embedding_dim / 2]`. `rotary_embedding_dim` 0 rotates the whole head.
pub(super) fn rotary_embedding(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["interleaved", "num_heads", "rotary_embedding_dim"])?;
    let interleaved = flag(cx, "interleaved")?;
    let num_heads = non_negative(cx, "num_heads")?;
    let rd_attr = non_negative(cx, "rotary_embedding_dim")?;
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let (batch, seq, heads, head) = match d.len() {
        4 if num_heads == 0 || num_heads == d[1] => (d[0], d[2], d[1], d[3]),
        4 => return Err(cx.err(format!("num_heads {num_heads} differs from the heads axis of X {d:?}"))),
        3 if num_heads == 0 => return Err(cx.err("num_heads is required for an X of shape [batch, sequence, hidden]")),
        3 if d[2] % num_heads == 0 => (d[0], d[1], num_heads, d[2] / num_heads),
        3 => return Err(cx.err(format!("hidden size {} does not split into {num_heads} heads", d[2]))),
        _ => {
            return Err(cx.err(format!("X has shape {d:?}; expected [batch, num_heads, sequence, head_size] or [batch, sequence, hidden]")))
        }
    };
    let rd = if rd_attr > 0 { rd_attr } else { head };
    if rd > head || rd % 2 != 0 {
        return Err(cx.err(format!("rotary_embedding_dim {rd} must be even and at most the head size {head}")));
    }
    let half = rd / 2;
    let cos = cx.t(ins, 1)?;
    let sin = cx.t(ins, 2)?;
    if cos.dims() != sin.dims() {
        return Err(cx.err(format!("cos_cache {:?} and sin_cache {:?} differ in shape", cos.dims(), sin.dims())));
    }
    let (cos, sin) = match cx.opt(ins, 3) {
        Some(pos) => {
            if cos.rank() != 2 || cos.dims()[1] != half {
                return Err(cx.err(format!("with position_ids the caches must be [max_position, {half}]; they are {:?}", cos.dims())));
            }
            if pos.dims() != [batch, seq] {
                return Err(cx.err(format!("position_ids has shape {:?}; expected [batch, sequence] = [{batch}, {seq}]", pos.dims())));
            }
            check_positions(cx, pos, 3, cos.dims()[0])?;
            (gather_along(cx, &cos, 0, pos)?, gather_along(cx, &sin, 0, pos)?)
        }
        None if cos.dims() == [batch, seq, half] => (cos, sin),
        None => {
            return Err(cx.err(format!(
                "without position_ids the caches must be [batch, sequence, {half}] = [{batch}, {seq}, {half}]; they are {:?}",
                cos.dims()
            )))
        }
    };
    let (x4, at) = if d.len() == 3 { (x.reshape([batch, seq, heads, head])?, [batch, seq, 1, half]) } else { (x, [batch, 1, seq, half]) };
    let y = rotate(&x4, &cos.reshape(at)?, &sin.reshape(at)?, rd, interleaved)?;
    Ok(vec![V::dev(y.reshape(d)?, dt)])
}

/// Rotates the first `rd` features of the last axis of `x` by the angles whose cosines and
/// sines `cos` and `sin` hold (`rd / 2` of them on their last axis; their other axes broadcast
/// against `x`'s): the pairs are feature `i` and `i + rd / 2`, or `2i` and `2i + 1` when
/// `interleaved`. The features from `rd` on are kept.
pub(super) fn rotate(x: &Tensor, cos: &Tensor, sin: &Tensor, rd: usize, interleaved: bool) -> Result<Tensor> {
    let d = x.dims().to_vec();
    let last = d.len() - 1;
    let head = d[last];
    let half = rd / 2;
    let xr = if rd < head { x.slice(last, 0, rd)? } else { x.clone() };
    let turn = |x1: &Tensor, x2: &Tensor, c: &Tensor, s: &Tensor| -> Result<(Tensor, Tensor)> {
        Ok((x1.mul(c)?.sub(&x2.mul(s)?)?, x2.mul(c)?.add(&x1.mul(s)?)?))
    };
    let rot = if interleaved {
        // [..., rd] as [..., rd / 2, 2]: each pair on the new last axis
        let mut pairs = d.clone();
        pairs[last] = half;
        pairs.push(2);
        let xp = xr.reshape(pairs)?;
        let (x1, x2) = (xp.slice(last + 1, 0, 1)?, xp.slice(last + 1, 1, 2)?);
        let mut cd = cos.dims().to_vec();
        cd.push(1);
        let (y1, y2) = turn(&x1, &x2, &cos.reshape(cd.clone())?, &sin.reshape(cd)?)?;
        let mut back = d.clone();
        back[last] = rd;
        Tensor::concat(&[&y1, &y2], last + 1)?.reshape(back)?
    } else {
        let (x1, x2) = (xr.slice(last, 0, half)?, xr.slice(last, half, rd)?);
        let (y1, y2) = turn(&x1, &x2, cos, sin)?;
        Tensor::concat(&[&y1, &y2], last)?
    };
    if rd < head {
        Ok(Tensor::concat(&[&rot, &x.slice(last, rd, head)?], last)?)
    } else {
        Ok(rot)
    }
}

/// Inputs `c` and `s`, the cosine and sine caches: two matrices of one shape.
pub(super) fn caches(cx: &Cx, ins: &[Option<V>], c: usize, s: usize) -> Result<(Tensor, Tensor)> {
    let (cos, sin) = (cx.t(ins, c)?, cx.t(ins, s)?);
    if cos.rank() != 2 || cos.dims() != sin.dims() {
        return Err(cx.err(format!("cos_cache {:?} and sin_cache {:?} must be matrices of one shape", cos.dims(), sin.dims())));
    }
    Ok((cos, sin))
}

/// The positions of `com.microsoft` `RotaryEmbedding` (input `i`) as `[1 or batch, seq]`
/// indices into caches of `max_seq` rows: one start position (`[]` or `[1]`) becomes
/// `start .. start + seq`. Host positions must be in the caches.
fn positions(cx: &Cx, ins: &[Option<V>], i: usize, batch: usize, seq: usize, max_seq: usize) -> Result<V> {
    let v = cx.v(ins, i)?;
    int64(cx, v, i)?;
    let dims = v.dims().to_vec();
    let start = dims.len() <= 1 && dims.iter().product::<usize>() == 1;
    if !start && dims != [batch, seq] {
        return Err(
            cx.err(format!("position_ids has shape {dims:?}; expected [1] (a start position) or [batch, sequence] = [{batch}, {seq}]"))
        );
    }
    match v.as_host() {
        Some(h) if start => {
            let p0 = h.to_i64("position_ids")?[0];
            let all = V::host(HostTensor::i64(vec![1, seq], (0..seq as i64).map(|s| p0.saturating_add(s)).collect()));
            check_positions(cx, &all, i, max_seq)?;
            Ok(all)
        }
        Some(_) => {
            check_positions(cx, v, i, max_seq)?;
            Ok(v.clone())
        }
        None if start => {
            let p0 = cx.to_dev(v, i)?.reshape([1, 1])?;
            let steps: Vec<f32> = (0..seq).map(|s| s as f32).collect();
            let at = p0.add(&Tensor::from_vec(cx.dev(), &steps, [1, seq])?)?;
            Ok(V::dev(at, DType::I64))
        }
        None => Ok(v.clone()),
    }
}

/// Position ids (input `i`) must be `int64`; read on the host, each must be a row of caches
/// of `max` rows.
fn check_positions(cx: &Cx, v: &V, i: usize, max: usize) -> Result<()> {
    int64(cx, v, i)?;
    if let Some(h) = v.as_host() {
        if let Some(bad) = h.to_i64("position_ids")?.into_iter().find(|&p| p < 0 || p >= max as i64) {
            return Err(cx.err(format!("position {bad} is outside the caches' {max} positions")));
        }
    }
    Ok(())
}

fn int64(cx: &Cx, v: &V, i: usize) -> Result<()> {
    if v.dtype() != DType::I64 {
        return Err(cx.err(format!("position_ids (input {i}) is {}; expected int64", v.dtype().name())));
    }
    Ok(())
}

/// A 0/1 attribute (default 0).
pub(super) fn flag(cx: &Cx, name: &str) -> Result<bool> {
    match cx.node.int(name, 0)? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(cx.err(format!("{name} is {v}; expected 0 or 1"))),
    }
}

/// An integer attribute that may not be negative (default 0).
pub(super) fn non_negative(cx: &Cx, name: &str) -> Result<usize> {
    let v = cx.node.int(name, 0)?;
    usize::try_from(v).map_err(|_| cx.err(format!("{name} is {v}; it may not be negative")))
}
