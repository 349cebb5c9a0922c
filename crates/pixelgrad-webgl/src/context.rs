//! The state behind one backend: the GL context, the GL binding state draws last set, the texture
//! pool, the program cache, the step plans, counters and the pass log. The GL context is single-threaded, so it lives in an `Rc` that every
//! tensor texture also holds (a texture can outlive the backend handle and still be returned
//! to the pool, and the context is destroyed only after the last texture).

use std::cell::{Cell, RefCell};

use glow::HasContext;
use pixelgrad_core::{Counters, Error, Result};

use crate::options::{TexelFormat, WebGlReport};
use crate::pool::PoolKey;

pub(crate) struct Shared {
    pub gl: glow::Context,
    pub name: String,
    pub report: RefCell<WebGlReport>,
    pub format: TexelFormat,
    /// Layout limit (MAX_TEXTURE_SIZE or the forced smaller value).
    pub max_tex: u32,
    /// Free textures kept for reuse, within a byte budget (`pool.rs`).
    pub pool: RefCell<crate::pool::TexturePool<glow::Texture>>,
    /// Linked programs and the registries of the kernels they draw (the programs layer's
    /// state, `program.rs`).
    pub programs: crate::program::Programs,
    /// Fragment shaders in `mediump float` ([`crate::WebGlOptions::mediump`]).
    pub mediump: bool,
    /// Fragment programs round to half precision ([`crate::WebGlOptions::emulate_precision`]).
    pub emulate_half: bool,
    /// Set by [`crate::WebGlBackend::abandon`] after a context loss: every call fails with
    /// `DeviceLost` and nothing is deleted on the context any more.
    pub abandoned: Cell<bool>,
    pub vertex: Cell<Option<glow::Shader>>,
    pub counters: Cell<Counters>,
    pub pass_log: RefCell<Option<Vec<String>>>,
    /// Run-time checks rendered but not yet read (see `checks.rs`).
    pub pending: RefCell<Vec<crate::checks::Check>>,
    /// Step plans by (key, parity) and the step in progress (see `plan.rs`).
    pub plans: RefCell<crate::plan::Plans>,
    /// GL binding state as last set by a draw, so draws inside a step skip redundant calls.
    pub state: RefCell<GlState>,
    /// The framebuffer of reads and of draws outside steps (its attachment changes per call).
    pub fbo: glow::Framebuffer,
    /// Colour attachments of `fbo` beyond the first, left by a multi-target draw until the
    /// next draw resets them.
    pub shared_extra: Cell<usize>,
    /// Work (draws, uploads) issued since the last `glFlush`.
    pub unflushed: Cell<bool>,
    /// The vertex array of every draw (none in the `webgl1` mode: WebGL1 has VAOs only
    /// through OES_vertex_array_object, so draws bind `triangle` at attribute 0 instead).
    pub vao: Option<glow::VertexArray>,
    /// The `webgl1` mode (GLSL ES 1.00 programs, `gl1.rs` and `legacy.rs`), and whether the
    /// context itself is WebGL1 / ES 2 (unsized texture formats).
    pub gl1: bool,
    pub legacy: bool,
    pub triangle: Option<glow::Buffer>,
    #[cfg(not(target_arch = "wasm32"))]
    pub egl: Option<crate::egl::Headless>,
}

impl Shared {
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

    pub fn err(&self, op: &'static str, msg: impl Into<String>) -> Error {
        Error::backend(op, self.name.clone(), msg)
    }

    pub fn count(&self, f: impl FnOnce(&mut Counters)) {
        let mut c = self.counters.get();
        f(&mut c);
        self.counters.set(c);
    }

    pub fn log_pass(&self, line: impl FnOnce() -> String) {
        if let Some(log) = self.pass_log.borrow_mut().as_mut() {
            log.push(line());
        }
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

    /// Returns a texture of `bytes` device bytes to the pool (called from a tensor's `Drop`);
    /// past the pool budget the least recently returned textures are deleted.
    pub fn release(&self, tex: glow::Texture, key: PoolKey, bytes: u64) {
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
        if self.plans.try_borrow_mut().is_err() {
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
        if self.plans.try_borrow_mut().is_err() {
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
            self.forget_targets(&all);
            self.forget_gl_state();
            for t in all {
                // SAFETY: the texture belongs to this context and no tensor or plan holds it.
                unsafe { self.gl.delete_texture(t) };
            }
        }
        self.count(|c| c.bytes_in_use = c.bytes_in_use.saturating_sub(freed));
    }

    /// Forgets the tracked GL bindings: the next draw sets everything it needs.
    pub fn forget_gl_state(&self) {
        if let Ok(mut s) = self.state.try_borrow_mut() {
            *s = Default::default();
        }
    }
}

/// Texture units whose bindings are tracked (passes bind at most 4 inputs).
const TRACKED_UNITS: usize = 8;

/// The GL bindings this backend last set (`None`: unknown, set it). Draws inside a step skip
/// calls that would set what is already set: in the browser each is a call into JavaScript.
/// Tracking is only trusted between our own calls: it is forgotten at `begin_step` and
/// `end_step` (other code may use the context between steps), before every draw outside a
/// step, and whenever we bind or delete textures elsewhere (`Shared::forget_gl_state`).
#[derive(Default)]
pub(crate) struct GlState {
    pub viewport: Option<(i32, i32)>,
    pub program: Option<glow::Program>,
    pub active_unit: Option<u32>,
    pub units: [Option<glow::Texture>; TRACKED_UNITS],
    pub vao: bool,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.current().is_err() {
            return;
        }
        // SAFETY: the context is current and these objects belong to it; no tensor is alive
        // (each holds an Rc to this struct).
        unsafe {
            for (_, t, _) in self.pool.get_mut().drain() {
                self.gl.delete_texture(t);
            }
            for plan in self.plans.get_mut().take_all() {
                // Every tensor is gone, so every planned texture is free.
                for e in plan.allocs {
                    self.gl.delete_texture(e.tex);
                }
                for d in plan.draws {
                    self.gl.delete_framebuffer(d.fbo);
                }
            }
            for (_, p) in self.programs.cache.get_mut().drain() {
                self.gl.delete_program(p.program);
            }
            if let Some(v) = self.vertex.get() {
                self.gl.delete_shader(v);
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
            assert!(e.contains(&format!("context.rs:{line}")), "{e}");
            assert!(e.contains("GL error 0x0500"), "{e}");
        }
    }
}
