//! The operator table: one row per operator pixelgrad reads, carrying everything the crate
//! knows of it: its name and domain, what the ONNX operator schema says of its arity and
//! attributes for each opset the importer accepts, the function that runs it on the device,
//! the one that evaluates it on host values (constants, shape arithmetic) where there is one,
//! the inputs it reads on the host, the inputs the session reads back before it runs, whether
//! its inputs after the first are weights, and whether it is quantised. Adding an operator is
//! one row here and its run function in its family's file.
//!
//! Every node is checked against its row when a model is read ([`check`], from
//! [`crate::Model::from_bytes`]), so no operator implementation ever sees a node with fewer
//! inputs or outputs than its schema requires, an empty name where an input is not optional,
//! or a missing required attribute. [`super::SUPPORTED`] and [`super::SUPPORTED_MS`] are the
//! names of these rows; `ops::reads_back`, `ops::host_argument`, `ops::has_weights`,
//! `ops::is_quantized`, host evaluation (`ops::eval_host`) and device dispatch (`ops::run`),
//! all crate-internal, read their fields.
//!
//! The default-domain rows are the schemas of `onnx` 1.17 (`onnx.defs.get_schema(op, opset)`
//! for opsets 7 to 22, and of `onnx` 1.19 for opset 23, each change of arity or required
//! attributes a [`Schema`] with its `since` opset); the `com.microsoft` rows are those of onnxruntime's contrib operators
//! (`quantization_defs.cc`, and `contrib_defs.cc` for the transformer operators, among them
//! `SimplifiedLayerNormalization`, which onnxruntime registers in the default domain and no
//! `onnx` schema has). `tests/registry.rs` compares the default-domain rows with the
//! installed `onnx` packages.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::context::{HostEval, Run};
use super::{
    attention, contrib, conv, einsum, elementwise, linalg, loss, meta, movement, nbits, norm, pool, quant, reduce, resize, rnn, rotary,
    select,
};
use crate::graph::Node;
use crate::hostops;
use crate::{OnnxError, Result};

/// The operator sets pixelgrad reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// The default domain (`""` or `ai.onnx`).
    Onnx,
    /// onnxruntime's contrib operators (`com.microsoft`).
    Microsoft,
}

impl Domain {
    /// The domain a node names, if pixelgrad reads it.
    pub fn of(domain: &str) -> Option<Domain> {
        match domain {
            "" | "ai.onnx" => Some(Domain::Onnx),
            "com.microsoft" => Some(Domain::Microsoft),
            _ => None,
        }
    }
}

/// No upper bound (a variadic input or output).
pub const VARIADIC: usize = usize::MAX;

/// One version of an operator's schema, in force from opset `since` until the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    pub since: i64,
    /// Fewest and most inputs (omitted optional inputs in the middle count, as empty names).
    pub inputs: (usize, usize),
    /// Fewest and most outputs.
    pub outputs: (usize, usize),
    /// Input positions that may be omitted (an empty name). Every other position up to the
    /// last formal input, and every position of a variadic last input, must name a value.
    pub optional_inputs: &'static [usize],
    /// Attributes the node must have.
    pub required_attrs: &'static [&'static str],
}

/// One operator: its domain, name, schema versions (oldest first) and implementation.
#[derive(Clone, Copy)]
pub struct OpRow {
    pub domain: Domain,
    pub name: &'static str,
    pub schemas: &'static [Schema],
    /// Runs it on the device.
    pub(crate) run: Run,
    /// Evaluates it on host values, where pixelgrad does (while folding constants at load,
    /// and at run time when every input is a host value).
    pub(crate) host: Option<HostEval>,
    /// The first input it reads on the host (a shape, axes, pads, scales...), it and every
    /// one after it: never uploaded as a weight.
    pub host_args_from: Option<usize>,
    /// The inputs the session brings to the host before it runs because its result's length
    /// depends on their values.
    pub reads_back: &'static [usize],
    /// Whether its inputs after the first are weights (trainable at any size).
    pub weights: bool,
    /// Whether it is a quantised operator (8-bit values, integer products).
    pub quantized: bool,
    /// What a user should know of how every backend runs it, where that is not what the
    /// model's file suggests (weights dequantised at load...): `pixelgrad inspect` and
    /// `m.info` show it.
    pub note: Option<&'static str>,
}

