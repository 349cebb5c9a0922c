//! Traces on WebGPU ([`pixelgrad_core::Backend::trace_begin`]), the core recording concept
//! (`pixelgrad_core::recording`) filled with WebGPU's launches: each recorded command keeps
//! its pipeline, bind group layout, parameter words and grid, and names the buffers it binds
//! by slot. A replay (`replay.rs`) binds the new inputs in place of the recorded ones and
//! encodes the commands again, with no graph walk, fusion, pipeline lookup or (when the
//! buffers are the same as last time) bind group creation.
//!
//! Every buffer a recorded command touches, other than the inputs, is **pinned** while the
//! recording is open: a pinned buffer its tensors let go of stays out of the pool, so no two
//! values of the recorded run share a buffer the recording could confuse. When it ends, the
//! constants (read, never written: weights) stay pinned for as long as the trace lives, and
//! the written buffers go back to the pool; a replay takes its own from the pool (`replay.rs`).
//! [`Pins`] also counts the tensors holding each pinned buffer, so it knows when one is free.

use std::cell::RefCell;
use std::collections::HashMap;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::recording::Slots;

/// One recorded command.
pub(crate) enum Command {
    /// A compute dispatch; `binds` are the slots of its inputs then outputs.
    Dispatch {
        label: &'static str,
        /// The kernel's name, for the launch log (`WgpuBackend::set_launch_log`).
        kernel: std::borrow::Cow<'static, str>,
        pipeline: wgpu::ComputePipeline,
        layout: wgpu::BindGroupLayout,
        /// The parameter slot's bytes.
        params: Vec<u8>,
        grid: [u32; 3],
        binds: Vec<usize>,
        /// Whether the kernel binds the status word after its outputs.
        status: bool,
        /// The bind group of the last replay: its parameter slot, what it bound, and it.
        cache: RefCell<Option<(u64, Vec<wgpu::Buffer>, wgpu::BindGroup)>>,
    },
    /// A buffer-to-buffer copy.
    Copy { src: usize, src_off: u64, dst: usize, dst_off: u64, bytes: u64 },
}

/// An open recording.
pub(crate) struct Recorder {
    pub slots: Slots<wgpu::Buffer>,
    pub commands: Vec<Command>,
    /// Each input's element count and type.
    pub inputs: Vec<(usize, DType)>,
    /// Buffers this recording pinned, to unpin when it is dropped or handed to a trace.
    pub pinned: Vec<wgpu::Buffer>,
}

impl Recorder {
    pub fn new(inputs: &[(wgpu::Buffer, usize, DType)]) -> Option<Recorder> {
        let slots = Slots::new(inputs.iter().map(|(b, _, _)| b.clone()))?;
        Some(Recorder { slots, commands: Vec::new(), inputs: inputs.iter().map(|&(_, l, d)| (l, d)).collect(), pinned: Vec::new() })
    }

    /// The slot of a buffer a command reads; a buffer seen for the first time is pinned.
    pub fn read(&mut self, b: &wgpu::Buffer, pins: &mut Pins) -> usize {
        let known = self.slots.len();
        let slot = self.slots.read(b);
        if slot >= known {
            pins.pin(b);
            self.pinned.push(b.clone());
        }
        slot
    }

    /// The slot of a buffer a command writes; a buffer seen for the first time is pinned.
    pub fn write(&mut self, b: &wgpu::Buffer, pins: &mut Pins) -> usize {
        let known = self.slots.len();
        let slot = self.slots.write(b);
        if slot >= known {
            pins.pin(b);
            self.pinned.push(b.clone());
        }
        slot
    }
}

/// Pinned buffers: how many traces (or open recordings) pin each, and how many tensors hold it.
#[derive(Default)]
pub(crate) struct Pins {
    map: HashMap<wgpu::Buffer, (usize, usize)>,
}

impl Pins {
    /// Pins a buffer; one first pinned is held by the one tensor that showed it.
    pub fn pin(&mut self, b: &wgpu::Buffer) {
        self.map.entry(b.clone()).or_insert((0, 1)).0 += 1;
    }

    /// Drops one pin; true when the buffer is then neither pinned nor held (it goes to the pool).
    pub fn unpin(&mut self, b: &wgpu::Buffer) -> bool {
        self.leave(b, |e| e.0 = e.0.saturating_sub(1))
    }

    /// A tensor holding `b` let go of it: `None` if `b` is not pinned (the pool takes it as
    /// usual), else whether it now goes to the pool.
    pub fn release(&mut self, b: &wgpu::Buffer) -> Option<bool> {
        self.map.contains_key(b).then(|| self.leave(b, |e| e.1 = e.1.saturating_sub(1)))
    }

    fn leave(&mut self, b: &wgpu::Buffer, f: impl FnOnce(&mut (usize, usize))) -> bool {
        let Some(e) = self.map.get_mut(b) else { return false };
        f(e);
        if *e == (0, 0) {
            self.map.remove(b);
            return true;
        }
        false
    }

    /// A new tensor holds a pinned buffer (a replay's output).
    pub fn hold(&mut self, b: &wgpu::Buffer) {
        if let Some(e) = self.map.get_mut(b) {
            e.1 += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
