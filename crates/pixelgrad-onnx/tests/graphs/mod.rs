//! Small ONNX models built in the tests with the crate's own protobuf messages: no fixture
//! files, no Python. For the hostile-input tests (malformed nodes, size bombs, run limits).
#![allow(dead_code)]

use pixelgrad_onnx::proto::{
    attribute_type as at, data_type as dt, AttributeProto, DimValue, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    TensorProto, TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};

pub const F32: i32 = dt::FLOAT;
pub const I64: i32 = dt::INT64;

pub fn node(op: &str, ins: &[&str], outs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        op_type: op.into(),
        attribute: attrs,
        ..Default::default()
    }
}

pub fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::INT, i: v, ..Default::default() }
}

pub fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::INTS, ints: v.to_vec(), ..Default::default() }
}

pub fn float(name: &str, v: f32) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::FLOAT, f: v, ..Default::default() }
}

pub fn string(name: &str, v: &str) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::STRING, s: v.as_bytes().to_vec(), ..Default::default() }
}

pub fn tensor_attr(name: &str, t: TensorProto) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::TENSOR, t: Some(t), ..Default::default() }
}

/// An int64 initializer.
pub fn i64s(name: &str, dims: &[i64], v: &[i64]) -> TensorProto {
    TensorProto { name: name.into(), dims: dims.to_vec(), data_type: I64, int64_data: v.to_vec(), ..Default::default() }
}

/// A float initializer.
pub fn f32s(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    TensorProto { name: name.into(), dims: dims.to_vec(), data_type: F32, float_data: v.to_vec(), ..Default::default() }
}

pub fn info(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    let dim = dims.iter().map(|&d| Dimension { value: Some(DimValue::DimValue(d)), ..Default::default() }).collect();
    let tensor = TypeProtoTensor { elem_type, shape: Some(TensorShapeProto { dim }) };
    ValueInfoProto { name: name.into(), r#type: Some(TypeProto { tensor_type: Some(tensor), ..Default::default() }), ..Default::default() }
}

/// A model of `nodes` (default domain at `opset`, com.microsoft 1) with these float graph
/// inputs, outputs (rank unknown) and initializers.
pub fn model(opset: i64, nodes: Vec<NodeProto>, inputs: &[(&str, &[i64])], outputs: &[&str], inits: Vec<TensorProto>) -> Vec<u8> {
    let output = outputs
        .iter()
        .map(|o| ValueInfoProto {
            name: o.to_string(),
            r#type: Some(TypeProto { tensor_type: Some(TypeProtoTensor { elem_type: F32, shape: None }), ..Default::default() }),
            ..Default::default()
        })
        .collect();
    let graph = GraphProto {
        node: nodes,
        name: "g".into(),
        initializer: inits,
        input: inputs.iter().map(|(n, d)| info(n, F32, d)).collect(),
        output,
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![
            OperatorSetIdProto { domain: String::new(), version: opset },
            OperatorSetIdProto { domain: "com.microsoft".into(), version: 1 },
        ],
        graph: Some(graph),
        ..Default::default()
    };
    pixelgrad_onnx::proto::encode_model(&m)
}

/// A model whose one node has only an operator type (no inputs, outputs or attributes): the
/// 17-30 byte files of issue 38.
pub fn bare_node(op: &str) -> Vec<u8> {
    let m = ModelProto {
        ir_version: 3,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 13 }],
        graph: Some(GraphProto { node: vec![node(op, &[], &[], vec![])], ..Default::default() }),
        ..Default::default()
    };
    pixelgrad_onnx::proto::encode_model(&m)
}

/// The four files of issue 38: `Slice`, `ReduceSum` and `BatchNormalization` with no inputs,
/// `QuantizeLinear` with no outputs (nor anything else).
pub fn issue38_models() -> Vec<(&'static str, Vec<u8>)> {
    ["Slice", "ReduceSum", "BatchNormalization", "QuantizeLinear"].into_iter().map(|op| (op, bare_node(op))).collect()
}

/// A graph-valued attribute (`If`'s branches, `Loop`'s and `Scan`'s bodies).
pub fn graph_attr(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::GRAPH, g: Some(g), ..Default::default() }
}

/// A subgraph of `nodes` with these formal inputs (`info`s), outputs (float, rank unknown: the
/// loader reads subgraph outputs by name) and initializers.
pub fn subgraph(nodes: Vec<NodeProto>, inputs: Vec<ValueInfoProto>, outputs: &[&str], inits: Vec<TensorProto>) -> GraphProto {
    let output = outputs
        .iter()
        .map(|o| ValueInfoProto {
            name: o.to_string(),
            r#type: Some(TypeProto { tensor_type: Some(TypeProtoTensor { elem_type: F32, shape: None }), ..Default::default() }),
            ..Default::default()
        })
        .collect();
    GraphProto { node: nodes, name: "sub".into(), initializer: inits, input: inputs, output, ..Default::default() }
}
