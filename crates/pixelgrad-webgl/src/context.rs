//! The execution context the ops draw through: the device (`device.rs`) with the state of the
//! layers above it that every op needs, each in the file of its concept: the program cache and
//! kernel registries (`program.rs`), the step plans (`plan.rs`) and the queue of run-time checks
//! (`checks.rs`). Its methods hand each call to the layer that owns it; it holds no state of
//! its own and no fusion state (the backend owns that, `fusion.rs`).
//!
//! It dereferences to the device, so ops read `sh.features`, `sh.name` or `sh.err(..)` directly.

use std::ops::Deref;
use std::rc::Rc;

use pixelgrad_core::kernel::{DType, Kernel};
use pixelgrad_core::Result;

use crate::checks::{Check, Checks};
use crate::device::GlDevice;
use crate::dialect::ProgramSpec;
use crate::launch::Pass;
use crate::plan::Steps;
use crate::program::{GroupDef, Program, Programs};
use crate::texture::GlTensor;
use crate::trace::Draw;

pub(crate) struct Shared {
    /// The GL context and its textures (held by every tensor too).
    pub dev: Rc<GlDevice>,
    /// Linked programs and the registries of the kernels they draw.
    programs: Programs,
    /// Step plans (an `Rc` because the device tells them of deleted textures, weakly).
    pub steps: Rc<Steps>,
    /// Run-time checks rendered but not yet read.
    pub checks: Checks,
}

impl Deref for Shared {
    type Target = Rc<GlDevice>;
    fn deref(&self) -> &Rc<GlDevice> {
        &self.dev
    }
}

impl Shared {
    /// The context over `dev`, with empty program cache, plans and check queue.
    pub fn new(dev: GlDevice) -> Self {
        let dev = Rc::new(dev);
        let steps = Rc::new(Steps::default());
        let weak: std::rc::Weak<Steps> = Rc::downgrade(&steps);
        dev.set_attachments(weak);
        Shared { dev, programs: Programs::default(), steps, checks: Checks::default() }
    }

    /// A texture for `len` elements: inside a step the plan's entry for this allocation,
    /// otherwise one from the pool when one of the same size is free.
    pub fn alloc(&self, len: usize, op: &'static str) -> Result<GlTensor> {
        self.alloc_typed(len, DType::F32, op)
    }

    /// As [`Shared::alloc`] for a texture of `dtype` elements (narrow storage: WebGL2 only).
    pub fn alloc_typed(&self, len: usize, dtype: DType, op: &'static str) -> Result<GlTensor> {
        let key = self.dev.texture_key(len, dtype, op)?;
        if let Some(mut t) = self.steps.alloc_planned(&self.dev, key, len, op)? {
            t.dtype = dtype;
            return Ok(t);
        }
        self.dev.alloc_eager(key, len, dtype, op)
    }

    /// Uploads host data into a new texture (padding the last texel with zeros).
    pub fn upload(&self, data: &[f32]) -> Result<GlTensor> {
        self.dev.current()?;
        let t = self.alloc(data.len(), "upload")?;
        self.dev.write_f32(t, data)
    }

    /// Uploads narrow host data (`bytes` of `dtype`: one per i8 / u8 element, two
    /// little-endian per f16 element) into a new integer texture, exactly, the last texel
    /// padded with zeros. The `webgl1` mode stores 8-bit values in byte textures (`RGBA` /
    /// `UNSIGNED_BYTE`) and fails for f16, naming the missing feature.
    pub fn upload_narrow(&self, op: &'static str, len: usize, dtype: DType, fill: impl FnOnce(&mut [u8])) -> Result<GlTensor> {
        self.dev.current()?;
        let t = self.alloc_typed(len, dtype, op)?;
        self.dev.write_narrow(op, t, len, dtype, fill)
    }

    /// Runs `pass` into a new texture of `len` elements (inside a step: the planned texture
    /// and framebuffer, see `plan.rs`).
    pub fn run(&self, pass: Pass<'_>, len: usize) -> Result<GlTensor> {
        self.run_typed(pass, len, DType::F32)
    }

    /// As [`Shared::run`] into a texture of `dtype` elements (f16: an `RGBA16UI` target, u8
    /// `RGBA8UI`, i8 `RGBA8I`, drawn by a program whose output is a `uvec4` or an `ivec4`,
    /// [`ProgramSpec::out_kind`]).
    pub fn run_typed(&self, pass: Pass<'_>, len: usize, dtype: DType) -> Result<GlTensor> {
        let out = self.alloc_typed(len, dtype, pass.op)?;
        crate::launch::draw_pass(&self.dev, &self.programs, Some(&self.steps), &pass, &[out.tex], out.w, out.h, len)?;
        self.note_draw(&pass, &[&out], len);
        Ok(out)
    }

