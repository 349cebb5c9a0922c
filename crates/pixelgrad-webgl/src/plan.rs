//! Step plans: what [`Backend::begin_step`](pixelgrad_core::Backend::begin_step) records on
//! WebGL and later steps replay.
//!
//! A plan is two lists, filled in the order a step makes its calls:
//! - **allocations**: the k-th texture a step asks for (an op's output or an upload, through
//!   `Shared::alloc`, served by [`Steps::alloc_planned`]) is entry k's texture, owned by the plan (not the pool) from then on;
//! - **draws**: the j-th draw of the step has its own framebuffer with the draw's target
//!   texture attached once, plus the draw's program and resolved uniform slots.
//!
//! Plans are kept per `(key, parity)`: the parity of a key toggles at every `begin_step`, so
//! even and odd steps alternate between two plans. A step's outputs (new parameters, new
//! optimizer state) live in one plan's textures while the next step, reading them, renders
//! into the other plan's: ping-pong pairs without copies. At most four keys are kept;
//! the least recently used key's pair is dropped first.
//!
//! Replay is *checked*, call by call, so it never changes a result:
//! - an allocation reuses its entry only when the texture size and format match and no live
//!   tensor holds the entry's texture. Liveness is an `Rc<()>` token: the entry keeps one,
//!   the tensor it hands the texture to keeps a clone, so the texture is free exactly when
//!   the entry holds the only one. Otherwise the allocation is served as outside a step (the
//!   pool, or a new texture) and becomes the entry (`pixelgrad_core::plan::StepPlans::alloc`,
//!   shared with WebGPU); the old texture goes back to the pool if
//!   free, or passes to the tensor holding it, which returns it to the pool when dropped.
//!   Inputs of a draw are live tensors, so a plan never hands out a texture that the current
//!   draw samples (the draw's feedback-loop check enforces it in debug builds);
//! - a draw reuses its framebuffer only when the targets are the same textures (a draw has
//!   one, or several for multiple render targets); otherwise it attaches the new ones
//!   (counted in `Counters::bindings`) and stores them. It counts as
//!   `replayed` when the program and uniform names match too.
//!
//! A draw that falls back is still correct because the fallback *is* the eager path: the same
//! program, uniforms and inputs, drawn into a texture no live tensor holds. Plans only choose
//! which free texture and which framebuffer a draw uses. So tensors kept alive across steps
//! (losses collected in a `Vec`, say) only cost their draws the replay, not correctness.
//!
//! The first steps of a key record: steps 0 and 1 fill parities 0 and 1. A step whose
//! allocation or draw sequence differs from the one recorded at its parity repairs the
//! entries from the first difference on. In training, step 0 differs from later steps (it
//! creates the optimizer state; its check queue starts empty), so step 2 repairs parity 0,
//! and from step 3 on a step of unchanged structure allocates no texture, attaches no
//! framebuffer and compiles nothing: it uploads its batch and issues the same draws
//! (`tests/steady_state.rs`).
//!
//! Inside a step, draws also skip GL calls that would set state already set (viewport,
//! program, texture units, vertex array), tracked from the step's first draw on; programs
//! skip uniforms whose value they already hold, in and out of steps (`program.rs`). Code
//! that uses the same GL context itself must do so outside steps.

use std::cell::RefCell;
use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::Result;

use crate::device::{Attachments, GlDevice};
use crate::dialect::ProgramSpec;
use crate::pool::PoolKey;
use crate::program::{Program, Programs};
use crate::texture::GlTensor;
use crate::trace::{Pins, Recorder};

use pixelgrad_core::plan::{free_memory, Alloc};

/// One planned draw: its framebuffer (with `targets` attached) and its program.
pub(crate) struct DrawEntry {
    pub fbo: glow::Framebuffer,
    /// The attached textures, at colour attachments 0, 1, ...; empty once one of them was
    /// deleted (see [`Steps::detach`]).
    pub targets: Vec<glow::Texture>,
    /// How many draw buffers the framebuffer has enabled (a new one has 1).
    pub buffers: usize,
    pub program: Rc<Program>,
    pub spec: ProgramSpec,
    /// Uniform names in the order a draw sets them (`Pass::uniform_names` in `launch.rs`) and
    /// their slots in `program`.
    pub names: Vec<&'static str>,
    pub slots: Rc<[usize]>,
}

/// One step's recording: its textures (with their size and format) and its draws (the key /
/// parity bookkeeping and the check of allocations are core's: `pixelgrad_core::plan`).
pub(crate) type Plan = pixelgrad_core::plan::Plan<(glow::Texture, PoolKey), DrawEntry>;

/// What a planned draw needs after its framebuffer is bound.
pub(crate) struct Prepared {
    pub program: Rc<Program>,
    pub slots: Rc<[usize]>,
}

/// What identifies a draw to its plan entry: the op (for errors), its program and the names
/// of the uniforms it sets, in order.
pub(crate) struct DrawKey<I> {
    pub op: &'static str,
    pub spec: ProgramSpec,
    pub names: I,
}

