//! What a model file holds and whether pixelgrad reads it, before anything runs:
//! `pixelgrad inspect MODEL.onnx` and the browser's `m.info`. [`inspect`] lists the inputs
//! and outputs, the opsets, every operator used (subgraphs included) with its count and the
//! backends that run it, the weight bytes by the type the file stores them in, the external
//! data files, and everything loading would refuse, with why.
//!
//! Every operator pixelgrad reads is built from the same tensor primitives on every backend,
//! so an operator is supported on all of [`BACKENDS`] or on none.

use std::collections::BTreeMap;

use crate::external::External;
use crate::graph::ValueInfo;
use crate::host::{onnx_type_name, DType};
use crate::ops::registry;
use crate::proto::{self, GraphProto, TensorProto};
use crate::{Model, OnnxError, Result};

/// The backends pixelgrad runs models on.
pub const BACKENDS: [&str; 3] = ["cpu", "webgpu", "webgl"];

/// One operator type a model uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorUse {
    /// `""` for the default domain.
    pub domain: String,
    pub op_type: String,
    /// The version of its domain the model imports.
    pub opset: i64,
    /// Nodes of this type, in the main graph and every subgraph.
    pub count: usize,
    /// Whether pixelgrad reads it (then every backend of [`BACKENDS`] runs it).
    pub supported: bool,
    /// How every backend runs it where that differs from what the file suggests (MatMulNBits:
    /// its packed weights stay packed on cpu, webgpu and webgl2, are dequantised to f32 on
    /// webgl1).
    pub note: Option<&'static str>,
}

/// Weights stored in one element type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeightGroup {
    pub tensors: usize,
    pub bytes: u64,
}

/// The weights of `MatMulNBits` nodes, by where they live: packed on the CPU, WebGPU and
/// WebGL2 (the stored blocks, plus an f32 scale and zero point per block), dequantised to f32 on
/// WebGL1 (`K x N` values).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedWeights {
    /// `MatMulNBits` nodes whose attributes describe a weight pixelgrad reads.
    pub nodes: usize,
    /// Device bytes with the weights kept packed (cpu, webgpu, webgl2).
    pub packed_bytes: u64,
    /// Device bytes of the same weights as f32 (webgl1).
    pub f32_bytes: u64,
}

impl PackedWeights {
    /// Adds the weight a `MatMulNBits` node's attributes describe (none where they are not
    /// ones pixelgrad reads: loading reports those).
    fn add(&mut self, attrs: &[proto::AttributeProto]) {
        let get = |name: &str| attrs.iter().find(|a| a.name == name).map(|a| a.i);
        let (Some(k), Some(n), Some(bits), Some(block)) = (get("K"), get("N"), get("bits"), get("block_size")) else {
            return;
        };
        let (Ok(k), Ok(n), Ok(block)) = (u64::try_from(k), u64::try_from(n), u64::try_from(block)) else {
            return;
        };
        if !(bits == 4 || bits == 8) || block == 0 {
            return;
        }
        let k_blocks = k.div_ceil(block);
        let blob = block.saturating_mul(bits as u64) / 8;
        // packed bytes, then one f32 scale and one f32 zero point per block
        let packed = n.saturating_mul(k_blocks).saturating_mul(blob.saturating_add(8));
        self.nodes += 1;
        self.packed_bytes = self.packed_bytes.saturating_add(packed);
        self.f32_bytes = self.f32_bytes.saturating_add(k.saturating_mul(n).saturating_mul(4));
    }
}

/// What [`inspect`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub ir_version: i64,
    pub producer: String,
    /// Imported operator sets: (domain, `""` for the default one; version).
    pub opsets: Vec<(String, i64)>,
    /// The inputs a caller gives (graph inputs that are not initializers) and the outputs;
    /// a value pixelgrad cannot type is left out and listed in `refused`.
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<ValueInfo>,
    /// Every node, subgraphs included.
    pub nodes: usize,
    /// By domain and operator type.
    pub operators: Vec<OperatorUse>,
    /// Initializer bytes by the ONNX name of their element type as stored (`float`, `int8`...).
    pub weights: BTreeMap<String, WeightGroup>,
    /// The weights of `MatMulNBits` nodes, packed and as f32.
    pub packed_weights: PackedWeights,
    /// External data files by location, with the bytes the model reads from each.
    pub external: BTreeMap<String, u64>,
    /// What loading refuses, each with why: every unsupported operator, then the first other
    /// error of a load (none: the model loads).
    pub refused: Vec<String>,
}

