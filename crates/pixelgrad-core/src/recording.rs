//! One record/replay concept for every backend: a **recording** is the launches one run made,
//! each naming the memory it read and wrote by *slot*, plus which slots were the run's inputs
//! and which its outputs. A replay gives the input slots new memory (or copies into them),
//! launches the recorded kernels again in order and hands back the output slots, without the
//! graph walk, shape inference, fusion, pipeline / program lookup or binding that chose them.
//!
//! Two replay policies share it:
//! - **traces** ([`crate::Backend::trace_begin`]): an ONNX session's run is recorded once per
//!   input shapes and later runs replay it whole ([`Trace`]): the recorded launches run on new
//!   inputs, so they name their memory by slot ([`Slots`]), and a replay takes each written
//!   slot's memory from the pool and gives it back after its last use ([`Slots::last_uses`]);
//! - **step plans** ([`crate::Backend::begin_step`], [`crate::plan`]): a training step's
//!   written memory ([`crate::plan::Owned`]) and launches are recorded once per parity and the
//!   step's code, running again, reuses them checked call by call: the plan's written memory is
//!   reused unless a caller holds it (the rule below), each launch entry while it binds the
//!   same memory. The step's inputs (parameters, optimizer state, the batch) are what its
//!   launches bind that it did not allocate.
//!
//! A backend keeps a [`Slots`] while it records: every piece of memory a launch touches gets a
//! slot and a [`Source`]. Memory the recording did not write and was not given as an input is a
//! *constant* (weights): the recording keeps it alive. Memory written by a recorded launch is
//! the recording's own, reused by every replay; a backend must never hand it to a replay while
//! a caller still holds the previous run's value in it (it then writes into fresh memory).
//! Writing memory that is an input or was read as a constant breaks the recording: a replay
//! would overwrite what its caller gave it.

use std::any::Any;
use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;

use crate::{Error, Result};

/// Where the memory of a recorded slot comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The `i`-th input of the recording: a replay gives new memory in its place.
    Input(usize),
    /// Read, never written: kept by the recording as it was.
    Constant,
    /// Written by a recorded launch: the recording's own memory.
    Written,
}

/// The slot bookkeeping of an open recording, memory being told apart by `Id` (a buffer or a
/// texture handle, a storage address).
pub struct Slots<Id> {
    by_id: HashMap<Id, usize>,
    ids: Vec<Id>,
    sources: Vec<Source>,
    /// Why the run cannot be replayed, once something made it so.
    broken: Option<&'static str>,
}

impl<Id: Hash + Eq + Clone> Slots<Id> {
    /// A recording whose slots `0..` are `inputs`, in order; `None` if one is given twice (a
    /// replay could not give them apart).
    pub fn new(inputs: impl IntoIterator<Item = Id>) -> Option<Slots<Id>> {
        let mut s = Slots { by_id: HashMap::new(), ids: Vec::new(), sources: Vec::new(), broken: None };
        for (i, id) in inputs.into_iter().enumerate() {
            if s.by_id.contains_key(&id) {
                return None;
            }
            s.add(id, Source::Input(i));
        }
        Some(s)
    }

    fn add(&mut self, id: Id, source: Source) -> usize {
        let slot = self.ids.len();
        self.by_id.insert(id.clone(), slot);
        self.ids.push(id);
        self.sources.push(source);
        slot
    }

    /// The slot of memory a launch reads: known, or a new constant.
    pub fn read(&mut self, id: &Id) -> usize {
        match self.by_id.get(id) {
            Some(&slot) => slot,
            None => self.add(id.clone(), Source::Constant),
        }
    }

    /// The slot of memory a launch writes. Writing an input or a constant breaks the recording.
    pub fn write(&mut self, id: &Id) -> usize {
        match self.by_id.get(id) {
            Some(&slot) => {
                match self.sources[slot] {
                    Source::Input(_) => self.set_broken("a launch wrote an input"),
                    Source::Constant => self.set_broken("a launch wrote memory it had read before the recording wrote it"),
                    Source::Written => {}
                }
                slot
            }
            None => self.add(id.clone(), Source::Written),
        }
    }

    /// Marks the recording as one that cannot be replayed (the first reason is kept).
    pub fn set_broken(&mut self, why: &'static str) {
        self.broken.get_or_insert(why);
    }

