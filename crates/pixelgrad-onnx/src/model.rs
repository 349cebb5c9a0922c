//! [`Model`]: an ONNX file decoded, checked, constant-folded and with batch norms folded into
//! the convolutions before them. It holds no device memory; [`crate::Session`] binds it to a
//! `Device`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use pixelgrad_core::budget::DEFAULT_MAX_ELEMENTS;

use crate::external::External;
use crate::graph::Opsets;
use crate::graph::{Node, ValueInfo};
use crate::host::{DType, HostTensor};
use crate::{hostops, proto, OnnxError, Result};

/// Elements that folding constants may create in all, at least (64 MiB of f32; models whose
/// initializers hold more may create four times their elements).
const FOLD_BUDGET: usize = 1 << 24;

/// Oldest and newest default-domain opset accepted.
pub const MIN_OPSET: i64 = 7;
pub const MAX_OPSET: i64 = 23;

/// A decoded model.
#[derive(Clone, Debug)]
pub struct Model {
    pub ir_version: i64,
    /// The default (`ai.onnx`) opset.
    pub opset: i64,
    pub producer: String,
    /// Nodes in execution order, after folding.
    pub nodes: Vec<Node>,
    /// Constant values by name: initializers, `Constant` nodes and everything folded from them.
    pub constants: HashMap<String, HostTensor>,
    /// Inputs the caller provides (graph inputs that are not initializers).
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<ValueInfo>,
    /// What loading did: nodes folded to constants, batch norms folded into convolutions.
    pub stats: LoadStats,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    pub nodes_in_file: usize,
    pub folded_constants: usize,
    pub folded_batch_norms: usize,
    /// `DequantizeLinear → Conv/MatMul/Gemm/Add/Mul → QuantizeLinear` groups run as one
    /// integer operator (`QLinearConv`, `QLinearMatMul`, `QGemm`, `QLinearAdd`, `QLinearMul`).
    pub fused_qdq: usize,
    /// `If` nodes whose condition was a constant, replaced by the branch it selects.
    pub folded_ifs: usize,
    /// Node and edge visits of the graph bookkeeping while loading (ordering the nodes,
    /// resolving the outputs): it grows linearly with the nodes and their inputs, whatever
    /// their order in the file.
    pub load_steps: usize,
}

/// Node counts by operator type, per precision ([`Model::precision`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Precision {
    pub int8: std::collections::BTreeMap<String, usize>,
    pub f32: std::collections::BTreeMap<String, usize>,
}

impl Precision {
    /// `"int8"`, `"f32"` or `"mixed"` (both).
    pub fn summary(&self) -> &'static str {
        match (self.int8.is_empty(), self.f32.is_empty()) {
            (false, true) => "int8",
            (false, false) => "mixed",
            _ => "f32",
        }
    }
}

impl Model {
    /// Reads a model file, and the files beside it that hold its external data (each
    /// `location` relative to the model's folder; see [`crate::external`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| OnnxError::io(path, e))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Model::decode(&bytes, &External::Folder(dir)).map_err(|e| match e {
            OnnxError::Parse(m) => OnnxError::Parse(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Decodes, checks and folds a model from the bytes of an `.onnx` file. A model with
    /// external data is refused, naming the file: see [`Model::from_bytes_with_external`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        Model::decode(bytes, &External::None)
    }

    /// [`Model::from_bytes`] for a model whose tensors keep their data in other files: `files`
    /// holds each file's bytes by the `location` the model names (e.g. `"model.onnx_data"`).
    /// What the browser binding calls (`pg.loadOnnx(url, { externalData })`).
    pub fn from_bytes_with_external(bytes: &[u8], files: &HashMap<String, Vec<u8>>) -> Result<Model> {
        Model::decode(bytes, &External::Bytes(files))
    }

