//! The buffer pool. Tensor buffers come in power-of-two size classes; a dropped tensor's
//! buffer waits in a "pending" list tagged with the submission that may still use it, and moves
//! to the free list once that submission has been *submitted* (not completed). Before that,
//! commands that read it are still in the open encoder, and an upload (`queue.write_buffer`)
//! into it would land before them. After it, WebGPU's queue order does the rest: a later
//! `write_buffer` or command runs after every earlier submission, whatever the GPU's progress,
//! so neither the browser (which cannot block) nor a native caller has to wait for the GPU
//! to reuse memory, and a repeated step allocates nothing from its third repetition on.
//!
//! **Budget.** Free and pending buffers together (`Pool::pooled`) are kept within a byte
//! budget ([`DEFAULT_POOL_BUDGET`] unless configured): past it, free buffers are destroyed
//! least recently returned first. *Reusing* a buffer only needs its last submission to have
//! been submitted; *destroying* one needs that submission to have completed on the GPU
//! (reported by `Queue::on_submitted_work_done`, or by a readback that waited for it), so a
//! buffer that in-flight work may still read is never destroyed: it stays (over budget, for a
//! moment) until a later call finds its work done. Buffers held by live tensors and step plans
//! are not in the pool and never freed by it.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// Smallest buffer handed out (bytes). Empty tensors get one too, since zero-sized buffers
/// cannot be bound.
pub const MIN_BUFFER: u64 = 256;

/// Size class for a request of `bytes`: the next power of two (at least [`MIN_BUFFER`]), or,
/// where that would pass `cap` (the binding-size limit), the request rounded up to 256 bytes.
/// Above 1 MiB each octave is split into 8 classes, so big tensors waste at most 12.5%.
pub fn size_class(bytes: u64, cap: u64) -> u64 {
    let b = bytes.max(MIN_BUFFER);
    let p = b.next_power_of_two();
    let class = if p > (1 << 20) {
        let step = p / 16;
        b.div_ceil(step) * step
    } else {
        p
    };
    if class <= cap {
        class
    } else {
        b.div_ceil(256) * 256
    }
}

/// What kind of buffer a pool entry is, which fixes its usage flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// Tensor storage: STORAGE | COPY_SRC | COPY_DST.
    Tensor,
    /// Readback staging: MAP_READ | COPY_DST.
    Staging,
}

impl Kind {
    pub(crate) fn usage(self) -> wgpu::BufferUsages {
        match self {
            Kind::Tensor => wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            Kind::Staging => wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        }
    }
}

/// Free pooled bytes kept for reuse by default: 256 MiB. Above the memory one training step
/// of the models pixelgrad targets recycles (so an eager loop keeps reusing its buffers and
/// allocates nothing in its steady state), and small next to what browsers let a page use
/// before they lose its device; a workload that churns through shapes settles at this much
/// free memory on top of what it holds. Configurable per backend (`pool_budget` in the
/// options, `set_pool_budget` later).
pub const DEFAULT_POOL_BUDGET: u64 = 256 << 20;

/// What the pool holds: a buffer that can be destroyed (`wgpu::Buffer`; a stand-in in the
/// unit tests).
pub(crate) trait Destroy {
    fn destroy(&self);
}

impl Destroy for wgpu::Buffer {
    fn destroy(&self) {
        wgpu::Buffer::destroy(self)
    }
}

/// A buffer in the free list.
struct Free<B> {
    kind: Kind,
    size: u64,
    buf: B,
    /// The last submission that may use it: it can be destroyed once that one completed.
    serial: u64,
}

/// Free and pending buffers, the free ones in least-recently-returned order.
pub(crate) struct Pool<B: Destroy = wgpu::Buffer> {
    /// Free buffers by the tick at which they were returned (oldest first).
    free: BTreeMap<u64, Free<B>>,
    /// Ticks of the free buffers of each (kind, size class); reuse takes the newest.
    classes: HashMap<(Kind, u64), BTreeSet<u64>>,
    /// (submission serial that must be submitted, kind, size, buffer), in release order.
    pending: VecDeque<(u64, Kind, u64, B)>,
    clock: u64,
    /// Bytes of every buffer the pool created and has not destroyed (live, pending, free).
    pub(crate) bytes: u64,
    /// Bytes of the free and pending buffers.
    pub(crate) pooled: u64,
    /// Most pooled bytes kept: past it free buffers are destroyed, oldest first.
    pub(crate) budget: u64,
}

impl<B: Destroy> Pool<B> {
    pub(crate) fn new(budget: u64) -> Pool<B> {
        Pool { free: BTreeMap::new(), classes: HashMap::new(), pending: VecDeque::new(), clock: 0, bytes: 0, pooled: 0, budget }
    }

    /// A free buffer of exactly this class, if any (the most recently returned one).
    pub(crate) fn take(&mut self, kind: Kind, size: u64) -> Option<B> {
        let ticks = self.classes.get_mut(&(kind, size))?;
        let tick = ticks.pop_last()?;
        let f = self.free.remove(&tick)?;
        self.pooled -= f.size;
        Some(f.buf)
    }

    /// Returns a buffer that the work up to submission `serial` may still use.
    pub(crate) fn release(&mut self, serial: u64, kind: Kind, size: u64, buf: B) {
        self.pooled += size;
        self.pending.push_back((serial, kind, size, buf));
    }

    /// Returns a buffer no work uses (an unmapped staging buffer) straight to the free list.
    pub(crate) fn put_free(&mut self, kind: Kind, size: u64, buf: B) {
        self.pooled += size;
        self.push_free(Free { kind, size, buf, serial: 0 });
    }