impl std::fmt::Debug for OpRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpRow")
            .field("domain", &self.domain)
            .field("name", &self.name)
            .field("schemas", &self.schemas)
            .field("host", &self.host.is_some())
            .field("host_args_from", &self.host_args_from)
            .field("reads_back", &self.reads_back)
            .field("weights", &self.weights)
            .field("quantized", &self.quantized)
            .field("note", &self.note)
            .finish()
    }
}

impl OpRow {
    const fn host(self, host: HostEval) -> OpRow {
        OpRow { host: Some(host), ..self }
    }
    const fn host_args_from(self, first: usize) -> OpRow {
        OpRow { host_args_from: Some(first), ..self }
    }
    const fn reads_back(self, inputs: &'static [usize]) -> OpRow {
        OpRow { reads_back: inputs, ..self }
    }
    const fn weights(self) -> OpRow {
        OpRow { weights: true, ..self }
    }
    const fn quantized(self) -> OpRow {
        OpRow { quantized: true, ..self }
    }
    const fn note(self, note: &'static str) -> OpRow {
        OpRow { note: Some(note), ..self }
    }

    /// The schema in force at `opset`: the newest whose `since` is not above it. A node of an
    /// older opset than the first schema (an exporter that used an operator before its set
    /// declared it) is read with the first one.
    pub fn schema(&self, opset: i64) -> &'static Schema {
        let all = self.schemas;
        all.iter().rev().find(|s| s.since <= opset).unwrap_or(&all[0])
    }
}

const fn s(
    since: i64,
    inputs: (usize, usize),
    outputs: (usize, usize),
    optional_inputs: &'static [usize],
    required_attrs: &'static [&'static str],
) -> Schema {
    Schema { since, inputs, outputs, optional_inputs, required_attrs }
}

/// The loader's check of every decoded node, in the main graph and in subgraphs
/// (`Node::decode` is given it): an operator pixelgrad does not read is an
/// [`OnnxError::UnsupportedOp`] naming the node, the domain and the opset; then the row's
/// arity and required attributes, and a control-flow node's subgraphs against its inputs and
/// outputs.
pub(crate) fn check_node(node: &Node) -> Result<()> {
    let dom = if node.domain == "ai.onnx" { "" } else { node.domain.as_str() };
    let Some(row) = find(dom, &node.op_type) else {
        return Err(OnnxError::UnsupportedOp {
            op_type: node.op_type.clone(),
            node: node.name.clone(),
            domain: node.domain.clone(),
            opset: node.opset,
        });
    };
    check(node, row)?;
    super::meta::check_control_flow(node)
}

const fn row(domain: Domain, name: &'static str, schemas: &'static [Schema], run: Run) -> OpRow {
    OpRow { domain, name, schemas, run, host: None, host_args_from: None, reads_back: &[], weights: false, quantized: false, note: None }
}

const ONNX: Domain = Domain::Onnx;
const MS: Domain = Domain::Microsoft;

