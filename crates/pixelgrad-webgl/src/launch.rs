//! One pass = one full-screen draw of a fragment program into the output texture: through the
//! draw's step-plan entry inside a step (`plan.rs`), through the device's shared framebuffer
//! otherwise.

use glow::HasContext;
use pixelgrad_core::Result;

use crate::device::{GlDevice, GlState};
use crate::dialect::{ProgramSpec, MAX_RANK};
use crate::plan::{DrawKey, Steps};
use crate::program::{Program, Programs, Uniform};
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
        Pass::with_spec(op, ProgramSpec::new(name, config))
    }
    pub fn with_spec(op: &'static str, spec: ProgramSpec) -> Self {
        Pass { op, spec, inputs: Vec::new(), uniforms: Vec::new() }
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

impl Pass<'_> {
    /// The uniforms a draw of this pass sets, in order: one sampler per input, `u_out_w`,
    /// `u_out_n`, then the pass's own.
    pub fn uniform_names(&self) -> impl Iterator<Item = &'static str> + Clone + '_ {
        self.inputs.iter().map(|(n, _)| *n).chain(["u_out_w", "u_out_n"]).chain(self.uniforms.iter().map(|(n, _)| *n))
    }
}

/// Draws `pass` into `targets` (w x h texels each; `len` valid elements). With `steps` the draw
/// is planned (inside a step: its own framebuffer, see `plan.rs`); without, or outside a step,
/// it goes through the device's shared framebuffer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw_pass(
    dev: &GlDevice,
    programs: &Programs,
    steps: Option<&Steps>,
    pass: &Pass<'_>,
    targets: &[glow::Texture],
    w: u32,
    h: u32,
    len: usize,
) -> Result<()> {
    // A texture must never be sampled and rendered to in one draw (a feedback loop:
    // undefined in GL, an error in WebGL). Outputs come fresh from the pool or from a
    // plan entry no live tensor holds (inputs are live), so this holds by construction;
    // the check keeps it that way.
    if cfg!(debug_assertions) && pass.inputs.iter().any(|(_, t)| targets.contains(&t.tex)) {
        return Err(dev.err(pass.op, "internal: an input texture is also the render target"));
    }
    let prepared = match steps {
        Some(steps) => {
            let key = DrawKey { op: pass.op, spec: pass.spec, names: pass.uniform_names() };
            steps.prepare_draw(dev, programs, key, targets)?
        }
        None => None,
    };
    let (prog, slots) = match prepared {
        Some(p) => (p.program, Some(p.slots)),
        None => {
            // Outside a step nothing is known about the context's state.
            dev.forget_gl_state();
            let prog = programs.program(dev, pass.op, pass.spec)?;
            dev.attach_shared(targets, pass.op)?;
            dev.count(|c| c.bindings += 1);
            (prog, None)
        }
    };
    issue(dev, pass, &prog, slots.as_deref(), w as i32, h as i32, len as i32)?;
    if targets.len() > 1 && slots.is_none() {
        // Back to the shared framebuffer's usual single attachment.
        dev.attach_shared(&targets[..1], pass.op)?;
    }
    dev.mark_unflushed();
    dev.check_gl(pass.op, pass.spec.name)?;
    dev.count(|c| c.launches += 1);
    dev.log_pass(|| {
        // The shared strided-copy program is labelled by the op it implements.
        let label = if pass.spec.name == "view" { format!("view.{}", pass.op) } else { programs.spec_label(&pass.spec) };
        format!("{label:<18} -> {w:>4}x{h:<4} texels ({len} elements)")
    });
    Ok(())
}

