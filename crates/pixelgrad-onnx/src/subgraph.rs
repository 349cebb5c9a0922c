//! Subgraphs: the graphs that control-flow nodes carry as attributes (`If`'s `then_branch` and
//! `else_branch`, `Loop`'s and `Scan`'s `body`), decoded and checked when the model is read.
//!
//! A subgraph may read values of the graphs around it (outer scope) by name. Those names are
//! its [`Subgraph::captures`]; the node that carries it lists them after its own inputs
//! ([`outer_reads`]), so the model's ordering, the session's liveness (a value is freed after
//! its last read) and the pruning of unused constants see them like any other input. The
//! session runs a subgraph's nodes with the same operator dispatch as the main graph's
//! (`session/control.rs`), so every backend runs them.

use std::collections::{HashMap, HashSet};

use crate::graph::{Attr, Node};
use crate::host::HostTensor;
use crate::proto::GraphProto;
use crate::{OnnxError, Result};

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
    pub(crate) fn from_proto(g: &GraphProto, what: &str, opsets: &Opsets) -> Result<Subgraph> {
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
        let nodes = g.node.iter().enumerate().map(|(i, n)| Node::decode(n, i, opsets)).collect::<Result<Vec<_>>>()?;
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

/// The shape checks of a control-flow node against its subgraphs, at load: the branches of an
/// `If` make as many values as the node has outputs; a `Loop` body takes the iteration
/// number, the condition and one value per carried input, and makes the condition, the
/// carried values and the scan outputs; a `Scan` body takes one value per input and makes
/// one per output. Called before the outer reads are appended. Other nodes pass.
pub(crate) fn check(node: &Node) -> Result<()> {
    let n_in = node.inputs.len();
    let n_out = node.outputs.len();
    match node.op_type.as_str() {
        "If" => {
            for branch in ["then_branch", "else_branch"] {
                let g = node.graph(branch)?;
                if g.outputs.len() != n_out {
                    return Err(node.err(format!("{branch} makes {} values, but the node has {n_out} outputs", g.outputs.len())));
                }
                if !g.inputs.is_empty() {
                    return Err(node.err(format!("{branch} declares {} inputs; an If branch takes none", g.inputs.len())));
                }
            }
        }
        "Loop" => {
            let body = node.graph("body")?;
            let carried = n_in.saturating_sub(2);
            if body.inputs.len() != 2 + carried {
                return Err(node.err(format!(
                    "body takes {} inputs; with {carried} loop-carried values it must take {} (iteration number, condition, then the carried values)",
                    body.inputs.len(),
                    2 + carried
                )));
            }
            if body.outputs.len() < 1 + carried {
                return Err(node.err(format!(
                    "body makes {} values; with {carried} loop-carried values it must make at least {} (condition, then the carried values)",
                    body.outputs.len(),
                    1 + carried
                )));
            }
            if n_out != body.outputs.len() - 1 {
                return Err(node.err(format!(
                    "has {n_out} outputs; its body makes {} values after the condition (carried values, then scan outputs)",
                    body.outputs.len() - 1
                )));
            }
        }
        "Scan" => {
            if node.opset < 9 {
                return Err(node.err("Scan before opset 9 (sequence_lens and a batch axis) is not supported"));
            }
            let body = node.graph("body")?;
            let m = node.int("num_scan_inputs", 0)?;
            let m = usize::try_from(m)
                .ok()
                .filter(|&m| m >= 1 && m <= n_in)
                .ok_or_else(|| node.err(format!("num_scan_inputs is {m}; it must be between 1 and the number of inputs ({n_in})")))?;
            let state = n_in - m;
            if body.inputs.len() != n_in {
                return Err(node.err(format!("body takes {} inputs; the node has {n_in} ({state} state, {m} scanned)", body.inputs.len())));
            }
            if body.outputs.len() != n_out || n_out < state {
                return Err(node.err(format!(
                    "body makes {} values and the node has {n_out} outputs; both must be the {state} state values and the scan outputs",
                    body.outputs.len()
                )));
            }
            let k = n_out - state;
            for (attr, want) in
                [("scan_input_axes", m), ("scan_input_directions", m), ("scan_output_axes", k), ("scan_output_directions", k)]
            {
                if let Some(v) = node.ints(attr)? {
                    if v.len() != want {
                        return Err(node.err(format!("{attr} has {} entries; it needs {want}", v.len())));
                    }
                }
            }
            for attr in ["scan_input_directions", "scan_output_directions"] {
                if let Some(d) = node.ints(attr)?.and_then(|v| v.into_iter().find(|d| *d != 0 && *d != 1)) {
                    return Err(node.err(format!("{attr} has direction {d}; directions are 0 (forward) or 1 (reverse)")));
                }
            }
        }
        _ => {
            if let Some((attr, _)) = graphs(node).first() {
                return Err(node.err(format!("attribute '{attr}' is a graph, which {} does not take", node.op_type)));
            }
        }
    }
    Ok(())
}
