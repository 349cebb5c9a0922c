//! Step plans: what [`Backend::begin_step`](pixelgrad_core::Backend::begin_step) records and
//! later steps replay.
//!
//! A plan is two lists, filled in the order a step makes its calls:
//! - **allocations**: the k-th tensor buffer a step asks for is entry k's buffer, owned by
//!   the plan (not the pool) from then on;
//! - **launches**: the j-th dispatch's bind group, prepared once.
//!
//! Plans are kept per `(key, parity)`: even and odd steps alternate between two plans, so a
//! step's outputs (new parameters, optimizer state) live in one plan's buffers while the
//! next step, reading them, writes the other plan's: ping-pong pairs, without copies.
//!
//! Replay is *checked*, call by call, so it can never change a result:
//! - an allocation reuses its entry only when the size class matches and no live tensor
//!   holds the entry's buffer (a `Rc` token: the entry keeps one, the tensor a clone);
//!   otherwise it takes a buffer from the pool and that becomes the entry;
//! - a launch reuses its entry's bind group only when the layout, parameter slot and every
//!   bound buffer are the same; otherwise it creates one and stores it.
//!
//! So the first steps of a key record (steps 1 and 2 fill the two parities; step 3 re-binds
//! the launches of parity 0 whose inputs came from before the plan), and from then on a step
//! whose structure repeats allocates nothing, creates no bind group and compiles nothing: it
//! only encodes its dispatches (pipeline, prepared bind group, grid) into one submission.

use std::collections::HashMap;
use std::rc::Rc;

/// Keys whose plans are kept; the least recently used pair goes first.
const MAX_KEYS: usize = 4;
/// Entries per list past which a step stops recording (runs eagerly instead): a "step"
/// that never repeats must not grow memory without bound.
pub(crate) const MAX_ENTRIES: usize = 1 << 16;

/// One planned tensor buffer.
pub(crate) struct AllocEntry {
    pub buf: wgpu::Buffer,
    pub size: u64,
    /// Held by the plan and by the tensor the buffer was last handed to.
    pub token: Rc<()>,
}

impl AllocEntry {
    /// True when no live tensor holds the buffer.
    pub fn is_free(&self) -> bool {
        Rc::strong_count(&self.token) == 1
    }
}

/// One planned launch: the bind group and what it binds.
pub(crate) struct LaunchEntry {
    pub layout: wgpu::BindGroupLayout,
    pub slot: u64,
    /// Inputs then output (the parameter ring and status buffer are fixed per device).
    pub buffers: Vec<wgpu::Buffer>,
    pub bind_group: wgpu::BindGroup,
}

impl LaunchEntry {
    pub fn matches(&self, layout: &wgpu::BindGroupLayout, slot: u64, buffers: &[&wgpu::Buffer]) -> bool {
        self.slot == slot
            && self.layout == *layout
            && self.buffers.len() == buffers.len()
            && self.buffers.iter().zip(buffers).all(|(a, b)| a == *b)
    }
}

#[derive(Default)]
pub(crate) struct Plan {
    pub allocs: Vec<AllocEntry>,
    pub launches: Vec<LaunchEntry>,
}

/// The step in progress: which plan and how far into it.
pub(crate) struct Active {
    pub key: u64,
    pub parity: u8,
    pub alloc: usize,
    pub launch: usize,
}

/// Every plan of a device.
#[derive(Default)]
pub(crate) struct Plans {
    plans: HashMap<(u64, u8), Plan>,
    /// Parity of the next step per key, and when the key was last used.
    keys: HashMap<u64, (u8, u64)>,
    clock: u64,
    pub active: Option<Active>,
}

impl Plans {
    /// Starts a step of `key`: picks its parity and returns the plans evicted to make room
    /// (their buffers go back to the pool through [`retire`]).
    pub fn begin(&mut self, key: u64) -> Vec<Plan> {
        self.clock += 1;
        let mut evicted = Vec::new();
        if !self.keys.contains_key(&key) && self.keys.len() >= MAX_KEYS {
            if let Some((&old, _)) = self.keys.iter().min_by_key(|(_, v)| v.1) {
                self.keys.remove(&old);
                evicted.extend(self.plans.remove(&(old, 0)));
                evicted.extend(self.plans.remove(&(old, 1)));
            }
        }
        let e = self.keys.entry(key).or_insert((0, 0));
        let parity = e.0;
        e.0 ^= 1;
        e.1 = self.clock;
        self.active = Some(Active { key, parity, alloc: 0, launch: 0 });
        evicted
    }

    /// The active step's plan and cursor.
    pub fn current(&mut self) -> Option<(&mut Plan, &mut Active)> {
        let a = self.active.as_mut()?;
        let plan = self.plans.entry((a.key, a.parity)).or_default();
        Some((plan, a))
    }

    /// Removes every plan (the active step's too: it keeps running eagerly).
    pub fn take_all(&mut self) -> Vec<Plan> {
        self.keys.clear();
        self.plans.drain().map(|(_, p)| p).collect()
    }
}

/// What to do with the buffers of a dropped entry: `Some` when nothing holds it any more
/// (it goes back to the pool); `None` when a tensor still holds it (that tensor returns it
/// when dropped, since it then holds the last token).
pub(crate) fn retire(e: AllocEntry) -> Option<(wgpu::Buffer, u64)> {
    if e.is_free() {
        Some((e.buf, e.size))
    } else {
        None
    }
}
