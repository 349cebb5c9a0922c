//! The attention family: onnxruntime's `MultiHeadAttention`, `GroupQueryAttention` and
//! `Attention` (`com.microsoft`, `contrib_defs.cc` / `bert_defs.cc`). Each reads its inputs
//! into heads (`[batch, heads, sequence, head size]`), builds its masks as additive terms, and
//! calls [`attend`], the one attention computation of the importer: `softmax(scale · Q Kᵀ +
//! masks) V`, written with the tensor primitives (batched matrix products, a softmax,
//! reshapes), so every backend runs it and autodiff differentiates it.
//!
//! [`attend`] runs the fused attention primitive ([`Tensor::attention`]: one op on the CPU,
//! blocked over key tiles with an online softmax, never materialising the `S × T` scores)
//! whenever no score stage is asked for, with the softcap, the smooth softmax and a causal
//! exclusion shared by the batch as the op's options ([`AttentionOpts`]: the CPU kernel skips
//! the key tiles a causal block does not see) and the additive masks summed into one. With a
//! kept score stage, and on WebGPU and WebGL (which compose the op), the `[B, N, S, T]` scores
//! of every head are materialised by core's composition ([`Tensor::attention_composed_scores`]).
//!
//! What onnxruntime 1.20.1's CPU kernels (the oracle of the fixtures) do that is followed
//! here: a mask position adds `mask_filter_value` (default -10000) to the score, so a row whose
//! every key is masked averages all of them; a causal (`unidirectional`) exclusion removes the
//! key whatever `mask_filter_value` is ([`EXCLUDED`]); query row `i` of `S` sees key `j` of `T`
//! when `j <= i + T - S` (the new tokens are the last `S` of the `T`). Where that CPU kernel is
//! wrong or refuses, pixelgrad does what the operator documentation says, and no fixture pins
//! it: masks with a key length other than the query length (its CPU kernel lays the mask out
//! with the query length as the row length), `MultiHeadAttention` with past keys but no present
//! output (its CPU kernel then ignores the past), packed QKV / KV inputs (not implemented on
//! its CPU), `Attention` without a bias (its CPU kernel crashes).

use pixelgrad_core::{AttentionOpts, Tensor};

use super::context::{Cx, V};
use crate::host::DType;
use crate::Result;

/// What `pixelgrad inspect` says of the attention operators.
pub(super) const NOTE: &str =
    "runs as one fused attention op (online softmax over key tiles, no sequence x sequence scores; causal masks, softcap and smooth softmax inside it) on the CPU; as matrix products and a softmax, materialising the scores, on WebGPU and WebGL, and with a score output";

/// What a causal or out-of-window exclusion adds to a score: far below any score and any
/// `mask_filter_value` a model uses, so the key's weight is exactly 0 (onnxruntime skips it).
const EXCLUDED: f32 = AttentionOpts::EXCLUDED;

/// A stage of the scores [`attend`] can hand back as well (opset 23 `Attention`'s
/// `qk_matmul_output_mode`): `scale · Q Kᵀ`, plus the masks, after the softcap, after the
/// softmax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    Scaled,
    Masked,
    Capped,
    Weights,
}

/// `softmax(scale · q kᵀ + Σ adds) v` per head, with the options `how` (causal exclusion,
/// softcap, smooth softmax): `q` `[B, N, S, H]`, `k` `[B, Nkv, T, H]`, `v` `[B, Nkv, T, Hv]`
/// with `N` a multiple of `Nkv` (query head `h` reads key/value head `h / (N / Nkv)`), each of
/// `adds` broadcastable to `[B, N, S, T]`. Returns `[B, N, S, Hv]`, and the scores `[B, N, S,
/// T]` at stage `keep` if one is asked for.
///
/// [`Tensor::attention`] with the masks summed into one (fused where the backend runs it);
/// with a kept stage core's composition, which materialises the scores (see the module docs).
pub(super) fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    how: AttentionOpts,
    adds: &[Tensor],
    keep: Option<Stage>,
) -> Result<(Tensor, Option<Tensor>)> {
    let mut mask: Option<Tensor> = None;
    for a in adds {
        mask = Some(match mask {
            Some(m) => m.add(a)?,
            None => a.clone(),
        });
    }
    let Some(keep) = keep else {
        return Ok((q.attention(k, v, mask.as_ref(), how)?, None));
    };
    let (y, scores) = q.attention_composed_scores(k, v, mask.as_ref(), how)?;
    let kept = match keep {
        Stage::Scaled => scores.scaled,
        Stage::Masked => scores.masked,
        Stage::Capped => scores.capped,
        Stage::Weights => scores.weights,
    };
    Ok((y, Some(kept)))
}

/// `[B, S, N·H]` → `[B, N, S, H]`.
fn split_heads(x: &Tensor, n: usize) -> Result<Tensor> {
    let d = x.dims().to_vec();
    Ok(x.reshape([d[0], d[1], n, d[2] / n])?.permute(&[0, 2, 1, 3])?)
}

