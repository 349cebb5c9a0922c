//! The device layer: one GL context and what belongs to it alone. The GL context, the
//! capabilities it was measured with, the texture pool, the framebuffer reads and eager draws go
//! through, the GL binding state draws last set, counters and the pass log. It knows nothing of
//! programs, step plans, checks or fusion (the layers above own those, `context.rs`).
//!
//! The GL context is single-threaded, so the device lives in an `Rc` that every tensor texture
//! also holds (a texture can outlive the backend handle and still be returned to the pool, and
//! the context is destroyed only after the last texture).

use std::cell::{Cell, RefCell, RefMut};
use std::rc::Weak;

use glow::HasContext;
use pixelgrad_core::{Counters, Error, Result};

use crate::options::{TexelFormat, WebGlReport};
use crate::pool::{PoolKey, TexturePool};

/// Framebuffers of a layer above that keep textures attached between draws (the step plans',
/// `plan.rs`). The device tells them of textures it deletes, through this interface it defines,
/// so that it never names that layer.
pub(crate) trait Attachments {
    /// True while the framebuffers are being updated: deleting textures waits until then.
    fn busy(&self) -> bool;
    /// Detaches `deleted` from every framebuffer that has them attached (the context is current).
    fn detach(&self, gl: &glow::Context, deleted: &[glow::Texture]);
    /// A tensor let go of `tex`: true when a trace keeps it out of the pool (see `trace.rs`).
    fn keeps(&self, tex: glow::Texture) -> bool;
}

pub(crate) struct GlDevice {
    pub gl: glow::Context,
    pub name: String,
    /// Capabilities measured at init; the self-test result joins it after construction.
    pub report: RefCell<WebGlReport>,
    pub format: TexelFormat,
    /// Layout limit (MAX_TEXTURE_SIZE or the forced smaller value).
    pub max_tex: u32,
    /// Fragment shaders in `mediump float` ([`crate::WebGlOptions::mediump`]).
    pub mediump: bool,
    /// Fragment programs round to half precision ([`crate::WebGlOptions::emulate_precision`]).
    pub emulate_half: bool,
    /// Which kernel computes a matmul ([`crate::WebGlOptions::matmul`]).
    pub matmul: crate::options::MatMulKernel,
    /// The framebuffer of reads and of draws outside steps (its attachment changes per call).
    pub fbo: glow::Framebuffer,
    /// The vertex array of every draw (none in the `webgl1` mode: WebGL1 has VAOs only
    /// through OES_vertex_array_object, so draws bind `triangle` at attribute 0 instead).
    pub vao: Option<glow::VertexArray>,
    /// What the mode can do (`features.rs`: the `webgl1` mode, GLSL ES 1.00 programs of
    /// `gl1.rs` and `legacy.rs`, lacks every row), and whether the context itself is WebGL1 /
    /// ES 2 (unsized texture formats).
    pub features: crate::features::Features,
    pub legacy: bool,
    pub triangle: Option<glow::Buffer>,
    #[cfg(not(target_arch = "wasm32"))]
    pub egl: Option<crate::egl::Headless>,
    /// Free textures kept for reuse, within a byte budget (`pool.rs`).
    pool: RefCell<TexturePool<glow::Texture>>,
    /// Set by [`crate::WebGlBackend::abandon`] after a context loss: every call fails with
    /// `DeviceLost` and nothing is deleted on the context any more.
    abandoned: Cell<bool>,
    counters: Cell<Counters>,
    pass_log: RefCell<Option<Vec<String>>>,
    /// GL binding state as last set by a draw, so draws inside a step skip redundant calls.
    state: RefCell<GlState>,
    /// Colour attachments of `fbo` beyond the first, left by a multi-target draw until the
    /// next draw resets them.
    fbo_extra: Cell<usize>,
    /// Work (draws, uploads) issued since the last `glFlush`.
    unflushed: Cell<bool>,
    /// The step plans' framebuffers, told of deleted textures ([`Attachments`]).
    attachments: RefCell<Option<Weak<dyn Attachments>>>,
}

/// What [`GlDevice::new`] takes: the context and the objects made on it at start-up.
pub(crate) struct DeviceParts {
    pub gl: glow::Context,
    pub name: String,
    pub report: WebGlReport,
    pub pool_budget: u64,
    pub mediump: bool,
    pub emulate_half: bool,
    pub matmul: crate::options::MatMulKernel,
    pub fbo: glow::Framebuffer,
    pub vao: Option<glow::VertexArray>,
    pub features: crate::features::Features,
    pub legacy: bool,
    pub triangle: Option<glow::Buffer>,
    #[cfg(not(target_arch = "wasm32"))]
    pub egl: Option<crate::egl::Headless>,
}