impl Report {
    /// Whether the model loads.
    pub fn loads(&self) -> bool {
        self.refused.is_empty()
    }

    /// The report as JSON (what `pixelgrad inspect --json` prints and `m.info` carries).
    pub fn to_json(&self) -> serde_json::Value {
        let infos = |v: &[ValueInfo]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|i| {
                    let shape = i.shape.as_ref().map(|d| {
                        d.iter()
                            .map(|x| match x {
                                crate::Dim::Fixed(n) => serde_json::json!(n),
                                crate::Dim::Named(s) => serde_json::json!(s),
                                crate::Dim::Unknown => serde_json::Value::Null,
                            })
                            .collect::<Vec<_>>()
                    });
                    serde_json::json!({ "name": i.name, "dtype": i.dtype.name(), "shape": shape })
                })
                .collect()
        };
        let ops: Vec<serde_json::Value> = self
            .operators
            .iter()
            .map(|o| {
                let backends: serde_json::Map<String, serde_json::Value> =
                    BACKENDS.iter().map(|b| (b.to_string(), serde_json::Value::Bool(o.supported))).collect();
                serde_json::json!({ "domain": o.domain, "op": o.op_type, "opset": o.opset, "count": o.count, "supported": o.supported, "backends": backends, "note": o.note })
            })
            .collect();
        let weights: serde_json::Map<String, serde_json::Value> =
            self.weights.iter().map(|(k, w)| (k.clone(), serde_json::json!({ "tensors": w.tensors, "bytes": w.bytes }))).collect();
        serde_json::json!({
            "irVersion": self.ir_version,
            "producer": self.producer,
            "opsets": self.opsets.iter().map(|(d, v)| serde_json::json!({ "domain": d, "version": v })).collect::<Vec<_>>(),
            "inputs": infos(&self.inputs),
            "outputs": infos(&self.outputs),
            "nodes": self.nodes,
            "operators": ops,
            "weightBytesByType": weights,
            "packedWeights": {
                "nodes": self.packed_weights.nodes,
                "packedBytes": self.packed_weights.packed_bytes,
                "f32Bytes": self.packed_weights.f32_bytes,
            },
            "externalData": self.external,
            "loads": self.loads(),
            "refused": self.refused,
        })
    }
}

/// Inspects the bytes of an `.onnx` file whose external data (if any) comes from `external`:
/// [`describe`], then a load of the model ([`Model::from_bytes`]'s checks and constant
/// folding; nothing runs on a device) whose first error, if any, joins `refused`. An error
/// only for bytes that are not an ONNX model at all; everything else is reported.
pub fn inspect(bytes: &[u8], external: &External) -> Result<Report> {
    let mut r = describe(bytes)?;
    if let Err(e) = Model::decode(bytes, external) {
        // an unsupported operator is listed already, with every other one
        let listed = r.operators.iter().any(|o| !o.supported) && matches!(e, OnnxError::UnsupportedOp { .. });
        let msg = e.to_string();
        if !listed && !r.refused.contains(&msg) {
            r.refused.push(msg);
        }
    }
    Ok(r)
}