/// Every operator pixelgrad reads.
pub const OPS: &[OpRow] = &[
    // shape arithmetic and constants (host when their inputs are host values)
    row(ONNX, "Constant", &[s(1, (0, 0), (1, 1), &[], &["value"]), s(11, (0, 0), (1, 1), &[], &[])], meta::host_only)
        .host(hostops::host_constant),
    row(ONNX, "ConstantOfShape", &[s(9, (1, 1), (1, 1), &[], &[])], movement::constant_of_shape)
        .host(hostops::host_constant_of_shape)
        .host_args_from(1),
    row(ONNX, "Shape", &[s(1, (1, 1), (1, 1), &[], &[])], meta::shape).host(hostops::host_shape),
    row(ONNX, "Size", &[s(1, (1, 1), (1, 1), &[], &[])], meta::size).host(hostops::host_size),
    row(ONNX, "Cast", &[s(6, (1, 1), (1, 1), &[], &["to"])], meta::cast).host(hostops::host_cast),
    row(ONNX, "CastLike", &[s(15, (2, 2), (1, 1), &[], &[])], meta::cast).host(hostops::host_cast_like),
    // control flow: the session runs the subgraphs (`crate::subgraph`, `session/control.rs`)
    row(ONNX, "If", &[s(1, (1, 1), (1, VARIADIC), &[], &["else_branch", "then_branch"])], meta::control_flow),
    row(
        ONNX,
        "Loop",
        &[s(1, (3, VARIADIC), (1, VARIADIC), &[0, 1], &["body"]), s(11, (2, VARIADIC), (1, VARIADIC), &[0, 1], &["body"])],
        meta::control_flow,
    ),
    row(
        ONNX,
        "Scan",
        &[
            s(8, (2, VARIADIC), (1, VARIADIC), &[0], &["body", "num_scan_inputs"]),
            s(9, (1, VARIADIC), (1, VARIADIC), &[], &["body", "num_scan_inputs"]),
        ],
        meta::control_flow,
    ),
    row(ONNX, "Identity", &[s(1, (1, 1), (1, 1), &[], &[])], meta::identity).host(hostops::host_identity),
    row(ONNX, "Dropout", &[s(7, (1, 1), (1, 2), &[], &[]), s(12, (1, 3), (1, 2), &[1, 2], &[])], meta::dropout)
        .host(hostops::host_identity),
    row(ONNX, "Range", &[s(11, (3, 3), (1, 1), &[], &[])], meta::host_only).host(hostops::host_range),
    // elementwise
    row(ONNX, "Add", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::arithmetic).host(hostops::host_binary),
    row(ONNX, "Sub", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::arithmetic).host(hostops::host_binary),
    row(ONNX, "Mul", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::arithmetic).host(hostops::host_binary),
    row(ONNX, "Div", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::arithmetic).host(hostops::host_binary),
    row(ONNX, "Pow", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::arithmetic).host(hostops::host_binary),
    row(ONNX, "Sqrt", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary).host(hostops::host_unary),
    row(ONNX, "Neg", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary).host(hostops::host_unary),
    row(ONNX, "Abs", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary).host(hostops::host_unary),
    row(ONNX, "Exp", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Log", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Reciprocal", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary).host(hostops::host_unary),
    row(ONNX, "Floor", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::rounding).host(hostops::host_unary),
    row(ONNX, "Ceil", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::rounding).host(hostops::host_unary),
    row(ONNX, "Round", &[s(11, (1, 1), (1, 1), &[], &[])], elementwise::rounding).host(hostops::host_unary),
    row(ONNX, "Sign", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::sign).host(hostops::host_unary),
    row(ONNX, "Relu", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary).host(hostops::host_unary),
    row(ONNX, "LeakyRelu", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "PRelu", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::unary).weights(),
    row(ONNX, "Elu", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Selu", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Celu", &[s(12, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Clip", &[s(6, (1, 1), (1, 1), &[], &[]), s(11, (1, 3), (1, 1), &[1, 2], &[])], elementwise::unary).host_args_from(1),
    row(ONNX, "Sigmoid", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "HardSigmoid", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "HardSwish", &[s(14, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Tanh", &[s(6, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Softplus", &[s(1, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Softsign", &[s(1, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Erf", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Gelu", &[s(20, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Mish", &[s(18, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Sin", &[s(7, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Cos", &[s(7, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Tan", &[s(7, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Asin", &[s(7, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Acos", &[s(7, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Atan", &[s(7, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Sinh", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Cosh", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Asinh", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Acosh", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Atanh", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "ThresholdedRelu", &[s(10, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "Shrink", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::unary),
    row(ONNX, "IsNaN", &[s(9, (1, 1), (1, 1), &[], &[])], elementwise::is_na_n),
    row(ONNX, "IsInf", &[s(10, (1, 1), (1, 1), &[], &[])], elementwise::is_inf),
    row(ONNX, "Max", &[s(6, (1, VARIADIC), (1, 1), &[], &[])], elementwise::variadic).host(hostops::host_binary),
    row(ONNX, "Min", &[s(6, (1, VARIADIC), (1, 1), &[], &[])], elementwise::variadic).host(hostops::host_binary),
    row(ONNX, "Sum", &[s(6, (1, VARIADIC), (1, 1), &[], &[])], elementwise::variadic),
    row(ONNX, "Mean", &[s(6, (1, VARIADIC), (1, 1), &[], &[])], elementwise::variadic),
    row(ONNX, "Where", &[s(9, (3, 3), (1, 1), &[], &[])], elementwise::where_op).host(hostops::host_where),
    row(ONNX, "Equal", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::compare).host(hostops::host_binary),
    row(ONNX, "Less", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::compare).host(hostops::host_binary),
    row(ONNX, "Greater", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::compare).host(hostops::host_binary),
    row(ONNX, "LessOrEqual", &[s(12, (2, 2), (1, 1), &[], &[])], elementwise::compare).host(hostops::host_binary),
    row(ONNX, "GreaterOrEqual", &[s(12, (2, 2), (1, 1), &[], &[])], elementwise::compare).host(hostops::host_binary),
    row(ONNX, "Not", &[s(1, (1, 1), (1, 1), &[], &[])], elementwise::not).host(hostops::host_unary),
    row(ONNX, "And", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::and).host(hostops::host_binary),
    row(ONNX, "Or", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::or).host(hostops::host_binary),
    row(ONNX, "Xor", &[s(7, (2, 2), (1, 1), &[], &[])], elementwise::xor),
    row(ONNX, "Mod", &[s(10, (2, 2), (1, 1), &[], &[])], elementwise::mod_op).host(hostops::host_binary),
    row(ONNX, "Softmax", &[s(1, (1, 1), (1, 1), &[], &[])], elementwise::softmax),
    row(ONNX, "LogSoftmax", &[s(1, (1, 1), (1, 1), &[], &[])], elementwise::softmax),
    row(ONNX, "SoftmaxCrossEntropyLoss", &[s(12, (2, 3), (1, 2), &[2], &[])], loss::losses),
    row(ONNX, "NegativeLogLikelihoodLoss", &[s(12, (2, 3), (1, 1), &[2], &[])], loss::losses),
    // linear algebra and normalisation
    row(ONNX, "Gemm", &[s(7, (3, 3), (1, 1), &[], &[]), s(11, (2, 3), (1, 1), &[2], &[])], linalg::gemm).weights(),
    row(ONNX, "MatMul", &[s(1, (2, 2), (1, 1), &[], &[])], linalg::matmul_op).weights(),
    row(ONNX, "Einsum", &[s(12, (1, VARIADIC), (1, 1), &[], &["equation"])], einsum::run),
    row(ONNX, "BatchNormalization", &[s(7, (5, 5), (1, 5), &[], &[]), s(14, (5, 5), (1, 3), &[], &[])], norm::batch_normalization)
        .weights(),
    row(ONNX, "InstanceNormalization", &[s(6, (3, 3), (1, 1), &[], &[])], norm::instance_normalization).weights(),
    row(ONNX, "LayerNormalization", &[s(17, (2, 3), (1, 3), &[2], &[])], norm::layer_normalization).weights(),
    row(ONNX, "LRN", &[s(1, (1, 1), (1, 1), &[], &["size"])], norm::lrn),
    row(ONNX, "GroupNormalization", &[s(18, (3, 3), (1, 1), &[], &["num_groups"])], norm::group_normalization),
    row(ONNX, "MeanVarianceNormalization", &[s(9, (1, 1), (1, 1), &[], &[])], norm::mean_variance_normalization),
    row(ONNX, "LpNormalization", &[s(1, (1, 1), (1, 1), &[], &[])], norm::lp_normalization),
    row(ONNX, "ReduceMean", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce)
        .host(hostops::host_reduce)
        .host_args_from(1),
    row(ONNX, "ReduceSum", &[s(1, (1, 1), (1, 1), &[], &[]), s(13, (1, 2), (1, 1), &[1], &[])], reduce::reduce)
        .host(hostops::host_reduce)
        .host_args_from(1),
    row(ONNX, "ReduceMax", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce)
        .host(hostops::host_reduce)
        .host_args_from(1),
    row(ONNX, "ReduceMin", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce)
        .host(hostops::host_reduce)
        .host_args_from(1),
    row(ONNX, "ReduceProd", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce)
        .host(hostops::host_reduce)
        .host_args_from(1),
    row(ONNX, "ReduceL1", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce).host_args_from(1),
    row(ONNX, "ReduceL2", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce).host_args_from(1),
    row(ONNX, "ReduceSumSquare", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce).host_args_from(1),
    row(ONNX, "ReduceLogSum", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce).host_args_from(1),
    row(ONNX, "ReduceLogSumExp", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])], reduce::reduce).host_args_from(1),
    row(ONNX, "ArgMax", &[s(1, (1, 1), (1, 1), &[], &[])], reduce::arg_extreme),
    row(ONNX, "ArgMin", &[s(1, (1, 1), (1, 1), &[], &[])], reduce::arg_extreme),
    // recurrent layers
    row(ONNX, "LSTM", &[s(7, (3, 8), (0, 3), &[3, 4, 5, 6, 7], &[])], rnn::run),
    row(ONNX, "GRU", &[s(7, (3, 6), (0, 2), &[3, 4, 5], &[])], rnn::run),
    row(ONNX, "RNN", &[s(7, (3, 6), (0, 2), &[3, 4, 5], &[])], rnn::run),
    // selection and indexing
    row(ONNX, "TopK", &[s(1, (1, 1), (2, 2), &[], &["k"]), s(10, (2, 2), (2, 2), &[], &[])], select::top_k),
    row(ONNX, "Hardmax", &[s(1, (1, 1), (1, 1), &[], &[])], select::hardmax_op),
    row(ONNX, "CumSum", &[s(11, (2, 2), (1, 1), &[], &[])], select::cum_sum),
    row(ONNX, "OneHot", &[s(9, (3, 3), (1, 1), &[], &[])], select::one_hot),
    row(ONNX, "GatherElements", &[s(11, (2, 2), (1, 1), &[], &[])], select::gather_elements),
    row(ONNX, "ScatterElements", &[s(11, (3, 3), (1, 1), &[], &[])], select::scatter_elements),
    row(ONNX, "Scatter", &[s(9, (3, 3), (1, 1), &[], &[])], select::scatter_elements),
    row(ONNX, "GatherND", &[s(11, (2, 2), (1, 1), &[], &[])], select::gather_nd),
    row(ONNX, "ScatterND", &[s(11, (3, 3), (1, 1), &[], &[])], select::scatter_nd),
    row(ONNX, "Trilu", &[s(14, (1, 2), (1, 1), &[1], &[])], select::trilu),
    row(ONNX, "NonMaxSuppression", &[s(10, (2, 5), (1, 1), &[2, 3, 4], &[])], select::non_max_suppression).reads_back(&[0, 1]),
    row(ONNX, "NonZero", &[s(9, (1, 1), (1, 1), &[], &[])], select::non_zero).reads_back(&[0]),
    row(ONNX, "Compress", &[s(9, (2, 2), (1, 1), &[], &[])], select::compress).reads_back(&[1]),
    row(ONNX, "ReverseSequence", &[s(10, (2, 2), (1, 1), &[], &[])], select::reverse_sequence),
    row(ONNX, "EyeLike", &[s(9, (1, 1), (1, 1), &[], &[])], select::eye_like),
    row(ONNX, "CenterCropPad", &[s(18, (2, 2), (1, 1), &[], &[])], select::center_crop_pad),
    // convolution and pooling
    row(ONNX, "Conv", &[s(1, (2, 3), (1, 1), &[2], &[])], conv::conv_op).weights(),
    row(ONNX, "ConvTranspose", &[s(1, (2, 3), (1, 1), &[2], &[])], conv::conv_transpose_op).weights(),
    row(ONNX, "MaxPool", &[s(1, (1, 1), (1, 1), &[], &["kernel_shape"]), s(8, (1, 1), (1, 2), &[], &["kernel_shape"])], pool::max_pool),
    row(ONNX, "AveragePool", &[s(7, (1, 1), (1, 1), &[], &["kernel_shape"])], pool::average_pool),
    row(ONNX, "GlobalAveragePool", &[s(1, (1, 1), (1, 1), &[], &[])], pool::global_pool),
    row(ONNX, "GlobalMaxPool", &[s(1, (1, 1), (1, 1), &[], &[])], pool::global_pool),
    row(ONNX, "LpPool", &[s(2, (1, 1), (1, 1), &[], &["kernel_shape"])], pool::lp_pool),
    row(ONNX, "MaxUnpool", &[s(9, (2, 3), (1, 1), &[2], &["kernel_shape"])], pool::max_unpool),
    // movement
    row(ONNX, "Reshape", &[s(5, (2, 2), (1, 1), &[], &[])], movement::reshape).host(hostops::host_reshape).host_args_from(1),
    row(ONNX, "Flatten", &[s(1, (1, 1), (1, 1), &[], &[])], movement::flatten).host(hostops::host_flatten),
    row(ONNX, "Transpose", &[s(1, (1, 1), (1, 1), &[], &[])], movement::transpose).host(hostops::host_transpose),
    row(ONNX, "Concat", &[s(4, (1, VARIADIC), (1, 1), &[], &["axis"])], movement::concat).host(hostops::host_concat),
    row(ONNX, "Slice", &[s(1, (1, 1), (1, 1), &[], &["ends", "starts"]), s(10, (3, 5), (1, 1), &[3, 4], &[])], movement::slice)
        .host(hostops::host_slice)
        .host_args_from(1),
    row(ONNX, "Squeeze", &[s(1, (1, 1), (1, 1), &[], &[]), s(13, (1, 2), (1, 1), &[1], &[])], movement::squeeze)
        .host(hostops::host_squeeze)
        .host_args_from(1),
    row(ONNX, "Unsqueeze", &[s(1, (1, 1), (1, 1), &[], &["axes"]), s(13, (2, 2), (1, 1), &[], &[])], movement::squeeze)
        .host(hostops::host_unsqueeze)
        .host_args_from(1),
    row(
        ONNX,
        "Pad",
        &[s(2, (1, 1), (1, 1), &[], &["pads"]), s(11, (2, 3), (1, 1), &[2], &[]), s(18, (2, 4), (1, 1), &[2, 3], &[])],
        movement::pad_op,
    )
    .host_args_from(1),
    row(ONNX, "Gather", &[s(1, (2, 2), (1, 1), &[], &[])], movement::gather).host(hostops::host_gather),
    row(ONNX, "Expand", &[s(8, (2, 2), (1, 1), &[], &[])], movement::expand).host(hostops::host_expand).host_args_from(1),
    row(ONNX, "Tile", &[s(6, (2, 2), (1, 1), &[], &[])], movement::tile).host_args_from(1),
    row(ONNX, "Split", &[s(2, (1, 1), (1, VARIADIC), &[], &[]), s(13, (1, 2), (1, VARIADIC), &[1], &[])], movement::split)
        .host_args_from(1),
    row(
        ONNX,
        "Resize",
        &[s(10, (2, 2), (1, 1), &[], &[]), s(11, (3, 4), (1, 1), &[3], &[]), s(13, (1, 4), (1, 1), &[1, 2, 3], &[])],
        resize::resize_op,
    )
    .host_args_from(1),
    row(ONNX, "Upsample", &[s(7, (1, 1), (1, 1), &[], &["scales"]), s(9, (2, 2), (1, 1), &[], &[])], resize::upsample_op).host_args_from(1),
    row(ONNX, "GridSample", &[s(16, (2, 2), (1, 1), &[], &[])], resize::grid_sample_op),
    row(ONNX, "DepthToSpace", &[s(1, (1, 1), (1, 1), &[], &["blocksize"])], movement::depth_space),
    row(ONNX, "SpaceToDepth", &[s(1, (1, 1), (1, 1), &[], &["blocksize"])], movement::depth_space),
    // quantisation (8-bit integers, `int32` accumulators and biases)
    row(ONNX, "QuantizeLinear", &[s(10, (2, 3), (1, 1), &[2], &[])], quant::quantize_linear).quantized(),
    row(ONNX, "DequantizeLinear", &[s(10, (2, 3), (1, 1), &[2], &[])], quant::dequantize_linear).quantized(),
    row(ONNX, "DynamicQuantizeLinear", &[s(11, (1, 1), (3, 3), &[], &[])], quant::dynamic_quantize_linear).quantized(),
    row(ONNX, "QLinearConv", &[s(10, (8, 9), (1, 1), &[8], &[])], quant::q_linear_conv).quantized(),
    row(ONNX, "QLinearMatMul", &[s(10, (8, 8), (1, 1), &[], &[])], quant::q_linear_mat_mul).quantized(),
    row(ONNX, "MatMulInteger", &[s(10, (2, 4), (1, 1), &[2, 3], &[])], quant::mat_mul_integer).quantized(),
    row(ONNX, "ConvInteger", &[s(10, (2, 4), (1, 1), &[2, 3], &[])], quant::conv_integer).quantized(),
    // onnxruntime's quantised contrib operators (what its quantiser writes)
    row(MS, "QGemm", &[s(1, (6, 9), (1, 1), &[6, 7, 8], &[])], quant::q_gemm).quantized(),
    row(MS, "QLinearAdd", &[s(1, (7, 8), (1, 1), &[2, 5, 7], &[])], quant::qlinear_binary).quantized(),
    row(MS, "QLinearMul", &[s(1, (7, 8), (1, 1), &[2, 5, 7], &[])], quant::qlinear_binary).quantized(),
    row(MS, "QLinearConcat", &[s(1, (3, VARIADIC), (1, 1), &[], &["axis"])], quant::q_linear_concat).quantized(),
    row(MS, "QLinearGlobalAveragePool", &[s(1, (5, 5), (1, 1), &[], &[])], quant::q_linear_global_average_pool).quantized(),
    row(MS, "QLinearAveragePool", &[s(1, (4, 5), (1, 1), &[2, 4], &["kernel_shape"])], quant::q_linear_average_pool).quantized(),
    row(MS, "QLinearSigmoid", &[s(1, (4, 5), (1, 1), &[2, 4], &[])], quant::qlinear_activation).quantized(),
    row(MS, "QLinearLeakyRelu", &[s(1, (4, 5), (1, 1), &[2, 4], &[])], quant::qlinear_activation).quantized(),
    row(MS, "QLinearSoftmax", &[s(1, (4, 5), (1, 1), &[2, 4], &["opset"])], quant::q_linear_softmax).quantized(),
    row(MS, "DynamicQuantizeMatMul", &[s(1, (3, 5), (1, 1), &[3, 4], &[])], quant::dynamic_quantize_mat_mul).quantized(),
    // block-quantised weights (what onnxruntime's `MatMulNBitsQuantizer` writes)
    row(MS, "MatMulNBits", &[s(1, (3, 6), (1, 1), &[3, 4, 5], &["K", "N", "bits", "block_size"])], nbits::matmul_nbits)
        .host_args_from(1)
        .note(nbits::MATMUL_NBITS_NOTE),
    row(MS, "GatherBlockQuantized", &[s(1, (3, 4), (1, 1), &[3], &[])], nbits::gather_block_quantized)
        .host_args_from(2)
        .note(nbits::GATHER_BLOCK_QUANTIZED_NOTE),
    // onnxruntime's transformer contrib operators: fused GELUs and (skip, RMS) layer
    // normalisations (`contrib_defs.cc`; SimplifiedLayerNormalization is in the default domain)
    row(MS, "Gelu", &[s(1, (1, 1), (1, 1), &[], &[])], contrib::gelu),
    row(MS, "FastGelu", &[s(1, (1, 2), (1, 1), &[1], &[])], contrib::fast_gelu),
    row(MS, "BiasGelu", &[s(1, (2, 2), (1, 1), &[], &[])], contrib::bias_gelu),
    row(MS, "QuickGelu", &[s(1, (1, 1), (1, 1), &[], &[])], contrib::quick_gelu),
    row(ONNX, "SimplifiedLayerNormalization", &[s(1, (2, 2), (1, 2), &[], &[])], contrib::simplified_layer_normalization),
    row(MS, "SkipLayerNormalization", &[s(1, (3, 5), (1, 4), &[3, 4], &[])], contrib::skip_layer_normalization),
    row(MS, "SkipSimplifiedLayerNormalization", &[s(1, (3, 4), (1, 4), &[3], &[])], contrib::skip_simplified_layer_normalization),
    // transformer embeddings and rotary positions: onnxruntime's contrib EmbedLayerNormalization
    // and RotaryEmbedding
    row(MS, "EmbedLayerNormalization", &[s(1, (7, 9), (1, 3), &[1, 4, 7, 8], &[])], contrib::embed_layer_normalization),
    row(MS, "RotaryEmbedding", &[s(1, (4, 4), (1, 1), &[], &[])], rotary::ms_rotary_embedding).note(rotary::MS_ROTARY_NOTE),
    // their standard forms in opset 23 (schemas of `onnx` 1.19; `tests/registry.rs` checks
    // opset 23 against that package)
    row(ONNX, "RMSNormalization", &[s(23, (2, 2), (1, 1), &[], &[])], contrib::rms_normalization),
    row(ONNX, "RotaryEmbedding", &[s(23, (3, 4), (1, 1), &[3], &[])], rotary::rotary_embedding),
    // onnxruntime's attention operators (`bert_defs.cc`), all on one attention function
    // (`ops/attention.rs`, which materialises the sequence x sequence scores)
    row(MS, "MultiHeadAttention", &[s(1, (1, 8), (1, 3), &[1, 2, 3, 4, 5, 6, 7], &["num_heads"])], attention::multi_head_attention)
        .note(attention::NOTE),
    row(
        MS,
        "GroupQueryAttention",
        &[s(1, (7, 9), (3, 3), &[1, 2, 3, 4, 7, 8], &["kv_num_heads", "num_heads"])],
        attention::group_query_attention,
    )
    .host_args_from(5)
    .reads_back(&[5, 6])
    .note(attention::NOTE),
    row(MS, "Attention", &[s(1, (2, 7), (1, 2), &[2, 3, 4, 5, 6], &["num_heads"])], attention::attention).note(attention::NOTE),
    // opset 23's Attention, on the same function (its schema from onnx 1.19; tests/registry.rs)
    row(ONNX, "Attention", &[s(23, (3, 6), (1, 4), &[3, 4, 5], &[])], attention::onnx_attention).note(attention::NOTE),
];

/// The row of `op_type` in `domain` (a node's domain string), if pixelgrad reads it.
pub fn find(domain: &str, op_type: &str) -> Option<&'static OpRow> {
    static INDEX: OnceLock<HashMap<(Domain, &'static str), &'static OpRow>> = OnceLock::new();
    let index = INDEX.get_or_init(|| OPS.iter().map(|r| ((r.domain, r.name), r)).collect());
    index.get(&(Domain::of(domain)?, op_type)).copied()
}

/// The row named `op_type` in either domain, for what a row says beyond how it runs (nodes
/// were checked against their domain's rows when the model was read). Two names are in both
/// domains, `Gelu` and `RotaryEmbedding`; their two rows agree on every field but `run` and
/// `schemas` (a test checks), and dispatch (`ops::run`) goes by [`find`].
pub fn by_name(op_type: &str) -> Option<&'static OpRow> {
    static INDEX: OnceLock<HashMap<&'static str, &'static OpRow>> = OnceLock::new();
    INDEX.get_or_init(|| OPS.iter().map(|r| (r.name, r)).collect()).get(op_type).copied()
}

/// Checks `node` against its schema at the node's opset: input and output counts, inputs that
/// may not be omitted, required attributes. `row` is [`find`]'s for the node.
pub fn check(node: &Node, row: &OpRow) -> Result<()> {
    let s = row.schema(node.opset);
    let range = |(lo, hi): (usize, usize)| match (lo, hi) {
        (lo, VARIADIC) => format!("at least {lo}"),
        (lo, hi) if lo == hi => format!("{lo}"),
        (lo, hi) => format!("{lo} to {hi}"),
    };
    let (n_in, n_out) = (node.inputs.len(), node.outputs.len());
    if n_in < s.inputs.0 || n_in > s.inputs.1 {
        return Err(node.err(format!("has {n_in} inputs; {} (opset {}+) takes {}", row.name, s.since, range(s.inputs))));
    }
    if n_out < s.outputs.0 || n_out > s.outputs.1 {
        return Err(node.err(format!("has {n_out} outputs; {} (opset {}+) makes {}", row.name, s.since, range(s.outputs))));
    }
    if let Some((i, _)) = node.inputs.iter().enumerate().find(|(i, name)| name.is_empty() && !s.optional_inputs.contains(i)) {
        return Err(node.err(format!("input {i} is empty, but it is not optional")));
    }
    if let Some(a) = s.required_attrs.iter().find(|a| !node.has(a)) {
        return Err(node.err(format!("attribute '{a}' is required")));
    }
    Ok(())
}

const fn count(domain: Domain) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < OPS.len() {
        if OPS[i].domain as u8 == domain as u8 {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of `domain`'s rows, in table order.
pub(super) const fn names<const N: usize>(domain: Domain) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut k) = (0, 0);
    while i < OPS.len() {
        if OPS[i].domain as u8 == domain as u8 {
            out[k] = OPS[i].name;
            k += 1;
        }
        i += 1;
    }
    out
}

pub(super) const N_ONNX: usize = count(Domain::Onnx);
pub(super) const N_MS: usize = count(Domain::Microsoft);