    pub(crate) fn decode(bytes: &[u8], external: &External) -> Result<Model> {
        if bytes.is_empty() {
            return Err(OnnxError::Parse("the file is empty".into()));
        }
        let mut m = proto::decode_model(bytes).map_err(|e| OnnxError::Parse(format!("protobuf decoding failed ({e})")))?;
        crate::external::resolve(&mut m, external)?;
        let g = m.graph.as_ref().ok_or_else(|| OnnxError::Parse("the model has no graph (is this an ONNX file?)".into()))?;
        if m.ir_version < 3 {
            return Err(OnnxError::Parse(format!("IR version {} (ONNX files have 3 or newer)", m.ir_version)));
        }
        let opsets: HashMap<&str, i64> =
            m.opset_import.iter().map(|o| (if o.domain == "ai.onnx" { "" } else { o.domain.as_str() }, o.version)).collect();
        let opset = *opsets.get("").ok_or_else(|| OnnxError::UnsupportedModel("the model imports no default (ai.onnx) opset".into()))?;
        if !(MIN_OPSET..=MAX_OPSET).contains(&opset) {
            return Err(OnnxError::UnsupportedModel(format!("opset {opset} (pixelgrad reads opsets {MIN_OPSET} to {MAX_OPSET})")));
        }
        if let Some(s) = g.sparse_initializer.first() {
            let name = s.values.as_ref().map(|v| v.name.as_str()).unwrap_or("?");
            return Err(OnnxError::UnsupportedModel(format!("sparse initializer '{name}'")));
        }
        let mut constants = HashMap::new();
        for t in &g.initializer {
            constants.insert(t.name.clone(), HostTensor::from_proto(t, &format!("initializer '{}'", t.name))?);
        }
        let mut inputs = Vec::new();
        for v in &g.input {
            if !constants.contains_key(&v.name) {
                inputs.push(ValueInfo::from_proto(v)?);
            }
        }
        let outputs = g.output.iter().map(ValueInfo::from_proto).collect::<Result<Vec<_>>>()?;
        let opsets = Opsets(opsets.into_iter().map(|(d, v)| (d.to_string(), v)).collect());
        let nodes = g
            .node
            .iter()
            .enumerate()
            .map(|(i, n)| Node::decode(n, i, &opsets, &crate::ops::registry::check_node))
            .collect::<Result<Vec<_>>>()?;
        let mut steps = 0;
        let nodes = topo_sort(nodes, &constants, &inputs, &mut steps)?;
        let mut model = Model {
            ir_version: m.ir_version,
            opset,
            producer: m.producer_name.clone(),
            stats: LoadStats { nodes_in_file: nodes.len(), ..Default::default() },
            nodes,
            constants,
            inputs,
            outputs,
        };
        let mut known: HashSet<&str> = model.nodes.iter().flat_map(|n| n.outputs.iter().map(|s| s.as_str())).collect();
        known.extend(model.inputs.iter().map(|i| i.name.as_str()));
        steps += model.nodes.len() + model.inputs.len();
        for o in &model.outputs {
            steps += 1;
            if !known.contains(o.name.as_str()) && !model.constants.contains_key(&o.name) {
                return Err(OnnxError::Parse(format!("graph output '{}' is produced by no node", o.name)));
            }
        }
        drop(known);
        model.stats.load_steps = steps;
        let folding_budget =
            FOLD_BUDGET.max(model.constants.values().map(|t| t.numel()).fold(0usize, |a, n| a.saturating_add(n)).saturating_mul(4));
        model.fold_constants(folding_budget)?;
        model.fold_batch_norms()?;
        model.fuse_qdq()?;
        model.drop_unused();
        Ok(model)
    }

