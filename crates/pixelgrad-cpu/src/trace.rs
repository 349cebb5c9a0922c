//! Kernel traces ([`pixelgrad_core::Backend::trace_begin`]): the kernels one run launched, in
//! order, with where each reads its inputs from, so that a later run with inputs of the same
//! sizes launches the same kernels again without the graph walk, shape inference and fusion
//! that chose them. On a small model those cost as much as the arithmetic (the PP-OCR
//! classifier: 134 kernels of a few thousand values each).
//!
//! Storages are told apart by address. While a recording is open it holds a weak handle on
//! every storage it has seen, so no address is reused until it ends.

use std::collections::HashMap;

use pixelgrad_core::kernel::Launch;
use pixelgrad_core::{Op, Shape, Storage, WeakStorage};

/// What one recorded kernel computes.
pub(crate) enum Kind {
    /// A primitive op, run as `CpuBackend::execute` runs it unfused.
    Op { op: Op, shapes: Vec<Shape> },
    /// One fused elementwise pass; `shapes` are its inputs' views.
    Fused { launch: Launch, shapes: Vec<Shape> },
}

/// One kernel of a trace: what it computes, the slots it reads, and the slots no later kernel
/// or output reads once it has run (their memory goes back to the pool then).
pub(crate) struct Step {
    pub kind: Kind,
    pub out_shape: Shape,
    pub ins: Vec<usize>,
    pub out: usize,
    pub frees: Vec<usize>,
}

/// A finished trace. Slots `0..inputs.len()` are the inputs, in `trace_begin` order.
pub(crate) struct CpuTrace {
    /// Element count of each input when recorded.
    pub inputs: Vec<usize>,
    /// Storages read that no kernel of the trace wrote (weights, constants), by slot.
    pub constants: Vec<(usize, Storage)>,
    pub steps: Vec<Step>,
    pub outputs: Vec<usize>,
    pub slots: usize,
}

/// Where a slot's value comes from.
enum Source {
    Input,
    Constant(Storage),
    Step,
}

/// An open recording.
pub(crate) struct Recorder {
    /// Slot of each storage seen, by address, and a handle that keeps the address taken.
    slots: HashMap<usize, (usize, WeakStorage)>,
    sources: Vec<Source>,
    inputs: Vec<usize>,
    steps: Vec<(Kind, Shape, Vec<usize>, usize)>,
    /// Why this run cannot be replayed, once something made it so.
    pub broken: Option<&'static str>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("slots", &self.sources.len())
            .field("kernels", &self.steps.len())
            .field("broken", &self.broken)
            .finish()
    }
}

impl Recorder {
    /// A recording whose slots `0..` are `inputs` (computed storages, with their lengths);
    /// `None` if one storage is given twice (a replay could not give them apart).
    pub fn new(inputs: &[(Storage, usize)]) -> Option<Recorder> {
        let mut r = Recorder { slots: HashMap::new(), sources: Vec::new(), inputs: Vec::new(), steps: Vec::new(), broken: None };
        for (s, len) in inputs {
            if r.slots.contains_key(&s.addr()) {
                return None;
            }
            r.add(s, Source::Input);
            r.inputs.push(*len);
        }
        Some(r)
    }

    fn add(&mut self, s: &Storage, source: Source) -> usize {
        let slot = self.sources.len();
        self.sources.push(source);
        self.slots.insert(s.addr(), (slot, s.downgrade()));
        slot
    }

    /// The slot of a computed storage: known, or a new constant.
    fn slot_of(&mut self, s: &Storage) -> usize {
        match self.slots.get(&s.addr()) {
            Some(&(slot, _)) => slot,
            None => self.add(s, Source::Constant(s.clone())),
        }
    }

    /// A kernel that read `ins` (computed storages) and wrote `out`.
    pub fn step(&mut self, kind: Kind, out_shape: &Shape, ins: &[Storage], out: &Storage) {
        let ins: Vec<usize> = ins.iter().map(|s| self.slot_of(s)).collect();
        let out = self.add(out, Source::Step);
        self.steps.push((kind, out_shape.clone(), ins, out));
    }

    /// The trace, `outputs` being computed storages; `None` if the recording was broken.
    pub fn finish(mut self, outputs: &[Storage]) -> Option<CpuTrace> {
        if self.broken.is_some() {
            return None;
        }
        let outputs: Vec<usize> = outputs.iter().map(|s| self.slot_of(s)).collect();
        // Last reader of each slot (outputs are read after every step).
        let n = self.steps.len();
        let mut last = vec![None; self.sources.len()];
        for (k, (_, _, ins, _)) in self.steps.iter().enumerate() {
            for &i in ins {
                last[i] = Some(k);
            }
        }
        for &o in &outputs {
            last[o] = Some(n);
        }
        let mut frees: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (slot, l) in last.iter().enumerate() {
            if let (Some(k), Source::Step | Source::Input) = (*l, &self.sources[slot]) {
                if k < n {
                    frees[k].push(slot);
                }
            }
        }
        // A result nothing reads is freed as soon as it is written.
        for (k, step) in self.steps.iter().enumerate() {
            if last[step.3].is_none() {
                frees[k].push(step.3);
            }
        }
        let constants = self
            .sources
            .iter()
            .enumerate()
            .filter_map(|(slot, s)| match s {
                Source::Constant(c) => Some((slot, c.clone())),
                _ => None,
            })
            .collect();
        let steps = self
            .steps
            .into_iter()
            .zip(frees)
            .map(|((kind, out_shape, ins, out), frees)| Step { kind, out_shape, ins, out, frees })
            .collect();
        Some(CpuTrace { inputs: self.inputs, constants, steps, outputs, slots: self.sources.len() })
    }
}

