//! The operator table against the string tables it replaced (snapshots of them, taken before
//! they were derived from it), and every row's run function against its row.

use std::collections::{HashMap, HashSet};

use pixelgrad_core::{Device, Param, Tensor};

use super::context::{upload, Consts, Cx, V};
use super::registry::{by_name, Domain, OPS};
use super::{has_weights, host_argument, is_quantized, reads_back, SUPPORTED, SUPPORTED_MS};
use crate::graph::Node;
use crate::host::{DType, HostTensor};
use crate::{OnnxError, Result};

/// `session.rs`'s `host_argument` before the table.
fn old_host_argument(op: &str, i: usize) -> bool {
    match op {
        "Reshape" | "Expand" | "Tile" | "Unsqueeze" | "Squeeze" | "ConstantOfShape" => i >= 1,
        "Slice" | "Pad" | "Resize" | "Upsample" | "Split" | "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd"
        | "ReduceL1" | "ReduceL2" | "ReduceSumSquare" | "ReduceLogSum" | "ReduceLogSumExp" => i >= 1,
        "Clip" => i >= 1,
        // added with the table: its packed weight, scales and zero points are read on the host
        "MatMulNBits" => i >= 1,
        "GatherBlockQuantized" => i >= 2,
        // added with the table: seqlens_k, total_sequence_length (and the rotary caches)
        "GroupQueryAttention" => i >= 5,
        _ => false,
    }
}

/// `session.rs`'s `WEIGHT_OPS` before the table.
const OLD_WEIGHT_OPS: &[&str] =
    &["Conv", "ConvTranspose", "Gemm", "MatMul", "PRelu", "BatchNormalization", "InstanceNormalization", "LayerNormalization"];

/// `ops::reads_back` before the table.
fn old_reads_back(op_type: &str) -> &'static [usize] {
    match op_type {
        "NonMaxSuppression" => &[0, 1],
        "NonZero" => &[0],
        "Compress" => &[1],
        // added with the table: the present's length and layout depend on them
        "GroupQueryAttention" => &[5, 6],
        _ => &[],
    }
}

/// `ops::is_quantized` before the table (then: the rows from `QuantizeLinear` on, every
/// `com.microsoft` one included), named, so rows added later are not swept in.
fn old_is_quantized(op_type: &str) -> bool {
    const QUANTIZED: &[&str] = &[
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "QLinearConv",
        "QLinearMatMul",
        "MatMulInteger",
        "ConvInteger",
        "QGemm",
        "QLinearAdd",
        "QLinearMul",
        "QLinearConcat",
        "QLinearGlobalAveragePool",
        "QLinearAveragePool",
        "QLinearSigmoid",
        "QLinearLeakyRelu",
        "QLinearSoftmax",
        // added with the table: an integer product of a run-time quantised A
        "DynamicQuantizeMatMul",
    ];
    QUANTIZED.contains(&op_type)
}

/// The operators `hostops::eval`'s `match` evaluated on the host before the table.
const OLD_HOST_EVAL: &[&str] = &[
    "Constant",
    "Identity",
    "Dropout",
    "Cast",
    "CastLike",
    "Shape",
    "Size",
    "ConstantOfShape",
    "Reshape",
    "Flatten",
    "Unsqueeze",
    "Squeeze",
    "Concat",
    "Gather",
    "Slice",
    "Transpose",
    "Expand",
    "Range",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Max",
    "Min",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Mod",
    "Neg",
    "Abs",
    "Floor",
    "Ceil",
    "Sqrt",
    "Not",
    "Reciprocal",
    "Relu",
    "Sign",
    "Round",
    "Where",
    "ReduceProd",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceMean",
];

/// The operators only the host evaluates: a device input is an unsupported operator.
const HOST_ONLY: &[&str] = &["Constant", "Range"];

#[test]
fn derived_lists_equal_the_tables_they_replaced() {
    let names: Vec<&str> = OPS.iter().map(|r| r.name).chain(["Unknown", "com.Weird", ""]).collect();
    for &op in &names {
        for i in 0..10 {
            assert_eq!(host_argument(op, i), old_host_argument(op, i), "{op} input {i}");
        }
        assert_eq!(has_weights(op), OLD_WEIGHT_OPS.contains(&op), "{op}");
        assert_eq!(reads_back(op), old_reads_back(op), "{op}");
        assert_eq!(is_quantized(op), old_is_quantized(op), "{op}");
        let host = by_name(op).is_some_and(|r| r.host.is_some());
        assert_eq!(host, OLD_HOST_EVAL.contains(&op), "{op}");
    }
    assert_eq!(SUPPORTED.len() + SUPPORTED_MS.len(), OPS.len());
}

/// The names in both domains: `Gelu` (ONNX's since opset 20, onnxruntime's contrib one),
/// `RotaryEmbedding` and `Attention` (onnxruntime's contrib ones, ONNX's since opset 23).
const IN_BOTH: &[&str] = &["Gelu", "RotaryEmbedding", "Attention"];

/// Only [`IN_BOTH`]'s names are in both domains, and each one's rows agree on everything
/// [`by_name`]'s callers read, which do not know the domain.
#[test]
fn only_a_few_names_are_in_both_domains_and_their_rows_agree() {
    let mut seen = HashSet::new();
    for row in OPS {
        if !seen.insert(row.name) {
            assert!(IN_BOTH.contains(&row.name), "{} has two rows", row.name);
        } else if !IN_BOTH.contains(&row.name) {
            assert_eq!(by_name(row.name).map(|r| r.domain), Some(row.domain));
        }
    }
    for name in IN_BOTH {
        let both: Vec<_> = OPS.iter().filter(|r| r.name == *name).collect();
        assert_eq!(both.len(), 2, "{name}");
        let (a, b) = (both[0], both[1]);
        assert_ne!(a.domain, b.domain);
        assert!(a.host.is_none() && b.host.is_none());
        assert_eq!((a.host_args_from, a.reads_back, a.weights, a.quantized), (b.host_args_from, b.reads_back, b.weights, b.quantized));
    }
}