    fn push_free(&mut self, f: Free<B>) {
        self.clock += 1;
        self.classes.entry((f.kind, f.size)).or_default().insert(self.clock);
        self.free.insert(self.clock, f);
    }

    /// Moves every pending buffer whose submission has been submitted to the free lists.
    pub(crate) fn recycle(&mut self, submitted: u64) {
        // Tags never decrease (a release while the encoder holds commands is tagged with the
        // next serial, and after that submission every tag is at least that serial), so the
        // submitted ones are a prefix.
        while self.pending.front().is_some_and(|e| e.0 <= submitted) {
            if let Some((serial, kind, size, buf)) = self.pending.pop_front() {
                self.push_free(Free { kind, size, buf, serial });
            }
        }
    }

    /// Destroys free buffers whose work has completed (submission serial at most `completed`),
    /// least recently returned first, until the pooled bytes are within the budget; returns
    /// the bytes given back.
    pub(crate) fn enforce(&mut self, completed: u64) -> u64 {
        if self.pooled <= self.budget {
            return 0;
        }
        let over = self.pooled - self.budget;
        let mut victims = Vec::new();
        let mut freed = 0;
        for (&tick, f) in &self.free {
            if freed >= over {
                break;
            }
            if f.serial <= completed {
                victims.push(tick);
                freed += f.size;
            }
        }
        self.destroy(&victims)
    }

    /// Destroys every free buffer whose work has completed; returns the bytes given back.
    pub(crate) fn trim(&mut self, completed: u64) -> u64 {
        let victims: Vec<u64> = self.free.iter().filter(|(_, f)| f.serial <= completed).map(|(&t, _)| t).collect();
        self.destroy(&victims)
    }

    fn destroy(&mut self, ticks: &[u64]) -> u64 {
        let mut freed = 0;
        for tick in ticks {
            let Some(f) = self.free.remove(tick) else { continue };
            if let Some(set) = self.classes.get_mut(&(f.kind, f.size)) {
                set.remove(tick);
                if set.is_empty() {
                    self.classes.remove(&(f.kind, f.size));
                }
            }
            f.buf.destroy();
            freed += f.size;
        }
        self.bytes -= freed;
        self.pooled -= freed;
        freed
    }

    /// Number of buffers waiting for their submission to be submitted.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Number of free buffers.
    #[cfg(test)]
    pub(crate) fn free_len(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes() {
        assert_eq!(size_class(0, 1 << 30), MIN_BUFFER);
        assert_eq!(size_class(1000, 1 << 30), 1024);
        assert_eq!(size_class(1024, 1 << 30), 1024);
        // Finer classes above 1 MiB: 9 MiB lies in the (8, 16] MiB octave, steps of 1 MiB.
        assert_eq!(size_class((9 << 20) - 5, 1 << 30), 9 << 20);
        // Past the cap, round to 256 bytes instead of doubling.
        assert_eq!(size_class(3 << 20, 4 << 20), 3 << 20);
        assert_eq!(size_class(5 << 20, 4 << 20), 5 << 20);
        assert_eq!(size_class((5 << 20) + 1, 4 << 20), (5 << 20) + 256);
    }

    /// A stand-in buffer that records its destruction.
    struct Fake(u32, Rc<RefCell<Vec<u32>>>);

    impl Destroy for Fake {
        fn destroy(&self) {
            self.1.borrow_mut().push(self.0);
        }
    }

    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn over_budget_the_least_recently_returned_completed_buffers_go_first() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let buf = |id| Fake(id, log.clone());
        let mut p: Pool<Fake> = Pool::new(3000);
        // Four buffers of 1 KiB returned after submissions 1..=4 (and a fifth made later).
        p.bytes = 5 * 1024;
        for id in 1..=4 {
            p.release(id as u64, Kind::Tensor, 1024, buf(id));
        }
        assert_eq!(p.pooled, 4096);
        // Nothing is free before its submission was submitted, so nothing can go.
        assert_eq!(p.enforce(4), 0);
        p.recycle(4);
        // Only submissions up to 1 completed: the buffer of submission 1 goes, not the others
        // (their work may still run), though the pool stays over budget.
        assert_eq!(p.enforce(1), 1024);
        assert_eq!(*log.borrow(), vec![1]);
        assert_eq!((p.pooled, p.bytes), (3072, 4096));
        // Reuse takes the most recently returned buffer of the class.
        let b = p.take(Kind::Tensor, 1024).unwrap();
        assert_eq!(b.0, 4);
        assert_eq!(p.pooled, 2048);
        p.release(5, Kind::Tensor, 1024, b);
        p.recycle(5);
        // Once everything completed, the oldest (2) goes to bring 3 KiB within the budget.
        assert_eq!(p.enforce(5), 1024);
        assert_eq!(*log.borrow(), vec![1, 2]);
        // The other class is untouched by takes of this one.
        assert!(p.take(Kind::Staging, 1024).is_none());
        // trim destroys what completed, and only that.
        p.release(6, Kind::Tensor, 1024, buf(6));
        p.recycle(6);
        assert_eq!(p.trim(5), 2048);
        assert_eq!(p.free_len(), 1);
        assert_eq!(p.trim(6), 1024);
        assert_eq!(*log.borrow(), vec![1, 2, 3, 4, 6]);
        assert_eq!((p.pooled, p.bytes, p.free_len(), p.pending_len()), (0, 0, 0, 0));
    }
}
