// A structure-aware mutator for ONNX models: it decodes a model with the importer's own
// protobuf messages, changes its structure the way a hostile or broken exporter would, and
// encodes it again. Byte flips rarely get past protobuf decoding into the importer's graph
// code, and never delete a node's inputs (issue 38's panics were all of that kind); these do:
//
// - drop, duplicate, reorder and rewire node inputs and outputs (to another value, or to the
//   empty name of an omitted optional input);
// - swap operator types among the supported ones (`registry::OPS`, either domain);
// - extreme attribute values: huge, negative and zero ints, NaN and infinite floats, empty and
//   huge lists, attributes of the wrong type, added and removed attributes;
// - drop, duplicate and reorder nodes; extreme initializer and graph input dimensions, other
//   element types, another opset.
//
// Used by the cargo-fuzz target `fuzz/fuzz_targets/onnx.rs` (as libFuzzer's custom mutator,
// half of the time, the other half libFuzzer's byte mutations) and by the stable test
// `crates/pixelgrad-onnx/tests/fuzz_harness.rs`, which runs the ONNX harness on seeded
// mutations of every seed. Deterministic: the same input and seed give the same output.
use pixelgrad_onnx::proto::{self, attribute_type as at, data_type as dt, AttributeProto, DimValue, ModelProto, TensorProto};
use pixelgrad_onnx::registry::{Domain, OPS};

/// splitmix64: small, deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// In `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> Option<T> {
        let i = self.below(v.len());
        v.get(i).copied()
    }
}

/// Integers where arithmetic breaks: zero, signs, powers of two around 32- and 64-bit limits.
const INTS: &[i64] = &[0, 1, -1, 2, 3, 7, 64, 65536, 1 << 31, -(1 << 31), (1 << 32) + 1, 1 << 62, (1 << 62) + 1, i64::MAX, i64::MIN, -2];
const FLOATS: &[f32] =
    &[0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e38, -1e38, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN, 65536.0];
/// Attribute names the supported operators read.
const ATTRS: &[&str] = &[
    "axis",
    "axes",
    "perm",
    "kernel_shape",
    "pads",
    "strides",
    "dilations",
    "group",
    "keepdims",
    "to",
    "split",
    "num_outputs",
    "alpha",
    "beta",
    "epsilon",
    "mode",
    "blocksize",
    "k",
    "largest",
    "sorted",
    "transA",
    "transB",
    "starts",
    "ends",
    "value",
    "auto_pad",
    "ceil_mode",
    "count_include_pad",
    "storage_order",
    "equation",
    "direction",
    "hidden_size",
    "layout",
    "noop_with_empty_axes",
    "select_last_index",
    "exclusive",
    "reverse",
    "upper",
    "fmod",
    "batch_dims",
    "reduction",
    "saturate",
    "output_padding",
    "output_shape",
    "size",
    "bias",
    "lambd",
    "coordinate_transformation_mode",
    "nearest_mode",
    "cubic_coeff_a",
    "exclude_outside",
    "center_point_box",
    "num_groups",
    "training_mode",
    "channels_last",
    "opset",
    "allowzero",
    "start",
    "end",
    "value_float",
    "value_floats",
    "value_int",
    "value_ints",
    "scales",
    "activations",
    "clip",
    "linear_before_reset",
    "p",
    "across_channels",
    "normalize_variance",
    "align_corners",
    "padding_mode",
    "sample_size",
    "ignore_index",
];
const STRINGS: &[&str] = &[
    "",
    "NOTSET",
    "SAME_UPPER",
    "SAME_LOWER",
    "VALID",
    "linear",
    "nearest",
    "cubic",
    "reflect",
    "edge",
    "wrap",
    "constant",
    "bidirectional",
    "reverse",
    "ij,jk->ik",
    "...",
    "\u{0}",
];
const TYPES: &[i32] =
    &[dt::FLOAT, dt::FLOAT16, dt::BFLOAT16, dt::INT64, dt::INT32, dt::INT8, dt::UINT8, dt::BOOL, dt::DOUBLE, dt::STRING, 0, 99];

/// `data` decoded, mutated one to four times (from `seed`) and encoded; `None` when `data`
/// does not decode as a model or the result is longer than `max_size`.
pub fn mutate(data: &[u8], seed: u64, max_size: usize) -> Option<Vec<u8>> {
    let mut m = proto::decode_model(data).ok()?;
    let mut rng = Rng::new(seed);
    for _ in 0..1 + rng.below(4) {
        mutate_once(&mut m, &mut rng);
    }
    let out = proto::encode_model(&m);
    (out.len() <= max_size).then_some(out)
}