impl GlDevice {
    pub fn new(p: DeviceParts) -> Self {
        GlDevice {
            format: p.report.format,
            max_tex: p.report.effective_max_texture_size,
            gl: p.gl,
            name: p.name,
            report: RefCell::new(p.report),
            mediump: p.mediump,
            emulate_half: p.emulate_half,
            matmul: p.matmul,
            fbo: p.fbo,
            vao: p.vao,
            features: p.features,
            legacy: p.legacy,
            triangle: p.triangle,
            #[cfg(not(target_arch = "wasm32"))]
            egl: p.egl,
            pool: RefCell::new(TexturePool::new(p.pool_budget)),
            abandoned: Cell::new(false),
            counters: Cell::new(Counters::default()),
            pass_log: RefCell::new(None),
            state: RefCell::new(GlState::default()),
            fbo_extra: Cell::new(0),
            unflushed: Cell::new(false),
            attachments: RefCell::new(None),
        }
    }

    /// Makes this backend's context current (a no-op unless several live in one thread);
    /// `DeviceLost` once the backend was abandoned. Every GL call, drops included, goes
    /// through here first.
    pub fn current(&self) -> Result<()> {
        if self.abandoned.get() {
            return Err(Error::DeviceLost { backend: self.name.clone(), reason: "the WebGL2 context was lost".into() });
        }
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(e) = &self.egl {
            e.make_current()?;
        }
        Ok(())
    }

    /// After a context loss: every later call fails with `DeviceLost` and drops delete nothing.
    pub fn abandon(&self) {
        self.abandoned.set(true);
    }

    pub fn err(&self, op: &'static str, msg: impl Into<String>) -> Error {
        Error::backend(op, self.name.clone(), msg)
    }

    pub fn count(&self, f: impl FnOnce(&mut Counters)) {
        let mut c = self.counters.get();
        f(&mut c);
        self.counters.set(c);
    }

    /// The counters, `pooled_bytes` filled in from the pool.
    pub fn counters(&self) -> Counters {
        let mut c = self.counters.get();
        c.pooled_bytes = self.pool.borrow().bytes;
        c
    }

    /// Puts the counters back to `c` (start-up probes leave no trace in them).
    pub fn set_counters(&self, c: Counters) {
        self.counters.set(c);
    }

    /// Starts (`true`) or stops recording one line per draw.
    pub fn set_pass_log(&self, on: bool) {
        *self.pass_log.borrow_mut() = if on { Some(Vec::new()) } else { None };
    }

