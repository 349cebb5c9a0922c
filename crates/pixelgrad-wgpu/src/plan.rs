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
//!   otherwise it takes a buffer from the pool and that becomes the entry
//!   (`pixelgrad_core::plan::StepPlans::alloc`, shared with WebGL);
//! - a launch reuses its entry's bind group only when the layout, parameter slot and every
//!   bound buffer are the same; otherwise it creates one and stores it.
//!
//! So the first steps of a key record (steps 1 and 2 fill the two parities; step 3 re-binds
//! the launches of parity 0 whose inputs came from before the plan), and from then on a step
//! whose structure repeats allocates nothing, creates no bind group and compiles nothing: it
//! only encodes its dispatches (pipeline, prepared bind group, grid) into one submission.

pub(crate) use pixelgrad_core::plan::Alloc;

/// One planned tensor buffer and its size class (the plan's written memory, core's `Owned`).
pub(crate) type Written = (wgpu::Buffer, u64);

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

/// One step's recording: its tensor buffers and its launches.
pub(crate) type Plan = pixelgrad_core::plan::Plan<Written, LaunchEntry>;

/// Every plan of a device (the key / parity bookkeeping and the check of allocations are
/// core's: `pixelgrad_core::plan`).
pub(crate) type Plans = pixelgrad_core::plan::StepPlans<Written, LaunchEntry>;
