//! Compiling, linking and caching fragment programs. A program is compiled once per
//! [`ProgramSpec`] (op kind + small config) and reused for every shape.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::Result;

use crate::device::GlDevice;
use crate::dialect::{self, GroupMember, ProgramSpec};
use crate::glsl::GlslVersion;

/// A linked program, the uniform locations looked up so far and the value each uniform holds.
///
/// A GL program keeps its uniform values between uses, and only this backend can see its
/// programs, so a uniform whose value the program already holds is not set again: in the
/// browser every GL call is a call into JavaScript, and repeated draws (a replayed step, the
/// same sampler units every time) mostly set the values they set last time.
pub(crate) struct Program {
    pub program: glow::Program,
    /// Uniform name -> index into `slots`.
    index: RefCell<HashMap<&'static str, usize>>,
    slots: RefCell<Vec<Slot>>,
    /// Uniform names the fragment source declares, so a name with no location can be told
    /// apart: declared but unused (dropped by the compiler, fine) or misspelled (an error in
    /// debug builds).
    declared: HashSet<String>,
}

/// One uniform of a program: its location (None if the compiler dropped it as unused) and
/// the value last set (None until set).
struct Slot {
    loc: Option<glow::UniformLocation>,
    value: Option<Uniform>,
}

impl Program {
    fn new(program: glow::Program, source: &str) -> Self {
        Program { program, index: RefCell::new(HashMap::new()), slots: RefCell::new(Vec::new()), declared: declared_uniforms(source) }
    }

    /// The slot of a uniform, looking its location up on first use. Slots are stable, so a
    /// step plan caches them per draw. In debug builds (and so in every test) a name the
    /// program does not declare is an error instead of a uniform silently left unset.
    pub fn slot(&self, gl: &glow::Context, name: &'static str) -> std::result::Result<usize, String> {
        if let Some(&i) = self.index.borrow().get(name) {
            return Ok(i);
        }
        // SAFETY: the program is linked and belongs to this context.
        let loc = unsafe { gl.get_uniform_location(self.program, name) };
        if cfg!(debug_assertions) && loc.is_none() && !self.declared.contains(name) {
            let mut known: Vec<&str> = self.declared.iter().map(|s| s.as_str()).collect();
            known.sort_unstable();
            return Err(format!("uniform {name} is not declared by the program (it declares {})", known.join(", ")));
        }
        let mut slots = self.slots.borrow_mut();
        slots.push(Slot { loc, value: None });
        self.index.borrow_mut().insert(name, slots.len() - 1);
        Ok(slots.len() - 1)
    }

    /// Sets uniform `slot` to `v` unless the program already holds exactly that value. The
    /// program must be current. Returns true when a GL call was made.
    pub fn set(&self, gl: &glow::Context, slot: usize, v: &Uniform) -> bool {
        let mut slots = self.slots.borrow_mut();
        let Some(s) = slots.get_mut(slot) else {
            return false;
        };
        let Some(loc) = s.loc.as_ref() else {
            // Dropped by the compiler: setting it would be a no-op.
            return false;
        };
        if s.value.as_ref().is_some_and(|old| old.same(v)) {
            return false;
        }
        // SAFETY: the program is current (the caller's contract) and the value's type
        // matches the uniform the shader declares.
        unsafe {
            match v {
                Uniform::I(x) => gl.uniform_1_i32(Some(loc), *x),
                Uniform::IArr(x) => gl.uniform_1_i32_slice(Some(loc), x),
                Uniform::F(x) => gl.uniform_1_f32(Some(loc), *x),
                Uniform::FArr(x) => gl.uniform_1_f32_slice(Some(loc), x),
                Uniform::F2(x) => gl.uniform_2_f32(Some(loc), x[0], x[1]),
                Uniform::U(x) => gl.uniform_1_u32(Some(loc), *x),
                Uniform::U2(x) => gl.uniform_2_u32(Some(loc), x[0], x[1]),
            }
        }
        s.value = Some(v.clone());
        true
    }
}

