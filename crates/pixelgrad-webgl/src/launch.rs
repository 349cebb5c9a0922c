//! One pass = one full-screen draw of a fragment program into the output texture.

use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::Result;

use crate::context::Shared;
use crate::dialect::{ProgramSpec, MAX_RANK};
use crate::program::Uniform;
use crate::texture::GlTensor;

/// Everything a draw needs besides its output.
pub(crate) struct Pass<'a> {
    /// The op this pass belongs to (errors and the pass log).
    pub op: &'static str,
    pub spec: ProgramSpec,
    /// Sampler uniform name and the tensor bound to it.
    pub inputs: Vec<(&'static str, &'a GlTensor)>,
    pub uniforms: Vec<(&'static str, Uniform)>,
}

impl<'a> Pass<'a> {
    pub fn new(op: &'static str, name: &'static str, config: u32) -> Self {
        Pass { op, spec: ProgramSpec::new(name, config), inputs: Vec::new(), uniforms: Vec::new() }
    }
    pub fn input(mut self, name: &'static str, t: &'a GlTensor) -> Self {
        self.inputs.push((name, t));
        self
    }
    pub fn int(mut self, name: &'static str, v: usize) -> Self {
        self.uniforms.push((name, Uniform::I(v as i32)));
        self
    }
    pub fn sint(mut self, name: &'static str, v: i64) -> Self {
        self.uniforms.push((name, Uniform::I(v as i32)));
        self
    }
    pub fn float(mut self, name: &'static str, v: f32) -> Self {
        self.uniforms.push((name, Uniform::F(v)));
        self
    }
    pub fn uint(mut self, name: &'static str, v: u32) -> Self {
        self.uniforms.push((name, Uniform::U(v)));
        self
    }
    pub fn uvec2(mut self, name: &'static str, v: [u32; 2]) -> Self {
        self.uniforms.push((name, Uniform::U2(v)));
        self
    }
    /// An int array uniform, padded with `pad` at the front to MAX_RANK entries (shapes and
    /// strides are right-aligned).
    pub fn ranked(mut self, name: &'static str, v: &[i64], pad: i64) -> Self {
        let mut a = vec![pad as i32; MAX_RANK - v.len()];
        a.extend(v.iter().map(|&x| x as i32));
        self.uniforms.push((name, Uniform::IArr(a)));
        self
    }
    pub fn ints(mut self, name: &'static str, v: &[i64]) -> Self {
        self.uniforms.push((name, Uniform::IArr(v.iter().map(|&x| x as i32).collect())));
        self
    }
}

impl Shared {
    /// Runs `pass` into a new pooled texture of `len` elements.
    pub fn run(self: &Rc<Self>, pass: Pass<'_>, len: usize) -> Result<GlTensor> {
        let out = self.alloc(len, pass.op)?;
        self.draw(&pass, out.tex, out.w, out.h, len)?;
        Ok(out)
    }

    /// Draws `pass` into `target` (w x h texels; `len` valid elements).
    pub fn draw(&self, pass: &Pass<'_>, target: glow::Texture, w: u32, h: u32, len: usize) -> Result<()> {
        // A texture must never be sampled and rendered to in one draw (a feedback loop:
        // undefined in GL, an error in WebGL). Outputs come fresh from the pool, so this holds
        // by construction; the check keeps it that way.
        if cfg!(debug_assertions) && pass.inputs.iter().any(|(_, t)| t.tex == target) {
            return Err(self.err(pass.op, "internal: an input texture is also the render target"));
        }
        let prog = self.program(pass.op, pass.spec)?;
        self.attach(target, pass.op)?;
        let gl = &self.gl;
        // SAFETY: all objects belong to the current context; uniform values match the types
        // the shaders declare.
        unsafe {
            gl.viewport(0, 0, w as i32, h as i32);
            gl.use_program(Some(prog.program));
            for (unit, (name, t)) in pass.inputs.iter().enumerate() {
                gl.active_texture(glow::TEXTURE0 + unit as u32);
                gl.bind_texture(glow::TEXTURE_2D, Some(t.tex));
                gl.uniform_1_i32(prog.location(gl, name).as_ref(), unit as i32);
            }
            gl.uniform_1_i32(prog.location(gl, "u_out_w").as_ref(), w as i32);
            gl.uniform_1_i32(prog.location(gl, "u_out_n").as_ref(), len as i32);
            for (name, u) in &pass.uniforms {
                let loc = prog.location(gl, name);
                let loc = loc.as_ref();
                match u {
                    Uniform::I(v) => gl.uniform_1_i32(loc, *v),
                    Uniform::IArr(v) => gl.uniform_1_i32_slice(loc, v),
                    Uniform::F(v) => gl.uniform_1_f32(loc, *v),
                    Uniform::U(v) => gl.uniform_1_u32(loc, *v),
                    Uniform::U2(v) => gl.uniform_2_u32(loc, v[0], v[1]),
                }
            }
            gl.bind_vertex_array(Some(self.vao));
            gl.draw_arrays(glow::TRIANGLES, 0, 3);
        }
        self.check_gl(pass.op, pass.spec.name)?;
        self.count(|c| c.launches += 1);
        self.log_pass(|| {
            // The shared strided-copy program is labelled by the op it implements.
            let label = if pass.spec.name == "view" { format!("view.{}", pass.op) } else { pass.spec.label() };
            format!("{label:<18} -> {w:>4}x{h:<4} texels ({len} elements)")
        });
        Ok(())
    }
}
