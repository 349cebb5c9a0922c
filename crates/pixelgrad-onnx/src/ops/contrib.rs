//! onnxruntime's transformer contrib operators that its optimiser fuses GELUs and layer
//! normalisations into: `Gelu`, `FastGelu`, `BiasGelu`, `QuickGelu` (`com.microsoft`),
//! `SimplifiedLayerNormalization` (RMS normalisation, which onnxruntime registers in the
//! default domain), `SkipLayerNormalization` and `SkipSimplifiedLayerNormalization`
//! (`com.microsoft`), and `EmbedLayerNormalization` (`com.microsoft`: BERT's embeddings and
//! their layer normalisation in one node). Each is written with the tensor primitives, so every backend runs it and
//! autodiff differentiates it; the attributes and defaults are onnxruntime's operator schemas
//! (`docs/ContribOperators.md`, `contrib_defs.cc`).

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use super::elementwise::gelu_erf;
use super::movement::gather_along;
use crate::host::{DType, HostTensor};
use crate::shapes::norm_axis;
use crate::Result;

/// `com.microsoft` `Gelu`: `0.5 x (1 + erf(x / sqrt 2))`, the exact GELU (no attributes).
pub(super) fn gelu(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    cx.node.only_attrs(&[])?;
    let dt = cx.dtype0(ins);
    Ok(vec![V::dev(gelu_erf(&cx.t(ins, 0)?)?, dt)])
}

