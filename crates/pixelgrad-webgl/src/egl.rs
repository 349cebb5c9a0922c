//! Native headless OpenGL ES 3 context through EGL, with no display server: Mesa's surfaceless
//! platform (llvmpipe in CI), falling back to the default display. libEGL is loaded at run time,
//! so a machine without it gets [`Error::Unavailable`] instead of a link failure.

use std::cell::Cell;

use khronos_egl as egl;
use pixelgrad_core::{Error, Result};

/// `EGL_PLATFORM_SURFACELESS_MESA`: render without any window system.
const PLATFORM_SURFACELESS_MESA: egl::Enum = 0x31DD;

type Egl = egl::DynamicInstance<egl::EGL1_4>;

thread_local! {
    /// The EGL context last made current on this thread, so switching between two backends in
    /// one thread re-binds only when needed.
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// An EGL display + OpenGL ES 3 context + 1x1 pbuffer. Dropping it destroys the context (the
/// display is shared by every context of the process, so it is never terminated).
pub(crate) struct Headless {
    egl: Egl,
    display: egl::Display,
    context: egl::Context,
    surface: egl::Surface,
}

fn unavailable(reason: String) -> Error {
    Error::Unavailable {
        backend: "webgl".into(),
        reason: format!(
            "{reason}. The native WebGL backend needs an OpenGL ES 3 driver through EGL (on Linux: \
             Mesa, packages libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri); use the cpu or \
             webgpu backend instead"
        ),
    }
}

impl Headless {
    /// Creates the context and makes it current on this thread.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: loading libEGL runs its initialisers; the library is the system's EGL.
        let egl = unsafe { Egl::load_required() }.map_err(|e| unavailable(format!("could not load libEGL.so.1 ({e})")))?;
        let display = Self::display(&egl)?;
        egl.initialize(display).map_err(|e| unavailable(format!("eglInitialize failed ({e})")))?;
        // Without PBUFFER_BIT + ES3_BIT, Mesa's surfaceless platform matches no config.
        let attribs = [egl::SURFACE_TYPE, egl::PBUFFER_BIT, egl::RENDERABLE_TYPE, egl::OPENGL_ES3_BIT, egl::NONE];
        let config = egl
            .choose_first_config(display, &attribs)
            .map_err(|e| unavailable(format!("eglChooseConfig failed ({e})")))?
            .ok_or_else(|| unavailable("no EGL config supports OpenGL ES 3 pbuffers".into()))?;
        egl.bind_api(egl::OPENGL_ES_API).map_err(|e| unavailable(format!("eglBindAPI failed ({e})")))?;
        let ctx_attribs = [egl::CONTEXT_CLIENT_VERSION, 3, egl::NONE];
        let context = egl
            .create_context(display, config, None, &ctx_attribs)
            .map_err(|e| unavailable(format!("could not create an OpenGL ES 3 context ({e})")))?;
        let pb = [egl::WIDTH, 1, egl::HEIGHT, 1, egl::NONE];
        let surface = match egl.create_pbuffer_surface(display, config, &pb) {
            Ok(s) => s,
            Err(e) => {
                let _ = egl.destroy_context(display, context);
                return Err(unavailable(format!("could not create a pbuffer surface ({e})")));
            }
        };
        let h = Headless { egl, display, context, surface };
        h.make_current()?;
        Ok(h)
    }

    fn display(egl: &Egl) -> Result<egl::Display> {
        if let Some(egl15) = egl.upcast::<egl::EGL1_5>() {
            // SAFETY: the surfaceless platform takes no native display.
            if let Ok(d) = unsafe { egl15.get_platform_display(PLATFORM_SURFACELESS_MESA, egl::DEFAULT_DISPLAY, &[egl::ATTRIB_NONE]) } {
                return Ok(d);
            }
        }
        // SAFETY: EGL_DEFAULT_DISPLAY is always a valid argument.
        unsafe { egl.get_display(egl::DEFAULT_DISPLAY) }.ok_or_else(|| unavailable("no EGL display (surfaceless or default)".into()))
    }

    /// Binds this context to the calling thread if it is not already.
    pub(crate) fn make_current(&self) -> Result<()> {
        let id = self.context.as_ptr() as usize;
        if CURRENT.with(|c| c.get()) == id {
            return Ok(());
        }
        self.egl
            .make_current(self.display, Some(self.surface), Some(self.surface), Some(self.context))
            .map_err(|e| Error::backend("make_current", "webgl", format!("eglMakeCurrent failed: {e}")))?;
        CURRENT.with(|c| c.set(id));
        Ok(())
    }

    /// Looks up a GL entry point for glow.
    pub(crate) fn proc_address(&self, name: &str) -> *const std::ffi::c_void {
        self.egl.get_proc_address(name).map_or(std::ptr::null(), |f| f as *const std::ffi::c_void)
    }
}

impl Drop for Headless {
    fn drop(&mut self) {
        let id = self.context.as_ptr() as usize;
        if CURRENT.with(|c| c.get()) == id {
            let _ = self.egl.make_current(self.display, None, None, None);
            CURRENT.with(|c| c.set(0));
        }
        let _ = self.egl.destroy_surface(self.display, self.surface);
        let _ = self.egl.destroy_context(self.display, self.context);
    }
}
