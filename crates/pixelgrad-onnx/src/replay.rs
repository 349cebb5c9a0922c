//! Kernel replay for a [`crate::Session`]: the first run with given input shapes records the
//! kernels the backend launches ([`pixelgrad_core::Backend::trace_begin`]); later runs with the
//! same input shapes and requested outputs launch them again on the new inputs
//! ([`pixelgrad_core::Backend::trace_replay`]) without walking the graph, inferring shapes or
//! fusing elementwise chains again. On a small CNN that bookkeeping costs about as much as
//! the arithmetic.
//!
//! Replay gives the values the graph walk would: the same kernels run on the same memory. The
//! trainable weights are inputs of the trace like the graph's inputs, so a run after
//! fine-tuning or [`pixelgrad_core::Param::set`] reads the new values. Nothing is recorded
//! when gradients are wanted (the graph walk builds the autodiff graph), when an input stays
//! on the host, or on backends without traces; a run that reads a value back while it runs
//! (`NonZero`, `NonMaxSuppression`) is never replayed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use pixelgrad_core::{Device, Limits, Storage, Tensor, Trace};

use crate::host::DType;
use crate::ops::V;
use crate::value::Value;

/// Traces kept per session (recorded runs with different shapes or outputs); the oldest goes.
const KEPT: usize = 8;

/// What identifies a run: the requested outputs, and each graph input's shape and type.
type Key = (Vec<String>, Vec<(Vec<usize>, DType)>);

/// A recorded run: its trace, and each output's shape and element types (the model's, and the
/// storage's).
pub(crate) struct Recorded {
    trace: Trace,
    outs: Vec<(Vec<usize>, DType, pixelgrad_core::kernel::DType)>,
    /// The recorded run's work: a replay spends the same.
    pub work: u64,
    /// The device's caps the recorded run passed: a replay under other caps walks the graph
    /// again (the replayed kernels are not checked one by one).
    limits: Limits,
}

/// What [`Replays::prepare`] found for a run.
pub(crate) enum Plan {
    /// Run the graph, not recording.
    Walk,
    /// Run the graph, recording it under this key.
    Record(Key),
    /// Replay this.
    Replay(Key, Rc<Recorded>),
}

/// A session's recorded runs.
pub(crate) struct Replays {
    on: Cell<bool>,
    /// Runs served by a replay so far.
    pub replayed: Cell<u64>,
    /// By key, in recording order; `None` for a run that cannot be replayed.
    kept: RefCell<Vec<(Key, Option<Rc<Recorded>>)>>,
}

impl Default for Replays {
    fn default() -> Self {
        Replays { on: Cell::new(true), replayed: Cell::new(0), kept: RefCell::new(Vec::new()) }
    }
}

impl Replays {
    pub fn set_enabled(&self, on: bool) {
        self.on.set(on);
        self.clear();
    }

    pub fn enabled(&self) -> bool {
        self.on.get()
    }

    pub fn clear(&self) {
        self.kept.borrow_mut().clear();
    }

    /// The tensors a trace of this run takes as inputs: the graph inputs in the model's order,
    /// then the trainable weights; `None` if this run is not to be traced.
    pub fn inputs(&self, device: &Device, env: &HashMap<&str, V>, names: &[&str], params: &[Tensor]) -> Option<Vec<Tensor>> {
        if !self.on.get() {
            return None;
        }
        let mut ts = Vec::with_capacity(names.len() + params.len());
        for n in names {
            match env.get(n)? {
                V::Dev { t, .. } => ts.push(t.clone()),
                V::Host { .. } => return None,
            }
        }
        ts.extend(params.iter().cloned());
        let wants_grad = pixelgrad_core::grad_enabled() && ts.iter().any(|t| t.requires_grad());
        (!wants_grad && ts.iter().all(|t| t.device().same(device))).then_some(ts)
    }

    /// Looks this run up: replay, record, or neither.
    pub fn prepare(&self, env: &HashMap<&str, V>, names: &[&str], outputs: &[&str], limits: Limits) -> Plan {
        let shapes = names
            .iter()
            .filter_map(|n| match env.get(n) {
                Some(V::Dev { t, dtype }) => Some((t.dims().to_vec(), *dtype)),
                _ => None,
            })
            .collect();
        let key: Key = (outputs.iter().map(|o| o.to_string()).collect(), shapes);
        match self.kept.borrow().iter().find(|(k, _)| *k == key) {
            Some((_, Some(r))) if r.limits == limits => Plan::Replay(key, r.clone()),
            Some((_, Some(_))) => Plan::Record(key),
            Some((_, None)) => Plan::Walk,
            None => Plan::Record(key),
        }
    }

    /// Keeps what a recording gave (`None`: the run cannot be replayed).
    pub fn keep(&self, key: Key, rec: Option<Recorded>) {
        let mut kept = self.kept.borrow_mut();
        kept.retain(|(k, _)| *k != key);
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push((key, rec.map(Rc::new)));
    }

    /// Ends the recording of a run that returned `vals`.
    pub fn finish(device: &Device, vals: &[Value], work: u64) -> Option<Recorded> {
        let mut outs = Vec::with_capacity(vals.len());
        let mut stores = Vec::with_capacity(vals.len());
        for v in vals {
            match v {
                Value::Device { tensor, dtype } => {
                    outs.push((tensor.dims().to_vec(), *dtype, tensor.storage_dtype()));
                    stores.push(tensor.storage());
                }
                // An output computed on the host is not in the trace.
                Value::Host(_) => {
                    device.backend().trace_abort();
                    return None;
                }
            }
        }
        let trace = device.backend().trace_end(&stores)?;
        Some(Recorded { trace, outs, work, limits: device.limits() })
    }

    /// The outputs of `rec` replayed on `inputs` (as [`Replays::inputs`] listed them).
    pub fn replay(&self, device: &Device, rec: &Recorded, inputs: &[Tensor]) -> pixelgrad_core::Result<Vec<Value>> {
        let stores: Vec<&Storage> = inputs.iter().map(|t| t.storage()).collect();
        let outs = device.backend().trace_replay(&rec.trace, &stores)?;
        self.replayed.set(self.replayed.get() + 1);
        Ok(outs
            .into_iter()
            .zip(&rec.outs)
            .map(|(s, (dims, dtype, storage))| Value::Device {
                tensor: Tensor::from_storage_typed(device, s, *storage, dims.clone()),
                dtype: *dtype,
            })
            .collect())
    }
}

/// Aborts the backend's recording unless [`Recording::done`] was called (the run failed).
pub(crate) struct Recording<'a>(pub &'a Device, pub bool);

impl Recording<'_> {
    pub fn done(mut self) {
        self.1 = true;
    }
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.backend().trace_abort();
        }
    }
}
