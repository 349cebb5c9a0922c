//! The operator registry: one row per operator pixelgrad reads, with what the ONNX operator
//! schema says of its arity and attributes for each opset the importer accepts. Every node is
//! checked against its row when a model is read ([`check`], from
//! [`crate::Model::from_bytes`]), so no operator implementation ever sees a node with fewer
//! inputs or outputs than its schema requires, an empty name where an input is not optional,
//! or a missing required attribute. [`super::SUPPORTED`] and [`super::SUPPORTED_MS`] are the
//! names of these rows.
//!
//! The default-domain rows are the schemas of `onnx` 1.17 (`onnx.defs.get_schema(op, opset)`
//! for opsets 7 to 22, each change of arity or required attributes a [`Schema`] with its
//! `since` opset); the `com.microsoft` rows are those of onnxruntime's contrib operators
//! (`quantization_defs.cc`). `tests/registry.rs` compares the default-domain rows with the
//! installed `onnx` package.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::graph::Node;
use crate::Result;

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

/// One operator: its domain, name and schema versions (oldest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpRow {
    pub domain: Domain,
    pub name: &'static str,
    pub schemas: &'static [Schema],
}

impl OpRow {
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

const fn row(domain: Domain, name: &'static str, schemas: &'static [Schema]) -> OpRow {
    OpRow { domain, name, schemas }
}

const ONNX: Domain = Domain::Onnx;
const MS: Domain = Domain::Microsoft;

/// Every operator pixelgrad reads. The quantised operators come last (from `QuantizeLinear`
/// on): `super::is_quantized` relies on it.
pub const OPS: &[OpRow] = &[
    // shape arithmetic and constants (host when their inputs are host values)
    row(ONNX, "Constant", &[s(1, (0, 0), (1, 1), &[], &["value"]), s(11, (0, 0), (1, 1), &[], &[])]),
    row(ONNX, "ConstantOfShape", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Shape", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Size", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Cast", &[s(6, (1, 1), (1, 1), &[], &["to"])]),
    row(ONNX, "CastLike", &[s(15, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Identity", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Dropout", &[s(7, (1, 1), (1, 2), &[], &[]), s(12, (1, 3), (1, 2), &[1, 2], &[])]),
    row(ONNX, "Range", &[s(11, (3, 3), (1, 1), &[], &[])]),
    // elementwise
    row(ONNX, "Add", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Sub", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Mul", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Div", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Pow", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Sqrt", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Neg", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Abs", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Exp", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Log", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Reciprocal", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Floor", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Ceil", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Round", &[s(11, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Sign", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Relu", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "LeakyRelu", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "PRelu", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Elu", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Selu", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Celu", &[s(12, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Clip", &[s(6, (1, 1), (1, 1), &[], &[]), s(11, (1, 3), (1, 1), &[1, 2], &[])]),
    row(ONNX, "Sigmoid", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "HardSigmoid", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "HardSwish", &[s(14, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Tanh", &[s(6, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Softplus", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Softsign", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Erf", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Gelu", &[s(20, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Mish", &[s(18, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Sin", &[s(7, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Cos", &[s(7, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Tan", &[s(7, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Asin", &[s(7, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Acos", &[s(7, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Atan", &[s(7, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Sinh", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Cosh", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Asinh", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Acosh", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Atanh", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "ThresholdedRelu", &[s(10, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Shrink", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "IsNaN", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "IsInf", &[s(10, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Max", &[s(6, (1, VARIADIC), (1, 1), &[], &[])]),
    row(ONNX, "Min", &[s(6, (1, VARIADIC), (1, 1), &[], &[])]),
    row(ONNX, "Sum", &[s(6, (1, VARIADIC), (1, 1), &[], &[])]),
    row(ONNX, "Mean", &[s(6, (1, VARIADIC), (1, 1), &[], &[])]),
    row(ONNX, "Where", &[s(9, (3, 3), (1, 1), &[], &[])]),
    row(ONNX, "Equal", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Less", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Greater", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "LessOrEqual", &[s(12, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "GreaterOrEqual", &[s(12, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Not", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "And", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Or", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Xor", &[s(7, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Mod", &[s(10, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Softmax", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "LogSoftmax", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "SoftmaxCrossEntropyLoss", &[s(12, (2, 3), (1, 2), &[2], &[])]),
    row(ONNX, "NegativeLogLikelihoodLoss", &[s(12, (2, 3), (1, 1), &[2], &[])]),
    // linear algebra and normalisation
    row(ONNX, "Gemm", &[s(7, (3, 3), (1, 1), &[], &[]), s(11, (2, 3), (1, 1), &[2], &[])]),
    row(ONNX, "MatMul", &[s(1, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Einsum", &[s(12, (1, VARIADIC), (1, 1), &[], &["equation"])]),
    row(ONNX, "BatchNormalization", &[s(7, (5, 5), (1, 5), &[], &[]), s(14, (5, 5), (1, 3), &[], &[])]),
    row(ONNX, "InstanceNormalization", &[s(6, (3, 3), (1, 1), &[], &[])]),
    row(ONNX, "LayerNormalization", &[s(17, (2, 3), (1, 3), &[2], &[])]),
    row(ONNX, "LRN", &[s(1, (1, 1), (1, 1), &[], &["size"])]),
    row(ONNX, "GroupNormalization", &[s(18, (3, 3), (1, 1), &[], &["num_groups"])]),
    row(ONNX, "MeanVarianceNormalization", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "LpNormalization", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "ReduceMean", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceSum", &[s(1, (1, 1), (1, 1), &[], &[]), s(13, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceMax", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceMin", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceProd", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceL1", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceL2", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceSumSquare", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceLogSum", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ReduceLogSumExp", &[s(1, (1, 1), (1, 1), &[], &[]), s(18, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "ArgMax", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "ArgMin", &[s(1, (1, 1), (1, 1), &[], &[])]),
    // recurrent layers
    row(ONNX, "LSTM", &[s(7, (3, 8), (0, 3), &[3, 4, 5, 6, 7], &[])]),
    row(ONNX, "GRU", &[s(7, (3, 6), (0, 2), &[3, 4, 5], &[])]),
    row(ONNX, "RNN", &[s(7, (3, 6), (0, 2), &[3, 4, 5], &[])]),
    // selection and indexing
    row(ONNX, "TopK", &[s(1, (1, 1), (2, 2), &[], &["k"]), s(10, (2, 2), (2, 2), &[], &[])]),
    row(ONNX, "Hardmax", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "CumSum", &[s(11, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "OneHot", &[s(9, (3, 3), (1, 1), &[], &[])]),
    row(ONNX, "GatherElements", &[s(11, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "ScatterElements", &[s(11, (3, 3), (1, 1), &[], &[])]),
    row(ONNX, "Scatter", &[s(9, (3, 3), (1, 1), &[], &[])]),
    row(ONNX, "GatherND", &[s(11, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "ScatterND", &[s(11, (3, 3), (1, 1), &[], &[])]),
    row(ONNX, "Trilu", &[s(14, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "NonMaxSuppression", &[s(10, (2, 5), (1, 1), &[2, 3, 4], &[])]),
    row(ONNX, "NonZero", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Compress", &[s(9, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "ReverseSequence", &[s(10, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "EyeLike", &[s(9, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "CenterCropPad", &[s(18, (2, 2), (1, 1), &[], &[])]),
    // convolution and pooling
    row(ONNX, "Conv", &[s(1, (2, 3), (1, 1), &[2], &[])]),
    row(ONNX, "ConvTranspose", &[s(1, (2, 3), (1, 1), &[2], &[])]),
    row(ONNX, "MaxPool", &[s(1, (1, 1), (1, 1), &[], &["kernel_shape"]), s(8, (1, 1), (1, 2), &[], &["kernel_shape"])]),
    row(ONNX, "AveragePool", &[s(7, (1, 1), (1, 1), &[], &["kernel_shape"])]),
    row(ONNX, "GlobalAveragePool", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "GlobalMaxPool", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "LpPool", &[s(2, (1, 1), (1, 1), &[], &["kernel_shape"])]),
    row(ONNX, "MaxUnpool", &[s(9, (2, 3), (1, 1), &[2], &["kernel_shape"])]),
    // movement
    row(ONNX, "Reshape", &[s(5, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Flatten", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Transpose", &[s(1, (1, 1), (1, 1), &[], &[])]),
    row(ONNX, "Concat", &[s(4, (1, VARIADIC), (1, 1), &[], &["axis"])]),
    row(ONNX, "Slice", &[s(1, (1, 1), (1, 1), &[], &["ends", "starts"]), s(10, (3, 5), (1, 1), &[3, 4], &[])]),
    row(ONNX, "Squeeze", &[s(1, (1, 1), (1, 1), &[], &[]), s(13, (1, 2), (1, 1), &[1], &[])]),
    row(ONNX, "Unsqueeze", &[s(1, (1, 1), (1, 1), &[], &["axes"]), s(13, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Pad", &[s(2, (1, 1), (1, 1), &[], &["pads"]), s(11, (2, 3), (1, 1), &[2], &[]), s(18, (2, 4), (1, 1), &[2, 3], &[])]),
    row(ONNX, "Gather", &[s(1, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Expand", &[s(8, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Tile", &[s(6, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "Split", &[s(2, (1, 1), (1, VARIADIC), &[], &[]), s(13, (1, 2), (1, VARIADIC), &[1], &[])]),
    row(ONNX, "Resize", &[s(10, (2, 2), (1, 1), &[], &[]), s(11, (3, 4), (1, 1), &[3], &[]), s(13, (1, 4), (1, 1), &[1, 2, 3], &[])]),
    row(ONNX, "Upsample", &[s(7, (1, 1), (1, 1), &[], &["scales"]), s(9, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "GridSample", &[s(16, (2, 2), (1, 1), &[], &[])]),
    row(ONNX, "DepthToSpace", &[s(1, (1, 1), (1, 1), &[], &["blocksize"])]),
    row(ONNX, "SpaceToDepth", &[s(1, (1, 1), (1, 1), &[], &["blocksize"])]),
    // quantisation (8-bit integers, `int32` accumulators and biases)
    row(ONNX, "QuantizeLinear", &[s(10, (2, 3), (1, 1), &[2], &[])]),
    row(ONNX, "DequantizeLinear", &[s(10, (2, 3), (1, 1), &[2], &[])]),
    row(ONNX, "DynamicQuantizeLinear", &[s(11, (1, 1), (3, 3), &[], &[])]),
    row(ONNX, "QLinearConv", &[s(10, (8, 9), (1, 1), &[8], &[])]),
    row(ONNX, "QLinearMatMul", &[s(10, (8, 8), (1, 1), &[], &[])]),
    row(ONNX, "MatMulInteger", &[s(10, (2, 4), (1, 1), &[2, 3], &[])]),
    row(ONNX, "ConvInteger", &[s(10, (2, 4), (1, 1), &[2, 3], &[])]),
    // onnxruntime's quantised contrib operators (what its quantiser writes)
    row(MS, "QGemm", &[s(1, (6, 9), (1, 1), &[6, 7, 8], &[])]),
    row(MS, "QLinearAdd", &[s(1, (7, 8), (1, 1), &[2, 5, 7], &[])]),
    row(MS, "QLinearMul", &[s(1, (7, 8), (1, 1), &[2, 5, 7], &[])]),
    row(MS, "QLinearConcat", &[s(1, (3, VARIADIC), (1, 1), &[], &["axis"])]),
    row(MS, "QLinearGlobalAveragePool", &[s(1, (5, 5), (1, 1), &[], &[])]),
    row(MS, "QLinearAveragePool", &[s(1, (4, 5), (1, 1), &[2, 4], &["kernel_shape"])]),
    row(MS, "QLinearSigmoid", &[s(1, (4, 5), (1, 1), &[2, 4], &[])]),
    row(MS, "QLinearLeakyRelu", &[s(1, (4, 5), (1, 1), &[2, 4], &[])]),
    row(MS, "QLinearSoftmax", &[s(1, (4, 5), (1, 1), &[2, 4], &["opset"])]),
];

/// The row of `op_type` in `domain` (a node's domain string), if pixelgrad reads it.
pub fn find(domain: &str, op_type: &str) -> Option<&'static OpRow> {
    static INDEX: OnceLock<HashMap<(Domain, &'static str), &'static OpRow>> = OnceLock::new();
    let index = INDEX.get_or_init(|| OPS.iter().map(|r| ((r.domain, r.name), r)).collect());
    index.get(&(Domain::of(domain)?, op_type)).copied()
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
