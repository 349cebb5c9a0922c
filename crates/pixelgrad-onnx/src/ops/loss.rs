//! The classification losses: `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss`.

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use crate::Result;

/// `NegativeLogLikelihoodLoss`, `SoftmaxCrossEntropyLoss`.
pub(super) fn losses(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let node = cx.node;
    let dt = cx.dtype0(ins);
    node.only_attrs(&["ignore_index", "reduction"])?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    if d.len() < 2 {
        return Err(cx.err(format!("input must be [N, C, ...], got {d:?}")));
    }
    let log_prob = if op == "SoftmaxCrossEntropyLoss" { x.log_softmax(1)? } else { x };
    let target = cx.t(ins, 1)?;
    let mut tshape = d.clone();
    tshape.remove(1);
    if target.dims() != tshape.as_slice() {
        return Err(cx.err(format!("target {:?} must be the input's shape without the class axis, {tshape:?}", target.dims())));
    }
    // ignored positions count nothing; their index is replaced by a valid class 0
    let live = match node.attrs.contains_key("ignore_index") {
        true => target.eq(&Tensor::scalar(cx.dev(), node.int("ignore_index", 0)? as f32)?)?.affine(-1.0, 1.0)?,
        false => Tensor::ones(cx.dev(), tshape.clone())?,
    };
    let safe = target.mul(&live)?;
    let mut ishape = tshape.clone();
    ishape.insert(1, 1);
    let picked = log_prob.gather(1, &safe.reshape(ishape)?)?.reshape(tshape.clone())?;
    let w = match cx.opt(ins, 2) {
        Some(_) => {
            let wt = cx.t(ins, 2)?;
            let n = safe.numel();
            wt.gather(0, &safe.reshape([n])?)?.reshape(tshape.clone())?.mul(&live)?
        }
        None => live,
    };
    let loss = picked.mul(&w)?.neg()?;
    let y = match node.string("reduction", "mean")?.as_str() {
        "none" => loss,
        "sum" => loss.reshape([loss.numel()])?.sum_axis(0, false)?,
        // weighted mean: divided by the sum of the weights that count
        "mean" => loss.reshape([loss.numel()])?.sum_axis(0, false)?.div(&w.reshape([w.numel()])?.sum_axis(0, false)?)?,
        other => return Err(cx.err(format!("reduction '{other}' is not supported (none, sum, mean)"))),
    };
    let mut outs = vec![V::dev(y, dt)];
    if op == "SoftmaxCrossEntropyLoss" && node.outputs.get(1).is_some_and(|o| !o.is_empty()) {
        outs.push(V::dev(log_prob, dt));
    }
    Ok(outs)
}
