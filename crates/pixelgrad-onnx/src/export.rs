//! pixelgrad models → ONNX. A `Sequential` of the nn layers (`Linear`, `Conv2d`, `BatchNorm`,
//! activations, pooling, `Flatten`, `Permute`, `Dropout`, nested `Sequential`s, the
//! sequence layers of `export/transformer.rs`) and of imported graphs
//! ([`OnnxLayer`], written back node for node with their current, possibly fine-tuned,
//! weights) becomes one graph with input `input` `[N, ...]` (batch size named `N`) and output
//! `output`. Layers are written with inference semantics (batch norm running statistics,
//! dropout as identity).

use std::collections::{HashMap, HashSet};

use pixelgrad_core::{Param, Tensor};
use pixelgrad_nn::layers::{Activation, AvgPool2d, BatchNorm, Conv2d, Dropout, Flatten, Linear, MaxPool2d, Permute};
use pixelgrad_nn::{Module, Sequential};
use prost::Message;

use crate::graph::{Attr, Node};
use crate::host::{DType, HostTensor};
use crate::proto::{
    attribute_type as at, AttributeProto, DimValue, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto,
    TypeProto, TypeProtoTensor, ValueInfoProto,
};
use crate::{OnnxError, OnnxLayer, Result};

mod transformer;

/// The opset written when no imported graph asks for another.
pub const EXPORT_OPSET: i64 = 13;

/// Writes `model` as ONNX bytes. `sample_shape` is one sample's shape (without the batch axis),
/// e.g. `[1, 28, 28]`.
pub fn to_onnx(model: &dyn Module, sample_shape: &[usize]) -> Result<Vec<u8>> {
    let mut w = Writer { shape: Some(sample_shape.to_vec()), ..Default::default() };
    w.layer(model, "input".to_string(), "")?;
    let last = w.current.take().unwrap_or_else(|| "input".into());
    // the graph output has a fixed name: an Identity renames the last value
    w.nodes.push(node("Identity", "output_identity", vec![last], vec!["output".into()], vec![]));
    let mut dims = vec![Dimension { value: Some(DimValue::DimParam("N".into())), denotation: String::new() }];
    dims.extend(sample_shape.iter().map(|&d| Dimension { value: Some(DimValue::DimValue(d as i64)), denotation: String::new() }));
    let vi = |name: &str, dims: Option<Vec<Dimension>>| ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor { elem_type: DType::F32.to_onnx(), shape: dims.map(|dim| TensorShapeProto { dim }) }),
            ..Default::default()
        }),
        doc_string: String::new(),
    };
    let opset = w.opset.unwrap_or(EXPORT_OPSET);
    let graph = GraphProto {
        node: w.nodes,
        name: "pixelgrad".into(),
        initializer: w.inits,
        input: vec![vi("input", Some(dims))],
        output: vec![vi("output", None)],
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: opset }],
        producer_name: "pixelgrad".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        graph: Some(graph),
        ..Default::default()
    };
    Ok(m.encode_to_vec())
}

/// Writes `model` to `path` ([`to_onnx`]) atomically: a crash mid-write leaves the old file (`pixelgrad_durable::write`).
pub fn save(model: &dyn Module, sample_shape: &[usize], path: &std::path::Path) -> Result<()> {
    let b = to_onnx(model, sample_shape)?;
    pixelgrad_durable::write(path, b).map_err(|e| OnnxError::io(path, e))
}

#[derive(Default)]
struct Writer {
    nodes: Vec<NodeProto>,
    inits: Vec<crate::proto::TensorProto>,
    current: Option<String>,
    names: HashSet<String>,
    opset: Option<i64>,
    count: usize,
    /// One sample's shape (without the batch axis) at the current value, where the layers so
    /// far say it (the sequence layers need the sequence length for their constant tables).
    shape: Option<Vec<usize>>,
    /// Nodes whose form is the one of opsets 13 to 17 were written (`ReduceMean` with `axes` as
    /// an attribute): an imported graph of opset 18 or later cannot join them.
    reduce_attrs: bool,
}