/// The `webgl1` mode's uniforms: every int as a float (GLSL ES 1.00 programs index with
/// floats; the values are whole numbers below 2^24, exact in f32) and each sampler's size.
fn set_gl1_uniforms(dev: &GlDevice, pass: &Pass<'_>, prog: &Program, slot: &dyn Fn(usize) -> usize, w: i32, len: i32) -> Result<()> {
    let gl = &dev.gl;
    let n = pass.inputs.len();
    prog.set(gl, slot(n), &Uniform::F(w as f32));
    prog.set(gl, slot(n + 1), &Uniform::F(len as f32));
    for (i, (_, u)) in pass.uniforms.iter().enumerate() {
        let as_float = match u {
            Uniform::I(x) => Uniform::F(*x as f32),
            Uniform::IArr(x) => Uniform::FArr(x.iter().map(|&v| v as f32).collect()),
            Uniform::U(_) | Uniform::U2(_) => {
                return Err(crate::legacy::unsupported(pass.op, "an unsigned uniform"));
            }
            other => other.clone(),
        };
        prog.set(gl, slot(n + 2 + i), &as_float);
    }
    let one = prog.slot(gl, "u_one").map_err(|e| dev.err(pass.op, e))?;
    prog.set(gl, one, &Uniform::F(1.0));
    let zero = prog.slot(gl, "u_zero").map_err(|e| dev.err(pass.op, e))?;
    prog.set(gl, zero, &Uniform::F(0.0));
    let fmax = prog.slot(gl, "u_fmax").map_err(|e| dev.err(pass.op, e))?;
    prog.set(gl, fmax, &Uniform::F(f32::MAX));
    for (name, t) in &pass.inputs {
        let size = crate::gl1::size_uniform(name).ok_or_else(|| dev.err(pass.op, format!("internal: no size uniform for {name}")))?;
        let s = prog.slot(gl, size).map_err(|e| dev.err(pass.op, e))?;
        prog.set(gl, s, &Uniform::F2([t.w as f32, t.h as f32]));
    }
    Ok(())
}

/// Sets the draw's state (skipping what is already set) and draws, into the bound
/// framebuffer. `slots`: the uniform slots in [`Pass::uniform_names`] order, if known.
fn issue(dev: &GlDevice, pass: &Pass<'_>, prog: &Program, slots: Option<&[usize]>, w: i32, h: i32, len: i32) -> Result<()> {
    let gl = &dev.gl;
    let looked_up: Vec<usize>;
    let slots = match slots {
        Some(s) => s,
        None => {
            looked_up = pass.uniform_names().map(|n| prog.slot(gl, n).map_err(|e| dev.err(pass.op, e))).collect::<Result<_>>()?;
            &looked_up
        }
    };
    let mut guard = dev.gl_state();
    let mut scratch = GlState::default();
    let st = guard.as_deref_mut().unwrap_or(&mut scratch);
    let slot = |i: usize| slots.get(i).copied().unwrap_or(usize::MAX);
    // SAFETY: all objects belong to the current context; uniform values match the types
    // the shaders declare (`Program::set`).
    unsafe {
        if st.viewport != Some((w, h)) {
            gl.viewport(0, 0, w, h);
            st.viewport = Some((w, h));
        }
        if st.program != Some(prog.program) {
            gl.use_program(Some(prog.program));
            st.program = Some(prog.program);
        }
        for (unit, (_, t)) in pass.inputs.iter().enumerate() {
            let tracked = st.units.get(unit).copied().flatten();
            if tracked != Some(t.tex) {
                let u = glow::TEXTURE0 + unit as u32;
                if st.active_unit != Some(u) {
                    gl.active_texture(u);
                    st.active_unit = Some(u);
                }
                gl.bind_texture(glow::TEXTURE_2D, Some(t.tex));
                if let Some(s) = st.units.get_mut(unit) {
                    *s = Some(t.tex);
                }
            }
            prog.set(gl, slot(unit), &Uniform::I(unit as i32));
        }
        let n = pass.inputs.len();
        if dev.features.float_indices {
            set_gl1_uniforms(dev, pass, prog, &slot, w, len)?;
        } else {
            prog.set(gl, slot(n), &Uniform::I(w));
            prog.set(gl, slot(n + 1), &Uniform::I(len));
            for (i, (_, u)) in pass.uniforms.iter().enumerate() {
                prog.set(gl, slot(n + 2 + i), u);
            }
        }
        if !st.vao {
            match (dev.vao, dev.triangle) {
                (Some(vao), _) => gl.bind_vertex_array(Some(vao)),
                (None, Some(buf)) => {
                    // webgl1: no VAO, the triangle's buffer at attribute 0 (in an ES 3
                    // context, of the default vertex array).
                    if !dev.legacy {
                        gl.bind_vertex_array(None);
                    }
                    gl.bind_buffer(glow::ARRAY_BUFFER, Some(buf));
                    gl.enable_vertex_attrib_array(0);
                    gl.vertex_attrib_pointer_f32(0, 2, glow::FLOAT, false, 0, 0);
                }
                (None, None) => return Err(dev.err(pass.op, "internal: no vertex array and no triangle buffer")),
            }
            st.vao = true;
        }
        gl.draw_arrays(glow::TRIANGLES, 0, 3);
    }
    Ok(())
}
