//! Kernel traces ([`pixelgrad_core::Backend::trace_begin`]), the core recording concept
//! (`pixelgrad_core::recording`) filled with the CPU's kernels: each recorded kernel keeps
//! what it computes (a primitive op or a fused pass) and names the storages it reads and
//! writes by slot, so that a later run with inputs of the same sizes launches the same kernels
//! again without the graph walk, shape inference and fusion that chose them. On a small model
//! those cost as much as the arithmetic (the PP-OCR classifier: 134 kernels of a few thousand
//! values each).
//!
//! Storages are told apart by address ([`Slots`] keyed by [`Storage::addr`]). While a
//! recording is open it holds a weak handle on every storage it has seen, so no address is
//! reused until it ends; constants (read, never written: weights) are held strongly and kept
//! by the trace. A replay computes every written slot anew and drops it after its last use.

use pixelgrad_core::kernel::Launch;
use pixelgrad_core::recording::{Slots, Source};
use pixelgrad_core::{Op, Shape, Storage, Trace, WeakStorage};

/// What one recorded kernel computes.
pub(crate) enum Kind {
    /// A primitive op, run as `CpuBackend::execute` runs it unfused.
    Op { op: Op, shapes: Vec<Shape> },
    /// One fused elementwise pass; `shapes` are its inputs' views.
    Fused { launch: Launch, shapes: Vec<Shape> },
}

/// One kernel of a trace: what it computes, the slots it reads, and the written slots no
/// later kernel or output reads once it has run (their memory goes back to the pool then).
pub(crate) struct Step {
    pub kind: Kind,
    pub out_shape: Shape,
    pub ins: Vec<usize>,
    pub out: usize,
    pub frees: Vec<usize>,
}

/// A finished trace. Slots `0..inputs` are the inputs, in `trace_begin` order (their lengths
/// are in the core [`pixelgrad_core::Trace`]).
pub(crate) struct CpuTrace {
    /// Storages read that no kernel of the trace wrote (weights, constants), by slot.
    pub constants: Vec<(usize, Storage)>,
    pub steps: Vec<Step>,
    pub outputs: Vec<usize>,
    pub slots: usize,
}

/// An open recording.
pub(crate) struct Recorder {
    slots: Slots<usize>,
    /// A weak handle on each slot's storage, by slot: keeps its address taken.
    seen: Vec<WeakStorage>,
    /// The constant slots and their storages, which the trace keeps.
    constants: Vec<(usize, Storage)>,
    /// Each input's element count.
    inputs: Vec<usize>,
    steps: Vec<(Kind, Shape, Vec<usize>, usize)>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("slots", &self.slots.len())
            .field("kernels", &self.steps.len())
            .field("broken", &self.slots.broken())
            .finish()
    }
}

impl Recorder {
    /// A recording whose slots `0..` are `inputs` (computed storages, with their lengths);
    /// `None` if one storage is given twice (a replay could not give them apart).
    pub fn new(inputs: &[(Storage, usize)]) -> Option<Recorder> {
        let slots = Slots::new(inputs.iter().map(|(s, _)| s.addr()))?;
        let seen = inputs.iter().map(|(s, _)| s.downgrade()).collect();
        Some(Recorder { slots, seen, constants: Vec::new(), inputs: inputs.iter().map(|&(_, l)| l).collect(), steps: Vec::new() })
    }

    /// Keeps a handle on the storage of a slot seen for the first time.
    fn hold(&mut self, slot: usize, s: &Storage) {
        if slot == self.seen.len() {
            self.seen.push(s.downgrade());
            if self.slots.source(slot) == Some(Source::Constant) {
                self.constants.push((slot, s.clone()));
            }
        }
    }

    /// The slot of a computed storage read: known, or a new constant.
    fn read(&mut self, s: &Storage) -> usize {
        let slot = self.slots.read(&s.addr());
        self.hold(slot, s);
        slot
    }

    /// A kernel that read `ins` (computed storages) and wrote `out`.
    pub fn step(&mut self, kind: Kind, out_shape: &Shape, ins: &[Storage], out: &Storage) {
        let ins: Vec<usize> = ins.iter().map(|s| self.read(s)).collect();
        let slot = self.slots.write(&out.addr());
        self.hold(slot, out);
        self.steps.push((kind, out_shape.clone(), ins, slot));
    }

    /// Marks the recording as one that cannot be replayed.
    pub fn set_broken(&mut self, why: &'static str) {
        self.slots.set_broken(why);
    }

    /// The trace, `outputs` being computed storages; `None` if the recording was broken.
    pub fn finish(mut self, outputs: &[Storage]) -> Option<Trace> {
        if self.slots.broken().is_some() {
            return None;
        }
        // An output no kernel touched (an input, a weight) is kept like a constant.
        let outputs: Vec<usize> = outputs.iter().map(|s| self.read(s)).collect();
        let touched = self.steps.iter().map(|(_, _, ins, out)| ins.iter().copied().chain([*out]));
        let frees = self.slots.last_uses(touched, &outputs);
        let steps: Vec<Step> = self
            .steps
            .into_iter()
            .zip(frees)
            .map(|((kind, out_shape, ins, out), frees)| Step { kind, out_shape, ins, out, frees })
            .collect();
        let launches = steps.len();
        let t = CpuTrace { constants: self.constants, steps, outputs, slots: self.slots.len() };
        Some(Trace::new(self.inputs, t.outputs.len(), launches, t))
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
