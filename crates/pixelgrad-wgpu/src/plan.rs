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

use std::rc::Rc;

pub(crate) use pixelgrad_core::plan::MAX_PLAN_ENTRIES as MAX_ENTRIES;

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

/// Every plan of a device (the key / parity bookkeeping is core's).
pub(crate) type Plans = pixelgrad_core::plan::StepPlans<Plan>;

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