/// The past key and value, inputs `at` `[B, Nkv, P, H]` and `[B, Nkv, P, Hv]` for `want` =
/// `(B, Nkv, H, Hv)`, checked; `None` when neither is given or the past is empty (`P` = 0: what
/// a generation loop, and exporters' own examples, feed before the first token, so the present
/// is then the new keys and values alone).
fn past_kv(cx: &Cx, ins: &[Option<V>], at: (usize, usize), want: (usize, usize, usize, usize)) -> Result<Option<(Tensor, Tensor)>> {
    let (pk, pv) = match (cx.opt(ins, at.0), cx.opt(ins, at.1)) {
        (None, None) => return Ok(None),
        (Some(pk), Some(pv)) => (pk, pv),
        _ => return Err(cx.err("past_key and past_value must be given together")),
    };
    let (b, n, h, hv) = want;
    let p = pk.dims().get(2).copied().unwrap_or(0);
    if pk.dims() != [b, n, p, h] || pv.dims() != [b, n, p, hv] {
        return Err(cx.err(format!(
            "past_key {:?} / past_value {:?}; expected [{b}, {n}, P, {h}] and [{b}, {n}, P, {hv}]",
            pk.dims(),
            pv.dims()
        )));
    }
    if p == 0 {
        return Ok(None);
    }
    Ok(Some((cx.t(ins, at.0)?, cx.t(ins, at.1)?)))
}

/// `[B, N, S, H]` → `[B, S, N·H]`.
fn merge_heads(x: &Tensor) -> Result<Tensor> {
    let d = x.dims().to_vec();
    Ok(x.permute(&[0, 2, 1, 3])?.reshape([d[0], d[2], d[1] * d[3]])?)
}

/// The causal (and sliding-window) exclusions as an additive `[B, 1, S, T]` term, for a batch
/// whose rows sit at different positions (one offset for all is the op's causal option): query
/// row `i` of batch `b` sits at position `offsets[b] + i` and sees key `j` when `j <= pos`
/// (and, with a `window`, `j >= pos - window`).
fn causal(cx: &Cx, s: usize, t: usize, offsets: &[usize], window: Option<usize>) -> Result<Tensor> {
    cx.check_size(&[offsets.len(), s, t])?;
    let mut m = vec![0f32; offsets.len() * s * t];
    for (bi, &off) in offsets.iter().enumerate() {
        for i in 0..s {
            let pos = off + i;
            for j in 0..t {
                if j > pos || window.is_some_and(|w| j + w < pos) {
                    m[(bi * s + i) * t + j] = EXCLUDED;
                }
            }
        }
    }
    Ok(Tensor::from_vec(cx.dev(), &m, [offsets.len(), 1, s, t])?)
}

/// A key mask as an additive term broadcastable to `[B, N, S, T]`: `mask_filter_value` where a
/// key is masked, 0 elsewhere. Forms (onnxruntime's): `[B]` key lengths (keys from the length
/// on are masked); `[2B]` (only `Attention`) end positions then start positions; `[B, T]` and
/// `[B, S, T]` 1 (attend) / 0 (masked).
fn key_mask(cx: &Cx, m: &Tensor, what: &str, (b, s, t): (usize, usize, usize), mfv: f32, starts: bool) -> Result<Tensor> {
    let d = m.dims().to_vec();
    let keys = || -> Result<Tensor> { Ok(Tensor::arange(cx.dev(), t)?.reshape([1, t])?) };
    let masked = match d.as_slice() {
        [n] if *n == b => keys()?.ge(&m.reshape([b, 1])?)?.reshape([b, 1, 1, t])?,
        [n] if starts && *n == 2 * b => {
            let (end, start) = (m.slice(0, 0, b)?.reshape([b, 1])?, m.slice(0, b, 2 * b)?.reshape([b, 1])?);
            keys()?.ge(&end)?.maximum(&start.gt(&keys()?)?)?.reshape([b, 1, 1, t])?
        }
        [n, tt] if *n == b && *tt == t => m.gt_scalar(0.0)?.affine(-1.0, 1.0)?.reshape([b, 1, 1, t])?,
        [n, ss, tt] if *n == b && *ss == s && *tt == t => m.gt_scalar(0.0)?.affine(-1.0, 1.0)?.reshape([b, 1, s, t])?,
        _ => {
            let lengths = if starts { format!("[{b}] or [{}]", 2 * b) } else { format!("[{b}]") };
            return Err(cx.err(format!(
                "{what} has shape {d:?}; expected {lengths} (key lengths), [{b}, {t}] or [{b}, {s}, {t}] (batch {b}, query length {s}, total key length {t})"
            )));
        }
    };
    Ok(masked.mul_scalar(mfv)?)
}

/// An `attention_bias` input: `[B or 1, N or 1, S, T]`, added to the scores.
fn attention_bias(cx: &Cx, ins: &[Option<V>], i: usize, (b, n, s, t): (usize, usize, usize, usize)) -> Result<Option<Tensor>> {
    if cx.opt(ins, i).is_none() {
        return Ok(None);
    }
    let a = cx.t(ins, i)?;
    let d = a.dims();
    let ok = d.len() == 4 && (d[0] == b || d[0] == 1) && (d[1] == n || d[1] == 1) && d[2] == s && d[3] == t;
    if !ok {
        return Err(cx.err(format!("attention_bias (input {i}) has shape {d:?}; expected [{b} or 1, {n} or 1, {s}, {t}]")));
    }
    Ok(Some(a))
}

