//! The imported graph: nodes with decoded attributes, constants, typed inputs and outputs.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::host::{DType, HostTensor};
use crate::proto::{attribute_type as at, AttributeProto, DimValue, GraphProto, NodeProto, ValueInfoProto};
use crate::{OnnxError, Result};

/// A decoded attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Float(f32),
    Int(i64),
    String(String),
    Tensor(HostTensor),
    Floats(Vec<f32>),
    Ints(Vec<i64>),
    Strings(Vec<String>),
    /// A subgraph: `If`'s branches, `Loop`'s and `Scan`'s bodies.
    Graph(Arc<Subgraph>),
}

impl Attr {
    fn kind(&self) -> &'static str {
        match self {
            Attr::Float(_) => "float",
            Attr::Int(_) => "int",
            Attr::String(_) => "string",
            Attr::Tensor(_) => "tensor",
            Attr::Floats(_) => "floats",
            Attr::Ints(_) => "ints",
            Attr::Strings(_) => "strings",
            Attr::Graph(_) => "graph",
        }
    }
}

/// One operator application. Missing optional inputs are empty strings, as in ONNX.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub op_type: String,
    pub domain: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attrs: HashMap<String, Attr>,
    /// The opset of the node's domain the model imports (the default domain's for ONNX ops).
    pub opset: i64,
}

impl Node {
    /// Decodes node number `index` of its graph and checks it with `check` (the loader passes
    /// the operator table's check, `ops::registry::check_node`: an operator pixelgrad does not
    /// read is an error naming the node, the domain and the opset). A control-flow node's
    /// subgraphs are decoded and checked the same way, and the outer values they read are
    /// appended to its inputs ([`outer_reads`]), so ordering, liveness and constant pruning see
    /// them as the reads they are.
    pub(crate) fn decode(p: &NodeProto, index: usize, opsets: &Opsets, check: NodeCheck<'_>) -> Result<Node> {
        let mut node = Node::from_proto(p, index, opsets, check)?;
        check(&node)?;
        let reads = outer_reads(&node);
        node.inputs.extend(reads);
        Ok(node)
    }

    pub(crate) fn from_proto(p: &NodeProto, index: usize, opsets: &Opsets, check: NodeCheck<'_>) -> Result<Node> {
        let dom = if p.domain == "ai.onnx" { "" } else { p.domain.as_str() };
        let opset = opsets.of(dom);
        let name = if p.name.is_empty() { format!("{}_{index}", p.op_type) } else { p.name.clone() };
        let mut attrs = HashMap::new();
        for a in &p.attribute {
            if !a.ref_attr_name.is_empty() {
                return Err(OnnxError::UnsupportedModel(format!("node '{name}': attribute references (functions) are not supported")));
            }
            if let Some(v) = decode_attr(a, &name, opsets, check)? {
                if attrs.insert(a.name.clone(), v).is_some() {
                    return Err(OnnxError::Parse(format!("node '{name}': attribute '{}' is given twice", a.name)));
                }
            }
        }
        Ok(Node {
            name,
            op_type: p.op_type.clone(),
            domain: p.domain.clone(),
            inputs: p.input.clone(),
            outputs: p.output.clone(),
            attrs,
            opset,
        })
    }

    /// How errors name this node: operator, name and opset.
    pub fn context(&self) -> String {
        format!("{} node '{}' (opset {})", self.op_type, self.name, self.opset)
    }

    /// An error about this node.
    pub fn err(&self, msg: impl Into<String>) -> OnnxError {
        OnnxError::Node { op_type: self.op_type.clone(), node: self.name.clone(), opset: self.opset, msg: msg.into() }
    }

    /// Input `i` if present (non-empty name).
    pub fn input(&self, i: usize) -> Option<&str> {
        self.inputs.get(i).map(|s| s.as_str()).filter(|s| !s.is_empty())
    }

    /// Output `i` if present (non-empty name).
    pub fn output(&self, i: usize) -> Option<&str> {
        self.outputs.get(i).map(|s| s.as_str()).filter(|s| !s.is_empty())
    }

    fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.get(name)
    }
    fn wrong(&self, name: &str, want: &str, got: &Attr) -> OnnxError {
        self.err(format!("attribute '{name}' should be {want}, got {}", got.kind()))
    }
    pub fn int(&self, name: &str, default: i64) -> Result<i64> {
        match self.attr(name) {
            None => Ok(default),
            Some(Attr::Int(v)) => Ok(*v),
            Some(a) => Err(self.wrong(name, "an int", a)),
        }
    }
    pub fn float(&self, name: &str, default: f32) -> Result<f32> {
        match self.attr(name) {
            None => Ok(default),
            Some(Attr::Float(v)) => Ok(*v),
            Some(Attr::Int(v)) => Ok(*v as f32),
            Some(a) => Err(self.wrong(name, "a float", a)),
        }
    }
    pub fn string(&self, name: &str, default: &str) -> Result<String> {
        match self.attr(name) {
            None => Ok(default.to_string()),
            Some(Attr::String(v)) => Ok(v.clone()),
            Some(a) => Err(self.wrong(name, "a string", a)),
        }
    }
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.attr(name) {
            None => Ok(None),
            Some(Attr::Ints(v)) => Ok(Some(v.clone())),
            Some(Attr::Int(v)) => Ok(Some(vec![*v])),
            Some(a) => Err(self.wrong(name, "ints", a)),
        }
    }
    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        match self.attr(name) {
            None => Ok(None),
            Some(Attr::Floats(v)) => Ok(Some(v.clone())),
            Some(a) => Err(self.wrong(name, "floats", a)),
        }
    }
    pub fn tensor_attr(&self, name: &str) -> Result<Option<&HostTensor>> {
        match self.attr(name) {
            None => Ok(None),
            Some(Attr::Tensor(t)) => Ok(Some(t)),
            Some(a) => Err(self.wrong(name, "a tensor", a)),
        }
    }
    /// The subgraph attribute `name` (an error if it is missing or not a graph).
    pub fn graph(&self, name: &str) -> Result<&Arc<Subgraph>> {
        match self.attr(name) {
            None => Err(self.err(format!("attribute '{name}' is required"))),
            Some(Attr::Graph(g)) => Ok(g),
            Some(a) => Err(self.wrong(name, "a graph", a)),
        }
    }
    pub fn has(&self, name: &str) -> bool {
        self.attrs.contains_key(name)
    }
    /// Refuses attributes outside `known` (so nothing a model asks for is silently ignored).
    pub fn only_attrs(&self, known: &[&str]) -> Result<()> {
        let mut names: Vec<&String> = self.attrs.keys().collect();
        names.sort();
        for n in names {
            if !known.contains(&n.as_str()) {
                return Err(self.err(format!("attribute '{n}' is not supported")));
            }
        }
        Ok(())
    }
}

fn decode_attr(a: &AttributeProto, node: &str, opsets: &Opsets, check: NodeCheck<'_>) -> Result<Option<Attr>> {
    let what = format!("attribute '{}' of node '{node}'", a.name);
    let utf8 = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| OnnxError::Parse(format!("{what} is not UTF-8")));
    Ok(Some(match a.r#type {
        at::FLOAT => Attr::Float(a.f),
        at::INT => Attr::Int(a.i),
        at::STRING => Attr::String(utf8(&a.s)?),
        at::TENSOR => match &a.t {
            Some(t) => Attr::Tensor(HostTensor::from_proto(t, &what)?),
            None => return Err(OnnxError::Parse(format!("{what} has no tensor"))),
        },
        at::FLOATS => Attr::Floats(a.floats.clone()),
        at::INTS => Attr::Ints(a.ints.clone()),
        at::STRINGS => Attr::Strings(a.strings.iter().map(|s| utf8(s)).collect::<Result<_>>()?),
        at::UNDEFINED => {
            // IR < 2 had no type field: infer it from what is set.
            if !a.ints.is_empty() {
                Attr::Ints(a.ints.clone())
            } else if !a.floats.is_empty() {
                Attr::Floats(a.floats.clone())
            } else if !a.s.is_empty() {
                Attr::String(utf8(&a.s)?)
            } else if let Some(t) = &a.t {
                Attr::Tensor(HostTensor::from_proto(t, &what)?)
            } else if a.f != 0.0 {
                Attr::Float(a.f)
            } else {
                Attr::Int(a.i)
            }
        }
        at::GRAPH => match &a.g {
            Some(g) => Attr::Graph(Arc::new(Subgraph::from_proto(g, &what, opsets, check)?)),
            None => return Err(OnnxError::Parse(format!("{what} has no graph"))),
        },
        // no operator pixelgrad reads takes a list of graphs
        at::GRAPHS => {
            return Err(OnnxError::UnsupportedModel(format!("{what} is a list of graphs, which no operator pixelgrad reads takes")))
        }
        other => return Err(OnnxError::UnsupportedModel(format!("{what} has attribute type {other}, which pixelgrad does not read"))),
    }))
}