#[cfg(test)]
mod tests {
    use pixelgrad_core::{Device, Tensor};

    use crate::CpuBackend;

    /// relu(x · w + 1) * 0.5: a product, then one fused pass.
    fn net(x: &Tensor, w: &Tensor) -> Tensor {
        x.matmul(w).unwrap().add_scalar(1.0).unwrap().max_scalar(0.0).unwrap().mul_scalar(0.5).unwrap()
    }

    fn data(n: usize, k: f32) -> Vec<f32> {
        (0..n).map(|i| ((i as f32 + 1.0) * k).sin()).collect()
    }

    #[test]
    fn replay_computes_what_the_ops_compute_on_new_inputs() {
        let dev = Device::new(CpuBackend::new());
        let b = dev.backend();
        let x = Tensor::from_vec(&dev, &data(12, 0.3), [3, 4]).unwrap();
        let w = Tensor::from_vec(&dev, &data(8, 0.7), [4, 2]).unwrap();
        assert!(b.trace_begin(&[x.storage()]));
        assert!(!b.trace_begin(&[x.storage()]), "a second recording while one is open");
        let y = net(&x, &w);
        let launches = b.counters().launches;
        let trace = b.trace_end(&[y.storage()]).expect("a trace");
        // The pending fused pass ran when the recording ended.
        assert_eq!(b.counters().launches, launches + 1);

        let x2 = Tensor::from_vec(&dev, &data(12, 1.1), [3, 4]).unwrap();
        let before = b.counters().launches;
        let out = b.trace_replay(&trace, &[x2.storage()]).unwrap();
        assert_eq!(b.counters().launches - before, 2, "the product and the fused pass");
        let got = Tensor::from_storage(&dev, out[0].clone(), [3, 2]).to_vec().unwrap();
        assert_eq!(got, net(&x2, &w).to_vec().unwrap());
        assert_ne!(got, y.to_vec().unwrap());

        // An input of another length is refused, naming it.
        let short = Tensor::from_vec(&dev, &data(8, 1.0), [2, 4]).unwrap();
        let Err(err) = b.trace_replay(&trace, &[short.storage()]) else { panic!("a short input was taken") };
        let err = err.to_string();
        assert!(err.contains("input 0 holds 8 elements"), "{err}");
        assert!(b.trace_replay(&trace, &[]).is_err());
    }

    #[test]
    fn reads_and_random_numbers_make_a_run_unreplayable() {
        let dev = Device::new(CpuBackend::new());
        let b = dev.backend();
        let x = Tensor::from_vec(&dev, &data(6, 0.3), [6]).unwrap();
        assert!(b.trace_begin(&[x.storage()]));
        let y = x.exp().unwrap();
        y.to_vec().unwrap();
        let z = y.add_scalar(1.0).unwrap();
        assert!(b.trace_end(&[z.storage()]).is_none());

        assert!(b.trace_begin(&[x.storage()]));
        let r = Tensor::rand_uniform(&dev, [6], 0.0, 1.0, 7).unwrap();
        let z = x.add(&r).unwrap();
        assert!(b.trace_end(&[z.storage()]).is_none());

        // Nothing is open after either: a new recording starts.
        assert!(b.trace_begin(&[x.storage()]));
        b.trace_abort();
        assert!(b.trace_end(&[x.storage()]).is_none());
    }

    #[test]
    fn one_storage_given_twice_is_not_recorded() {
        let dev = Device::new(CpuBackend::new());
        let x = Tensor::from_vec(&dev, &data(4, 0.3), [4]).unwrap();
        assert!(!dev.backend().trace_begin(&[x.storage(), x.storage()]));
        // The reference backend records nothing.
        let r = Device::new(CpuBackend::reference());
        let y = Tensor::from_vec(&r, &data(4, 0.3), [4]).unwrap();
        assert!(!r.backend().trace_begin(&[y.storage()]));
    }

    #[test]
    fn constants_are_kept_and_intermediates_freed() {
        let dev = Device::new(CpuBackend::new());
        let b = dev.backend();
        let x = Tensor::from_vec(&dev, &data(64, 0.3), [8, 8]).unwrap();
        assert!(b.trace_begin(&[x.storage()]));
        let w = Tensor::from_vec(&dev, &data(64, 0.9), [8, 8]).unwrap();
        let y = net(&net(&x, &w), &w);
        let trace = b.trace_end(&[y.storage()]).unwrap();
        let want = y.to_vec().unwrap();
        // The weight, uploaded during the recording, is a constant of the trace.
        drop((w, y));
        let in_use = b.counters().bytes_in_use;
        let out = b.trace_replay(&trace, &[x.storage()]).unwrap();
        assert_eq!(Tensor::from_storage(&dev, out[0].clone(), [8, 8]).to_vec().unwrap(), want);
        // Only the output outlives the replay.
        assert_eq!(b.counters().bytes_in_use, in_use + 64 * 4);
    }
}
