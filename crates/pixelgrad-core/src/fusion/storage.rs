//! What a tensor's storage is: memory a backend owns, or a value the fusion layer has not
//! computed yet ([`PendingValue`]). The two are told apart by the type, never by probing: a
//! backend downcasts only its own memory ([`Storage::downcast`]), in one place, and asks the
//! fusion layer to realise a pending value first.

use std::any::Any;
use std::cell::{OnceCell, Ref, RefCell};
use std::rc::{Rc, Weak};

use crate::kernel::fuse::Pending;
use crate::op::ReduceOp;
use crate::shape::Shape;

/// One tensor's elements (contiguous, row-major): backend memory, or a pending value that
/// becomes backend memory when realised. Dropping the last handle returns the memory to the
/// backend (its own `Drop` decides how: a pool, deferred until submitted work completes...).
#[derive(Clone)]
pub enum Storage {
    /// Memory a backend owns; [`Storage::downcast`] gives the backend its own type.
    Memory(Rc<dyn Any>),
    /// A computation the fusion layer has not run yet (or has run: see
    /// [`PendingValue::done`]).
    Pending(Rc<PendingValue>),
}

impl Storage {
    /// Backend memory.
    pub fn new<T: Any>(inner: T) -> Self {
        Storage::Memory(Rc::new(inner))
    }
    /// A pending value.
    pub fn pending(value: PendingValue) -> Self {
        Storage::Pending(Rc::new(value))
    }
    /// The backend's own memory type, or `None` if it belongs to another backend or is a
    /// pending value (realise it first).
    pub fn downcast<T: Any>(&self) -> Option<&T> {
        match self {
            Storage::Memory(m) => m.downcast_ref::<T>(),
            Storage::Pending(_) => None,
        }
    }
    /// The pending value behind this storage, if it is one (computed or not).
    pub fn as_pending(&self) -> Option<&PendingValue> {
        match self {
            Storage::Pending(p) => Some(p),
            Storage::Memory(_) => None,
        }
    }
    /// True if both handles share the same memory (or the same pending value).
    pub fn ptr_eq(&self, other: &Storage) -> bool {
        self.addr() == other.addr()
    }
    /// A handle that does not keep the storage alive.
    pub fn downgrade(&self) -> WeakStorage {
        match self {
            Storage::Memory(m) => WeakStorage::Memory(Rc::downgrade(m)),
            Storage::Pending(p) => WeakStorage::Pending(Rc::downgrade(p)),
        }
    }
    /// The address of the shared memory: equal for two handles exactly when [`Storage::ptr_eq`]
    /// (while either is alive), usable as a map key.
    pub fn addr(&self) -> usize {
        match self {
            Storage::Memory(m) => Rc::as_ptr(m) as *const () as usize,
            Storage::Pending(p) => Rc::as_ptr(p) as *const () as usize,
        }
    }
}

/// A [`Storage`] handle that does not keep it alive (the fusion layer's list of the results it
/// still owes, say).
#[derive(Clone)]
pub enum WeakStorage {
    Memory(Weak<dyn Any>),
    Pending(Weak<PendingValue>),
}

impl WeakStorage {
    /// The storage, if some handle still holds it.
    pub fn upgrade(&self) -> Option<Storage> {
        match self {
            WeakStorage::Memory(m) => m.upgrade().map(Storage::Memory),
            WeakStorage::Pending(p) => p.upgrade().map(Storage::Pending),
        }
    }
}

/// A product `[.., M, K] x [.., K, N]` (either side transposed) not run yet.
#[derive(Clone, Debug)]
pub struct MatmulWork {
    pub trans_a: bool,
    pub trans_b: bool,
    pub inputs: [Storage; 2],
    pub shapes: [Shape; 2],
    /// The product's shape (`[.., M, N]`, with its batch even when summed).
    pub product: Shape,
    /// A batched product summed over its batch as it is computed (the output has no batch
    /// axis): a convolution's weight gradient.
    pub sum_batch: bool,
}

/// What a pending reduction reads.
#[derive(Clone, Debug)]
pub enum ReduceSource {
    /// A pending elementwise computation, read in the reduction's first pass (a fused
    /// prologue; the computation itself is never stored for it), in flat order.
    Prologue(Pending<Storage>),
    /// A value.
    Plain(Storage),
}

/// A reduction over one axis not run yet.
#[derive(Clone, Debug)]
pub struct ReduceWork {
    pub op: ReduceOp,
    pub source: ReduceSource,
    /// The shape reduced (as many elements as the source).
    pub shape: Shape,
    pub axis: usize,
}

/// The computation a [`PendingValue`] stands for.
#[derive(Debug)]
pub enum Work {
    /// Elementwise ops composed into one kernel (taken out while it runs, dropped once run,
    /// releasing the leaves it kept alive).
    Map(RefCell<Option<Pending<Storage>>>),
    Matmul(MatmulWork),
    Reduce(ReduceWork),
}

/// A value the fusion layer owes: its computation, its shape, the generation it was made in,
/// and once computed, the backend memory holding it.
#[derive(Debug)]
pub struct PendingValue {
    work: Work,
    shape: Shape,
    generation: u64,
    done: OnceCell<Storage>,
}

impl PendingValue {
    pub fn new(work: Work, shape: Shape, generation: u64) -> Self {
        PendingValue { work, shape, generation, done: OnceCell::new() }
    }
    /// An elementwise computation of `p.shape`.
    pub fn map(p: Pending<Storage>, generation: u64) -> Self {
        let shape = p.shape.clone();
        Self::new(Work::Map(RefCell::new(Some(p))), shape, generation)
    }
    pub fn work(&self) -> &Work {
        &self.work
    }
    /// The shape of the value.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The generation it was made in.
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// The backend memory holding it, once computed.
    pub fn done(&self) -> Option<&Storage> {
        self.done.get()
    }
    /// True once computed.
    pub fn is_done(&self) -> bool {
        self.done.get().is_some()
    }
    /// Records the computed memory (ignored if already computed).
    pub fn set_done(&self, memory: Storage) -> &Storage {
        self.done.get_or_init(|| memory)
    }
    /// Records the computed memory, computed outside [`super::realise::force`] (a grouped
    /// launch), and drops the computation (an elementwise one held its leaves).
    pub fn finish(&self, memory: Storage) -> &Storage {
        let done = self.done.get_or_init(|| memory);
        if let Work::Map(p) = &self.work {
            p.borrow_mut().take();
        }
        done
    }
    /// The elementwise computation, while it has not run.
    pub fn map_pending(&self) -> Option<Ref<'_, Pending<Storage>>> {
        match &self.work {
            Work::Map(p) if !self.is_done() => Ref::filter_map(p.borrow(), |p| p.as_ref()).ok(),
            _ => None,
        }
    }
    /// The matmul, while it has not run.
    pub fn matmul(&self) -> Option<&MatmulWork> {
        match &self.work {
            Work::Matmul(m) if !self.is_done() => Some(m),
            _ => None,
        }
    }
    /// The reduction, while it has not run.
    pub fn reduce(&self) -> Option<&ReduceWork> {
        match &self.work {
            Work::Reduce(r) if !self.is_done() => Some(r),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Storage::Memory(_) => write!(f, "Memory({:#x})", self.addr()),
            Storage::Pending(p) => write!(f, "Pending({:#x}, {:?})", self.addr(), p.shape),
        }
    }
}