/// A uniform value.
#[derive(Clone, Debug)]
pub(crate) enum Uniform {
    I(i32),
    /// Padded by the caller to the array length the shader declares.
    IArr(Vec<i32>),
    F(f32),
    /// The `webgl1` mode's int arrays (GLSL ES 1.00 programs take every index as a float).
    FArr(Vec<f32>),
    /// A sampler's size in texels (`webgl1` mode).
    F2([f32; 2]),
    U(u32),
    U2([u32; 2]),
}

impl Uniform {
    /// Same GL value: floats compare by bits (0.0 and -0.0 differ, a NaN equals itself).
    fn same(&self, o: &Uniform) -> bool {
        match (self, o) {
            (Uniform::I(a), Uniform::I(b)) => a == b,
            (Uniform::IArr(a), Uniform::IArr(b)) => a == b,
            (Uniform::F(a), Uniform::F(b)) => a.to_bits() == b.to_bits(),
            (Uniform::FArr(a), Uniform::FArr(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
            (Uniform::F2(a), Uniform::F2(b)) => a[0].to_bits() == b[0].to_bits() && a[1].to_bits() == b[1].to_bits(),
            (Uniform::U(a), Uniform::U(b)) => a == b,
            (Uniform::U2(a), Uniform::U2(b)) => a == b,
            _ => false,
        }
    }
}

/// Names declared by `uniform` statements of a GLSL source (`uniform highp sampler2D u_x;`,
/// `uniform int u_shape[MAX_RANK];`, `uniform float a, b;`).
fn declared_uniforms(src: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for line in src.lines() {
        let Some(rest) = line.trim_start().strip_prefix("uniform ") else { continue };
        let decl = rest.split(';').next().unwrap_or("");
        // Everything after the type: `highp sampler2D u_x` -> `u_x`; lists split on commas.
        let mut parts = decl.split(',');
        if let Some(first) = parts.next() {
            if let Some(name) = first.split_whitespace().last() {
                out.insert(name.split('[').next().unwrap_or(name).to_string());
            }
        }
        for more in parts {
            let name = more.trim();
            out.insert(name.split('[').next().unwrap_or(name).trim().to_string());
        }
    }
    out
}

/// The programs layer's state: linked programs by spec, and the registries that number the
/// kernels programs are rendered from (the `kernel` of a [`ProgramSpec`]).
#[derive(Default)]
pub(crate) struct Programs {
    /// Linked programs, compiled on first use.
    pub cache: RefCell<HashMap<ProgramSpec, Rc<Program>>>,
    /// Elementwise kernels rendered from the kernel IR, numbered in order of first use, with a
    /// label for logs.
    pub map_kernels: RefCell<Vec<(pixelgrad_core::kernel::Kernel, String)>>,
    pub map_index: RefCell<HashMap<pixelgrad_core::kernel::Kernel, u32>>,
    /// Grouped draws of several elementwise kernels (`group.rs`), numbered in order of first
    /// use.
    pub map_groups: RefCell<Vec<GroupDef>>,
    pub group_index: RefCell<HashMap<GroupDef, u32>>,
    /// The full-screen triangle's vertex shader, shared by every program.
    vertex: Cell<Option<glow::Shader>>,
}

/// Every method takes the device whose context the programs live in.
impl Programs {
    /// The cached program for `spec`, compiling it on first use.
    pub fn program(&self, dev: &GlDevice, op: &'static str, spec: ProgramSpec) -> Result<Rc<Program>> {
        if let Some(p) = self.cache.borrow().get(&spec) {
            return Ok(p.clone());
        }
        let p = Rc::new(self.compile(dev, op, spec)?);
        self.cache.borrow_mut().insert(spec, p.clone());
        dev.count(|c| c.compiles += 1);
        Ok(p)
    }

    /// Deletes every linked program and the vertex shader (the context is current).
    pub fn delete_all(&mut self, gl: &glow::Context) {
        // SAFETY: the objects belong to this context and nothing draws with them any more.
        unsafe {
            for (_, p) in self.cache.get_mut().drain() {
                gl.delete_program(p.program);
            }
            if let Some(v) = self.vertex.get() {
                gl.delete_shader(v);
            }
        }
    }

    fn vertex_shader(&self, dev: &GlDevice, op: &'static str) -> Result<glow::Shader> {
        if let Some(v) = self.vertex.get() {
            return Ok(v);
        }
        let src = match dev.features.version {
            GlslVersion::Es100 => crate::gl1::vertex_source(),
            GlslVersion::Es300 => dialect::vertex_source(),
        };
        let v = Self::compile_stage(dev, op, "fullscreen.vert", glow::VERTEX_SHADER, &src)?;
        self.vertex.set(Some(v));
        Ok(v)
    }

    pub(crate) fn compile_stage(dev: &GlDevice, op: &'static str, label: &str, stage: u32, src: &str) -> Result<glow::Shader> {
        let gl = &dev.gl;
        // The precision-limited mode: every float of the fragment stage in mediump.
        let lowered;
        let src = if (dev.mediump || dev.emulate_half) && stage == glow::FRAGMENT_SHADER {
            let mut s = src.to_string();
            if dev.mediump {
                s = s.replace("precision highp float;", "precision mediump float;");
            }
            if dev.emulate_half {
                // The precision emulation: the headers' PG_H / PG_H4 round to half
                // (both versions: `shaders/header.glsl`).
                s = dialect::emulate_half(&s);
            }
            lowered = s;
            lowered.as_str()
        } else {
            src
        };
        // SAFETY: standard shader creation on the current context; the shader is deleted on
        // failure.
        unsafe {
            let sh = gl.create_shader(stage).map_err(|e| dev.err(op, format!("create_shader: {e}")))?;
            gl.shader_source(sh, src);
            gl.compile_shader(sh);
            if !gl.get_shader_compile_status(sh) {
                let log = gl.get_shader_info_log(sh);
                gl.delete_shader(sh);
                return Err(dev.err(op, format!("shader {label} failed to compile:\n{log}\n--- source ---\n{}", dialect::numbered(src))));
            }
            Ok(sh)
        }
    }

    /// The number of elementwise kernel `k` in this backend's registry, registering it (with
    /// `label()` for logs) on first use.
    pub fn map_kernel(
        &self,
        dev: &GlDevice,
        op: &'static str,
        k: &pixelgrad_core::kernel::Kernel,
        label: impl FnOnce() -> String,
    ) -> Result<u32> {
        if let Some(&id) = self.map_index.borrow().get(k) {
            return Ok(id);
        }
        let mut list = self.map_kernels.borrow_mut();
        let id = u32::try_from(list.len()).map_err(|_| dev.err(op, "too many elementwise kernels"))?;
        list.push((k.clone(), label()));
        self.map_index.borrow_mut().insert(k.clone(), id);
        Ok(id)
    }

    /// A readable label of `spec` for logs.
    pub fn spec_label(&self, spec: &ProgramSpec) -> String {
        if spec.name == dialect::MAP_GROUP {
            return self.group_label(spec.kernel);
        }
        if let Some(body) = dialect::epilogue_body(spec.name) {
            let list = self.map_kernels.borrow();
            let what = list.get(spec.kernel as usize).map_or("?", |(_, l)| l.as_str());
            return format!("{} + {what}", ProgramSpec::new(body, spec.config & 7).label());
        }
        if spec.name == dialect::MAP || spec.name == dialect::REDUCE_FUSED {
            let list = self.map_kernels.borrow();
            let what = list.get(spec.kernel as usize).map_or("?", |(_, l)| l.as_str());
            let map_config = if spec.name == dialect::MAP { spec.config } else { spec.config >> 4 };
            let form = if map_config & 1 != 0 { "" } else { " (broadcast)" };
            if spec.name == dialect::REDUCE_FUSED {
                return format!("reduce of {what}{form}");
            }
            return format!("{what}{form}");
        }
        spec.label()
    }

    fn fragment(&self, dev: &GlDevice, op: &'static str, spec: &ProgramSpec) -> Result<String> {
        if dev.features.version == GlslVersion::Es100 {
            return self.fragment_gl1(dev, op, spec);
        }
        if spec.name == dialect::MAP_GROUP {
            return self.group_source(dev, op, spec);
        }
        let epilogue = dialect::epilogue_body(spec.name);
        if spec.name == dialect::MAP || spec.name == dialect::REDUCE_FUSED || epilogue.is_some() {
            let k = self.map_kernels.borrow().get(spec.kernel as usize).map(|(k, _)| k.clone());
            let k = k.ok_or_else(|| dev.err(op, format!("internal: no elementwise kernel {}", spec.kernel)))?;
            let src = match (spec.name, epilogue) {
                (_, Some(body)) => dialect::epilogue_source(body, &k, spec.config),
                (dialect::MAP, _) => dialect::map_source(&k, spec.config),
                _ => dialect::reduce_fused_source(&k, spec.config),
            };
            return src.map_err(|e| dev.err(op, e.to_string()));
        }
        dialect::fragment_source(spec).ok_or_else(|| dev.err(op, format!("no shader named {}", spec.name)))
    }

    /// [`Programs::fragment`] in the `webgl1` mode: the GLSL ES 1.00 sources of `gl1.rs`.
    fn fragment_gl1(&self, dev: &GlDevice, op: &'static str, spec: &ProgramSpec) -> Result<String> {
        if spec.name == dialect::MAP || spec.name == dialect::REDUCE_FUSED {
            let k = self.map_kernels.borrow().get(spec.kernel as usize).map(|(k, _)| k.clone());
            let k = k.ok_or_else(|| dev.err(op, format!("internal: no elementwise kernel {}", spec.kernel)))?;
            let src = if spec.name == dialect::MAP {
                crate::gl1::map_source(&k, spec.config)
            } else {
                crate::gl1::reduce_fused_source(&k, spec.config)
            };
            return src.map_err(|e| dev.err(op, e.to_string()));
        }
        crate::gl1::fragment_source(spec).ok_or_else(|| crate::legacy::unsupported(op, &format!("the {} program", spec.name)))
    }

    fn compile(&self, dev: &GlDevice, op: &'static str, spec: ProgramSpec) -> Result<Program> {
        let src = self.fragment(dev, op, &spec)?;
        let label = format!("{} (CONFIG {})", self.spec_label(&spec), spec.config);
        let vs = self.vertex_shader(dev, op)?;
        let fs = Self::compile_stage(dev, op, &label, glow::FRAGMENT_SHADER, &src)?;
        let gl = &dev.gl;
        // SAFETY: linking shaders created on this context; objects are released on failure.
        unsafe {
            let p = gl.create_program().map_err(|e| dev.err(op, format!("create_program: {e}")))?;
            gl.attach_shader(p, vs);
            gl.attach_shader(p, fs);
            if !dev.features.vertex_id {
                gl.bind_attrib_location(p, 0, crate::gl1::POSITION);
            }
            gl.link_program(p);
            gl.detach_shader(p, vs);
            gl.detach_shader(p, fs);
            gl.delete_shader(fs);
            if !gl.get_program_link_status(p) {
                let log = gl.get_program_info_log(p);
                gl.delete_program(p);
                return Err(
                    dev.err(op, format!("program {label} failed to link:\n{log}\n--- fragment source ---\n{}", dialect::numbered(&src)))
                );
            }
            Ok(Program::new(p, &src))
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
        let err = crate::program::Programs::compile_stage(&b.shared.dev, "test", "bad.frag", glow::FRAGMENT_SHADER, src).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Backend { op: "test", .. }), "{err:?}");
        assert!(msg.contains("bad.frag failed to compile"), "{msg}");
        assert!(msg.contains("undefined_fn"), "driver log missing: {msg}");
        assert!(msg.contains("   4: void main()"), "numbered source missing: {msg}");
    }

    #[test]
    fn uniforms_are_set_only_when_the_value_changes() {
        use crate::dialect::ProgramSpec;
        use crate::program::Uniform;
        use glow::HasContext;
        let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
        let p = b.shared.program("test", ProgramSpec::new("fill", 0)).unwrap();
        let gl = &b.shared.gl;
        // SAFETY: the program belongs to this context.
        unsafe { gl.use_program(Some(p.program)) };
        let x = p.slot(gl, "u_value").unwrap();
        assert_eq!(p.slot(gl, "u_value").unwrap(), x, "slots are stable");
        assert!(p.set(gl, x, &Uniform::F(0.0)));
        assert!(!p.set(gl, x, &Uniform::F(0.0)), "same value: no GL call");
        assert!(p.set(gl, x, &Uniform::F(-0.0)), "-0.0 is another value");
        assert!(p.set(gl, x, &Uniform::F(f32::NAN)));
        assert!(!p.set(gl, x, &Uniform::F(f32::NAN)), "the same NaN bits");
        // A misspelled name is an error (debug builds); a declared one the compiler dropped
        // (fill declares no unused uniform, so the vertex-stage name stands in) is not.
        if cfg!(debug_assertions) {
            let misspelled = p.slot(gl, "u_valeu");
            assert!(misspelled.unwrap_err().contains("u_valeu is not declared"), "misspelled uniform accepted");
        }
        assert!(super::declared_uniforms("uniform highp sampler2D u_x;\nuniform int u_s[6], u_t;\n").contains("u_t"));
        assert!(p.set(gl, x, &Uniform::F(1.5)));
        assert!(!p.set(gl, x, &Uniform::F(1.5)));
        let mut v = [0.0f32];
        // SAFETY: the program belongs to this context and u_value is a float.
        unsafe {
            let loc = gl.get_uniform_location(p.program, "u_value").expect("u_value is used");
            gl.get_uniform_f32(p.program, &loc, &mut v);
        }
        assert_eq!(v[0], 1.5, "the program holds the last value set");
    }
}

/// The structure of a grouped draw, its program's cache key: for each member, its kernel's
/// number in the registry and the draw input each kernel input reads; and how many inputs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct GroupDef {
    pub members: Vec<(u32, Vec<usize>)>,
    pub inputs: usize,
}