fn extreme_attr(a: &mut AttributeProto, rng: &mut Rng) {
    let int = |rng: &mut Rng| rng.pick(INTS).unwrap_or(0);
    let float = |rng: &mut Rng| rng.pick(FLOATS).unwrap_or(0.0);
    let len = |rng: &mut Rng| match rng.below(4) {
        0 => 0,
        1 => 1 + rng.below(4),
        2 => 1 + rng.below(16),
        _ => 256 + rng.below(1024),
    };
    // sometimes another type than the one the operator expects
    if rng.below(4) == 0 {
        a.r#type = rng
            .pick(&[at::INT, at::FLOAT, at::INTS, at::FLOATS, at::STRING, at::STRINGS, at::TENSOR, at::UNDEFINED, at::GRAPH])
            .unwrap_or(at::INT);
    }
    match a.r#type {
        at::INT => a.i = int(rng),
        at::FLOAT => a.f = float(rng),
        at::INTS => a.ints = (0..len(rng)).map(|_| int(rng)).collect(),
        at::FLOATS => a.floats = (0..len(rng)).map(|_| float(rng)).collect(),
        at::STRING => a.s = rng.pick(STRINGS).unwrap_or("").as_bytes().to_vec(),
        at::STRINGS => a.strings = (0..len(rng).min(8)).map(|_| rng.pick(STRINGS).unwrap_or("").as_bytes().to_vec()).collect(),
        at::TENSOR => {
            let mut t = a.t.take().unwrap_or_default();
            extreme_tensor(&mut t, rng);
            a.t = Some(t);
        }
        _ => {
            a.i = int(rng);
            a.ints = (0..len(rng)).map(|_| int(rng)).collect();
        }
    }
}

fn extreme_tensor(t: &mut TensorProto, rng: &mut Rng) {
    match rng.below(4) {
        0 => {
            let i = rng.below(t.dims.len() + 1);
            let v = rng.pick(INTS).unwrap_or(0);
            match t.dims.get_mut(i) {
                Some(d) => *d = v,
                None => t.dims.push(v),
            }
        }
        1 => t.data_type = rng.pick(TYPES).unwrap_or(dt::FLOAT),
        2 => {
            t.dims.clear();
            t.float_data = vec![rng.pick(FLOATS).unwrap_or(0.0)];
            t.int64_data = vec![rng.pick(INTS).unwrap_or(0)];
            t.raw_data.clear();
        }
        _ => {
            let cut = rng.below(t.raw_data.len() + 1);
            t.raw_data.truncate(cut);
            t.float_data.truncate(cut / 4);
            t.int64_data.truncate(cut / 8);
        }
    }
}

