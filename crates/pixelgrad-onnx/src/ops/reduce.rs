//! Reductions over axes (`Reduce*`) and the arg-extremes (`ArgMax`, `ArgMin`).

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use crate::host::DType;
use crate::hostops::axes_arg;
use crate::shapes::norm_axis;
use crate::Result;

/// `ReduceMean`, `ReduceSum`, `ReduceMax`, `ReduceMin`, `ReduceL1`, `ReduceL2`, `ReduceSumSquare`,
/// `ReduceLogSum`, `ReduceLogSumExp`, `ReduceProd`.
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