/// A positive head-count attribute.
fn heads(cx: &Cx, name: &str) -> Result<usize> {
    let n = cx.node.int(name, 0)?;
    if n <= 0 {
        return Err(cx.err(format!("attribute '{name}' is {n}; it must be a positive number of heads")));
    }
    Ok(n as usize)
}

/// The `scale` attribute: `1 / sqrt(head size)` when absent or 0 (onnxruntime's default).
fn scale(cx: &Cx, head: usize) -> Result<f32> {
    let sc = cx.node.float("scale", 0.0)?;
    if !sc.is_finite() {
        return Err(cx.err(format!("scale {sc} is not a finite number")));
    }
    Ok(if sc == 0.0 { 1.0 / (head as f32).sqrt() } else { sc })
}

fn mask_filter_value(cx: &Cx) -> Result<f32> {
    let v = cx.node.float("mask_filter_value", -10000.0)?;
    if !v.is_finite() {
        return Err(cx.err(format!("mask_filter_value {v} is not a finite number")));
    }
    Ok(v)
}

/// Refuses an attribute pixelgrad does not implement when it is set to anything but `off`.
fn refuse_unless(cx: &Cx, name: &str, off: i64, why: &str) -> Result<()> {
    let v = cx.node.int(name, off)?;
    if v != off {
        return Err(cx.err(format!("attribute '{name}' = {v} is not supported ({why})")));
    }
    Ok(())
}

fn flag(cx: &Cx, name: &str) -> Result<bool> {
    match cx.node.int(name, 0)? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(cx.err(format!("attribute '{name}' is {v}; expected 0 or 1"))),
    }
}

/// A vector input split into the bias of Q, K and V (`[Dq + Dk + Dv]`), each `[1, N, 1, H]`.
fn bias_parts(cx: &Cx, bias: &Tensor, n: usize, (dq, dk, dv): (usize, usize, usize)) -> Result<[Tensor; 3]> {
    if bias.dims() != [dq + dk + dv] {
        return Err(cx.err(format!("bias (input 3) has shape {:?}; expected [{}] (Q {dq} + K {dk} + V {dv})", bias.dims(), dq + dk + dv)));
    }
    let part = |a: usize, w: usize| -> Result<Tensor> { Ok(bias.slice(0, a, a + w)?.reshape([1, n, 1, w / n])?) };
    Ok([part(0, dq)?, part(dq, dk)?, part(dq + dk, dv)?])
}

/// The values at the output positions a node names (the session pairs results with outputs by
/// position), in the first input's element type.
fn outputs(cx: &Cx, dt: DType, values: Vec<Tensor>) -> Vec<V> {
    let mut outs: Vec<V> = values.into_iter().map(|t| V::dev(t, dt)).collect();
    outs.truncate(cx.node.outputs.len());
    outs
}