/// One axis of a declared input or output shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    Fixed(usize),
    /// A named (symbolic) size such as `batch`; any size is accepted.
    Named(String),
    Unknown,
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(d) => write!(f, "{d}"),
            Dim::Named(n) => write!(f, "{n}"),
            Dim::Unknown => write!(f, "?"),
        }
    }
}

/// A graph input or output: its name, element type and declared shape (`None`: rank unknown).
#[derive(Clone, Debug, PartialEq)]
pub struct ValueInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Option<Vec<Dim>>,
}

impl ValueInfo {
    pub(crate) fn from_proto(v: &ValueInfoProto) -> Result<ValueInfo> {
        let what = format!("graph value '{}'", v.name);
        let ty = v.r#type.as_ref().ok_or_else(|| OnnxError::Parse(format!("{what} has no type")))?;
        if ty.sequence_type.is_some() || ty.map_type.is_some() {
            return Err(OnnxError::UnsupportedModel(format!("{what} is a sequence or map (only tensors are supported)")));
        }
        let tt = ty.tensor_type.as_ref().ok_or_else(|| OnnxError::UnsupportedModel(format!("{what} is not a tensor")))?;
        let dtype = DType::from_onnx(tt.elem_type, &what)?;
        let shape = tt.shape.as_ref().map(|s| {
            s.dim
                .iter()
                .map(|d| match &d.value {
                    // a size that does not fit this machine's usize (wasm32) is an error, not
                    // a wrapped size
                    Some(DimValue::DimValue(v)) if *v >= 0 => usize::try_from(*v)
                        .map(Dim::Fixed)
                        .map_err(|_| OnnxError::UnsupportedModel(format!("{what} has a dimension of {v}, too large for this machine"))),
                    Some(DimValue::DimParam(p)) if !p.is_empty() => Ok(Dim::Named(p.clone())),
                    _ => Ok(Dim::Unknown),
                })
                .collect::<Result<Vec<_>>>()
        });
        let shape = shape.transpose()?;
        Ok(ValueInfo { name: v.name.clone(), dtype, shape })
    }

