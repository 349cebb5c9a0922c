//! What a fusing backend implements ([`FusionDevice`]): the few launches the fusion layer
//! asks for, and the limits its decisions follow. The layer decides *what* runs *when*
//! (chains, generations, settle order, epilogues and prologues); the backend only says how
//! to run one thing and whether it fits.

use std::any::Any;

use super::storage::{MatmulWork, ReduceWork, Storage};
use crate::kernel::fuse::Pending;
use crate::op::ReduceOp;
use crate::shape::Shape;
use crate::Result;

/// Limits a backend reports, from which the fusion layer decides.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most IR nodes, distinct inputs (the product included) and parameters of an
    /// elementwise computation a matmul applies as it stores (an epilogue).
    pub epilogue_nodes: usize,
    pub epilogue_inputs: usize,
    pub epilogue_params: usize,
    /// Whether a settle runs the pending elementwise results it can together, as grouped
    /// launches ([`FusionDevice::run_group`]), or one by one.
    pub group: bool,
    /// A sum over the batch of a pending batched matmul stays pending (a matmul summing its
    /// batch, which may take an epilogue), rather than running at once.
    pub defer_summed_matmul: bool,
    /// A reduction does not take as its prologue a pending computation that can be a
    /// pending matmul's epilogue: that runs as one (the reduction reads its result), so
    /// whatever else reads it later reads the result instead of a launch of its own.
    pub prologue_yields_to_epilogue: bool,
    /// Inputs of a new pending computation that stay pending (not inlined) are computed at
    /// once, so computing a pending value never recurses (the CPU's choice).
    pub leaves_in_memory: bool,
}

/// An elementwise computation run as a matmul's epilogue: `p` read in the product's shape,
/// its leaf `given` being the product itself, `leaves` the memory of the others in order.
pub struct Epilogue<'a, M> {
    pub p: &'a Pending<Storage>,
    pub given: usize,
    pub leaves: Vec<&'a M>,
    pub shapes: Vec<&'a Shape>,
}

/// What a reduction reads.
pub enum ReduceInput<'a, M> {
    /// Memory.
    Memory(&'a M),
    /// The elementwise computation `p` over `leaves` (its leaves' memory, in order), walked in
    /// flat order (its shape has as many elements as the reduction's input).
    Fused { p: &'a Pending<Storage>, leaves: Vec<&'a M> },
}

/// How a reduction folds its input.
#[derive(Clone, Copy, Debug)]
pub enum ReduceAt<'a> {
    /// One axis of the shape.
    Axis(usize, &'a Shape),
    /// `[reps, outputs, len]` summed over its first and last axes.
    OuterAndInner { reps: usize, outputs: usize, len: usize },
}

/// A backend that fuses. Every method gets memory, never a pending value: the fusion layer
/// realises inputs first. The defaults fuse elementwise maps only (what the CPU does): nothing
/// else is deferred, grouped or given a prologue or epilogue.
pub trait FusionDevice {
    /// The backend's memory type (what [`Storage::downcast`] gives it).
    type Memory: Any;

    /// The backend's name, for errors.
    fn backend_name(&self) -> String;
    /// The memory behind `s` (a [`Storage::Memory`]) if it is this backend's, else a typed
    /// error naming `op`: the one place a backend downcasts storage.
    fn memory<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a Self::Memory>;
    /// Elements `m` holds.
    fn len(&self, m: &Self::Memory) -> usize;
    /// The device limits on a result of `out`'s size, checked when it is deferred (not when
    /// it is finally computed).
    fn check_size(&self, op: &'static str, out: &Shape) -> Result<()>;
    fn limits(&self) -> Limits;

    /// True if `p` runs as one launch.
    fn fits_map(&self, p: &Pending<Storage>) -> bool;
    /// True if a reduction can read `p` as its prologue in one launch.
    fn fits_prologue(&self, p: &Pending<Storage>) -> bool {
        let _ = p;
        false
    }
    /// True if the matmul `mm` into `out` can take `p` (read in `out`'s shape, leaf `given`
    /// being the product) as its epilogue.
    fn takes_epilogue(&self, mm: &MatmulWork, out: &Shape, p: &Pending<Storage>, given: usize) -> bool {
        let _ = (mm, out, p, given);
        false
    }
    /// Whether a matmul into `out` is returned pending.
    fn defers_matmul(&self, out: &Shape) -> bool {
        let _ = out;
        false
    }
    /// Whether a reduction `op` is returned pending, reading a pending computation as its
    /// prologue (`prologue`) or a value; one not deferred runs now with its prologue, or as
    /// usual (not through the fusion layer) without one.
    fn defers_reduce(&self, op: ReduceOp, prologue: bool) -> bool {
        let _ = (op, prologue);
        false
    }
    /// True if the pending reduction `r` can apply an epilogue in its last pass.
    fn reduce_takes_epilogue(&self, r: &ReduceWork) -> bool {
        let _ = r;
        false
    }
    /// The key of the grouped launches `p` may join (members share one key), or `None` when
    /// it runs alone.
    fn group_key(&self, p: &Pending<Storage>) -> Result<Option<(u32, u32)>> {
        let _ = p;
        Ok(None)
    }
    /// True if `joining` can join a grouped launch of `members` (all of one key).
    fn group_fits(&self, members: &[&Pending<Storage>], joining: &Pending<Storage>) -> bool {
        let _ = (members, joining);
        false
    }

    /// Runs `p` over `leaves` (its leaves' memory, in order) into fresh memory, returned as
    /// storage ([`Storage::new`]): the handle the value will have (a backend that records
    /// storages, as the CPU's traces do, sees it).
    fn run_map(&self, p: &Pending<Storage>, leaves: &[&Self::Memory]) -> Result<Storage>;
    /// Runs the matmul `mm` of `a` and `b` into `out` (summing its batch if `mm.sum_batch`),
    /// and `epi` if given in the same launch: the product, and the epilogue's result if it
    /// could be applied.
    fn run_matmul(
        &self,
        mm: &MatmulWork,
        a: &Self::Memory,
        b: &Self::Memory,
        out: &Shape,
        epi: Option<&Epilogue<'_, Self::Memory>>,
    ) -> Result<(Self::Memory, Option<Self::Memory>)> {
        let _ = (mm, a, b, out, epi);
        Err(never_deferred(self, "matmul"))
    }
    /// Runs a reduction into fresh memory of `out`'s size, and `epi` if given in its last
    /// pass: the result, and the epilogue's result if it could be applied.
    fn run_reduce(
        &self,
        op: ReduceOp,
        input: ReduceInput<'_, Self::Memory>,
        at: ReduceAt<'_>,
        out: &Shape,
        epi: Option<&Epilogue<'_, Self::Memory>>,
    ) -> Result<(Self::Memory, Option<Self::Memory>)> {
        let _ = (op, input, at, out, epi);
        Err(never_deferred(self, "reduce"))
    }
    /// Runs `members` (more than one, of one [`FusionDevice::group_key`]) as one launch: one
    /// result per member. Their leaves may be pending: realise them with
    /// `crate::fusion::realise`.
    fn run_group(&self, members: &[&Pending<Storage>]) -> Result<Vec<Self::Memory>> {
        let _ = members;
        Err(never_deferred(self, "fused"))
    }
}

/// The error of a default `run_*` method: the backend's choices (`defers_*`, `group_key`, the
/// limits) never send the fusion layer that work, so reaching it is an internal error.
fn never_deferred<D: FusionDevice + ?Sized>(d: &D, op: &'static str) -> crate::Error {
    crate::Error::backend(op, d.backend_name(), "internal: this backend defers no such work")
}