    /// Evaluates on the host every node whose inputs are all constants, creating at most
    /// `budget` elements in all (each result also under the device's default element cap):
    /// a node whose result would not fit is left to run time, where the session's limits
    /// apply. So a small file cannot make loading allocate without bound (a chain of `Concat`s
    /// doubling a constant, a thousand copies of one big initializer).
    fn fold_constants(&mut self, mut budget: usize) -> Result<()> {
        let mut kept = Vec::with_capacity(self.nodes.len());
        // Every name the graph assigns: an inlined branch may not assign one again.
        let mut taken: HashSet<String> = self.nodes.iter().flat_map(|n| n.outputs.iter().cloned()).collect();
        taken.extend(self.inputs.iter().map(|i| i.name.clone()));
        taken.extend(self.constants.keys().cloned());
        let mut work: std::collections::VecDeque<Node> = std::mem::take(&mut self.nodes).into();
        while let Some(node) = work.pop_front() {
            if node.op_type == "If" {
                if let Some(branch) = self.constant_branch(&node, &taken)? {
                    taken.extend(branch.iter().flat_map(|n| n.outputs.iter().cloned()));
                    for n in branch.into_iter().rev() {
                        work.push_front(n);
                    }
                    self.stats.folded_ifs += 1;
                    continue;
                }
            }
            let all_const = node.inputs.iter().all(|i| i.is_empty() || self.constants.contains_key(i));
            if all_const && !crate::graph::is_control_flow(&node.op_type) {
                let ins: Vec<Option<&HostTensor>> =
                    node.inputs.iter().map(|i| if i.is_empty() { None } else { self.constants.get(i) }).collect();
                // a result no larger than its inputs (a copy, a reshape, a slice) fits what is
                // left when they do; larger ones (Concat, Range...) are checked against `cap`
                let inputs = ins.iter().flatten().fold(0usize, |a, t| a.saturating_add(t.numel()));
                if inputs > budget {
                    kept.push(node);
                    continue;
                }
                let cap = hostops::Cap::folding(budget.min(DEFAULT_MAX_ELEMENTS));
                if let Some(outs) = crate::ops::eval_host(&node, &ins, cap)? {
                    for (name, t) in node.outputs.iter().zip(outs) {
                        budget = budget.saturating_sub(t.numel());
                        if !name.is_empty() {
                            self.constants.insert(name.clone(), t);
                        }
                    }
                    self.stats.folded_constants += 1;
                    continue;
                }
            }
            kept.push(node);
        }
        self.nodes = kept;
        Ok(())
    }

    /// The nodes that replace `node`, an `If` whose condition is a constant: the branch it
    /// selects, its initializers added to the model's constants, and one `Identity` per
    /// output from the branch's value to the node's. `None` (the node stays, to run) when the
    /// condition is not a constant or the branch assigns a name the graph has already.
    fn constant_branch(&mut self, node: &Node, taken: &HashSet<String>) -> Result<Option<Vec<Node>>> {
        let Some(cond) = node.input(0).and_then(|c| self.constants.get(c)) else { return Ok(None) };
        let cond = match cond.to_f64().as_slice() {
            [c] => *c != 0.0,
            _ => return Err(node.err(format!("the condition has {} elements; it must have one", cond.numel()))),
        };
        let g = node.graph(if cond { "then_branch" } else { "else_branch" })?.clone();
        let assigns = g.nodes.iter().flat_map(|n| n.outputs.iter()).chain(g.constants.keys());
        if assigns.clone().any(|n| taken.contains(n)) {
            return Ok(None);
        }
        for (k, t) in &g.constants {
            self.constants.insert(k.clone(), t.clone());
        }
        let mut nodes = g.nodes.clone();
        for (k, (from, to)) in g.outputs.iter().zip(&node.outputs).enumerate() {
            if to.is_empty() {
                continue;
            }
            nodes.push(Node {
                name: format!("{}/output_{k}", node.name),
                op_type: "Identity".into(),
                domain: String::new(),
                inputs: vec![from.clone()],
                outputs: vec![to.clone()],
                attrs: HashMap::new(),
                opset: node.opset,
            });
        }
        Ok(Some(nodes))
    }

    /// How many times each value is read (graph outputs count once), and which node makes it.
    fn uses_and_producers(&self) -> (HashMap<String, usize>, HashMap<String, usize>) {
        let mut uses: HashMap<String, usize> = HashMap::new();
        for i in self.nodes.iter().flat_map(|n| n.inputs.iter()).chain(self.outputs.iter().map(|o| &o.name)) {
            *uses.entry(i.clone()).or_default() += 1;
        }
        let producer = self.nodes.iter().enumerate().flat_map(|(k, n)| n.outputs.iter().map(move |o| (o.clone(), k))).collect();
        (uses, producer)
    }