    /// The declared shape as text, e.g. `[batch, 3, 224, 224]`.
    pub fn shape_text(&self) -> String {
        match &self.shape {
            None => "(any rank)".into(),
            Some(d) => format!("[{}]", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")),
        }
    }

    /// Checks a concrete shape against the declaration.
    pub fn accepts(&self, dims: &[usize]) -> bool {
        match &self.shape {
            None => true,
            Some(d) => d.len() == dims.len() && d.iter().zip(dims).all(|(a, &b)| !matches!(a, Dim::Fixed(x) if *x != b)),
        }
    }
}

/// What the loader checks every decoded node with, main graph and subgraphs alike.
pub(crate) type NodeCheck<'a> = &'a dyn Fn(&Node) -> Result<()>;

// Subgraphs: the graphs that control-flow nodes carry as attributes (`If`'s `then_branch` and
// `else_branch`, `Loop`'s and `Scan`'s `body`), decoded and checked when the model is read.
//
// A subgraph may read values of the graphs around it (outer scope) by name. Those names are
// its [`Subgraph::captures`]; the node that carries it lists them after its own inputs
// ([`outer_reads`]), so the model's ordering, the session's liveness (a value is freed after
// its last read) and the pruning of unused constants see them like any other input. The
// session runs a subgraph's nodes with the same operator dispatch as the main graph's
// (`session/control.rs`), so every backend runs them.

/// The opsets a model imports, by domain (`""` for the default one): what the nodes of the
/// main graph and of every subgraph are read with.
#[derive(Clone, Debug)]
pub(crate) struct Opsets(pub HashMap<String, i64>);

impl Opsets {
    /// The version of `domain` the model imports (0 when it imports none).
    pub(crate) fn of(&self, domain: &str) -> i64 {
        let d = if domain == "ai.onnx" { "" } else { domain };
        self.0.get(d).copied().unwrap_or(0)
    }
}

/// A decoded subgraph.
#[derive(Clone, Debug, PartialEq)]
pub struct Subgraph {
    pub name: String,
    /// Its formal inputs, in order (a `Loop` body's iteration number, condition and carried
    /// values; a `Scan` body's state and slices; none for an `If` branch).
    pub inputs: Vec<String>,
    /// Its outputs, in order: names it computes, its inputs, its constants or outer values.
    pub outputs: Vec<String>,
    /// Its nodes in order. Control-flow nodes among them list their own outer reads as inputs.
    pub nodes: Vec<Node>,
    /// Its initializers.
    pub constants: HashMap<String, HostTensor>,
    /// Names it reads that it does not define (its own nodes', nested subgraphs' and its
    /// outputs' outer reads), in order of first read.
    pub captures: Vec<String>,
}

impl Subgraph {
    /// Decodes the graph attribute `what` (e.g. "attribute 'body' of node 'loop'").
    pub(crate) fn from_proto(g: &GraphProto, what: &str, opsets: &Opsets, check: NodeCheck<'_>) -> Result<Subgraph> {
        if let Some(s) = g.sparse_initializer.first() {
            let name = s.values.as_ref().map(|v| v.name.as_str()).unwrap_or("?");
            return Err(OnnxError::UnsupportedModel(format!("{what}: sparse initializer '{name}'")));
        }
        let mut constants = HashMap::new();
        for t in &g.initializer {
            constants.insert(t.name.clone(), HostTensor::from_proto(t, &format!("{what}: initializer '{}'", t.name))?);
        }
        // IR < 4 lists initializers among the inputs too: they are not formal inputs
        let inputs: Vec<String> = g.input.iter().map(|v| v.name.clone()).filter(|n| !constants.contains_key(n)).collect();
        let outputs: Vec<String> = g.output.iter().map(|v| v.name.clone()).collect();
        if let Some(o) = outputs.iter().find(|o| o.is_empty()) {
            return Err(OnnxError::Parse(format!("{what}: an output has no name ('{o}')")));
        }
        let nodes = g.node.iter().enumerate().map(|(i, n)| Node::decode(n, i, opsets, check)).collect::<Result<Vec<_>>>()?;
        let mut defined: HashSet<&str> = inputs.iter().map(|s| s.as_str()).collect();
        defined.extend(constants.keys().map(|s| s.as_str()));
        let mut captures = Vec::new();
        let mut seen = HashSet::new();
        for n in &nodes {
            for i in n.inputs.iter().filter(|i| !i.is_empty()) {
                if !defined.contains(i.as_str()) && seen.insert(i.clone()) {
                    captures.push(i.clone());
                }
            }
            for o in n.outputs.iter().filter(|o| !o.is_empty()) {
                if !defined.insert(o.as_str()) {
                    return Err(OnnxError::Parse(format!("{what}: '{o}' is assigned twice (node '{}' is the second)", n.name)));
                }
            }
        }
        for o in &outputs {
            if !defined.contains(o.as_str()) && seen.insert(o.clone()) {
                captures.push(o.clone());
            }
        }
        Ok(Subgraph { name: g.name.clone(), inputs, outputs, nodes, constants, captures })
    }
}

/// The subgraph attributes of `node`, by attribute name in name order.
pub fn graphs(node: &Node) -> Vec<(&str, &Subgraph)> {
    let mut gs: Vec<(&str, &Subgraph)> =
        node.attrs.iter().filter_map(|(k, a)| if let Attr::Graph(g) = a { Some((k.as_str(), &**g)) } else { None }).collect();
    gs.sort_by(|a, b| a.0.cmp(b.0));
    gs
}

/// The outer values `node`'s subgraphs read, each once, in attribute-name order: what
/// `Node::decode` appends to the node's inputs.
pub fn outer_reads(node: &Node) -> Vec<String> {
    let mut seen = HashSet::new();
    graphs(node).into_iter().flat_map(|(_, g)| g.captures.iter()).filter(|c| seen.insert(c.as_str())).cloned().collect()
}

/// How many inputs `node` has in the file: its inputs less the outer reads appended to them.
pub fn declared_inputs(node: &Node) -> usize {
    node.inputs.len().saturating_sub(outer_reads(node).len())
}

/// Whether `op_type` carries subgraphs that the session runs itself.
pub fn is_control_flow(op_type: &str) -> bool {
    matches!(op_type, "If" | "Loop" | "Scan")
}