/// `com.microsoft` `MultiHeadAttention`: `query` `[B, S, D]` (or packed QKV `[B, S, N, 3,
/// H]`), `key` / `value` `[B, L, D]` / `[B, L, Dv]`, already in heads `[B, N, L, H]` (cross
/// attention: no bias is added to them) or packed KV `[B, L, N, 2, H]` in `key`; optional
/// `bias` `[D + D + Dv]`, `key_padding_mask` (`[B]` lengths, `[B, T]`, `[B, S, T]`),
/// `attention_bias` `[B or 1, N or 1, S, T]`, `past_key` / `past_value` `[B, N, P, H]`.
/// Outputs: `[B, S, N·Hv]`, and the keys and values attended to (`[B, N, P + L, H]`).
pub(super) fn multi_head_attention(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    cx.node.only_attrs(&["num_heads", "scale", "mask_filter_value", "unidirectional"])?;
    let n = heads(cx, "num_heads")?;
    let causal_on = flag(cx, "unidirectional")?;
    let mfv = mask_filter_value(cx)?;
    let dt = cx.dtype0(ins);
    let query = cx.t(ins, 0)?;
    let qd = query.dims().to_vec();
    let has = |i: usize| cx.opt(ins, i).is_some();
    // (q, k, v) in heads; whether the bias applies to k and v
    let (q, k, v, kv_biased) = match qd.len() {
        5 => {
            if qd[2] != n || qd[3] != 3 {
                return Err(cx.err(format!("query has shape {qd:?}; packed QKV is [batch, sequence, {n} heads, 3, head size]")));
            }
            if has(1) || has(2) {
                return Err(cx.err("query is packed QKV ([B, S, N, 3, H]); key and value must then be absent"));
            }
            let part =
                |i: usize| -> Result<Tensor> { Ok(query.slice(3, i, i + 1)?.reshape([qd[0], qd[1], n, qd[4]])?.permute(&[0, 2, 1, 3])?) };
            (part(0)?, part(1)?, part(2)?, true)
        }
        3 => {
            if qd[2] % n != 0 {
                return Err(cx.err(format!("query has shape {qd:?}; its hidden size {} is not a multiple of num_heads {n}", qd[2])));
            }
            let q = split_heads(&query, n)?;
            let (b, h) = (qd[0], qd[2] / n);
            let key = cx.t(ins, 1).map_err(|_| cx.err("key (input 1) is missing; only a packed QKV query goes without it"))?;
            let kd = key.dims().to_vec();
            match kd.len() {
                5 => {
                    if kd[0] != b || kd[2] != n || kd[3] != 2 || kd[4] != h {
                        return Err(cx.err(format!("key has shape {kd:?}; packed KV is [{b}, kv length, {n}, 2, {h}]")));
                    }
                    if has(2) {
                        return Err(cx.err("key is packed KV ([B, L, N, 2, H]); value must then be absent"));
                    }
                    let part =
                        |i: usize| -> Result<Tensor> { Ok(key.slice(3, i, i + 1)?.reshape([b, kd[1], n, h])?.permute(&[0, 2, 1, 3])?) };
                    (q, part(0)?, part(1)?, true)
                }
                3 | 4 => {
                    let value = cx.t(ins, 2).map_err(|_| cx.err("value (input 2) is missing"))?;
                    let vd = value.dims().to_vec();
                    if kd.len() == 3 {
                        if kd[0] != b || kd[2] != qd[2] || vd.len() != 3 || vd[0] != b || vd[1] != kd[1] || vd[2] % n != 0 {
                            return Err(cx.err(format!(
                                "key {kd:?} and value {vd:?} do not fit query {qd:?}: expected [{b}, L, {}] and [{b}, L, Dv] with Dv a multiple of {n}",
                                qd[2]
                            )));
                        }
                        (q, split_heads(&key, n)?, split_heads(&value, n)?, true)
                    } else {
                        if kd[0] != b || kd[1] != n || kd[3] != h || vd.len() != 4 || vd[..3] != kd[..3] {
                            return Err(cx.err(format!(
                                "key {kd:?} and value {vd:?} do not fit query {qd:?}: in heads they are [{b}, {n}, L, {h}] and [{b}, {n}, L, Hv]"
                            )));
                        }
                        if has(6) || has(7) {
                            return Err(cx.err("past_key / past_value with key and value already in heads ([B, N, L, H], cross attention) are not supported"));
                        }
                        (q, key, value, false)
                    }
                }
                _ => return Err(cx.err(format!("key has shape {kd:?}; expected [B, L, D], [B, N, L, H] or packed KV [B, L, N, 2, H]"))),
            }
        }
        _ => return Err(cx.err(format!("query has shape {qd:?}; expected [batch, sequence, hidden] or packed QKV [B, S, N, 3, H]"))),
    };
    let (b, s, h, hv) = (q.dims()[0], q.dims()[2], q.dims()[3], v.dims()[3]);
    let (mut q, mut k, mut v) = (q, k, v);
    if has(3) {
        let [bq, bk, bv] = bias_parts(cx, &cx.t(ins, 3)?, n, (n * h, n * h, n * hv))?;
        q = q.add(&bq)?;
        if kv_biased {
            k = k.add(&bk)?;
            v = v.add(&bv)?;
        }
    }
    if let Some((pk, pv)) = past_kv(cx, ins, (6, 7), (b, n, h, hv))? {
        k = Tensor::concat(&[&pk, &k], 2)?;
        v = Tensor::concat(&[&pv, &v], 2)?;
    }
    let t = k.dims()[2];
    let mut adds = Vec::new();
    if has(4) {
        adds.push(key_mask(cx, &cx.t(ins, 4)?, "key_padding_mask (input 4)", (b, s, t), mfv, false)?);
    }
    adds.extend(attention_bias(cx, ins, 5, (b, n, s, t))?);
    let mut how = AttentionOpts::scaled(scale(cx, h)?);
    if causal_on {
        if t < s {
            return Err(
                cx.err(format!("unidirectional attention of {s} queries over {t} keys: the keys must include the queries' positions"))
            );
        }
        how = how.causal(t - s);
    }
    let y = merge_heads(&attend(&q, &k, &v, how, &adds, None)?.0)?;
    Ok(outputs(cx, dt, vec![y, k, v]))
}