    /// Draws `pass` into several textures of the same size at once (multiple render
    /// targets: the shader writes output `i` to `targets[i]`), `len` valid elements each.
    /// Inside a step the draw is planned like [`Shared::run`]'s (its framebuffer keeps all
    /// targets attached); outside, targets 1.. join the shared framebuffer for this draw only.
    pub fn draw_many(&self, pass: &Pass<'_>, targets: &[&GlTensor], len: usize) -> Result<()> {
        let Some(t0) = targets.first() else {
            return Err(self.err(pass.op, "internal: a draw needs a target"));
        };
        if targets.iter().any(|t| t.texture_size() != t0.texture_size()) {
            return Err(self.err(pass.op, "internal: render targets of one draw differ in size"));
        }
        let texs: Vec<glow::Texture> = targets.iter().map(|t| t.tex).collect();
        crate::launch::draw_pass(&self.dev, &self.programs, Some(&self.steps), pass, &texs, t0.w, t0.h, len)?;
        self.note_draw(pass, targets, len);
        Ok(())
    }

    /// Issues a replayed draw: `pass` into `targets` (w x h texels, `len` valid elements),
    /// through the shared framebuffer; counted as replayed.
    pub fn draw_replayed(&self, pass: &Pass<'_>, targets: &[glow::Texture], w: u32, h: u32, len: usize) -> Result<()> {
        crate::launch::draw_pass(&self.dev, &self.programs, None, pass, targets, w, h, len)?;
        self.dev.count(|c| c.replayed += 1);
        Ok(())
    }

    /// Adds a draw to the open recording, if one is open (`trace.rs`).
    fn note_draw(&self, pass: &Pass<'_>, targets: &[&GlTensor], len: usize) {
        let mut tracing = self.steps.tracing.borrow_mut();
        let Some(r) = tracing.as_mut() else { return };
        let mut pins = self.steps.pins.borrow_mut();
        let inputs = pass.inputs.iter().map(|(n, t)| (*n, r.touch(t.tex, t.key(), false, &mut pins))).collect();
        let (w, h) = targets.first().map_or((0, 0), |t| (t.w, t.h));
        let targets = targets.iter().map(|t| r.touch(t.tex, t.key(), true, &mut pins)).collect();
        r.draws.push(Draw { op: pass.op, spec: pass.spec, inputs, uniforms: pass.uniforms.clone(), targets, w, h, len });
    }

    /// Draws `pass` into `target` (w x h texels; `len` valid elements) through the shared
    /// framebuffer, never a plan's: for targets that are not tensors (the heatmap's image).
    pub fn draw(&self, pass: &Pass<'_>, target: glow::Texture, w: u32, h: u32, len: usize) -> Result<()> {
        self.steps.break_trace("a draw into a texture that is not a tensor");
        crate::launch::draw_pass(&self.dev, &self.programs, None, pass, &[target], w, h, len)
    }

    /// The cached program for `spec`, compiling it on first use.
    pub fn program(&self, op: &'static str, spec: ProgramSpec) -> Result<Rc<Program>> {
        self.programs.program(&self.dev, op, spec)
    }

    /// The number of elementwise kernel `k` in the registry (see [`Programs::map_kernel`]).
    pub fn map_kernel(&self, op: &'static str, k: &Kernel, label: impl FnOnce() -> String) -> Result<u32> {
        self.programs.map_kernel(&self.dev, op, k, label)
    }

    /// The number of grouped draw `def` in the registry (see [`Programs::map_group`]).
    pub fn map_group(&self, op: &'static str, def: GroupDef) -> Result<u32> {
        self.programs.map_group(&self.dev, op, def)
    }

    /// Queues a run-time check (folded by the layer above ops, `submit.rs`).
    pub fn push_check(&self, c: Check) -> Result<()> {
        // A replay would draw the check without queueing it.
        self.steps.break_trace("a run-time check was queued");
        self.checks.push(c);
        Ok(())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Planned textures go back to the pool (or pass to the tensors still holding them);
        // programs are deleted. The device goes when its last tensor does.
        self.steps.drop_plans(&self.dev);
        if self.dev.current().is_ok() {
            self.programs.delete_all(&self.dev.gl);
        }
    }
}
