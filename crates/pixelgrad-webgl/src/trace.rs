//! Traces on WebGL ([`pixelgrad_core::Backend::trace_begin`]), the core recording concept
//! (`pixelgrad_core::recording`) filled with WebGL's draws: each recorded draw keeps its
//! program, uniform values, viewport and element count, and names the textures it samples and
//! renders into by slot. A replay (`replay.rs`) samples the new inputs in place of the recorded
//! ones and issues the draws again, with no graph walk, fusion or shape inference.
//!
//! Every texture a recorded draw touches, other than the inputs, is **pinned** while the
//! recording is open: a pinned texture its tensors let go of stays out of the pool (the device
//! asks [`Pins::release`] first), so no two values of the recorded run share a texture the
//! recording could confuse. When it ends, the constants (sampled, never rendered into:
//! weights) stay pinned for as long as the trace lives, and the rendered textures go back to
//! the pool; a replay takes its own from the pool (`replay.rs`). [`Pins`] also counts the
//! tensors holding each pinned texture, so it knows when one is free.

use std::collections::HashMap;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::recording::Slots;

use crate::dialect::ProgramSpec;
use crate::pool::PoolKey;
use crate::program::Uniform;

/// One recorded draw.
pub(crate) struct Draw {
    pub op: &'static str,
    pub spec: ProgramSpec,
    /// Each sampler's uniform name and the slot of the texture bound to it.
    pub inputs: Vec<(&'static str, usize)>,
    pub uniforms: Vec<(&'static str, Uniform)>,
    /// Slots of the render targets.
    pub targets: Vec<usize>,
    /// Target size in texels, and valid elements.
    pub w: u32,
    pub h: u32,
    pub len: usize,
}

/// An open recording.
pub(crate) struct Recorder {
    pub slots: Slots<glow::Texture>,
    pub draws: Vec<Draw>,
    /// Each input's element count and type.
    pub inputs: Vec<(usize, DType)>,
    /// The size and format of each slot's texture, by slot.
    pub keys: Vec<PoolKey>,
    /// Textures this recording pinned, to unpin when it is dropped or handed to a trace.
    pub pinned: Vec<glow::Texture>,
}

impl Recorder {
    /// Inputs: texture, pool key, element count, type.
    pub fn new(inputs: &[(glow::Texture, PoolKey, usize, DType)]) -> Option<Recorder> {
        let slots = Slots::new(inputs.iter().map(|i| i.0))?;
        Some(Recorder {
            slots,
            draws: Vec::new(),
            inputs: inputs.iter().map(|i| (i.2, i.3)).collect(),
            keys: inputs.iter().map(|i| i.1).collect(),
            pinned: Vec::new(),
        })
    }

    /// The slot of a texture a draw samples (`write` false) or renders into; a texture seen
    /// for the first time is pinned.
    pub fn touch(&mut self, tex: glow::Texture, key: PoolKey, write: bool, pins: &mut Pins) -> usize {
        let known = self.slots.len();
        let slot = if write { self.slots.write(&tex) } else { self.slots.read(&tex) };
        if slot >= known {
            pins.pin(tex, key, 1);
            self.pinned.push(tex);
            self.keys.push(key);
        }
        slot
    }
}

/// Pinned textures: how many traces (or open recordings) pin each, how many tensors hold it,
/// and its pool key.
#[derive(Default)]
pub(crate) struct Pins {
    map: HashMap<glow::Texture, (usize, usize, PoolKey)>,
}

impl Pins {
    /// Pins a texture; one pinned for the first time is held by `holders` tensors.
    pub fn pin(&mut self, tex: glow::Texture, key: PoolKey, holders: usize) {
        self.map.entry(tex).or_insert((0, holders, key)).0 += 1;
    }

    /// Drops one pin; the key when the texture is then neither pinned nor held (it goes to
    /// the pool).
    pub fn unpin(&mut self, tex: glow::Texture) -> Option<PoolKey> {
        self.leave(tex, |e| e.0 = e.0.saturating_sub(1))
    }

    /// A tensor holding `tex` let go of it: true when a trace keeps it out of the pool.
    pub fn release(&mut self, tex: glow::Texture) -> bool {
        self.map.contains_key(&tex) && self.leave(tex, |e| e.1 = e.1.saturating_sub(1)).is_none()
    }

    fn leave(&mut self, tex: glow::Texture, f: impl FnOnce(&mut (usize, usize, PoolKey))) -> Option<PoolKey> {
        let e = self.map.get_mut(&tex)?;
        f(e);
        if (e.0, e.1) == (0, 0) {
            return self.map.remove(&tex).map(|e| e.2);
        }
        None
    }

    /// A new tensor holds a pinned texture (a replay's output).
    pub fn hold(&mut self, tex: glow::Texture) {
        if let Some(e) = self.map.get_mut(&tex) {
            e.1 += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