    /// `Conv → BatchNormalization` (inference form, constant statistics, the conv output used
    /// only by the batch norm) becomes one `Conv` with `W' = W * s`, `b' = (b - mean) * s + beta`
    /// where `s = scale / sqrt(var + eps)` per output channel, in the weight's float type.
    fn fold_batch_norms(&mut self) -> Result<()> {
        let (uses, producer) = self.uses_and_producers();
        let mut remove = HashSet::new();
        for b in 0..self.nodes.len() {
            let bn = &self.nodes[b];
            if bn.op_type != "BatchNormalization" || bn.outputs.iter().skip(1).any(|o| !o.is_empty()) || bn.int("training_mode", 0)? != 0 {
                continue;
            }
            let (Some(x), Some(out)) = (bn.input(0), bn.output(0)) else { continue };
            let Some(conv) = producer.get(x).and_then(|&c| Some((c, self.nodes.get(c)?))) else { continue };
            let (c, conv) = conv;
            if conv.op_type != "Conv" || conv.outputs.len() != 1 || uses.get(x).copied() != Some(1) {
                continue;
            }
            let Some(conv_x) = conv.input(0) else { continue };
            let get = |n: &Node, i: usize| n.input(i).and_then(|name| self.constants.get(name));
            let (Some(w), Some(scale), Some(beta), Some(mean), Some(var)) = (get(conv, 1), get(bn, 1), get(bn, 2), get(bn, 3), get(bn, 4))
            else {
                continue;
            };
            if !w.dtype.is_float() || w.rank() < 3 {
                continue;
            }
            let m = w.shape.first().copied().unwrap_or(0);
            if m == 0 || [scale, beta, mean, var].iter().any(|t| t.numel() != m) {
                continue;
            }
            let eps = bn.float("epsilon", 1e-5)? as f64;
            let (sc, be, mu, va) = (scale.to_f64(), beta.to_f64(), mean.to_f64(), var.to_f64());
            let s: Vec<f64> = (0..m).map(|k| sc[k] / (va[k] + eps).sqrt()).collect();
            let per = w.numel() / m;
            let wv = w.to_f64();
            let w2: Vec<f32> = wv.iter().enumerate().map(|(i, &x)| (x * s[i / per]) as f32).collect();
            let b0 = match get(conv, 2) {
                Some(t) if t.numel() == m => t.to_f64(),
                Some(_) => continue,
                None => vec![0.0; m],
            };
            let b2: Vec<f32> = (0..m).map(|k| ((b0[k] - mu[k]) * s[k] + be[k]) as f32).collect();
            let wname = format!("{}.folded_weight", conv.name);
            let bname = format!("{}.folded_bias", conv.name);
            let wshape = w.shape.clone();
            let (out, conv_x) = (out.to_string(), conv_x.to_string());
            // Folded half-precision weights stay half precision (rounded once, after the
            // fold): a float16 model keeps its f16 storage by default.
            let dtype = if matches!(w.dtype, DType::F16 | DType::BF16) { w.dtype } else { DType::F32 };
            self.constants.insert(wname.clone(), HostTensor::f32(wshape, w2).cast(dtype));
            self.constants.insert(bname.clone(), HostTensor::f32(vec![m], b2).cast(dtype));
            let Some(conv) = self.nodes.get_mut(c) else { continue };
            conv.inputs = vec![conv_x, wname, bname];
            conv.outputs = vec![out];
            remove.insert(b);
            self.stats.folded_batch_norms += 1;
        }
        let mut k = 0;
        self.nodes.retain(|_| {
            k += 1;
            !remove.contains(&(k - 1))
        });
        Ok(())
    }

