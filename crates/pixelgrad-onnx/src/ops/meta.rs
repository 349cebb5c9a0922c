//! Metadata and relabelling on the device: `Shape` and `Size` of device values (computed on
//! the host), `Identity`, `Dropout` in inference, `Cast` and `CastLike`.

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use crate::host::{DType, HostTensor};
use crate::{hostops, Result};

/// The run of the operators that are evaluated on the host only (`Constant`, `Range`): a
/// device input is refused as an operator pixelgrad does not run on the device.
pub(super) fn host_only(cx: &Cx, _ins: &[Option<V>]) -> Result<Vec<V>> {
    Err(cx.unsupported())
}

/// The run of the control-flow operators (`If`, `Loop`, `Scan`): the session runs them with
/// their subgraphs (`session/control.rs`) and never calls this; anything else that does gets
/// an error, not a wrong result.
pub(super) fn control_flow(cx: &Cx, _ins: &[Option<V>]) -> Result<Vec<V>> {
    Err(cx.node.err("control flow runs in a Session (its subgraphs need the session's values)"))
}

/// `Shape`.
pub(super) fn shape(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    Ok(vec![V::host(hostops::shape_of(cx.node, cx.v(ins, 0)?.dims())?)])
}

/// `Size`.
pub(super) fn size(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    Ok(vec![V::host(HostTensor::i64(vec![], vec![cx.v(ins, 0)?.dims().iter().product::<usize>() as i64]))])
}

/// `Identity`.
pub(super) fn identity(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    Ok(vec![cx.v(ins, 0)?.clone()])
}

/// `Dropout`.
pub(super) fn dropout(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    if let Some(t) = cx.opt_h(ins, 2, "training_mode")? {
        if t.to_f64().first().copied().unwrap_or(0.0) != 0.0 {
            return Err(cx.err("training_mode = true is not supported (imported graphs run in inference mode)"));
        }
    }
    let x = cx.v(ins, 0)?;
    let mut outs = vec![x.clone()];
    if node.output(1).is_some() {
        // In inference every element is kept: the mask is all true.
        outs.push(V::dev(Tensor::ones(cx.dev(), x.dims().to_vec())?, DType::Bool));
    }
    Ok(outs)
}

/// `Cast`, `CastLike`.
pub(super) fn cast(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let to = if node.op_type == "Cast" {
        DType::from_onnx(node.int("to", 0)? as i32, &format!("Cast node '{}'", node.name))?
    } else {
        cx.v(ins, 1)?.dtype()
    };
    let x = cx.t(ins, 0)?;
    let from = cx.dtype0(ins);
    let y = if to.is_float() || !from.is_float() {
        x
    } else if to == DType::Bool {
        x.abs()?.gt_scalar(0.0)?
    } else {
        // float → integer truncates toward zero: sign(x) * floor(|x|), floor as x - frac
        super::elementwise::trunc(&x)?
    };
    Ok(vec![V::dev(y, to)])
}
