//! Compiling, linking and caching fragment programs. A program is compiled once per
//! [`ProgramSpec`] (op kind + small config) and reused for every shape.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::Result;

use crate::context::Shared;
use crate::dialect::{self, ProgramSpec};

/// A linked program and the uniform locations looked up so far.
pub(crate) struct Program {
    pub program: glow::Program,
    uniforms: RefCell<HashMap<&'static str, Option<glow::UniformLocation>>>,
}

impl Program {
    /// Location of a uniform (None if the compiler dropped it as unused).
    // Locations are Copy natively but not in WebGL (a JS object), hence the clone.
    #[allow(clippy::clone_on_copy)]
    pub fn location(&self, gl: &glow::Context, name: &'static str) -> Option<glow::UniformLocation> {
        let mut u = self.uniforms.borrow_mut();
        u.entry(name)
            // SAFETY: the program is linked and belongs to this context.
            .or_insert_with(|| unsafe { gl.get_uniform_location(self.program, name) })
            .clone()
    }
}

/// A uniform value.
#[derive(Clone, Debug)]
pub(crate) enum Uniform {
    I(i32),
    /// Padded by the caller to the array length the shader declares.
    IArr(Vec<i32>),
    F(f32),
    U(u32),
    U2([u32; 2]),
}

impl Shared {
    /// The cached program for `spec`, compiling it on first use.
    pub fn program(&self, op: &'static str, spec: ProgramSpec) -> Result<Rc<Program>> {
        if let Some(p) = self.programs.borrow().get(&spec) {
            return Ok(p.clone());
        }
        let p = Rc::new(self.compile(op, spec)?);
        self.programs.borrow_mut().insert(spec, p.clone());
        self.count(|c| c.compiles += 1);
        Ok(p)
    }

    fn vertex_shader(&self, op: &'static str) -> Result<glow::Shader> {
        if let Some(v) = self.vertex.get() {
            return Ok(v);
        }
        let v = self.compile_stage(op, "fullscreen.vert", glow::VERTEX_SHADER, &dialect::vertex_source())?;
        self.vertex.set(Some(v));
        Ok(v)
    }

    fn compile_stage(&self, op: &'static str, label: &str, stage: u32, src: &str) -> Result<glow::Shader> {
        let gl = &self.gl;
        // SAFETY: standard shader creation on the current context; the shader is deleted on
        // failure.
        unsafe {
            let sh = gl.create_shader(stage).map_err(|e| self.err(op, format!("create_shader: {e}")))?;
            gl.shader_source(sh, src);
            gl.compile_shader(sh);
            if !gl.get_shader_compile_status(sh) {
                let log = gl.get_shader_info_log(sh);
                gl.delete_shader(sh);
                return Err(self.err(
                    op,
                    format!("shader {label} failed to compile:\n{log}\n--- source ---\n{}", dialect::numbered(src)),
                ));
            }
            Ok(sh)
        }
    }

    fn compile(&self, op: &'static str, spec: ProgramSpec) -> Result<Program> {
        let src = dialect::fragment_source(&spec)
            .ok_or_else(|| self.err(op, format!("no shader named {}", spec.name)))?;
        let label = format!("{}.glsl (CONFIG {})", spec.name, spec.config);
        let vs = self.vertex_shader(op)?;
        let fs = self.compile_stage(op, &label, glow::FRAGMENT_SHADER, &src)?;
        let gl = &self.gl;
        // SAFETY: linking shaders created on this context; objects are released on failure.
        unsafe {
            let p = gl.create_program().map_err(|e| self.err(op, format!("create_program: {e}")))?;
            gl.attach_shader(p, vs);
            gl.attach_shader(p, fs);
            gl.link_program(p);
            gl.detach_shader(p, vs);
            gl.detach_shader(p, fs);
            gl.delete_shader(fs);
            if !gl.get_program_link_status(p) {
                let log = gl.get_program_info_log(p);
                gl.delete_program(p);
                return Err(self.err(
                    op,
                    format!("program {label} failed to link:\n{log}\n--- fragment source ---\n{}", dialect::numbered(&src)),
                ));
            }
            Ok(Program { program: p, uniforms: RefCell::new(HashMap::new()) })
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use pixelgrad_core::Error;

    use crate::{WebGlBackend, WebGlOptions};

    #[test]
    fn compile_errors_carry_the_info_log_and_numbered_source() {
        let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
        let src = "#version 300 es\nprecision highp float;\nout vec4 o;\nvoid main() { o = undefined_fn(); }\n";
        let err = b.shared.compile_stage("test", "bad.frag", glow::FRAGMENT_SHADER, src).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Backend { op: "test", .. }), "{err:?}");
        assert!(msg.contains("bad.frag failed to compile"), "{msg}");
        assert!(msg.contains("undefined_fn"), "driver log missing: {msg}");
        assert!(msg.contains("   4: void main()"), "numbered source missing: {msg}");
    }
}