    /// The lines recorded since the last call (recording continues).
    pub fn take_pass_log(&self) -> Vec<String> {
        self.pass_log.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub fn log_pass(&self, line: impl FnOnce() -> String) {
        if let Some(log) = self.pass_log.borrow_mut().as_mut() {
            log.push(line());
        }
    }

    /// Notes work (a draw, an upload) issued since the last `glFlush`.
    pub fn mark_unflushed(&self) {
        self.unflushed.set(true);
    }

    /// True when work was issued since the last [`GlDevice::submit`].
    pub fn unflushed(&self) -> bool {
        self.unflushed.get()
    }

    /// `glFlush`: submits the work issued so far (counted in `submissions`); the caller made the
    /// context current.
    pub fn submit(&self) -> Result<()> {
        // SAFETY: glFlush on the current context.
        unsafe { self.gl.flush() };
        self.unflushed.set(false);
        self.count(|c| c.submissions += 1);
        Ok(())
    }

    /// Debug builds check `glGetError` after each pass and name the op and the calling line
    /// (`#[track_caller]`: the place that issued the GL calls, not this function); release
    /// builds skip the round trip.
    #[track_caller]
    pub fn check_gl(&self, op: &'static str, what: &str) -> Result<()> {
        if cfg!(debug_assertions) {
            // SAFETY: plain state query on the current context.
            let e = unsafe { self.gl.get_error() };
            if e != glow::NO_ERROR {
                return Err(self.gl_error(op, e, what, std::panic::Location::caller()));
            }
        }
        Ok(())
    }

    /// The error `check_gl` reports for GL error code `code` after `what`, issued at `at`.
    pub(crate) fn gl_error(&self, op: &'static str, code: u32, what: &str, at: &std::panic::Location<'_>) -> Error {
        self.err(op, format!("GL error 0x{code:04X} after {what} ({}:{})", at.file(), at.line()))
    }

    /// Registers the framebuffers told of deleted textures (the step plans').
    pub fn set_attachments(&self, a: Weak<dyn Attachments>) {
        *self.attachments.borrow_mut() = Some(a);
    }

    fn attachments(&self) -> Option<std::rc::Rc<dyn Attachments>> {
        self.attachments.borrow().as_ref().and_then(Weak::upgrade)
    }

    /// A free texture of `key` from the pool, if one is there.
    pub fn take_pooled(&self, key: PoolKey) -> Option<glow::Texture> {
        self.pool.try_borrow_mut().ok().and_then(|mut p| p.take(key))
    }

    /// The pool budget in bytes.
    pub fn pool_budget(&self) -> u64 {
        self.pool.borrow().budget
    }

    /// Sets the pool budget; free textures past it are deleted at once, oldest first.
    pub fn set_pool_budget(&self, bytes: u64) {
        self.pool.borrow_mut().budget = bytes;
        self.enforce_budget();
    }

    /// Free textures in the pool.
    pub fn pooled_textures(&self) -> usize {
        self.pool.borrow().len()
    }

    /// Returns a texture of `bytes` device bytes to the pool (called from a tensor's `Drop`);
    /// past the pool budget the least recently returned textures are deleted.
    pub fn release(&self, tex: glow::Texture, key: PoolKey, bytes: u64) {
        if self.attachments().is_some_and(|a| a.keeps(tex)) {
            return;
        }
        let over = match self.pool.try_borrow_mut() {
            Ok(mut pool) => {
                pool.put(key, tex, bytes);
                pool.over_budget()
            }
            // The pool is busy (cannot happen in practice): free the texture instead.
            Err(_) => {
                self.delete_textures(vec![(key, tex, bytes)]);
                return;
            }
        };
        if over {
            self.enforce_budget();
        }
    }

    /// Deletes pooled textures past the budget, least recently returned first. Left for a
    /// later call while the step plans are being updated (a texture is being released from
    /// inside one): deleted textures must be detached from the plans' framebuffers first.
    pub fn enforce_budget(&self) {
        if self.attachments().is_some_and(|a| a.busy()) {
            return;
        }
        let evicted = match self.pool.try_borrow_mut() {
            Ok(mut pool) => pool.evict(),
            Err(_) => return,
        };
        self.delete_textures(evicted);
    }

    /// Frees every pooled texture (textures of live tensors and step plans stay).
    pub fn trim_pool(&self) -> Result<()> {
        self.current()?;
        if self.attachments().is_some_and(|a| a.busy()) {
            return Err(self.err("trim", "internal: the step plans are in use"));
        }
        let drained = self.pool.try_borrow_mut().map_err(|_| self.err("trim", "internal: the texture pool is in use"))?.drain();
        self.delete_textures(drained);
        Ok(())
    }

    /// Deletes textures taken out of the pool (nothing references them) and counts their
    /// bytes as given back; on a lost context only the books are kept.
    fn delete_textures(&self, list: Vec<(PoolKey, glow::Texture, u64)>) {
        if list.is_empty() {
            return;
        }
        let freed: u64 = list.iter().map(|e| e.2).sum();
        if self.current().is_ok() {
            let all: Vec<glow::Texture> = list.iter().map(|e| e.1).collect();
            // Deleting unbinds them; plan framebuffers must not keep them attached either.
            if let Some(a) = self.attachments() {
                a.detach(&self.gl, &all);
            }
            self.forget_gl_state();
            for t in all {
                // SAFETY: the texture belongs to this context and no tensor or plan holds it.
                unsafe { self.gl.delete_texture(t) };
            }
        }
        self.count(|c| c.bytes_in_use = c.bytes_in_use.saturating_sub(freed));
    }

    /// The tracked GL bindings, unless they are in use (a caller then works on a scratch copy).
    pub fn gl_state(&self) -> Option<RefMut<'_, GlState>> {
        self.state.try_borrow_mut().ok()
    }

    /// Forgets the tracked GL bindings: the next draw sets everything it needs.
    pub fn forget_gl_state(&self) {
        if let Ok(mut s) = self.state.try_borrow_mut() {
            *s = Default::default();
        }
    }