impl Programs {
    /// The number of grouped draw `def` in this backend's registry, registering it on first use.
    pub fn map_group(&self, dev: &GlDevice, op: &'static str, def: GroupDef) -> Result<u32> {
        if let Some(&id) = self.group_index.borrow().get(&def) {
            return Ok(id);
        }
        let mut list = self.map_groups.borrow_mut();
        let id = u32::try_from(list.len()).map_err(|_| dev.err(op, "too many grouped draws"))?;
        list.push(def.clone());
        self.group_index.borrow_mut().insert(def, id);
        Ok(id)
    }

    /// A label of grouped draw `id` for logs: its members' labels.
    pub fn group_label(&self, id: u32) -> String {
        let groups = self.map_groups.borrow();
        let kernels = self.map_kernels.borrow();
        let Some(g) = groups.get(id as usize) else { return format!("group {id}?") };
        let names: Vec<&str> = g.members.iter().map(|(k, _)| kernels.get(*k as usize).map_or("?", |(_, l)| l.as_str())).collect();
        format!("group of {}: {}", names.len(), names.join(" | "))
    }

    /// The fragment source of grouped draw `spec.kernel`.
    pub fn group_source(&self, dev: &GlDevice, op: &'static str, spec: &ProgramSpec) -> Result<String> {
        let def = self.map_groups.borrow().get(spec.kernel as usize).cloned();
        let def = def.ok_or_else(|| dev.err(op, format!("internal: no grouped draw {}", spec.kernel)))?;
        let kernels = self.map_kernels.borrow();
        let members = def
            .members
            .iter()
            .map(|(k, inputs)| {
                let kernel = &kernels.get(*k as usize).ok_or_else(|| dev.err(op, format!("internal: no elementwise kernel {k}")))?.0;
                Ok(GroupMember { kernel, inputs })
            })
            .collect::<Result<Vec<_>>>()?;
        crate::dialect::map_group_source(&members, def.inputs, spec.config).map_err(|e| dev.err(op, e.to_string()))
    }
}