/// Every plan of a backend (the key / parity bookkeeping is core's) and the step in progress.
/// Its methods take the device whose textures and framebuffers the plans hold.
#[derive(Default)]
pub(crate) struct Steps {
    plans: RefCell<pixelgrad_core::plan::StepPlans<(glow::Texture, PoolKey), DrawEntry>>,
    /// The trace being recorded, if one is (`trace.rs`): a step's sibling recording, kept
    /// here because the device asks the same object about textures it releases.
    pub tracing: RefCell<Option<Recorder>>,
    /// Textures pinned by traces and open recordings (`trace.rs`).
    pub pins: RefCell<Pins>,
}

impl Steps {
    /// True while a step is open.
    pub fn is_open(&self) -> bool {
        self.plans.borrow().is_open()
    }

    /// Opens a step of `key` (the caller checked none is open); plans evicted to make room are
    /// retired.
    pub fn begin(&self, dev: &GlDevice, key: u64) {
        // A step inside a recording would hand out plan textures the trace cannot keep.
        self.break_trace("a step began");
        let evicted = self.plans.borrow_mut().begin(key);
        self.retire(dev, evicted);
    }

    /// Marks the open recording, if any, as one that cannot be replayed.
    pub fn break_trace(&self, why: &'static str) {
        if let Some(r) = self.tracing.borrow_mut().as_mut() {
            r.slots.set_broken(why);
        }
    }

    /// Drops pins on `texs`; those neither pinned nor held any more go to the pool.
    pub fn unpin(&self, dev: &GlDevice, texs: impl IntoIterator<Item = glow::Texture>) {
        for tex in texs {
            let free = self.pins.borrow_mut().unpin(tex);
            if let Some(key) = free {
                dev.release(tex, key, crate::texture::texture_bytes(key, dev.format));
            }
        }
    }

    /// Leaves step mode.
    pub fn end(&self) {
        self.plans.borrow_mut().end();
    }

    /// See [`pixelgrad_core::Backend::drop_plans`].
    pub fn drop_plans(&self, dev: &GlDevice) {
        let all = self.plans.borrow_mut().take_all();
        self.retire(dev, all);
    }

    /// Free planned textures go back to the pool; held ones pass to the tensors holding them
    /// (dropping the plan's token makes the tensor's the last, so its drop returns the
    /// texture). Framebuffers are deleted.
    fn retire(&self, dev: &GlDevice, plans: Vec<Plan>) {
        if plans.is_empty() {
            return;
        }
        let current = dev.current().is_ok();
        for p in plans {
            for (tex, key) in free_memory(p.written) {
                dev.release(tex, key, crate::texture::texture_bytes(key, dev.format));
            }
            if current {
                for d in p.launches {
                    // SAFETY: the framebuffer belongs to this context and no plan refers to it
                    // any more (deleting a bound framebuffer rebinds the default one).
                    unsafe { dev.gl.delete_framebuffer(d.fbo) };
                }
            }
        }
    }

    /// Inside a step: serves the step's next allocation from its plan (see the module doc).
    /// `None` outside a step (or past `pixelgrad_core::plan::MAX_PLAN_ENTRIES`): the caller allocates eagerly.
    pub fn alloc_planned(&self, dev: &Rc<GlDevice>, key: PoolKey, len: usize, op: &'static str) -> Result<Option<GlTensor>> {
        let mut plans = self.plans.borrow_mut();
        let tensor =
            |tex, token| GlTensor { tex, w: key.0, h: key.1, len, shared: dev.clone(), token, dtype: pixelgrad_core::kernel::DType::F32 };
        let k = match plans.alloc(|e| e.1 == key) {
            Alloc::Eager => return Ok(None),
            Alloc::Planned((tex, _), token) => return Ok(Some(tensor(tex, Some(token)))),
            Alloc::Place(k) => k,
        };
        let tex = dev.pooled_or_new(key, op)?;
        // The replaced texture goes back to the pool if free; else a live tensor holds it and
        // dropping the plan's token hands it over.
        let (token, old) = plans.place(k, (tex, key));
        if let Some((old, old_key)) = old {
            dev.release(old, old_key, crate::texture::texture_bytes(old_key, dev.format));
        }
        // (`None` is not expected, the plans being borrowed: the texture is then the tensor's.)
        Ok(Some(tensor(tex, token)))
    }