/// `com.microsoft` `GroupQueryAttention`: `query` `[B, S, N·H]` (or packed QKV `[B, S, (N + 2
/// Nkv)·H]`), `key` / `value` `[B, S, Nkv·H]`, optional `past_key` / `past_value` `[B, Nkv, P,
/// H]`, `seqlens_k` `[B]` (each batch's total length minus one) and `total_sequence_length`
/// (host values; the session reads them back). Causal; the `S` new keys of batch `b` go to
/// positions `seqlens_k[b] + 1 - S ..` of the present (0 .. for the first prompt, when `S` is
/// the total length), after that batch's past; the present is `max(P, total)` long, zeros
/// past each batch's length. `local_window_size`, `softcap`, `smooth_softmax` and `scale` are
/// read. With `do_rotary`, the new queries and keys are rotated ([`gqa_rotary`]) before
/// attention, and the present holds the rotated keys; without it, `cos_cache` and `sin_cache`
/// are not read (as onnxruntime's kernel does not read them).
pub(super) fn group_query_attention(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&[
        "num_heads",
        "kv_num_heads",
        "scale",
        "softcap",
        "smooth_softmax",
        "local_window_size",
        "do_rotary",
        "rotary_interleaved",
    ])?;
    let (rotary, interleaved) = (flag(cx, "do_rotary")?, flag(cx, "rotary_interleaved")?);
    let (n, nkv) = (heads(cx, "num_heads")?, heads(cx, "kv_num_heads")?);
    if n % nkv != 0 {
        return Err(cx.err(format!("num_heads {n} is not a multiple of kv_num_heads {nkv}")));
    }
    let smooth = flag(cx, "smooth_softmax")?;
    let softcap = node.float("softcap", 0.0)?;
    if !(softcap.is_finite() && softcap >= 0.0) {
        return Err(cx.err(format!("softcap {softcap} must be a finite number, not negative")));
    }
    let window = match node.int("local_window_size", -1)? {
        -1 => None,
        w if w >= 0 => Some(w as usize),
        w => return Err(cx.err(format!("local_window_size {w} must be -1 (no window) or a number of keys"))),
    };
    let dt = cx.dtype0(ins);
    let query = cx.t(ins, 0)?;
    let qd = query.dims().to_vec();
    if qd.len() != 3 {
        return Err(cx.err(format!("query has shape {qd:?}; expected [batch, sequence, hidden]")));
    }
    let (b, s) = (qd[0], qd[1]);
    let has = |i: usize| cx.opt(ins, i).is_some();
    let (q, k, v, h) = if !has(1) && !has(2) {
        let parts = n + 2 * nkv;
        if qd[2] % parts != 0 {
            return Err(cx.err(format!("packed QKV query {qd:?}: its last axis is not (num_heads {n} + 2 kv_num_heads {nkv}) heads")));
        }
        let h = qd[2] / parts;
        let q = query.slice(2, 0, n * h)?;
        (q, query.slice(2, n * h, (n + nkv) * h)?, query.slice(2, (n + nkv) * h, parts * h)?, h)
    } else {
        if qd[2] % n != 0 {
            return Err(cx.err(format!("query has shape {qd:?}; its hidden size is not a multiple of num_heads {n}")));
        }
        let h = qd[2] / n;
        let (key, value) = (cx.t(ins, 1)?, cx.t(ins, 2)?);
        if key.dims() != [b, s, nkv * h] || value.dims() != [b, s, nkv * h] {
            return Err(cx.err(format!(
                "key {:?} / value {:?}; expected [{b}, {s}, {}] (kv_num_heads {nkv} of head size {h})",
                key.dims(),
                value.dims(),
                nkv * h
            )));
        }
        (query, key, value, h)
    };
    let (q, k, v) = (split_heads(&q, n)?, split_heads(&k, nkv)?, split_heads(&v, nkv)?);
    let past = past_kv(cx, ins, (3, 4), (b, nkv, h, h))?.map(|(pk, pv)| {
        let p = pk.dims()[2];
        (pk, pv, p)
    });
    let seqlens = cx.h(ins, 5, "seqlens_k")?.to_i64("seqlens_k")?;
    let total = cx.h(ins, 6, "total_sequence_length")?.to_i64("total_sequence_length")?;
    if seqlens.len() != b || total.len() != 1 {
        return Err(cx.err(format!(
            "seqlens_k has {} values and total_sequence_length {}; expected {b} (one per batch) and 1",
            seqlens.len(),
            total.len()
        )));
    }
    let total = total[0];
    let p = past.as_ref().map_or(0, |x| x.2);
    if total < s as i64 || total > (p + s) as i64 {
        return Err(cx.err(format!("total_sequence_length {total} must be between the query length {s} and past {p} + {s}")));
    }
    let len = p.max(total as usize);
    let first_prompt = total == s as i64;
    let mut offsets = Vec::with_capacity(b);
    for (bi, &sk) in seqlens.iter().enumerate() {
        let off = if first_prompt { 0 } else { sk + 1 - s as i64 };
        if off < 0 || off as usize > p || sk >= total {
            return Err(cx.err(format!(
                "seqlens_k[{bi}] = {sk}: with {s} new tokens, a past of {p} and total_sequence_length {total} it must be in [{}, {}]",
                s as i64 - 1,
                (p + s).min(total as usize) - 1
            )));
        }
        offsets.push(off as usize);
    }
    let (q, k) = if rotary { gqa_rotary(cx, ins, &q, &k, &offsets, interleaved)? } else { (q, k) };
    // the present: each batch's past, then its new keys, then zeros
    let place = |new: &Tensor, old: Option<&Tensor>| -> Result<Tensor> {
        if first_prompt && len == s {
            return Ok(new.clone());
        }
        let mut rows = Vec::with_capacity(b);
        for (bi, &off) in offsets.iter().enumerate() {
            let mut parts = Vec::new();
            if off > 0 {
                let old = old.expect("offsets above 0 only with a past");
                parts.push(old.slice(0, bi, bi + 1)?.slice(2, 0, off)?);
            }
            parts.push(new.slice(0, bi, bi + 1)?);
            if len > off + s {
                parts.push(Tensor::zeros(cx.dev(), [1, nkv, len - off - s, h])?);
            }
            let refs: Vec<&Tensor> = parts.iter().collect();
            rows.push(if refs.len() == 1 { parts[0].clone() } else { Tensor::concat(&refs, 2)? });
        }
        let refs: Vec<&Tensor> = rows.iter().collect();
        Ok(if b == 1 { rows[0].clone() } else { Tensor::concat(&refs, 0)? })
    };
    let pk = place(&k, past.as_ref().map(|x| &x.0))?;
    let pv = place(&v, past.as_ref().map(|x| &x.1))?;
    let mut how = AttentionOpts { smooth, softcap: (softcap > 0.0).then_some(softcap), ..AttentionOpts::scaled(scale(cx, h)?) };
    // one offset for the batch: the op's causal option; otherwise a mask of the positions
    let adds = if offsets.iter().all(|&o| o == offsets[0]) {
        how = AttentionOpts { window, ..how.causal(offsets[0]) };
        vec![]
    } else {
        vec![causal(cx, s, len, &offsets, window)?]
    };
    let y = merge_heads(&attend(&q, &pk, &pv, how, &adds, None)?.0)?;
    Ok(outputs(cx, dt, vec![y, pk, pv]))
}