/// `com.microsoft` `FastGelu`: the tanh approximation
/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` of `x + bias` (the bias, optional, one
/// value per element of the last axis).
pub(super) fn fast_gelu(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    cx.node.only_attrs(&[])?;
    let dt = cx.dtype0(ins);
    let mut x = cx.t(ins, 0)?;
    if cx.opt(ins, 1).is_some() {
        x = x.add(&last_axis_vector(cx, ins, 1, "bias", &x)?)?;
    }
    Ok(vec![V::dev(x.gelu()?, dt)])
}

/// `com.microsoft` `BiasGelu`: the exact GELU of `A + B`, `B` one value per element of `A`'s
/// last axis.
pub(super) fn bias_gelu(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    cx.node.only_attrs(&[])?;
    let dt = cx.dtype0(ins);
    let a = cx.t(ins, 0)?;
    let z = a.add(&last_axis_vector(cx, ins, 1, "bias B", &a)?)?;
    Ok(vec![V::dev(gelu_erf(&z)?, dt)])
}

/// `com.microsoft` `QuickGelu`: `x * sigmoid(alpha x)`, `alpha` 1.702 unless given.
pub(super) fn quick_gelu(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["alpha"])?;
    let alpha = node.float("alpha", 1.702)?;
    if !alpha.is_finite() {
        return Err(cx.err(format!("alpha {alpha} is not a finite number")));
    }
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    Ok(vec![V::dev(x.mul(&x.mul_scalar(alpha)?.sigmoid()?)?, dt)])
}

/// `SimplifiedLayerNormalization` (RMS normalisation): over the axes from `axis` (default -1)
/// on, `y = x / sqrt(mean(x^2) + epsilon) * scale` (`epsilon` 1e-5), `scale` of the normalised
/// axes' shape; the optional second output is `1 / sqrt(mean(x^2) + epsilon)` with the
/// normalised axes kept as size 1, as onnxruntime makes it. `stash_type` picks f32 statistics,
/// which pixelgrad always computes.
pub(super) fn simplified_layer_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    rms_normalization_over(cx, ins, false)
}

/// `RMSNormalization` (opset 23), the standard form of `SimplifiedLayerNormalization`: the
/// same normalisation (`axis` -1, `epsilon` 1e-5 unless given), with a `scale` that need only
/// broadcast to the normalised axes, and one output. `stash_type` picks f32 statistics,
/// which pixelgrad always computes.
pub(super) fn rms_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    rms_normalization_over(cx, ins, true)
}

fn rms_normalization_over(cx: &Cx, ins: &[Option<V>], broadcast_scale: bool) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["axis", "epsilon", "stash_type"])?;
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let a = norm_axis(node, node.int("axis", -1)?, d.len())?;
    let eps = epsilon(cx, 1e-5)?;
    let scale = cx.t(ins, 1)?;
    let normed = &d[a..];
    let sd = scale.dims();
    // numpy broadcasting of scale into the normalised axes, when allowed: aligned on the right,
    // each of its axes 1 or the normalised one
    let fits = sd == normed
        || (broadcast_scale && sd.len() <= normed.len() && sd.iter().rev().zip(normed.iter().rev()).all(|(&s, &n)| s == 1 || s == n));
    if !fits {
        let want = if broadcast_scale { "broadcast to" } else { "equal" };
        return Err(cx.err(format!("scale has shape {sd:?}; it must {want} the normalised axes of input {d:?} from axis {a}, {normed:?}")));
    }
    let outer: usize = d[..a].iter().product();
    let h = x.reshape([outer, normed.iter().product::<usize>()])?;
    let inv = rms_inverse(&h, eps)?;
    let y = h.mul(&inv)?.reshape(d.clone())?.mul(&scale)?;
    let stat: Vec<usize> = d.iter().enumerate().map(|(i, &n)| if i < a { n } else { 1 }).collect();
    let mut outs = vec![V::dev(y, dt), V::dev(inv.reshape(stat)?, DType::F32)];
    outs.truncate(node.outputs.len());
    Ok(outs)
}

/// `com.microsoft` `SkipLayerNormalization`: the layer normalisation over the last axis of
/// `input + skip (+ bias)`, times `gamma` (plus `beta`), `epsilon` 1e-12 unless given.
/// Outputs: the result, then (optional) the mean and the inverse standard deviation of each
/// row (the last axis kept as size 1) and the sum itself.
pub(super) fn skip_layer_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    skip_norm(cx, ins, false)
}

/// `com.microsoft` `SkipSimplifiedLayerNormalization`: as `SkipLayerNormalization`, with an
/// RMS normalisation (no mean subtracted, no `beta`; inputs `input, skip, gamma, bias`). Its
/// optional `mean` output has nothing to hold and is refused; `inv_std_var` is
/// `1 / sqrt(mean(z^2) + epsilon)`.
pub(super) fn skip_simplified_layer_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    skip_norm(cx, ins, true)
}

fn skip_norm(cx: &Cx, ins: &[Option<V>], simplified: bool) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["epsilon"])?;
    let dt = cx.dtype0(ins);
    let eps = epsilon(cx, 1e-12)?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    if !(2..=3).contains(&d.len()) {
        return Err(cx.err(format!("input has shape {d:?}; expected [batch, sequence, hidden] or [tokens, hidden]")));
    }
    let skip = cx.t(ins, 1)?;
    let s = skip.dims();
    // onnxruntime also takes a skip shared by the batch: [1, sequence, hidden] or [sequence, hidden]
    let shared = d.len() == 3 && (s == [1, d[1], d[2]] || s == &d[1..]);
    if s != d.as_slice() && !shared {
        return Err(cx.err(format!("skip has shape {s:?}; expected the input's {d:?} (or one shared by the batch)")));
    }
    let mut z = x.add(&skip)?;
    let (beta, bias) = if simplified { (None, 3) } else { (Some(3), 4) };
    if cx.opt(ins, bias).is_some() {
        z = z.add(&last_axis_vector(cx, ins, bias, "bias", &x)?)?;
    }
    if simplified && node.output(1).is_some() {
        return Err(cx.err("output 1 (mean) is not produced by the simplified (RMS) normalisation; leave its name empty"));
    }
    let hidden = d[d.len() - 1];
    let rows = z.numel() / hidden;
    let h = z.reshape([rows, hidden])?;
    let (centred, mean) = if simplified {
        (h.clone(), None)
    } else {
        let mu = h.mean_axis(1, true)?;
        (h.sub(&mu)?, Some(mu))
    };
    let inv = rms_inverse(&centred, eps)?;
    let mut y = centred.mul(&inv)?.reshape(d.clone())?.mul(&last_axis_vector(cx, ins, 2, "gamma", &x)?)?;
    if let Some(b) = beta.filter(|&b| cx.opt(ins, b).is_some()) {
        y = y.add(&last_axis_vector(cx, ins, b, "beta", &x)?)?;
    }
    let mut stat = d.clone();
    *stat.last_mut().expect("rank checked") = 1;
    let mut outs = vec![V::dev(y, dt)];
    // a value for every output position (the session pairs results with outputs by position)
    outs.push(V::dev(mean.unwrap_or_else(|| inv.clone()).reshape(stat.clone())?, DType::F32));
    outs.push(V::dev(inv.reshape(stat)?, DType::F32));
    outs.push(V::dev(z, dt));
    outs.truncate(node.outputs.len());
    Ok(outs)
}

/// `com.microsoft` `EmbedLayerNormalization`: the sum of the rows of `word_embedding` at
/// `input_ids` (`[batch, sequence]`, `int32`), of `position_embedding` at `position_ids`
/// (`[1 or batch, sequence]`; without it, `0 .. sequence`) and, when given, of
/// `segment_embedding` at `segment_ids`, layer-normalised over the hidden axis (`epsilon`
/// 1e-12 unless given) times `gamma` plus `beta`. Outputs: the result; `mask_index`, the
/// number of ones in each row of `mask` (zeros without a mask), `int32` `[batch]`; and the
/// sum before the normalisation. `mask_index_type` only tells shape inference whether
/// `mask_index` is there. Indices read on the host must be in their table (onnxruntime
/// refuses the others too); indices computed on the device are not read back (as for
/// `Gather`, negative ones wrap).
pub(super) fn embed_layer_normalization(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["epsilon", "mask_index_type"])?;
    let eps = epsilon(cx, 1e-12)?;
    let mit = node.int("mask_index_type", 1)?;
    if !(0..=1).contains(&mit) {
        return Err(cx.err(format!("mask_index_type is {mit}; expected 0 (no mask_index) or 1")));
    }
    let ids = cx.v(ins, 0)?;
    let (b, s) = match *ids.dims() {
        [b, s] => (b, s),
        ref d => return Err(cx.err(format!("input_ids has shape {d:?}; expected [batch, sequence]"))),
    };
    if b == 0 || s == 0 {
        return Err(cx.err(format!("input_ids of shape [{b}, {s}] is empty (zero-size tensors are not supported on the device)")));
    }
    let word = cx.t(ins, 2)?;
    if word.rank() != 2 {
        return Err(cx.err(format!("word_embedding has shape {:?}; expected [vocabulary, hidden]", word.dims())));
    }
    let (vocab, hidden) = (word.dims()[0], word.dims()[1]);
    let dt = cx.v(ins, 2)?.dtype();
    let table = |i: usize, what: &str| -> Result<Tensor> {
        let t = cx.t(ins, i)?;
        if t.rank() != 2 || t.dims()[1] != hidden {
            return Err(cx.err(format!("{what} (input {i}) has shape {:?}; expected [rows, {hidden}] (the hidden size)", t.dims())));
        }
        Ok(t)
    };
    let mut e = gather_along(cx, &word, 0, embedding_ids(cx, ins, 0, "input_ids", &[b, s], vocab)?)?;
    let positions = table(3, "position_embedding")?;
    let n_pos = positions.dims()[0];
    let pe = match cx.opt(ins, 8) {
        Some(p) => {
            let rows = if p.dims().first() == Some(&1) { 1 } else { b };
            gather_along(cx, &positions, 0, embedding_ids(cx, ins, 8, "position_ids", &[rows, s], n_pos)?)?
        }
        None if s <= n_pos => positions.slice(0, 0, s)?.reshape([1, s, hidden])?,
        None => return Err(cx.err(format!("sequence length {s} is longer than position_embedding ({n_pos} positions)"))),
    };
    e = e.add(&pe)?;
    match (cx.opt(ins, 1).is_some(), cx.opt(ins, 4).is_some()) {
        (true, true) => {
            let segments = table(4, "segment_embedding")?;
            let n_seg = segments.dims()[0];
            e = e.add(&gather_along(cx, &segments, 0, embedding_ids(cx, ins, 1, "segment_ids", &[b, s], n_seg)?)?)?;
        }
        (false, false) => {}
        _ => return Err(cx.err("segment_ids (input 1) and segment_embedding (input 4) go together: give both or neither")),
    }
    let h = e.reshape([b * s, hidden])?;
    let centred = h.sub(&h.mean_axis(1, true)?)?;
    let normed = centred.mul(&rms_inverse(&centred, eps)?)?.reshape([b, s, hidden])?;
    let y = normed.mul(&last_axis_vector(cx, ins, 5, "gamma", &e)?)?.add(&last_axis_vector(cx, ins, 6, "beta", &e)?)?;
    let mask_index = match cx.opt(ins, 7) {
        None => V::host(HostTensor::ints(DType::I32, vec![b], vec![0; b])),
        Some(m) if m.dims() != [b, s] => {
            return Err(cx.err(format!("mask (input 7) has shape {:?}; expected input_ids' [{b}, {s}]", m.dims())));
        }
        Some(V::Host { t, .. }) => {
            let v = t.to_i64("mask")?;
            V::host(HostTensor::ints(DType::I32, vec![b], v.chunks(s).map(|row| row.iter().filter(|&&x| x == 1).count() as i64).collect()))
        }
        Some(m) => {
            let m = cx.to_dev(m, 7)?;
            let ones = m.eq(&Tensor::full(cx.dev(), [b, s], 1.0)?)?;
            V::dev(ones.sum_axis(1, false)?, DType::I32)
        }
    };
    let mut outs = vec![V::dev(y, dt), mask_index, V::dev(e, dt)];
    outs.truncate(node.outputs.len());
    Ok(outs)
}

/// Input `i`, integer indices of `shape` into a table of `n` rows; on the host, each must be
/// a row (`0 <= id < n`).
fn embedding_ids<'v>(cx: &Cx, ins: &'v [Option<V>], i: usize, what: &str, shape: &[usize], n: usize) -> Result<&'v V> {
    let v = cx.v(ins, i)?;
    if v.dtype().is_float() {
        return Err(cx.err(format!("{what} (input {i}) is {}; expected int32 indices", v.dtype().name())));
    }
    if v.dims() != shape {
        return Err(cx.err(format!("{what} (input {i}) has shape {:?}; expected {shape:?}", v.dims())));
    }
    if let Some(t) = v.as_host() {
        if let Some(bad) = t.to_i64(what)?.into_iter().find(|&x| x < 0 || x >= n as i64) {
            return Err(cx.err(format!("{what} holds {bad}, outside the table's {n} rows")));
        }
    }
    Ok(v)
}

/// `1 / sqrt(mean(h^2) + eps)` of each row of the matrix `h`, as a column.
fn rms_inverse(h: &Tensor, eps: f32) -> Result<Tensor> {
    Ok(h.square()?.mean_axis(1, true)?.add_scalar(eps)?.sqrt()?.recip()?)
}

/// The `epsilon` attribute (`default` unless given), which must be a finite number, not
/// negative.
fn epsilon(cx: &Cx, default: f32) -> Result<f32> {
    let eps = cx.node.float("epsilon", default)?;
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(cx.err(format!("epsilon {eps} must be a finite number, not negative")));
    }
    Ok(eps)
}

/// Input `i`, a vector of one value per element of `x`'s last axis (a bias, gamma, beta).
fn last_axis_vector(cx: &Cx, ins: &[Option<V>], i: usize, what: &str, x: &Tensor) -> Result<Tensor> {
    let v = cx.t(ins, i)?;
    let n = x.dims().last().copied().unwrap_or(1);
    if v.dims() != [n] {
        return Err(cx.err(format!("{what} (input {i}) has shape {:?}; expected [{n}], the last axis of {:?}", v.dims(), x.dims())));
    }
    Ok(v)
}
