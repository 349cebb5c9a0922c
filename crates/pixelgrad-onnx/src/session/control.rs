//! Control flow while a session runs: `If`, `Loop` and `Scan` run the nodes of their
//! subgraphs ([`crate::graph::Subgraph`]) through the same operator dispatch as the main
//! graph's nodes ([`Session::exec_node`]), so they run on every backend and record gradients
//! like any other node.
//!
//! A subgraph sees the values of the graphs around it that it reads (the node's outer reads,
//! given as its last inputs), its own initializers, and its formal inputs. Conditions and trip
//! counts are read on the host: a host value (a constant, shape arithmetic) directly; a value
//! on the device with one readback of its single element, before the branch is chosen and
//! after each `Loop` iteration whose condition the body computes there. A constant `If`
//! condition never gets here: loading replaced the node by its branch.
//!
//! Every `Loop` and `Scan` iteration counts [`super::limits::ITERATION_WORK`] steps against the
//! run's work limit and checks the cancel token, so a loop with no bound ends at the limit.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use pixelgrad_core::Tensor;

use super::limits::RunGuard;
use super::Session;
use crate::graph::Node;
use crate::graph::{self, Subgraph};
use crate::host::{DType, HostTensor};
use crate::ops::{upload, V};
use crate::Result;

/// What [`Session::run_control`] returns: boxed, as subgraphs nest control flow again.
type Outs<'a> = Pin<Box<dyn Future<Output = Result<Vec<V>>> + 'a>>;

/// Values joined by one concatenation (the rest in further rounds): few enough for every
/// backend's inputs per kernel.
const JOIN: usize = 8;

