//! Metadata and relabelling on the device: `Shape` and `Size` of device values (computed on
//! the host), `Identity`, `Dropout` in inference, `Cast` and `CastLike`.

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use crate::graph::Node;
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

/// The shape checks of a control-flow node against its subgraphs, at load: the branches of an
/// `If` make as many values as the node has outputs; a `Loop` body takes the iteration
/// number, the condition and one value per carried input, and makes the condition, the
/// carried values and the scan outputs; a `Scan` body takes one value per input and makes
/// one per output. Called before the outer reads are appended. Other nodes pass.
pub(crate) fn check_control_flow(node: &Node) -> Result<()> {
    let n_in = node.inputs.len();
    let n_out = node.outputs.len();
    match node.op_type.as_str() {
        "If" => {
            for branch in ["then_branch", "else_branch"] {
                let g = node.graph(branch)?;
                if g.outputs.len() != n_out {
                    return Err(node.err(format!("{branch} makes {} values, but the node has {n_out} outputs", g.outputs.len())));
                }
                if !g.inputs.is_empty() {
                    return Err(node.err(format!("{branch} declares {} inputs; an If branch takes none", g.inputs.len())));
                }
            }
        }
        "Loop" => {
            let body = node.graph("body")?;
            let carried = n_in.saturating_sub(2);
            if body.inputs.len() != 2 + carried {
                return Err(node.err(format!(
                    "body takes {} inputs; with {carried} loop-carried values it must take {} (iteration number, condition, then the carried values)",
                    body.inputs.len(),
                    2 + carried
                )));
            }
            if body.outputs.len() < 1 + carried {
                return Err(node.err(format!(
                    "body makes {} values; with {carried} loop-carried values it must make at least {} (condition, then the carried values)",
                    body.outputs.len(),
                    1 + carried
                )));
            }
            if n_out != body.outputs.len() - 1 {
                return Err(node.err(format!(
                    "has {n_out} outputs; its body makes {} values after the condition (carried values, then scan outputs)",
                    body.outputs.len() - 1
                )));
            }
        }
        "Scan" => {
            if node.opset < 9 {
                return Err(node.err("Scan before opset 9 (sequence_lens and a batch axis) is not supported"));
            }
            let body = node.graph("body")?;
            let m = node.int("num_scan_inputs", 0)?;
            let m = usize::try_from(m)
                .ok()
                .filter(|&m| m >= 1 && m <= n_in)
                .ok_or_else(|| node.err(format!("num_scan_inputs is {m}; it must be between 1 and the number of inputs ({n_in})")))?;
            let state = n_in - m;
            if body.inputs.len() != n_in {
                return Err(node.err(format!("body takes {} inputs; the node has {n_in} ({state} state, {m} scanned)", body.inputs.len())));
            }
            if body.outputs.len() != n_out || n_out < state {
                return Err(node.err(format!(
                    "body makes {} values and the node has {n_out} outputs; both must be the {state} state values and the scan outputs",
                    body.outputs.len()
                )));
            }
            let k = n_out - state;
            for (attr, want) in
                [("scan_input_axes", m), ("scan_input_directions", m), ("scan_output_axes", k), ("scan_output_directions", k)]
            {
                if let Some(v) = node.ints(attr)? {
                    if v.len() != want {
                        return Err(node.err(format!("{attr} has {} entries; it needs {want}", v.len())));
                    }
                }
            }
            for attr in ["scan_input_directions", "scan_output_directions"] {
                if let Some(d) = node.ints(attr)?.and_then(|v| v.into_iter().find(|d| *d != 0 && *d != 1)) {
                    return Err(node.err(format!("{attr} has direction {d}; directions are 0 (forward) or 1 (reverse)")));
                }
            }
        }
        _ => {
            if let Some((attr, _)) = crate::graph::graphs(node).first() {
                return Err(node.err(format!("attribute '{attr}' is a graph, which {} does not take", node.op_type)));
            }
        }
    }
    Ok(())
}