    /// QDQ-format quantised products become integer operators, as onnxruntime fuses them:
    /// `Conv` (or `MatMul`, `Gemm` with `beta = 1`) whose data inputs all come from
    /// `DequantizeLinear` nodes with constant scales, whose bias (if any) is a dequantised
    /// `int32` constant with scale `x_scale · w_scale`, and whose output only feeds one
    /// `QuantizeLinear`, becomes `QLinearConv` / `QLinearMatMul` / `QGemm` reading the 8-bit
    /// values directly; `Add` / `Mul` of two dequantised values of one 8-bit type (scalar
    /// scales and zero points) whose result feeds one `QuantizeLinear` becomes com.microsoft
    /// `QLinearAdd` / `QLinearMul`, whose rounding differs from the float sum's (measured:
    /// onnxruntime 1.20 runs these fused at its default optimisation level).
    /// `DequantizeLinear` nodes nothing reads any more are dropped.
    fn fuse_qdq(&mut self) -> Result<()> {
        let (uses, producer) = self.uses_and_producers();
        let consumer: HashMap<String, usize> =
            self.nodes.iter().enumerate().flat_map(|(k, n)| n.inputs.iter().map(move |i| (i.clone(), k))).collect();
        // (x, scale, zero point) of a DequantizeLinear producing `name`, scales constant.
        let dq = |name: &str| -> Option<[String; 3]> {
            let n = self.nodes.get(*producer.get(name)?)?;
            let (x, scale) = (n.input(0)?, n.input(1)?);
            let constant_zp = n.input(2).map(|z| self.constants.contains_key(z)).unwrap_or(true);
            if n.op_type != "DequantizeLinear" || !self.constants.contains_key(scale) || !constant_zp {
                return None;
            }
            Some([x.to_string(), scale.to_string(), n.input(2).unwrap_or("").to_string()])
        };
        let is_8bit = |name: &str, dtypes: &HashMap<&str, DType>| matches!(dtypes.get(name), Some(DType::U8 | DType::I8));
        // Element types of quantised values: those QuantizeLinear writes and 8-bit constants.
        let mut dtypes: HashMap<&str, DType> = self.constants.iter().map(|(k, t)| (k.as_str(), t.dtype)).collect();
        for n in &self.nodes {
            if n.op_type == "QuantizeLinear" {
                let dt = n.input(2).and_then(|z| self.constants.get(z)).map(|t| t.dtype).unwrap_or(DType::U8);
                if let Some(y) = n.output(0) {
                    dtypes.insert(y, dt);
                }
            }
        }
        let mut rewrites = Vec::new();
        for (k, n) in self.nodes.iter().enumerate() {
            let kind = n.op_type.as_str();
            let (Some(out), Some(a_name), Some(b_name)) = (n.output(0), n.input(0), n.input(1)) else { continue };
            if !matches!(kind, "Conv" | "MatMul" | "Gemm" | "Add" | "Mul") || n.outputs.len() != 1 || uses.get(out).copied() != Some(1) {
                continue;
            }
            if kind == "Gemm" && (n.float("beta", 1.0)? != 1.0 || n.float("alpha", 1.0)? != 1.0) {
                continue;
            }
            let Some((q, qn)) = consumer.get(out).and_then(|&q| Some((q, self.nodes.get(q)?))) else { continue };
            let Some(y_scale) = qn.input(1) else { continue };
            let q_scale_ok = qn.input(1).map(|s| self.constants.get(s).map(|t| t.numel() == 1).unwrap_or(false)).unwrap_or(false);
            let q_zp_ok = qn.input(2).map(|z| self.constants.contains_key(z)).unwrap_or(true);
            if qn.op_type != "QuantizeLinear" || !q_scale_ok || !q_zp_ok {
                continue;
            }
            let (Some(a), Some(b)) = (dq(a_name), dq(b_name)) else { continue };
            if matches!(kind, "Add" | "Mul") {
                // As onnxruntime's QDQ selectors: one 8-bit type and scalar scales and zero
                // points throughout; its QLinearAdd / QLinearMul kernels then compute the result.
                let scalar = |name: &str| name.is_empty() || self.constants.get(name).map(|t| t.numel() == 1).unwrap_or(false);
                let tq = qn.input(2).and_then(|z| self.constants.get(z)).map(|t| t.dtype).unwrap_or(DType::U8);
                let same = |x: &str| dtypes.get(x).copied() == Some(tq);
                if !matches!(tq, DType::U8 | DType::I8)
                    || !same(&a[0])
                    || !same(&b[0])
                    || ![&a[1], &a[2], &b[1], &b[2]].iter().all(|s| scalar(s))
                {
                    continue;
                }
                let mut fused = n.clone();
                fused.op_type = if kind == "Add" { "QLinearAdd" } else { "QLinearMul" }.to_string();
                fused.domain = "com.microsoft".to_string();
                fused.attrs.clear();
                fused.outputs = qn.outputs.clone();
                fused.name = format!("{}.qdq", n.name);
                let [ax, asc, az] = a;
                let [bx, bsc, bz] = b;
                fused.inputs = vec![ax, asc, az, bx, bsc, bz, qn.input(1).unwrap_or("").to_string(), qn.input(2).unwrap_or("").to_string()];
                while fused.inputs.last().map(|s| s.is_empty()).unwrap_or(false) {
                    fused.inputs.pop();
                }
                rewrites.push((k, q, fused));
                continue;
            }
            let (Some(a_scale), Some(b_scale)) = (self.constants.get(&a[1]), self.constants.get(&b[1])) else { continue };
            if !is_8bit(&a[0], &dtypes) || !is_8bit(&b[0], &dtypes) || a_scale.numel() != 1 {
                continue;
            }
            // Per-channel weight scales must run along the output channels.
            if b_scale.numel() > 1 {
                let Some(w) = self.constants.get(&b[0]) else { continue };
                let want = match kind {
                    "Conv" => 0,
                    "Gemm" if n.int("transB", 0)? != 0 => 0,
                    _ => w.rank() as i64 - 1,
                };
                let Some(dqn) = producer.get(b_name).and_then(|&p| self.nodes.get(p)) else { continue };
                let axis = dqn.int("axis", 1)?;
                if (if axis < 0 { axis + w.rank() as i64 } else { axis }) != want {
                    continue;
                }
            }
            // The bias: a dequantised int32 constant whose scale is a_scale · b_scale.
            let bias = match n.input(2) {
                None => None,
                Some(name) => {
                    let Some(d) = dq(name) else { continue };
                    let (Some(bq), Some(bs), Some(sa), Some(sb)) =
                        (self.constants.get(&d[0]), self.constants.get(&d[1]), self.constants.get(&a[1]), self.constants.get(&b[1]))
                    else {
                        continue;
                    };
                    let zero_zp = d[2].is_empty() || self.constants.get(&d[2]).is_some_and(|z| z.to_f64().iter().all(|&z| z == 0.0));
                    if bq.dtype != DType::I32 || !zero_zp {
                        continue;
                    }
                    let (bs, sa, sb) = (bs.to_f32(), sa.to_f32(), sb.to_f32());
                    let n = bs.len().max(sb.len());
                    // one value each, or per channel along the same channels
                    let fits = |v: &[f32]| v.len() == 1 || v.len() == n;
                    if sa.len() != 1 || !fits(&bs) || !fits(&sb) {
                        continue;
                    }
                    let at = |v: &[f32], i: usize| v.get(i).or(v.first()).copied().unwrap_or(0.0);
                    if (0..n).any(|i| (at(&bs, i) - at(&sa, 0) * at(&sb, i)).abs() > 1e-6 * at(&bs, i).abs()) {
                        continue;
                    }
                    Some(d[0].clone())
                }
            };
            let y = [y_scale.to_string(), qn.input(2).unwrap_or("").to_string()];
            let mut fused = n.clone();
            fused.outputs = qn.outputs.clone();
            fused.name = format!("{}.qdq", n.name);
            let [ax, asc, az] = a;
            let [bx, bsc, bz] = b;
            match kind {
                "Conv" | "MatMul" => {
                    fused.op_type = if kind == "Conv" { "QLinearConv" } else { "QLinearMatMul" }.to_string();
                    fused.inputs = vec![ax, asc, az, bx, bsc, bz, y[0].clone(), y[1].clone()];
                    if let Some(b) = bias {
                        fused.inputs.push(b);
                    }
                }
                _ => {
                    fused.op_type = "QGemm".to_string();
                    fused.domain = "com.microsoft".to_string();
                    fused.attrs.retain(|k, _| k == "transA" || k == "transB");
                    fused.inputs = vec![ax, asc, az, bx, bsc, bz, bias.unwrap_or_default(), y[0].clone(), y[1].clone()];
                }
            }
            while fused.inputs.last().map(|s| s.is_empty()).unwrap_or(false) {
                fused.inputs.pop();
            }
            rewrites.push((k, q, fused));
        }
        self.apply_fusions(rewrites);
        Ok(())
    }

