//! The graph by integer ids ([`Wiring`]) and what one run computes ([`RunPlan`]).

use rustc_hash::FxHashMap as HashMap;

use crate::model::Model;

/// The graph by integer ids: what [`super::Session::run_to`] walks, instead of looking value names
/// up in hash maps for every node of every run.
pub(super) struct Wiring {
    /// Every value a node reads or writes, by name.
    pub(super) ids: HashMap<String, usize>,
    /// Per node: its inputs' ids (`None` for an omitted optional input), then its outputs'.
    pub(super) ins: Vec<Vec<Option<usize>>>,
    pub(super) outs: Vec<Vec<Option<usize>>>,
    /// The node computing each value, if one does.
    pub(super) producer: Vec<Option<usize>>,
    /// The model's inputs by name (a run looks every given input up).
    inputs: HashMap<String, usize>,
}

impl Wiring {
    pub(super) fn new(model: &Model) -> Wiring {
        let mut ids: HashMap<String, usize> = HashMap::default();
        let mut id = |name: &String| -> Option<usize> {
            if name.is_empty() {
                return None;
            }
            let n = ids.len();
            Some(*ids.entry(name.clone()).or_insert(n))
        };
        let ins: Vec<Vec<Option<usize>>> = model.nodes.iter().map(|n| n.inputs.iter().map(&mut id).collect()).collect();
        let outs: Vec<Vec<Option<usize>>> = model.nodes.iter().map(|n| n.outputs.iter().map(&mut id).collect()).collect();
        let mut producer = vec![None; ids.len()];
        for (k, o) in outs.iter().enumerate() {
            for v in o.iter().flatten() {
                producer[*v] = Some(k);
            }
        }
        let inputs = model.inputs.iter().enumerate().map(|(k, i)| (i.name.clone(), k)).collect();
        Wiring { ids, ins, outs, producer, inputs }
    }

    /// The model's input called `name`.
    pub(super) fn input<'m>(&self, model: &'m Model, name: &str) -> Option<&'m crate::ValueInfo> {
        self.inputs.get(name).and_then(|&k| model.inputs.get(k))
    }
}

/// The nodes a run computes for one set of requested values, in graph order, and how many
/// times each value is read (by those nodes and as a requested value): a value is freed after
/// its last read.
pub(super) struct RunPlan {
    pub(super) nodes: Vec<usize>,
    pub(super) uses: Vec<usize>,
    /// Per entry of `nodes`: whether one of its results outlives the next node (read by a
    /// later one, or asked for). Only those quantised results are kept in 8-bit storage
    /// ([`super::Session::set_int8_activations`]): one read by the next node alone is never held
    /// while another node runs, so narrowing it would save no memory and cost two passes.
    pub(super) held: Vec<bool>,
}

impl RunPlan {
    /// The plan for the values `ids` (`None`: a graph input or constant, computed by no node).
    pub(super) fn new(model: &Model, wiring: &Wiring, ids: &[Option<usize>]) -> RunPlan {
        let mut needed = vec![false; model.nodes.len()];
        let mut stack: Vec<usize> = ids.iter().flatten().copied().collect();
        while let Some(v) = stack.pop() {
            if let Some(k) = wiring.producer[v] {
                if !needed[k] {
                    needed[k] = true;
                    stack.extend(wiring.ins[k].iter().flatten());
                }
            }
        }
        let mut uses = vec![0usize; wiring.producer.len()];
        for (k, _) in needed.iter().enumerate().filter(|(_, n)| **n) {
            for i in wiring.ins[k].iter().flatten() {
                uses[*i] += 1;
            }
        }
        for i in ids.iter().flatten() {
            uses[*i] += 1;
        }
        let nodes: Vec<usize> = (0..model.nodes.len()).filter(|&k| needed[k]).collect();
        let mut pos = vec![usize::MAX; model.nodes.len()];
        for (p, &k) in nodes.iter().enumerate() {
            pos[k] = p;
        }
        let mut held = vec![false; nodes.len()];
        for i in ids.iter().flatten() {
            if let Some(k) = wiring.producer[*i] {
                held[pos[k]] = true;
            }
        }
        for (q, &k) in nodes.iter().enumerate() {
            for i in wiring.ins[k].iter().flatten() {
                if let Some(j) = wiring.producer[*i] {
                    if pos[j] + 1 != q {
                        held[pos[j]] = true;
                    }
                }
            }
        }
        RunPlan { nodes, uses, held }
    }
}