/// What [`inspect`] reports from the file alone, without loading the model: `refused` lists
/// the unsupported operators and the inputs and outputs pixelgrad cannot type, not the
/// errors only a load finds. For a model that has loaded (`m.info` in the browser).
pub fn describe(bytes: &[u8]) -> Result<Report> {
    if bytes.is_empty() {
        return Err(OnnxError::Parse("the file is empty".into()));
    }
    let m = proto::decode_model(bytes).map_err(|e| OnnxError::Parse(format!("protobuf decoding failed ({e})")))?;
    let g = m.graph.as_ref().ok_or_else(|| OnnxError::Parse("the model has no graph (is this an ONNX file?)".into()))?;
    let mut opsets: Vec<(String, i64)> =
        m.opset_import.iter().map(|o| (if o.domain == "ai.onnx" { String::new() } else { o.domain.clone() }, o.version)).collect();
    opsets.sort();
    let mut r = Report {
        ir_version: m.ir_version,
        producer: [m.producer_name.as_str(), m.producer_version.as_str()].join(" ").trim().to_string(),
        opsets,
        inputs: Vec::new(),
        outputs: Vec::new(),
        nodes: 0,
        operators: Vec::new(),
        weights: BTreeMap::new(),
        packed_weights: PackedWeights::default(),
        external: BTreeMap::new(),
        refused: Vec::new(),
    };
    let initializers: std::collections::HashSet<&str> = g.initializer.iter().map(|t| t.name.as_str()).collect();
    for (list, infos) in [(&mut r.inputs, &g.input), (&mut r.outputs, &g.output)] {
        for v in infos.iter().filter(|v| !initializers.contains(v.name.as_str())) {
            match ValueInfo::from_proto(v) {
                Ok(i) => list.push(i),
                Err(e) => r.refused.push(e.to_string()),
            }
        }
    }
    let mut ops: BTreeMap<(String, String), usize> = BTreeMap::new();
    walk(g, &mut r, &mut ops);
    let opset_of = |d: &str| r.opsets.iter().find(|(k, _)| k == d).map_or(0, |(_, v)| *v);
    let mut unsupported = Vec::new();
    let operators: Vec<OperatorUse> = ops
        .into_iter()
        .map(|((domain, op_type), count)| {
            let row = registry::find(&domain, &op_type);
            let (supported, note) = (row.is_some(), row.and_then(|r| r.note));
            let opset = opset_of(&domain);
            if !supported {
                let dom = if domain.is_empty() { "ai.onnx" } else { domain.as_str() };
                unsupported.push(format!("unsupported operator {op_type} (domain '{dom}', opset {opset}): {count} node(s)"));
            }
            OperatorUse { domain, op_type, opset, count, supported, note }
        })
        .collect();
    r.operators = operators;
    r.refused.extend(unsupported);
    Ok(r)
}

/// [`inspect`] of a model file, its external data read from its folder.
pub fn inspect_file(path: impl AsRef<std::path::Path>) -> Result<Report> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| OnnxError::io(path, e))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    inspect(&bytes, &External::Folder(dir))
}

/// Counts the nodes, operators, weights and external data of `g` and its subgraphs.
fn walk(g: &GraphProto, r: &mut Report, ops: &mut BTreeMap<(String, String), usize>) {
    for t in &g.initializer {
        weight(t, r);
    }
    for n in &g.node {
        r.nodes += 1;
        let dom = if n.domain == "ai.onnx" { String::new() } else { n.domain.clone() };
        *ops.entry((dom, n.op_type.clone())).or_default() += 1;
        if n.domain == "com.microsoft" && n.op_type == "MatMulNBits" {
            r.packed_weights.add(&n.attribute);
        }
        for a in &n.attribute {
            if let Some(t) = &a.t {
                weight(t, r);
            }
            for sub in a.g.iter().chain(&a.graphs) {
                walk(sub, r, ops);
            }
        }
    }
}

/// Adds tensor `t` to the weights (by the element type it is stored in) and, where it is
/// external, to its file's bytes.
fn weight(t: &TensorProto, r: &mut Report) {
    let numel = t.dims.iter().try_fold(1u64, |a, &d| u64::try_from(d).ok().and_then(|d| a.checked_mul(d)));
    let bits = DType::from_onnx(t.data_type, "").map(|d| d.bits() as u64).unwrap_or(match t.data_type {
        proto::data_type::DOUBLE | proto::data_type::UINT64 | proto::data_type::COMPLEX64 => 64,
        proto::data_type::COMPLEX128 => 128,
        proto::data_type::FLOAT4E2M1 => 4,
        _ => 8,
    });
    let bytes = numel.and_then(|n| n.checked_mul(bits)).map_or(u64::MAX, |b| b.div_ceil(8));
    let w = r.weights.entry(onnx_type_name(t.data_type).to_string()).or_default();
    w.tensors += 1;
    w.bytes = w.bytes.saturating_add(bytes);
    if t.data_location == 1 {
        let location = t.external_data.iter().find(|e| e.key == "location").map(|e| e.value.clone()).unwrap_or_default();
        let len = t.external_data.iter().find(|e| e.key == "length").and_then(|e| e.value.trim().parse::<u64>().ok()).unwrap_or(bytes);
        let e = r.external.entry(location).or_default();
        *e = e.saturating_add(len);
    }
}