    /// Attaches `tex` as the shared framebuffer's colour target: reads, and draws outside
    /// steps, go through it (step plans give each draw its own, see `plan.rs`).
    pub fn attach(&self, tex: glow::Texture, op: &'static str) -> Result<()> {
        // SAFETY: framebuffer setup on the current context.
        unsafe {
            self.gl.bind_framebuffer(glow::FRAMEBUFFER, Some(self.fbo));
            self.gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0, glow::TEXTURE_2D, Some(tex), 0);
        }
        self.check_framebuffer(op)
    }

    /// Attaches `targets` to the shared framebuffer at colour attachments 0.. and enables as
    /// many draw buffers; a single target also clears the attachments a multi-target draw
    /// left (reads and other draws expect exactly one).
    pub fn attach_shared(&self, targets: &[glow::Texture], op: &'static str) -> Result<()> {
        let extra = self.fbo_extra.get();
        if targets.len() == 1 && extra == 0 {
            return self.attach(targets[0], op);
        }
        let gl = &self.gl;
        // SAFETY: framebuffer state on the current context; the textures are live.
        unsafe {
            gl.bind_framebuffer(glow::FRAMEBUFFER, Some(self.fbo));
            for (i, t) in targets.iter().enumerate() {
                gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0 + i as u32, glow::TEXTURE_2D, Some(*t), 0);
            }
            for i in targets.len()..=extra {
                gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0 + i as u32, glow::TEXTURE_2D, None, 0);
            }
            let list: Vec<u32> = (0..targets.len() as u32).map(|i| glow::COLOR_ATTACHMENT0 + i).collect();
            gl.draw_buffers(&list);
        }
        self.fbo_extra.set(targets.len() - 1);
        self.check_framebuffer(op)
    }

    /// Debug builds check the bound framebuffer is complete.
    pub fn check_framebuffer(&self, op: &'static str) -> Result<()> {
        if cfg!(debug_assertions) {
            // SAFETY: plain state query on the current context.
            let s = unsafe { self.gl.check_framebuffer_status(glow::FRAMEBUFFER) };
            if s != glow::FRAMEBUFFER_COMPLETE {
                return Err(self.err(op, format!("framebuffer incomplete (status 0x{s:04X})")));
            }
        }
        Ok(())
    }
}

/// Texture units whose bindings are tracked (passes bind at most 4 inputs).
const TRACKED_UNITS: usize = 8;

/// The GL bindings this backend last set (`None`: unknown, set it). Draws inside a step skip
/// calls that would set what is already set: in the browser each is a call into JavaScript.
/// Tracking is only trusted between our own calls: it is forgotten at `begin_step` and
/// `end_step` (other code may use the context between steps), before every draw outside a
/// step, and whenever we bind or delete textures elsewhere (`GlDevice::forget_gl_state`).
#[derive(Default)]
pub(crate) struct GlState {
    pub viewport: Option<(i32, i32)>,
    pub program: Option<glow::Program>,
    pub active_unit: Option<u32>,
    pub units: [Option<glow::Texture>; TRACKED_UNITS],
    pub vao: bool,
}

impl Drop for GlDevice {
    fn drop(&mut self) {
        if self.current().is_err() {
            return;
        }
        // SAFETY: the context is current and these objects belong to it; no tensor is alive
        // (each holds an Rc to this struct), and the layers above gave their textures back.
        unsafe {
            for (_, t, _) in self.pool.get_mut().drain() {
                self.gl.delete_texture(t);
            }
            self.gl.delete_framebuffer(self.fbo);
            if let Some(v) = self.vao {
                self.gl.delete_vertex_array(v);
            }
            if let Some(b) = self.triangle {
                self.gl.delete_buffer(b);
            }
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use crate::{WebGlBackend, WebGlOptions};

    #[test]
    fn gl_errors_name_the_caller_line() {
        let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
        // Provoke GL_INVALID_ENUM, then check from here.
        // SAFETY: an invalid enum is a recorded error, not undefined behaviour.
        unsafe { glow::HasContext::enable(&b.shared.gl, 0xFFFF) };
        let line = line!() + 1;
        let r = b.shared.check_gl("test", "enable");
        if cfg!(debug_assertions) {
            let e = r.unwrap_err().to_string();
            assert!(e.contains(&format!("device.rs:{line}")), "{e}");
            assert!(e.contains("GL error 0x0500"), "{e}");
        }
    }
}