    /// Replaces each `(k, q, fused)` of [`Model::fuse_qdq`]: node `k` by `fused`, its
    /// `QuantizeLinear` `q` dropped, then the `DequantizeLinear` nodes nothing reads any more.
    fn apply_fusions(&mut self, rewrites: Vec<(usize, usize, Node)>) {
        if rewrites.is_empty() {
            return;
        }
        let mut remove = HashSet::new();
        for (k, q, fused) in rewrites {
            if let Some(slot) = self.nodes.get_mut(k) {
                *slot = fused;
            }
            remove.insert(q);
            self.stats.fused_qdq += 1;
        }
        let mut k = 0;
        self.nodes.retain(|_| {
            k += 1;
            !remove.contains(&(k - 1))
        });
        // DequantizeLinear nodes whose outputs nothing reads any more.
        let mut used: HashSet<String> = self.nodes.iter().flat_map(|n| n.inputs.iter().cloned()).collect();
        used.extend(self.outputs.iter().map(|o| o.name.clone()));
        self.nodes.retain(|n| n.op_type != "DequantizeLinear" || n.outputs.iter().any(|o| used.contains(o)));
    }

    /// Forgets constants no node or output reads.
    fn drop_unused(&mut self) {
        let mut used: HashSet<&str> = self.nodes.iter().flat_map(|n| n.inputs.iter().map(|s| s.as_str())).collect();
        used.extend(self.outputs.iter().map(|o| o.name.as_str()));
        let keep: HashSet<String> = used.into_iter().map(|s| s.to_string()).collect();
        self.constants.retain(|k, _| keep.contains(k));
    }

