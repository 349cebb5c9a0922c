//! Operators on the device, each written with pixelgrad tensor ops (primitives and core
//! composites), so every backend runs them and autodiff differentiates them. Arguments that
//! shape the computation (`Reshape`'s shape, `Slice`'s starts, `Resize`'s scales, pads...) must
//! be host values: constants, or shape arithmetic the runtime evaluates on the host.

mod attention;
mod context;
mod contrib;
mod conv;
mod einsum;
mod elementwise;
mod linalg;
mod loss;
mod meta;
mod movement;
mod nbits;
mod norm;
mod one_d;
mod pool;
pub(crate) mod qbinary;
mod quant;
mod reduce;
pub mod registry;
mod resize;
mod rnn;
mod rotary;
mod select;
#[cfg(test)]
mod tests;

pub use context::{upload, Consts, Cx, V};

use crate::graph::Node;
use crate::host::HostTensor;
use crate::hostops::Cap;
use crate::Result;

/// Every default-domain operator type `run` handles: the names of [`registry::OPS`]' rows
/// (the book's ONNX chapter, `docs/src/guides/onnx.md`, lists their attributes).
pub const SUPPORTED: &[&str] = &ONNX_NAMES;
const ONNX_NAMES: [&str; registry::N_ONNX] = registry::names(registry::Domain::Onnx);

/// The com.microsoft operators pixelgrad runs: the quantised ones onnxruntime's quantiser
/// writes and the transformer ones its optimiser fuses (the `com.microsoft` rows of
/// [`registry::OPS`]).
pub const SUPPORTED_MS: &[&str] = &MS_NAMES;
const MS_NAMES: [&str; registry::N_MS] = registry::names(registry::Domain::Microsoft);

/// The inputs an operator needs on the host because its result's length depends on their
/// values: the session reads them back before the operator runs (asynchronously in
/// [`crate::Session::run_async`]). Empty for every other operator ([`registry::OpRow::reads_back`]).
pub fn reads_back(op_type: &str) -> &'static [usize] {
    registry::by_name(op_type).map_or(&[], |row| row.reads_back)
}

/// Whether `op_type` is one of the quantised operators (8-bit values, integer products).
pub fn is_quantized(op_type: &str) -> bool {
    registry::by_name(op_type).is_some_and(|row| row.quantized)
}

/// Whether input `i` of `op_type` is read on the host (a shape, axes, pads, scales...), never
/// as a weight ([`registry::OpRow::host_args_from`]).
pub fn host_argument(op_type: &str, i: usize) -> bool {
    registry::by_name(op_type).and_then(|row| row.host_args_from).is_some_and(|first| i >= first)
}

/// Whether `op_type`'s inputs after the first are weights (trainable at any size).
pub fn has_weights(op_type: &str) -> bool {
    registry::by_name(op_type).is_some_and(|row| row.weights)
}

/// Evaluates `node` on host inputs (`None` for absent optional inputs) with its operator's
/// host evaluator ([`registry::OpRow`]'s `host`). `Ok(None)`: this operator is not evaluated
/// on the host (it runs on the device), or, while folding, its result would not fit `cap`.
pub fn eval_host(node: &Node, ins: &[Option<&HostTensor>], cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    match registry::by_name(&node.op_type).and_then(|row| row.host) {
        Some(host) => host(node, ins, cap),
        None => Ok(None),
    }
}

/// Runs one node. Host inputs everywhere → the host evaluator where it knows the op; otherwise
/// the device implementation (the row's `run`).
pub fn run(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let all_host = ins.iter().all(|v| !matches!(v, Some(V::Dev { .. })));
    if all_host {
        let hs: Vec<Option<&HostTensor>> = ins.iter().map(|v| v.as_ref().and_then(|v| v.as_host())).collect();
        if let Some(outs) = eval_host(node, &hs, Cap::run(cx.dev().limits().max_elements))? {
            return Ok(outs.into_iter().map(V::host).collect());
        }
    }
    // by domain: `Gelu` is in both, each with its own implementation
    match registry::find(&node.domain, &node.op_type) {
        Some(row) => (row.run)(cx, ins),
        None => Err(cx.unsupported()),
    }
}