struct Plain(Device);

impl Consts for Plain {
    fn device(&self) -> &Device {
        &self.0
    }
    fn param(&self, _name: &str) -> Option<&Param> {
        None
    }
    fn cached(&self, name: &str, t: &HostTensor) -> Result<Tensor> {
        upload(&self.0, t, name)
    }
}

/// Every row's run function handles its row's operator: given device inputs (as many as the
/// newest schema's fewest, each `[2, 3]`), it runs or refuses them with the operator's own
/// error (a missing attribute, a device value where a host one is needed...), never with
/// "unsupported operator", except the host-only rows, which refuse every device input so.
#[test]
fn every_row_runs_its_operator() {
    let consts = Plain(Device::new(pixelgrad_cpu::CpuBackend::new()));
    let mut outcomes: HashMap<(Domain, &str), String> = HashMap::new();
    for row in OPS {
        let schema = row.schemas.last().unwrap();
        let n_in = schema.inputs.0.max(1).min(schema.inputs.1);
        let node = Node {
            name: format!("{}_0", row.name),
            op_type: row.name.into(),
            domain: if row.domain == Domain::Onnx { String::new() } else { "com.microsoft".into() },
            inputs: (0..n_in).map(|i| format!("x{i}")).collect(),
            outputs: (0..schema.outputs.0.max(1)).map(|i| format!("y{i}")).collect(),
            attrs: HashMap::new(),
            opset: schema.since,
        };
        let x = Tensor::from_vec(consts.device(), &[0.5, -1.0, 2.0, 0.0, 1.5, -0.25], [2, 3]).unwrap();
        let ins: Vec<Option<V>> = (0..n_in).map(|_| Some(V::dev(x.clone(), DType::F32))).collect();
        let cx = Cx { consts: &consts, node: &node };
        let res = (row.run)(&cx, &ins);
        let unsupported = matches!(res, Err(OnnxError::UnsupportedOp { .. }));
        assert_eq!(unsupported, HOST_ONLY.contains(&row.name), "{}: {:?}", row.name, res.as_ref().err());
        outcomes.insert((row.domain, row.name), res.map(|_| "ok".to_string()).unwrap_or_else(|e| e.to_string()));
    }
    assert_eq!(outcomes.len(), OPS.len());
}

/// Every run function of a family file (`pub(super) fn name(cx: &Cx, ins: &[Option<V>]) ->
/// Result<Vec<V>>`) and every host evaluator of `hostops.rs` (`pub(crate) fn host_...`) is
/// named by some row of the table: no operator implementation is reachable other than
/// through it.
#[test]
fn every_run_function_has_a_row() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let table = std::fs::read_to_string(src.join("ops/registry.rs")).unwrap();
    let mut files: Vec<(String, String)> = std::fs::read_dir(src.join("ops"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    files.push(("hostops".into(), std::fs::read_to_string(src.join("hostops.rs")).unwrap()));
    let mut n = 0;
    for (module, text) in &files {
        for line in text.lines() {
            let run = line.strip_prefix("pub(super) fn ").filter(|l| l.contains("(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>>"));
            let host = line.strip_prefix("pub(crate) fn host_").map(|_| &line["pub(crate) fn ".len()..]);
            if let Some(rest) = run.or(host) {
                let name = rest.split('(').next().unwrap();
                let path = format!("{module}::{name}");
                let named = table.match_indices(&path).any(|(i, _)| {
                    let next = table[i + path.len()..].chars().next();
                    !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                assert!(named, "{path} is in no row of the table");
                n += 1;
            }
        }
    }
    assert!(n > 100, "{n} functions found");
}

/// No two files of `ops/` import each other in a circle: the graph of `super::name` references
/// between them (an item of `mod.rs` counts as `mod`) has no cycle.
#[test]
fn ops_files_import_no_circle() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ops");
    let files: HashMap<String, String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    let module_of = |name: &str| if files.contains_key(name) { name.to_string() } else { "mod".to_string() };
    let mut edges: HashMap<String, HashSet<String>> = HashMap::new();
    for (file, text) in &files {
        let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let out = edges.entry(file.clone()).or_default();
        if file == "mod" {
            // mod.rs names its children by path (`registry::by_name`)
            for name in files.keys().filter(|n| *n != "mod" && *n != "tests") {
                if code.contains(&format!("{name}::")) {
                    out.insert(name.clone());
                }
            }
            continue;
        }
        for (i, _) in code.match_indices("super::") {
            let rest = &code[i + "super::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(list) => list.split('}').next().unwrap_or("").split(',').map(|s| s.trim().split("::").next().unwrap_or("")).collect(),
                None => vec![rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("")],
            };
            for name in names.into_iter().filter(|n| !n.is_empty()) {
                let m = module_of(name);
                if &m != file {
                    out.insert(m);
                }
            }
        }
    }
    // a file reaching itself is on a circle
    for start in edges.keys() {
        let mut seen = HashSet::new();
        let mut stack: Vec<&String> = edges[start].iter().collect();
        while let Some(f) = stack.pop() {
            assert!(f != start, "{start}.rs imports itself through a circle: {edges:?}");
            if seen.insert(f) {
                stack.extend(edges.get(f).into_iter().flatten());
            }
        }
    }
    assert!(edges["registry"].contains("conv") && edges["conv"].contains("context"));
}