fn node(op: &str, name: &str, inputs: Vec<String>, outputs: Vec<String>, attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto { input: inputs, output: outputs, name: name.into(), op_type: op.into(), attribute: attrs, ..Default::default() }
}

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::INTS, ints: v.to_vec(), ..Default::default() }
}
fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::INT, i: v, ..Default::default() }
}
fn float(name: &str, v: f32) -> AttributeProto {
    AttributeProto { name: name.into(), r#type: at::FLOAT, f: v, ..Default::default() }
}

fn attr_proto(name: &str, a: &Attr) -> AttributeProto {
    let mut p = AttributeProto { name: name.into(), ..Default::default() };
    match a {
        Attr::Float(v) => (p.r#type, p.f) = (at::FLOAT, *v),
        Attr::Int(v) => (p.r#type, p.i) = (at::INT, *v),
        Attr::String(s) => (p.r#type, p.s) = (at::STRING, s.as_bytes().to_vec()),
        Attr::Tensor(t) => (p.r#type, p.t) = (at::TENSOR, Some(t.to_proto(""))),
        Attr::Floats(v) => (p.r#type, p.floats) = (at::FLOATS, v.clone()),
        Attr::Ints(v) => (p.r#type, p.ints) = (at::INTS, v.clone()),
        Attr::Strings(v) => (p.r#type, p.strings) = (at::STRINGS, v.iter().map(|s| s.as_bytes().to_vec()).collect()),
        // refused before: `Writer::imported` writes no control flow
        Attr::Graph(_) => p.r#type = at::GRAPH,
    }
    p
}

fn host_of(t: &Tensor) -> Result<HostTensor> {
    Ok(HostTensor::f32(t.dims().to_vec(), t.to_vec()?))
}

impl Writer {
    fn fresh(&mut self, base: &str) -> String {
        self.count += 1;
        let mut n = format!("{base}_{}", self.count);
        while !self.names.insert(n.clone()) {
            self.count += 1;
            n = format!("{base}_{}", self.count);
        }
        n
    }
    fn init(&mut self, name: &str, t: &HostTensor) -> String {
        let n = self.fresh(name);
        self.inits.push(t.to_proto(&n));
        n
    }
    fn param(&mut self, name: &str, p: &Param) -> Result<String> {
        let t = host_of(&p.tensor())?;
        Ok(self.init(name, &t))
    }
    fn scalar(&mut self, name: &str, v: f32) -> String {
        self.init(name, &HostTensor::f32(vec![], vec![v]))
    }
    /// Appends one node reading the current value; its output becomes the current value.
    fn op(&mut self, op: &str, prefix: &str, extra: Vec<String>, attrs: Vec<AttributeProto>) -> String {
        let x = self.current.clone().unwrap_or_else(|| "input".into());
        let out = self.fresh(&format!("{prefix}{}", op.to_lowercase()));
        let mut inputs = vec![x];
        inputs.extend(extra);
        self.nodes.push(node(op, &out, inputs, vec![out.clone()], attrs));
        self.current = Some(out.clone());
        out
    }
    fn binary(&mut self, op: &str, prefix: &str, a: String, b: String) -> String {
        self.push(op, prefix, vec![a, b], vec![])
    }
    /// Appends one node of `inputs`; returns its output (the current value stays).
    fn push(&mut self, op: &str, prefix: &str, inputs: Vec<String>, attrs: Vec<AttributeProto>) -> String {
        let out = self.fresh(&format!("{prefix}{}", op.to_lowercase()));
        self.nodes.push(node(op, &out, inputs, vec![out.clone()], attrs));
        out
    }
    /// GELU of `x` in the tanh form pixelgrad computes,
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    fn gelu(&mut self, prefix: &str, x: String) -> String {
        let three = self.scalar(&format!("{prefix}three"), 3.0);
        let x3 = self.binary("Pow", prefix, x.clone(), three);
        let c1 = self.scalar(&format!("{prefix}c"), 0.044715);
        let t = self.binary("Mul", prefix, x3, c1);
        let inner = self.binary("Add", prefix, x.clone(), t);
        let c2 = self.scalar(&format!("{prefix}k"), (2.0f32 / std::f32::consts::PI).sqrt());
        let inner = self.binary("Mul", prefix, inner, c2);
        let th = self.push("Tanh", prefix, vec![inner], vec![]);
        let one = self.scalar(&format!("{prefix}one"), 1.0);
        let s = self.binary("Add", prefix, th, one);
        let half = self.scalar(&format!("{prefix}half"), 0.5);
        let s = self.binary("Mul", prefix, s, half);
        self.binary("Mul", prefix, x, s)
    }

    fn layer(&mut self, m: &dyn Module, input: String, prefix: &str) -> Result<()> {
        if self.current.is_none() {
            self.current = Some(input);
        }
        let any = m
            .as_any()
            .ok_or_else(|| OnnxError::Export(format!("layer {} cannot be exported (it does not expose its type)", m.describe())))?;
        if let Some(s) = any.downcast_ref::<Sequential>() {
            for (i, l) in s.layers().iter().enumerate() {
                let cur = self.current.clone().unwrap_or_default();
                self.layer(l.as_ref(), cur, &format!("{prefix}{i}."))?;
            }
        } else if let Some(l) = any.downcast_ref::<Linear>() {
            let w = self.param(&format!("{prefix}weight"), &l.weight)?;
            let mut extra = vec![w];
            if let Some(b) = &l.bias {
                extra.push(self.param(&format!("{prefix}bias"), b)?);
            }
            self.op("Gemm", prefix, extra, vec![]);
            self.shape = Some(vec![l.weight.tensor().dims()[1]]);
        } else if let Some(c) = any.downcast_ref::<Conv2d>() {
            let w = self.param(&format!("{prefix}weight"), &c.weight)?;
            let b = self.param(&format!("{prefix}bias"), &c.bias)?;
            let (k, s, p) = (c.kernel() as i64, c.stride() as i64, c.padding() as i64);
            self.op("Conv", prefix, vec![w, b], vec![ints("kernel_shape", &[k, k]), ints("strides", &[s, s]), ints("pads", &[p, p, p, p])]);
            self.shape = None;
        } else if let Some(bn) = any.downcast_ref::<BatchNorm>() {
            let g = self.param(&format!("{prefix}gamma"), &bn.gamma)?;
            let b = self.param(&format!("{prefix}beta"), &bn.beta)?;
            let mean = host_of(&bn.running_mean.get())?;
            let var = host_of(&bn.running_var.get())?;
            let mean = self.init(&format!("{prefix}running_mean"), &mean);
            let var = self.init(&format!("{prefix}running_var"), &var);
            self.op("BatchNormalization", prefix, vec![g, b, mean, var], vec![float("epsilon", bn.eps())]);
        } else if let Some(a) = any.downcast_ref::<Activation>() {
            match a {
                Activation::Relu => drop(self.op("Relu", prefix, vec![], vec![])),
                Activation::LeakyRelu(s) => drop(self.op("LeakyRelu", prefix, vec![], vec![float("alpha", *s)])),
                Activation::Sigmoid => drop(self.op("Sigmoid", prefix, vec![], vec![])),
                Activation::Tanh => drop(self.op("Tanh", prefix, vec![], vec![])),
                Activation::Softmax => drop(self.op("Softmax", prefix, vec![], vec![int("axis", -1)])),
                Activation::Gelu => {
                    let x = self.current.clone().unwrap_or_default();
                    let y = self.gelu(prefix, x);
                    self.current = Some(y);
                }
            }
        } else if any.downcast_ref::<Dropout>().is_some() {
            self.op("Identity", prefix, vec![], vec![]);
        } else if let Some(p) = any.downcast_ref::<MaxPool2d>() {
            let (k, s, pd) = (p.kernel as i64, p.stride as i64, p.padding as i64);
            self.op(
                "MaxPool",
                prefix,
                vec![],
                vec![ints("kernel_shape", &[k, k]), ints("strides", &[s, s]), ints("pads", &[pd, pd, pd, pd])],
            );
            self.shape = None;
        } else if let Some(p) = any.downcast_ref::<AvgPool2d>() {
            let (k, s, pd) = (p.kernel as i64, p.stride as i64, p.padding as i64);
            // pixelgrad averages over the whole window, padding included
            self.op(
                "AveragePool",
                prefix,
                vec![],
                vec![ints("kernel_shape", &[k, k]), ints("strides", &[s, s]), ints("pads", &[pd, pd, pd, pd]), int("count_include_pad", 1)],
            );
            self.shape = None;
        } else if let Some(p) = any.downcast_ref::<Permute>() {
            let perm: Vec<i64> = p.0.iter().map(|&a| a as i64).collect();
            self.op("Transpose", prefix, vec![], vec![ints("perm", &perm)]);
            // the permutation includes the batch axis (it stays first)
            self.shape = self.shape.take().and_then(|d| p.0.iter().skip(1).map(|&a| d.get(a.checked_sub(1)?).copied()).collect());
        } else if any.downcast_ref::<Flatten>().is_some() {
            self.op("Flatten", prefix, vec![], vec![int("axis", 1)]);
            self.shape = self.shape.take().map(|d| vec![d.iter().product()]);
        } else if let Some(l) = any.downcast_ref::<OnnxLayer>() {
            if l.nhwc() {
                // The layer permutes its NCHW images to the graph's declared NHWC input.
                self.op("Transpose", prefix, vec![], vec![ints("perm", &[0, 2, 3, 1])]);
            }
            self.imported(l, prefix)?;
            self.shape = None;
        } else if self.sequence_layer(any, prefix)? {
            // written by `transformer`
        } else {
            return Err(OnnxError::Export(format!("layer {} has no ONNX form", m.describe())));
        }
        Ok(())
    }

    /// Writes the nodes of an imported graph that its output needs, with values renamed under
    /// `prefix` and weights taken from the session (so fine-tuning is kept).
    fn imported(&mut self, l: &OnnxLayer, prefix: &str) -> Result<()> {
        let s = l.session();
        let m = s.model();
        match self.opset {
            Some(o) if o != m.opset => {
                return Err(OnnxError::Export(format!("imported graphs of opsets {o} and {} cannot be written into one model", m.opset)))
            }
            _ => self.opset = Some(m.opset),
        }
        if self.reduce_attrs && m.opset >= 18 {
            return Err(OnnxError::Export(format!(
                "an imported graph of opset {} cannot join the normalisations written before it (ReduceMean of opset 13)",
                m.opset
            )));
        }
        let x = self.current.clone().unwrap_or_else(|| "input".into());
        let producer: HashMap<&str, &Node> = m.nodes.iter().flat_map(|n| n.outputs.iter().map(move |o| (o.as_str(), n))).collect();
        let mut needed: HashSet<*const Node> = HashSet::new();
        let mut stack = vec![l.output_name()];
        while let Some(v) = stack.pop() {
            if let Some(n) = producer.get(v) {
                if needed.insert(*n as *const Node) {
                    stack.extend(n.inputs.iter().filter(|s| !s.is_empty()).map(|s| s.as_str()));
                }
            }
        }
        let params: HashMap<&str, &Param> = s.params().iter().map(|(n, p)| (n.as_str(), p)).collect();
        let mut rename: HashMap<String, String> = HashMap::new();
        rename.insert(l.input_name().to_string(), x);
        for n in m.nodes.iter().filter(|n| needed.contains(&(*n as *const Node))) {
            if !crate::graph::graphs(n).is_empty() {
                return Err(OnnxError::Export(format!(
                    "node '{}' ({}) has subgraphs; imported control flow cannot be written back yet",
                    n.name, n.op_type
                )));
            }
            let mut inputs = Vec::with_capacity(n.inputs.len());
            for i in &n.inputs {
                if i.is_empty() {
                    inputs.push(String::new());
                    continue;
                }
                if let Some(r) = rename.get(i) {
                    inputs.push(r.clone());
                    continue;
                }
                if let Some(t) = m.constants.get(i) {
                    let value = match params.get(i.as_str()) {
                        Some(p) => HostTensor { dtype: t.dtype, ..host_of(&p.tensor())? },
                        None => t.clone(),
                    };
                    let name = self.init(&format!("{prefix}{i}"), &value);
                    rename.insert(i.clone(), name.clone());
                    inputs.push(name);
                    continue;
                }
                return Err(OnnxError::Export(format!("node '{}' reads '{i}', which the layer's graph does not produce", n.name)));
            }
            let outputs: Vec<String> = n
                .outputs
                .iter()
                .map(|o| {
                    if o.is_empty() {
                        return String::new();
                    }
                    let r = self.fresh(&format!("{prefix}{o}"));
                    rename.insert(o.clone(), r.clone());
                    r
                })
                .collect();
            let mut attrs: Vec<(&String, &Attr)> = n.attrs.iter().collect();
            attrs.sort_by(|a, b| a.0.cmp(b.0));
            let attrs = attrs.into_iter().map(|(k, v)| attr_proto(k, v)).collect();
            let name = self.fresh(&format!("{prefix}{}", n.name));
            self.nodes.push(node(&n.op_type, &name, inputs, outputs, attrs));
        }
        let out = rename
            .get(l.output_name())
            .cloned()
            .ok_or_else(|| OnnxError::Export(format!("value '{}' is not produced", l.output_name())))?;
        self.current = Some(out);
        Ok(())
    }
}