impl Session {
    /// Runs the control-flow node `node` on its inputs (its formal inputs, then the outer
    /// values its subgraphs read).
    pub(super) fn run_control<'a>(&'a self, node: &'a Node, ins: Vec<Option<V>>, guard: &'a mut RunGuard) -> Outs<'a> {
        Box::pin(async move {
            let declared = graph::declared_inputs(node);
            let mut formal = ins;
            let outer_vals = formal.split_off(declared.min(formal.len()));
            let outer: HashMap<String, V> =
                graph::outer_reads(node).into_iter().zip(outer_vals).filter_map(|(name, v)| Some((name, v?))).collect();
            match node.op_type.as_str() {
                "If" => self.run_if(node, &formal, outer, guard).await,
                "Loop" => self.run_loop(node, &formal, outer, guard).await,
                "Scan" => self.run_scan(node, &formal, outer, guard).await,
                other => Err(node.err(format!("{other} is not a control-flow operator"))),
            }
        })
    }

    async fn run_if(&self, node: &Node, formal: &[Option<V>], outer: HashMap<String, V>, guard: &mut RunGuard) -> Result<Vec<V>> {
        let cond = formal.first().cloned().flatten().ok_or_else(|| node.err("has no condition"))?;
        let cond = read_scalar(node, &cond, "the condition").await? != 0.0;
        let g = node.graph(if cond { "then_branch" } else { "else_branch" })?;
        let scope = with_constants(outer, g);
        self.run_graph(g, scope, guard).await
    }

    async fn run_loop(&self, node: &Node, formal: &[Option<V>], outer: HashMap<String, V>, guard: &mut RunGuard) -> Result<Vec<V>> {
        let body = node.graph("body")?;
        let trip = match formal.first().cloned().flatten() {
            Some(m) => Some(read_scalar(node, &m, "the trip count M").await? as i64),
            None => None,
        };
        let given_cond = formal.get(1).cloned().flatten();
        let mut cond = match &given_cond {
            Some(c) => read_scalar(node, c, "the condition").await? != 0.0,
            None => true,
        };
        let mut carried: Vec<V> =
            formal.iter().skip(2).map(|v| v.clone().ok_or_else(|| node.err("a loop-carried input is empty"))).collect::<Result<_>>()?;
        let n = carried.len();
        let k = body.outputs.len() - 1 - n;
        let mut scans: Vec<Vec<V>> = vec![Vec::new(); k];
        let scope = with_constants(outer, body);
        let mut i: i64 = 0;
        while trip.is_none_or(|m| i < m) && cond {
            self.tick(node, guard).await?;
            let mut vals = scope.clone();
            vals.insert(body.inputs[0].clone(), V::host(HostTensor::ints(DType::I64, vec![], vec![i])));
            vals.insert(body.inputs[1].clone(), V::host(HostTensor::ints(DType::Bool, vec![], vec![cond as i64])));
            for (name, v) in body.inputs[2..].iter().zip(carried.drain(..)) {
                vals.insert(name.clone(), v);
            }
            let mut outs = self.run_graph(body, vals, guard).await?.into_iter();
            let cond_out = outs.next().ok_or_else(|| node.err("body made no condition"))?;
            // the body's condition decides only where the node has one (else it is ignored)
            if given_cond.is_some() {
                cond = read_scalar(node, &cond_out, "the body's condition").await? != 0.0;
            }
            carried.extend(outs.by_ref().take(n));
            for (list, v) in scans.iter_mut().zip(outs) {
                list.push(v);
            }
            self.check_stacks(node, &scans)?;
            i += 1;
        }
        let mut results = carried;
        for (j, list) in scans.into_iter().enumerate() {
            results.push(self.stack(node, list, 0, &format!("scan output {j}"))?);
        }
        Ok(results)
    }

    async fn run_scan(&self, node: &Node, formal: &[Option<V>], outer: HashMap<String, V>, guard: &mut RunGuard) -> Result<Vec<V>> {
        let body = node.graph("body")?;
        let m = node.int("num_scan_inputs", 0)? as usize;
        let state_n = formal.len() - m;
        let k = node.outputs.len() - state_n;
        let list = |attr: &str, len: usize| -> Result<Vec<i64>> { Ok(node.ints(attr)?.unwrap_or_else(|| vec![0; len])) };
        let (in_axes, in_dirs) = (list("scan_input_axes", m)?, list("scan_input_directions", m)?);
        let (out_axes, out_dirs) = (list("scan_output_axes", k)?, list("scan_output_directions", k)?);
        let mut state: Vec<V> =
            formal[..state_n].iter().map(|v| v.clone().ok_or_else(|| node.err("a state input is empty"))).collect::<Result<_>>()?;
        // the scanned inputs on the device, each with its axis
        let mut scanned = Vec::with_capacity(m);
        let mut len = None;
        for (j, v) in formal[state_n..].iter().enumerate() {
            let v = v.as_ref().ok_or_else(|| node.err("a scanned input is empty"))?;
            let axis = normalise(node, in_axes[j], v.dims().len(), &format!("scan_input_axes[{j}]"))?;
            let l = v.dims()[axis];
            if *len.get_or_insert(l) != l {
                return Err(node.err(format!("scanned input {j} has {l} steps along axis {axis}, an earlier one {}", len.unwrap_or(0))));
            }
            scanned.push((self.on_device(v, &format!("scanned input {j}"))?, v.dtype(), axis));
        }
        let len = len.unwrap_or(0);
        let scope = with_constants(outer, body);
        let mut outs_by_step: Vec<Vec<V>> = vec![Vec::with_capacity(len); k];
        for t in 0..len {
            self.tick(node, guard).await?;
            let mut vals = scope.clone();
            for (name, v) in body.inputs.iter().zip(state.drain(..)) {
                vals.insert(name.clone(), v);
            }
            for (j, (x, dtype, axis)) in scanned.iter().enumerate() {
                let at = if in_dirs[j] == 1 { len - 1 - t } else { t };
                let mut dims = x.dims().to_vec();
                dims.remove(*axis);
                let slice = x.slice(*axis, at, at + 1)?.reshape(dims)?;
                vals.insert(body.inputs[state_n + j].clone(), V::dev(slice, *dtype));
            }
            let mut outs = self.run_graph(body, vals, guard).await?.into_iter();
            state.extend(outs.by_ref().take(state_n));
            for (list, v) in outs_by_step.iter_mut().zip(outs) {
                list.push(v);
            }
            self.check_stacks(node, &outs_by_step)?;
        }
        let mut results = state;
        for (j, mut list) in outs_by_step.into_iter().enumerate() {
            if out_dirs[j] == 1 {
                list.reverse();
            }
            let rank = list.first().map(|v| v.dims().len()).unwrap_or(0);
            let axis = normalise(node, out_axes[j], rank + 1, &format!("scan_output_axes[{j}]"))?;
            results.push(self.stack(node, list, axis, &format!("scan output {j}"))?);
        }
        Ok(results)
    }

    /// Runs the nodes of `g` with the values `vals` (outer values, its constants, its bound
    /// inputs) and returns its outputs.
    async fn run_graph(&self, g: &Subgraph, mut vals: HashMap<String, V>, guard: &mut RunGuard) -> Result<Vec<V>> {
        for n in &g.nodes {
            if let Some(pause) = guard.pause_due() {
                pause.await;
            }
            guard.before(n)?;
            let mut ins = Vec::with_capacity(n.inputs.len());
            for name in &n.inputs {
                if name.is_empty() {
                    ins.push(None);
                    continue;
                }
                let v = vals.get(name).cloned().or_else(|| self.constant(name));
                ins.push(Some(v.ok_or_else(|| n.err(format!("input '{name}' is not computed before this node in its subgraph")))?));
            }
            let outs = self.exec_node(n, ins, guard).await?;
            for (o, v) in n.outputs.iter().zip(outs) {
                if !o.is_empty() {
                    vals.insert(o.clone(), v);
                }
            }
        }
        g.outputs
            .iter()
            .map(|o| {
                vals.get(o)
                    .cloned()
                    .or_else(|| self.constant(o))
                    .ok_or_else(|| crate::OnnxError::Output { name: o.clone(), msg: format!("subgraph '{}' does not compute it", g.name) })
            })
            .collect()
    }

    /// Before each iteration: a pause if one is due, then the iteration's work and the checks.
    async fn tick(&self, node: &Node, guard: &mut RunGuard) -> Result<()> {
        if let Some(pause) = guard.pause_due() {
            pause.await;
        }
        guard.iteration(node)
    }

    /// The values gathered for each scan output so far fit one result under the device's
    /// element cap (what stacking them will make): checked every iteration, so a long loop
    /// cannot hold more than that per output before the stack would be refused.
    fn check_stacks(&self, node: &Node, lists: &[Vec<V>]) -> Result<()> {
        let cap = self.device.limits().max_elements;
        for (j, list) in lists.iter().enumerate() {
            let per = list.last().map_or(0, |v| crate::host::checked_numel(v.dims()).unwrap_or(usize::MAX));
            let total = per.saturating_mul(list.len());
            if total > cap {
                return Err(node.err(format!(
                    "scan output {j} would hold {total} elements after {} iterations, above the device's element cap of {cap} (Device::set_limits)",
                    list.len()
                )));
            }
        }
        Ok(())
    }

    /// `v` as a device tensor (host values uploaded).
    fn on_device(&self, v: &V, what: &str) -> Result<Tensor> {
        match v {
            V::Dev { t, .. } => Ok(t.clone()),
            V::Host { t, .. } => upload(&self.device, t, what),
        }
    }

    /// The per-iteration values `list` stacked along a new axis `axis`, on the device.
    fn stack(&self, node: &Node, list: Vec<V>, axis: usize, what: &str) -> Result<V> {
        let Some(first) = list.first() else {
            return Err(node.err(format!("{what} is empty: no iteration ran (zero-size tensors are not supported)")));
        };
        let (dims, dtype) = (first.dims().to_vec(), first.dtype());
        let mut parts = Vec::with_capacity(list.len());
        for (t, v) in list.iter().enumerate() {
            if v.dims() != dims.as_slice() {
                return Err(node.err(format!("{what} has shape {dims:?} at iteration 0 and {:?} at iteration {t}", v.dims())));
            }
            parts.push(self.on_device(v, what)?.unsqueeze(axis)?);
        }
        while parts.len() > 1 {
            parts =
                parts.chunks(JOIN).map(|c| Tensor::concat(&c.iter().collect::<Vec<_>>(), axis)).collect::<pixelgrad_core::Result<_>>()?;
        }
        Ok(V::dev(parts.remove(0), dtype))
    }
}

/// The outer values with the subgraph's own constants added.
fn with_constants(mut outer: HashMap<String, V>, g: &Subgraph) -> HashMap<String, V> {
    for (name, t) in &g.constants {
        outer.insert(name.clone(), V::Host { t: Rc::new(t.clone()), name: None });
    }
    outer
}

/// The single value of `v` (a condition, a trip count): read directly on the host, with one
/// readback of one element on the device.
async fn read_scalar(node: &Node, v: &V, what: &str) -> Result<f64> {
    let values = match v {
        V::Host { t, .. } => t.to_f64(),
        V::Dev { t, .. } => t.to_vec_async().await?.into_iter().map(f64::from).collect(),
    };
    match values.as_slice() {
        [x] => Ok(*x),
        _ => Err(node.err(format!("{what} has {} elements; it must have one", values.len()))),
    }
}

/// Axis `axis` (negative from the end) of a rank-`rank` value.
fn normalise(node: &Node, axis: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r {
        return Err(node.err(format!("{what} is {axis}, outside a rank-{rank} value")));
    }
    Ok(a as usize)
}
