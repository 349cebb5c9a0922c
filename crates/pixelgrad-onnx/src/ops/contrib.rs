//! onnxruntime's transformer contrib operators that its optimiser fuses GELUs and layer
//! normalisations into: `Gelu`, `FastGelu`, `BiasGelu`, `QuickGelu` (`com.microsoft`),
//! `SimplifiedLayerNormalization` (RMS normalisation, which onnxruntime registers in the
//! default domain), `SkipLayerNormalization` and `SkipSimplifiedLayerNormalization`
//! (`com.microsoft`). Each is written with the tensor primitives, so every backend runs it and
//! autodiff differentiates it; the attributes and defaults are onnxruntime's operator schemas
//! (`docs/ContribOperators.md`, `contrib_defs.cc`).

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use super::elementwise::gelu_erf;
use crate::host::DType;
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
    let node = cx.node;
    node.only_attrs(&["axis", "epsilon", "stash_type"])?;
    let dt = cx.dtype0(ins);
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let a = norm_axis(node, node.int("axis", -1)?, d.len())?;
    let eps = epsilon(cx, 1e-5)?;
    let scale = cx.t(ins, 1)?;
    if scale.dims() != &d[a..] {
        return Err(cx.err(format!(
            "scale has shape {:?}; the normalised axes of input {d:?} from axis {a} are {:?}",
            scale.dims(),
            &d[a..]
        )));
    }
    let outer: usize = d[..a].iter().product();
    let h = x.reshape([outer, d[a..].iter().product::<usize>()])?;
    let inv = rms_inverse(&h, eps)?;
    let y = h.mul(&inv)?.reshape(d.clone())?.mul(&scale)?;
    let stat: Vec<usize> = d.iter().enumerate().map(|(i, &n)| if i < a { n } else { 1 }).collect();
    Ok(vec![V::dev(y, dt), V::dev(inv.reshape(stat)?, DType::F32)])
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