    /// Inside a step: binds the framebuffer of the step's next draw, prepared for `targets`
    /// (attaching them only when the recorded draw had others), and returns the draw's
    /// program and uniform slots. `None` outside a step: the caller draws eagerly.
    pub fn prepare_draw<I>(
        &self,
        dev: &GlDevice,
        programs: &Programs,
        draw: DrawKey<I>,
        targets: &[glow::Texture],
    ) -> Result<Option<Prepared>>
    where
        I: Iterator<Item = &'static str> + Clone,
    {
        let mut plans = self.plans.borrow_mut();
        let Some(mut next) = plans.launch() else {
            return Ok(None);
        };
        let gl = &dev.gl;
        if let Some(e) = next.recorded() {
            if e.targets == targets {
                // SAFETY: the entry's framebuffer belongs to this context and has `targets`
                // attached already.
                unsafe { gl.bind_framebuffer(glow::FRAMEBUFFER, Some(e.fbo)) };
                if e.spec == draw.spec && draw.names.clone().eq(e.names.iter().copied()) {
                    dev.count(|c| c.replayed += 1);
                } else {
                    resolve(dev, programs, &draw, e)?;
                }
                return Ok(Some(Prepared { program: e.program.clone(), slots: e.slots.clone() }));
            }
            attach_to(dev, e.fbo, targets, e.buffers, draw.op)?;
            e.targets = targets.to_vec();
            e.buffers = targets.len();
            resolve(dev, programs, &draw, e)?;
            return Ok(Some(Prepared { program: e.program.clone(), slots: e.slots.clone() }));
        }
        // SAFETY: object creation on the current context.
        let fbo = unsafe { gl.create_framebuffer() }.map_err(|e| dev.err(draw.op, format!("create_framebuffer: {e}")))?;
        let made = attach_to(dev, fbo, targets, 1, draw.op).and_then(|()| {
            let program = programs.program(dev, draw.op, draw.spec)?;
            let targets = targets.to_vec();
            let buffers = targets.len();
            Ok(DrawEntry { fbo, targets, buffers, program, spec: draw.spec, names: Vec::new(), slots: Rc::new([]) })
        });
        let mut e = match made {
            Ok(e) => e,
            Err(err) => {
                // SAFETY: the framebuffer was created above and nothing refers to it.
                unsafe { gl.delete_framebuffer(fbo) };
                return Err(err);
            }
        };
        resolve(dev, programs, &draw, &mut e)?;
        let e = next.record(e);
        Ok(Some(Prepared { program: e.program.clone(), slots: e.slots.clone() }))
    }
}

/// Attaches `targets` to `fbo` (left bound) at colour attachments 0.. and enables as many
/// draw buffers (`buffers`: how many it has now); counts a framebuffer binding.
fn attach_to(dev: &GlDevice, fbo: glow::Framebuffer, targets: &[glow::Texture], buffers: usize, op: &'static str) -> Result<()> {
    let gl = &dev.gl;
    // SAFETY: framebuffer setup on the current context.
    unsafe {
        gl.bind_framebuffer(glow::FRAMEBUFFER, Some(fbo));
        for (i, t) in targets.iter().enumerate() {
            gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0 + i as u32, glow::TEXTURE_2D, Some(*t), 0);
        }
        for i in targets.len()..buffers {
            gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0 + i as u32, glow::TEXTURE_2D, None, 0);
        }
        if buffers != targets.len() {
            let list: Vec<u32> = (0..targets.len() as u32).map(|i| glow::COLOR_ATTACHMENT0 + i).collect();
            gl.draw_buffers(&list);
        }
    }
    dev.check_framebuffer(op)?;
    dev.count(|c| c.bindings += 1);
    Ok(())
}

/// Points a draw entry at the draw's program and uniform slots.
fn resolve<I>(dev: &GlDevice, programs: &Programs, draw: &DrawKey<I>, e: &mut DrawEntry) -> Result<()>
where
    I: Iterator<Item = &'static str> + Clone,
{
    if e.spec != draw.spec {
        e.program = programs.program(dev, draw.op, draw.spec)?;
        e.spec = draw.spec;
    }
    e.names = draw.names.clone().collect();
    e.slots = e.names.iter().map(|n| e.program.slot(&dev.gl, n).map_err(|m| dev.err(draw.op, m))).collect::<Result<_>>()?;
    Ok(())
}

impl Attachments for Steps {
    fn keeps(&self, tex: glow::Texture) -> bool {
        self.pins.try_borrow_mut().is_ok_and(|mut p| !p.is_empty() && p.release(tex))
    }

    /// The plans are borrowed (a texture is being released from inside one).
    fn busy(&self) -> bool {
        self.plans.try_borrow_mut().is_err()
    }

    /// Detaches deleted textures from the plans' framebuffers: natively GL reuses texture
    /// names, so a stale entry could otherwise match a new texture, and an attachment keeps
    /// a deleted texture's memory alive.
    fn detach(&self, gl: &glow::Context, deleted: &[glow::Texture]) {
        let Ok(mut plans) = self.plans.try_borrow_mut() else {
            return;
        };
        for plan in plans.plans_mut() {
            for d in plan.launches.iter_mut().filter(|d| d.targets.iter().any(|t| deleted.contains(t))) {
                // SAFETY: detaching on the current context (the callers made it current).
                unsafe {
                    gl.bind_framebuffer(glow::FRAMEBUFFER, Some(d.fbo));
                    for i in 0..d.targets.len() {
                        let att = glow::COLOR_ATTACHMENT0 + i as u32;
                        gl.framebuffer_texture_2d(glow::FRAMEBUFFER, att, glow::TEXTURE_2D, None, 0);
                    }
                }
                d.targets.clear();
            }
        }
    }
}