/// `GroupQueryAttention`'s `do_rotary`: the new queries `q` `[B, N, S, H]` and keys `k` `[B,
/// Nkv, S, H]` rotated as `RotaryEmbedding` rotates them (`rotary_interleaved` pairs
/// neighbours), by the angles at the tokens' positions: new token `i` of batch `b` sits at
/// `offsets[b] + i`, as in the causal mask. `cos_cache` and `sin_cache` (inputs 7 and 8) are
/// `[max_sequence, rotary_dim / 2]`; a rotary dimension below the head size rotates the first
/// features of each head and keeps the rest.
fn gqa_rotary(cx: &Cx, ins: &[Option<V>], q: &Tensor, k: &Tensor, offsets: &[usize], interleaved: bool) -> Result<(Tensor, Tensor)> {
    if cx.opt(ins, 7).is_none() || cx.opt(ins, 8).is_none() {
        return Err(cx.err("do_rotary needs cos_cache and sin_cache (inputs 7 and 8)"));
    }
    let (cos, sin) = super::rotary::caches(cx, ins, 7, 8)?;
    let (max_seq, width) = (cos.dims()[0], cos.dims()[1]);
    let (b, s, h) = (q.dims()[0], q.dims()[2], q.dims()[3]);
    let rd = 2 * width;
    if width == 0 || rd > h {
        return Err(
            cx.err(format!("cos_cache and sin_cache are {:?}: twice their width must be between 2 and the head size {h}", cos.dims()))
        );
    }
    let last = offsets.iter().max().copied().unwrap_or(0) + s;
    if last > max_seq {
        return Err(cx.err(format!("positions up to {} are outside the caches' {max_seq} positions", last - 1)));
    }
    let pos: Vec<i64> = offsets.iter().flat_map(|&o| (o..o + s).map(|p| p as i64)).collect();
    let pos = V::host(crate::host::HostTensor::i64(vec![b, s], pos));
    let at = |c: &Tensor| -> Result<Tensor> { Ok(super::movement::gather_along(cx, c, 0, &pos)?.reshape([b, 1, s, width])?) };
    let (c, sn) = (at(&cos)?, at(&sin)?);
    let turn = |x: &Tensor| super::rotary::rotate(x, &c, &sn, rd, interleaved);
    Ok((turn(q)?, turn(k)?))
}