fn mutate_once(m: &mut ModelProto, rng: &mut Rng) {
    if rng.below(32) == 0 {
        if let Some(o) = m.opset_import.first_mut() {
            o.version = rng.pick(&[1, 6, 7, 9, 10, 11, 12, 13, 17, 18, 20, 22, 23, i64::MAX]).unwrap_or(13);
        }
        return;
    }
    let Some(g) = m.graph.as_mut() else { return };
    // every value name in the graph, and the empty name of an omitted input
    let mut names: Vec<String> = g.input.iter().map(|i| i.name.clone()).collect();
    names.extend(g.initializer.iter().map(|t| t.name.clone()));
    names.extend(g.node.iter().flat_map(|n| n.output.iter().cloned()));
    names.push(String::new());
    let k = rng.below(g.node.len());
    let kind = rng.below(16);
    if kind >= 13 {
        // graph-level changes
        match kind {
            13 if !g.node.is_empty() => match rng.below(3) {
                0 => {
                    g.node.remove(k);
                }
                1 => {
                    let n = g.node[k].clone();
                    g.node.insert(rng.below(g.node.len() + 1), n);
                }
                _ => {
                    let j = rng.below(g.node.len());
                    g.node.swap(k, j);
                }
            },
            14 if !g.initializer.is_empty() => {
                let i = rng.below(g.initializer.len());
                extreme_tensor(&mut g.initializer[i], rng);
            }
            _ => {
                // a graph input's dimension, or its element type
                let i = rng.below(g.input.len());
                if let Some(tt) = g.input.get_mut(i).and_then(|v| v.r#type.as_mut()).and_then(|t| t.tensor_type.as_mut()) {
                    if rng.below(2) == 0 {
                        tt.elem_type = rng.pick(TYPES).unwrap_or(dt::FLOAT);
                    } else if let Some(shape) = tt.shape.as_mut() {
                        let d = rng.below(shape.dim.len() + 1);
                        let v = rng.pick(&[0i64, 1, 2, 3, -1, 65536, 1 << 31, i64::MAX]).unwrap_or(1);
                        match shape.dim.get_mut(d) {
                            Some(dim) => dim.value = Some(DimValue::DimValue(v)),
                            None => shape.dim.push(proto::Dimension { value: Some(DimValue::DimValue(v)), ..Default::default() }),
                        }
                    }
                }
            }
        }
        return;
    }
    let Some(n) = g.node.get_mut(k) else { return };
    let pick_name = |rng: &mut Rng| names.get(rng.below(names.len())).cloned().unwrap_or_default();
    match kind {
        0 if !n.input.is_empty() => {
            n.input.remove(rng.below(n.input.len()));
        }
        1 if !n.output.is_empty() => {
            n.output.remove(rng.below(n.output.len()));
        }
        2 if !n.input.is_empty() => {
            let i = rng.below(n.input.len());
            let v = n.input[i].clone();
            n.input.insert(rng.below(n.input.len() + 1), v);
        }
        3 if !n.output.is_empty() => {
            let i = rng.below(n.output.len());
            let v = n.output[i].clone();
            n.output.insert(rng.below(n.output.len() + 1), v);
        }
        4 => {
            if rng.below(2) == 0 {
                n.input.reverse();
            } else {
                let (i, j) = (rng.below(n.input.len()), rng.below(n.input.len()));
                if i < n.input.len() && j < n.input.len() {
                    n.input.swap(i, j);
                }
            }
        }
        5 => {
            let (i, j) = (rng.below(n.output.len()), rng.below(n.output.len()));
            if i < n.output.len() && j < n.output.len() {
                n.output.swap(i, j);
            }
        }
        6 => {
            // rewire an input (or add one) to another value or to nothing
            let v = pick_name(rng);
            let i = rng.below(n.input.len() + 1);
            match n.input.get_mut(i) {
                Some(s) => *s = v,
                None => n.input.push(v),
            }
        }
        7 => {
            // another supported operator with this node's inputs and attributes
            if let Some(row) = OPS.get(rng.below(OPS.len())) {
                n.op_type = row.name.to_string();
                n.domain = if row.domain == Domain::Microsoft { "com.microsoft".into() } else { String::new() };
            }
        }
        8 | 9 if !n.attribute.is_empty() => {
            let i = rng.below(n.attribute.len());
            extreme_attr(&mut n.attribute[i], rng);
        }
        10 if !n.attribute.is_empty() => {
            n.attribute.remove(rng.below(n.attribute.len()));
        }
        _ => {
            // a new attribute by a name some operator reads, of a random type and value
            let mut a = AttributeProto { name: rng.pick(ATTRS).unwrap_or("axis").into(), r#type: at::INT, ..Default::default() };
            a.r#type = rng.pick(&[at::INT, at::INTS, at::FLOAT, at::FLOATS, at::STRING, at::TENSOR]).unwrap_or(at::INT);
            extreme_attr(&mut a, rng);
            n.attribute.push(a);
        }
    }
}

/// One small model per registered operator: the node with the fewest inputs its schema takes
/// (float graph inputs of shape [1, 2, 4, 4]), its fewest outputs and its required attributes
/// set to 1. Seeds for the mutator that reach every operator, the com.microsoft ones included.
/// (Written to `fuzz/corpus/onnx/` by the stable test; the fuzz target itself does not call it.)
#[allow(dead_code)]
pub fn op_seeds() -> Vec<(String, Vec<u8>)> {
    use pixelgrad_onnx::proto::{
        Dimension, GraphProto, NodeProto, OperatorSetIdProto, TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
    };
    let info = |name: &str| {
        let dim = [1, 2, 4, 4].iter().map(|&d| Dimension { value: Some(DimValue::DimValue(d)), ..Default::default() }).collect();
        let tensor = TypeProtoTensor { elem_type: dt::FLOAT, shape: Some(TensorShapeProto { dim }) };
        ValueInfoProto {
            name: name.into(),
            r#type: Some(TypeProto { tensor_type: Some(tensor), ..Default::default() }),
            ..Default::default()
        }
    };
    let mut out = Vec::new();
    for row in OPS {
        let Some(s) = row.schemas.last() else { continue };
        let ins: Vec<String> = (0..s.inputs.0).map(|i| format!("x{i}")).collect();
        let outs: Vec<String> = (0..s.outputs.0.max(1).min(s.outputs.1)).map(|i| format!("y{i}")).collect();
        let attribute = s
            .required_attrs
            .iter()
            .map(|a| AttributeProto { name: a.to_string(), r#type: at::INTS, ints: vec![1], ..Default::default() })
            .collect();
        let node = NodeProto {
            input: ins.clone(),
            output: outs.clone(),
            op_type: row.name.into(),
            domain: if row.domain == Domain::Microsoft { "com.microsoft".into() } else { String::new() },
            attribute,
            ..Default::default()
        };
        let graph = GraphProto {
            node: vec![node],
            input: ins.iter().map(|n| info(n)).collect(),
            output: outs.iter().map(|n| info(n)).collect(),
            ..Default::default()
        };
        let m = ModelProto {
            ir_version: 8,
            opset_import: vec![
                OperatorSetIdProto { domain: String::new(), version: s.since.max(13) },
                OperatorSetIdProto { domain: "com.microsoft".into(), version: 1 },
            ],
            graph: Some(graph),
            ..Default::default()
        };
        // a name in both domains (`Gelu`): the com.microsoft one's file says its domain
        let shared = row.domain == Domain::Microsoft && OPS.iter().any(|r| r.domain == Domain::Onnx && r.name == row.name);
        let file = if shared { format!("op_com_microsoft_{}.onnx", row.name) } else { format!("op_{}.onnx", row.name) };
        out.push((file, proto::encode_model(&m)));
    }
    out
}