    /// Why the recording cannot be replayed, if something made it so.
    pub fn broken(&self) -> Option<&'static str> {
        self.broken
    }

    /// The slot of `id`, if the recording has seen it.
    pub fn slot(&self, id: &Id) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// Every slot's memory and source, by slot.
    pub fn slots(&self) -> impl Iterator<Item = (&Id, Source)> {
        self.ids.iter().zip(self.sources.iter().copied())
    }

    /// Every slot's source, by slot.
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The source of `slot`, if the recording has it.
    pub fn source(&self, slot: usize) -> Option<Source> {
        self.sources.get(slot).copied()
    }

    /// Per launch, the written slots whose last use it is: a replay gives their memory back
    /// once that launch ran. `touched` lists, for each launch in order, the slots it reads or
    /// writes; `outputs` are handed to the caller, never given back. A written slot nothing
    /// reads is given back after the launch that wrote it.
    pub fn last_uses<T: IntoIterator<Item = usize>>(&self, touched: impl IntoIterator<Item = T>, outputs: &[usize]) -> Vec<Vec<usize>> {
        let mut last = vec![None; self.sources.len()];
        let mut launches = 0;
        for (k, slots) in touched.into_iter().enumerate() {
            for s in slots {
                if let Some(l) = last.get_mut(s) {
                    *l = Some(k);
                }
            }
            launches = k + 1;
        }
        for &o in outputs {
            if let Some(l) = last.get_mut(o) {
                *l = None;
            }
        }
        let mut frees = vec![Vec::new(); launches];
        for (slot, l) in last.iter().enumerate() {
            if let (Some(k), Source::Written) = (*l, self.sources[slot]) {
                frees[k].push(slot);
            }
        }
        frees
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A finished recording of one run ([`crate::Backend::trace_end`]), replayed by
/// [`crate::Backend::trace_replay`]: what every backend says about it (its inputs' lengths, its
/// outputs and launches) and the backend's own launch list inside.
#[derive(Clone)]
pub struct Trace {
    inputs: Vec<usize>,
    outputs: usize,
    launches: usize,
    inner: Rc<dyn Any>,
}

impl Trace {
    /// A trace taking inputs of `inputs` elements each, giving `outputs` values by running
    /// `launches` kernels, the backend's recording being `inner`.
    pub fn new<T: Any>(inputs: Vec<usize>, outputs: usize, launches: usize, inner: T) -> Trace {
        Trace { inputs, outputs, launches, inner: Rc::new(inner) }
    }

    /// Element count of each input, in [`crate::Backend::trace_begin`] order.
    pub fn inputs(&self) -> &[usize] {
        &self.inputs
    }

    /// How many values a replay returns.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Kernels a replay launches.
    pub fn launches(&self) -> usize {
        self.launches
    }

    /// The backend's recording, if it is of type `T` (`None`: another backend recorded it).
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.inner.downcast_ref::<T>()
    }

    /// Errors unless `lens` (the element counts of a replay's inputs) are what was recorded.
    pub fn check_inputs(&self, backend: &str, lens: &[usize]) -> Result<()> {
        if lens.len() != self.inputs.len() {
            let msg = format!("the trace takes {} inputs, given {}", self.inputs.len(), lens.len());
            return Err(Error::backend("trace_replay", backend, msg));
        }
        for (i, (&len, &want)) in lens.iter().zip(&self.inputs).enumerate() {
            if len != want {
                let msg = format!("input {i} holds {len} elements, the trace was recorded with {want}");
                return Err(Error::backend("trace_replay", backend, msg));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_constants_and_written_memory_get_their_sources() {
        assert!(Slots::new([1, 1]).is_none(), "one input given twice");
        let mut s = Slots::new([10, 11]).unwrap();
        assert_eq!(s.read(&10), 0);
        assert_eq!(s.read(&20), 2);
        assert_eq!(s.write(&30), 3);
        assert_eq!(s.write(&30), 3, "rewriting its own memory is fine");
        assert_eq!(s.broken(), None);
        let sources: Vec<Source> = s.slots().map(|(_, src)| src).collect();
        assert_eq!(sources, [Source::Input(0), Source::Input(1), Source::Constant, Source::Written]);
        s.write(&20);
        assert!(s.broken().unwrap().contains("read before"));
        let mut s = Slots::new([10]).unwrap();
        s.write(&10);
        assert_eq!(s.broken(), Some("a launch wrote an input"));
    }

    #[test]
    fn written_slots_are_given_back_after_their_last_use_but_outputs_are_kept() {
        let mut s = Slots::new([1]).unwrap();
        // launch 0: 1 -> 10; launch 1: 10, 2 (a constant) -> 11; launch 2: 11 -> 12 and 13.
        let l0 = [s.read(&1), s.write(&10)];
        let l1 = [s.read(&10), s.read(&2), s.write(&11)];
        let l2 = [s.read(&11), s.write(&12), s.write(&13)];
        let out = s.slot(&12).unwrap();
        let frees = s.last_uses([&l0[..], &l1[..], &l2[..]].map(|l| l.iter().copied()), &[out]);
        // The input and the constant are never given back; 13, read by nothing, goes at once.
        assert_eq!(frees, [vec![], vec![l1[0]], vec![l2[0], l2[2]]]);
        assert_eq!(s.sources(), [Source::Input(0), Source::Written, Source::Constant, Source::Written, Source::Written, Source::Written]);
        assert_eq!(s.last_uses(std::iter::empty::<[usize; 0]>(), &[]), Vec::<Vec<usize>>::new());
    }

    #[test]
    fn a_trace_checks_its_inputs_and_knows_its_backend() {
        let t = Trace::new(vec![4, 6], 1, 3, 7u32);
        assert_eq!((t.inputs(), t.outputs(), t.launches()), (&[4, 6][..], 1, 3));
        assert_eq!(t.get::<u32>(), Some(&7));
        assert!(t.get::<u64>().is_none());
        t.check_inputs("x", &[4, 6]).unwrap();
        assert!(t.check_inputs("x", &[4]).unwrap_err().to_string().contains("takes 2 inputs, given 1"));
        assert!(t.check_inputs("x", &[4, 5]).unwrap_err().to_string().contains("input 1 holds 5 elements"));
    }
}