/// `com.microsoft` `Attention`: the projections and attention of a BERT / GPT-2 layer.
/// `input` `[B, S, In]` times `weights` `[In, Dq + Dk + Dv]` plus `bias` (`qkv_hidden_sizes`
/// gives the three widths, each `D` by default), `mask_index` (`[B]` key lengths, `[2B]` ends
/// then starts, `[B, T]`, `[B, S, T]`), `past` `[2, B, N, P, H]`, `attention_bias`. Outputs
/// `[B, S, Dv]` and `present` `[2, B, N, P + S, H]`. Rotary embedding, a shared past/present
/// buffer (`past_sequence_length`) and 4-D (Megatron) masks are refused.
pub(super) fn attention(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&[
        "num_heads",
        "qkv_hidden_sizes",
        "unidirectional",
        "mask_filter_value",
        "scale",
        "do_rotary",
        "past_present_share_buffer",
        "rotary_embedding_dim",
    ])?;
    refuse_unless(cx, "do_rotary", 0, "rotary embedding inside Attention; a separate RotaryEmbedding node is")?;
    refuse_unless(cx, "past_present_share_buffer", 0, "a shared past/present buffer; past and present are separate tensors")?;
    if node.has("rotary_embedding_dim") {
        return Err(cx.err("attribute 'rotary_embedding_dim' is not supported (rotary embedding inside Attention)"));
    }
    if cx.opt(ins, 6).is_some() {
        return Err(cx.err("past_sequence_length (input 6) is not supported: it goes with a shared past/present buffer"));
    }
    let n = heads(cx, "num_heads")?;
    let causal_on = flag(cx, "unidirectional")?;
    let mfv = mask_filter_value(cx)?;
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    let w = cx.t(ins, 1)?;
    let (xd, wd) = (x.dims().to_vec(), w.dims().to_vec());
    if xd.len() != 3 || wd.len() != 2 || wd[0] != xd[2] {
        return Err(cx.err(format!("input {xd:?} and weights {wd:?}; expected [batch, sequence, in] and [in, Dq + Dk + Dv]")));
    }
    let (b, s) = (xd[0], xd[1]);
    let (dq, dk, dv) = match node.ints("qkv_hidden_sizes")? {
        None if wd[1] % 3 == 0 => (wd[1] / 3, wd[1] / 3, wd[1] / 3),
        None => return Err(cx.err(format!("weights {wd:?}: {} columns are not three equal widths; give qkv_hidden_sizes", wd[1]))),
        Some(v) if v.len() == 3 && v.iter().all(|&d| d > 0) => (v[0] as usize, v[1] as usize, v[2] as usize),
        Some(v) => return Err(cx.err(format!("qkv_hidden_sizes {v:?} must be three positive widths"))),
    };
    if dq + dk + dv != wd[1] || dq != dk || dq % n != 0 || dv % n != 0 {
        return Err(cx.err(format!(
            "qkv_hidden_sizes [{dq}, {dk}, {dv}] with weights {wd:?} and num_heads {n}: they must sum to {}, Q and K be equal, and each be a multiple of num_heads",
            wd[1]
        )));
    }
    let mut qkv = x.reshape([b * s, xd[2]])?.matmul(&w)?;
    if cx.opt(ins, 2).is_some() {
        let bias = cx.t(ins, 2)?;
        if bias.dims() != [wd[1]] {
            return Err(cx.err(format!("bias (input 2) has shape {:?}; expected [{}]", bias.dims(), wd[1])));
        }
        qkv = qkv.add(&bias)?;
    }
    let qkv = qkv.reshape([b, s, wd[1]])?;
    let q = split_heads(&qkv.slice(2, 0, dq)?, n)?;
    let mut k = split_heads(&qkv.slice(2, dq, dq + dk)?, n)?;
    let mut v = split_heads(&qkv.slice(2, dq + dk, wd[1])?, n)?;
    let (h, hv) = (dq / n, dv / n);
    if cx.opt(ins, 4).is_some() {
        let past = cx.t(ins, 4)?;
        let pd = past.dims().to_vec();
        if h != hv || pd.len() != 5 || pd[0] != 2 || pd[1] != b || pd[2] != n || pd[4] != h {
            return Err(cx.err(format!(
                "past has shape {pd:?}; expected [2, {b}, {n}, P, {h}] (and Q, K and V of one width, here [{dq}, {dk}, {dv}])"
            )));
        }
        let part = |i: usize| -> Result<Tensor> { Ok(past.slice(0, i, i + 1)?.reshape([b, n, pd[3], h])?) };
        k = Tensor::concat(&[&part(0)?, &k], 2)?;
        v = Tensor::concat(&[&part(1)?, &v], 2)?;
    }
    let t = k.dims()[2];
    let mut adds = Vec::new();
    if cx.opt(ins, 3).is_some() {
        let m = cx.t(ins, 3)?;
        if m.rank() == 4 {
            return Err(cx.err(format!("mask_index has shape {:?}: 4-D (Megatron) masks are not supported", m.dims())));
        }
        adds.push(key_mask(cx, &m, "mask_index (input 3)", (b, s, t), mfv, true)?);
    }
    adds.extend(attention_bias(cx, ins, 5, (b, n, s, t))?);
    let mut how = AttentionOpts::scaled(scale(cx, h)?);
    if causal_on {
        how = how.causal(t - s);
    }
    let y = merge_heads(&attend(&q, &k, &v, how, &adds, None)?.0)?;
    let mut values = vec![y];
    if node.output(1).is_some() {
        if h != hv {
            return Err(cx.err(format!("output present stacks keys and values; their widths differ (qkv_hidden_sizes [{dq}, {dk}, {dv}])")));
        }
        values.push(Tensor::concat(&[&k.unsqueeze(0)?, &v.unsqueeze(0)?], 0)?);
    }
    Ok(outputs(cx, dt, values))
}

