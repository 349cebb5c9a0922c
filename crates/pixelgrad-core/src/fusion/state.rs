//! The fusion layer's state, one per backend: the generation, and the results still owed.

use std::cell::{Cell, RefCell};

use super::storage::{Storage, WeakStorage};

/// Results made since the last settle beyond which finished entries are pruned.
const PRUNE_AT: usize = 256;

/// Chains never cross a *generation*: every read, flush and step boundary starts a new one,
/// and a pending result made in an earlier generation is read as a plain input (computed
/// once) rather than inlined. Without that, eager loops would compose optimizer state and
/// running sums into longer kernels every iteration, and compile a new one each time.
pub struct FusionState {
    generation: Cell<u64>,
    /// The pending results made since the last settle, oldest first.
    owed: RefCell<Vec<WeakStorage>>,
    /// Whether results are remembered for a settle at all.
    settles: bool,
}

impl std::fmt::Debug for FusionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FusionState").field("generation", &self.generation.get()).field("owed", &self.owed.borrow().len()).finish()
    }
}

impl Default for FusionState {
    fn default() -> Self {
        Self::new()
    }
}

impl FusionState {
    /// State for a backend that settles pending results at flushes and step boundaries.
    pub fn new() -> Self {
        FusionState { generation: Cell::new(0), owed: RefCell::new(Vec::new()), settles: true }
    }
    /// State for a backend that never settles (the CPU: a pending result is computed when
    /// read, or never): nothing is remembered.
    pub fn unsettled() -> Self {
        FusionState { settles: false, ..Self::new() }
    }
    /// The current generation.
    pub fn generation(&self) -> u64 {
        self.generation.get()
    }
    /// Starts a new generation.
    pub fn new_generation(&self) {
        self.generation.set(self.generation.get().wrapping_add(1));
    }
    /// Notes a pending result, to be computed at the next settle if still held then.
    pub fn remember(&self, s: &Storage) {
        if !self.settles {
            return;
        }
        let mut list = self.owed.borrow_mut();
        if list.len() >= PRUNE_AT {
            list.retain(|w| w.upgrade().is_some_and(|s| undone(&s)));
        }
        list.push(s.downgrade());
    }
    /// The results owed, oldest first, emptying the list.
    pub fn take_owed(&self) -> Vec<WeakStorage> {
        std::mem::take(&mut *self.owed.borrow_mut())
    }
}

/// True while `s` is a pending value not computed yet.
pub fn undone(s: &Storage) -> bool {
    s.as_pending().is_some_and(|v| !v.is_done())
}