    /// Bytes of float weights the model keeps (what a device upload costs).
    pub fn weight_bytes(&self) -> usize {
        self.constants.values().map(|t| t.dtype.bytes(t.numel()).unwrap_or(usize::MAX)).sum()
    }

    /// Which nodes compute in which precision: `int8` for the quantised operators
    /// (quantise, dequantise and the integer products), `f32` for the others.
    pub fn precision(&self) -> Precision {
        let mut p = Precision::default();
        for n in &self.nodes {
            let group = if crate::ops::is_quantized(&n.op_type) { &mut p.int8 } else { &mut p.f32 };
            *group.entry(n.op_type.clone()).or_default() += 1;
        }
        p
    }

    /// Every value name a node produces, in order (candidates for `Session::run_to`).
    pub fn value_names(&self) -> Vec<&str> {
        self.nodes.iter().flat_map(|n| n.outputs.iter().map(|s| s.as_str())).filter(|s| !s.is_empty()).collect()
    }

    /// The declared input called `name`.
    pub fn input(&self, name: &str) -> Option<&ValueInfo> {
        self.inputs.iter().find(|i| i.name == name)
    }
}

/// Orders nodes so every input is produced before it is read (ONNX requires files to be in
/// this order already; some exporters are not), keeping the file's order among nodes that are
/// ready: Kahn's algorithm, each node and input visited once (`steps` counts the visits).
/// Refuses a value produced twice, or produced by a node and also given (an initializer or a
/// graph input): ONNX graphs assign each name once.
fn topo_sort(nodes: Vec<Node>, constants: &HashMap<String, HostTensor>, inputs: &[ValueInfo], steps: &mut usize) -> Result<Vec<Node>> {
    let mut given_names: HashSet<&str> = constants.keys().map(|k| k.as_str()).collect();
    given_names.extend(inputs.iter().map(|i| i.name.as_str()));
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (k, n) in nodes.iter().enumerate() {
        for o in n.outputs.iter().filter(|o| !o.is_empty()) {
            *steps += 1;
            if given_names.contains(o.as_str()) {
                return Err(OnnxError::Parse(format!(
                    "node '{}' ({}) writes '{o}', which is an initializer or a graph input",
                    n.name, n.op_type
                )));
            }
            if producer.insert(o, k).is_some() {
                return Err(OnnxError::Parse(format!("'{o}' is produced by more than one node (node '{}' is the second)", n.name)));
            }
        }
    }
    // Per node, how many of its inputs wait for another node; per node, who reads its outputs.
    let mut waiting = vec![0usize; nodes.len()];
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (k, n) in nodes.iter().enumerate() {
        for i in n.inputs.iter().filter(|i| !i.is_empty()) {
            *steps += 1;
            if given_names.contains(i.as_str()) {
                continue;
            }
            match producer.get(i.as_str()) {
                Some(&p) => {
                    waiting[k] += 1;
                    readers[p].push(k);
                }
                None => return Err(OnnxError::Parse(format!("node '{}' ({}) reads '{i}', which nothing produces", n.name, n.op_type))),
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..nodes.len()).filter(|&k| waiting[k] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(Reverse(k)) = ready.pop() {
        *steps += 1;
        order.push(k);
        for &r in &readers[k] {
            *steps += 1;
            waiting[r] -= 1;
            if waiting[r] == 0 {
                ready.push(Reverse(r));
            }
        }
    }
    if order.len() < nodes.len() {
        let stuck = (0..nodes.len()).find(|&k| waiting[k] > 0).and_then(|k| nodes.get(k));
        let what = stuck.map(|n| format!("node '{}' ({})", n.name, n.op_type)).unwrap_or_else(|| "a node".into());
        return Err(OnnxError::Parse(format!("{what} is part of a cycle")));
    }
    drop(producer);
    let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|k| slots.get_mut(k).and_then(Option::take)).collect())
}