/// ONNX `Attention` (opset 23): `Q`, `K`, `V` `[B, S, hidden]` (with `q_num_heads` and
/// `kv_num_heads`) or in heads `[B, N, S, H]`, `[B, Nkv, L, H]`, `[B, Nkv, L, Hv]` (grouped
/// when `N` is a multiple of `Nkv`); `attn_mask` boolean (true attends) or float (added),
/// broadcastable to `[B, N, S, T]`, its last axis possibly shorter than `T` (the keys past it
/// are masked); `past_key` / `past_value` `[B, Nkv, P, H]`; `is_causal` (upper-left aligned, as
/// the operator defines it: query `i` sees key `j` when `j <= P + i`); `scale`; `softcap`
/// (after the masks); `qk_matmul_output_mode` for the fourth output; `softmax_precision`
/// (accepted: the softmax is computed in f32). Outputs `Y` (the query's layout), the
/// presents `[B, Nkv, T, H]` and the scores `[B, N, S, T]` at the mode's stage.
pub(super) fn onnx_attention(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale", "softcap", "softmax_precision"])?;
    let causal_on = flag(cx, "is_causal")?;
    let keep = match node.int("qk_matmul_output_mode", 0)? {
        0 => Stage::Scaled,
        1 => Stage::Masked,
        2 => Stage::Capped,
        3 => Stage::Weights,
        m => return Err(cx.err(format!("attribute 'qk_matmul_output_mode' is {m}; expected 0 to 3"))),
    };
    let softcap = node.float("softcap", 0.0)?;
    if !(softcap.is_finite() && softcap >= 0.0) {
        return Err(cx.err(format!("softcap {softcap} must be a finite number, not negative")));
    }
    let dt = cx.dtype0(ins);
    let (q, k, v) = (cx.t(ins, 0)?, cx.t(ins, 1)?, cx.t(ins, 2)?);
    let (qd, kd, vd) = (q.dims().to_vec(), k.dims().to_vec(), v.dims().to_vec());
    let rank = qd.len();
    if !(rank == 3 || rank == 4) || kd.len() != rank || vd.len() != rank {
        return Err(cx.err(format!(
            "Q {qd:?}, K {kd:?}, V {vd:?}: expected all [batch, sequence, hidden] or all [batch, heads, sequence, head size]"
        )));
    }
    let (q, k, v) = if rank == 3 {
        let (n, nkv) = (heads(cx, "q_num_heads")?, heads(cx, "kv_num_heads")?);
        let fits = kd[0] == qd[0] && vd[0] == qd[0] && vd[1] == kd[1] && qd[2] % n == 0 && kd[2] % nkv == 0 && vd[2] % nkv == 0;
        if !fits || qd[2] / n != kd[2] / nkv {
            return Err(cx.err(format!(
                "Q {qd:?}, K {kd:?}, V {vd:?} with q_num_heads {n} and kv_num_heads {nkv}: one batch, K and V of one length, and Q and K of one head size"
            )));
        }
        (split_heads(&q, n)?, split_heads(&k, nkv)?, split_heads(&v, nkv)?)
    } else {
        let fits = kd[0] == qd[0] && vd[0] == qd[0] && vd[1] == kd[1] && vd[2] == kd[2] && kd[3] == qd[3] && qd[1] % kd[1] == 0;
        if !fits {
            return Err(cx.err(format!(
                "Q {qd:?}, K {kd:?}, V {vd:?}: expected [B, N, S, H], [B, Nkv, L, H], [B, Nkv, L, Hv] with N a multiple of Nkv"
            )));
        }
        (q, k, v)
    };
    let (b, n, s, h) = (q.dims()[0], q.dims()[1], q.dims()[2], q.dims()[3]);
    let (nkv, hv) = (k.dims()[1], v.dims()[3]);
    if n % nkv != 0 {
        return Err(cx.err(format!("{n} query heads are not a multiple of {nkv} key/value heads")));
    }
    let (k, v, p) = match past_kv(cx, ins, (4, 5), (b, nkv, h, hv))? {
        None => (k, v, 0),
        Some((pk, pv)) => {
            let p = pk.dims()[2];
            (Tensor::concat(&[&pk, &k], 2)?, Tensor::concat(&[&pv, &v], 2)?, p)
        }
    };
    let t = k.dims()[2];
    let mut adds = Vec::new();
    if let Some(mv) = cx.opt(ins, 3) {
        let boolean = mv.dtype() == DType::Bool;
        let m = cx.t(ins, 3)?;
        let md = m.dims().to_vec();
        let mut d4 = vec![1usize; 4usize.saturating_sub(md.len())];
        d4.extend(&md);
        let ok = md.len() <= 4 && (d4[0] == 1 || d4[0] == b) && (d4[1] == 1 || d4[1] == n) && (d4[2] == 1 || d4[2] == s) && d4[3] <= t;
        if !ok {
            return Err(cx.err(format!(
                "attn_mask has shape {md:?}; expected one broadcastable to [{b}, {n}, {s}, {t}] (its last axis at most {t})"
            )));
        }
        let mut m = m.reshape(d4.clone())?;
        if boolean {
            m = m.gt_scalar(0.0)?.affine(-EXCLUDED, EXCLUDED)?;
        }
        if d4[3] < t {
            let pad = Tensor::full(cx.dev(), [d4[0], d4[1], d4[2], t - d4[3]], EXCLUDED)?;
            m = Tensor::concat(&[&m, &pad], 3)?;
        }
        adds.push(m);
    }
    let sc = if node.has("scale") { node.float("scale", 1.0)? } else { 1.0 / (h as f32).sqrt() };
    if !sc.is_finite() {
        return Err(cx.err(format!("scale {sc} is not a finite number")));
    }
    let softcap = (softcap > 0.0).then_some(softcap);
    let mut how = AttentionOpts { softcap, softcap_after_masks: softcap.is_some(), ..AttentionOpts::scaled(sc) };
    if causal_on {
        how = how.causal(p);
    }
    let (y, scores) = attend(&q, &k, &v, how, &adds, node.output(3).map(|_| keep))?;
    let y = if rank == 3 { merge_heads(&y)? } else { y };
    let mut values = vec![y, k, v];
    values.extend(scores);
    Ok(outputs(cx, dt, values))
}
