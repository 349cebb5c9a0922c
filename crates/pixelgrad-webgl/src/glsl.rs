//! One GLSL source for both WebGL modes: the kernel IR's programs with loops
//! (`pixelgrad_core::kernel::program`) spelled for GLSL ES 3.00 and GLSL ES 1.00 from one
//! [`GlslVersion`] value, whose differences are the [`Table`] below and nothing else.

use pixelgrad_core::kernel::columns::ColumnProgram;
use pixelgrad_core::kernel::program::{Bound, Program};
use pixelgrad_core::kernel::program_render::{render_program, Spelling};
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::windows::WindowProgram;

/// Which GLSL the program is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GlslVersion {
    /// GLSL ES 3.00 (WebGL2).
    Es300,
    /// GLSL ES 1.00 (the `webgl1` mode; see [`crate::gl1`] for its rules).
    Es100,
}

/// Everything the two versions write differently.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    /// Type of indices and integer uniforms: ES 1.00 has only 16-bit ints, so indices are
    /// floats holding whole numbers (exact below 2^24).
    pub int_ty: &'static str,
    /// Suffix of an integer literal (`3` / `3.0`).
    pub int_suffix: &'static str,
    /// Whether `fetch` takes the sampler's size uniform (ES 1.00 has no `textureSize`).
    pub sized_fetch: bool,
    /// Whether integer division goes through `pg_divmod` (ES 1.00: float division rounds).
    pub divmod: bool,
    /// Whether loops need a constant bound and a `break` (ES 1.00 Appendix A).
    pub constant_loops: bool,
    /// Whether floats' bits can be read (`floatBitsToUint`); without, the NaN test is the
    /// header's arithmetic `pg_isnan`.
    pub bit_access: bool,
}

impl GlslVersion {
    pub fn table(self) -> Table {
        match self {
            GlslVersion::Es300 => {
                Table { int_ty: "int", int_suffix: "", sized_fetch: false, divmod: false, constant_loops: false, bit_access: true }
            }
            GlslVersion::Es100 => {
                Table { int_ty: "float", int_suffix: ".0", sized_fetch: true, divmod: true, constant_loops: true, bit_access: false }
            }
        }
    }
}

/// The [`Spelling`] of one version; `fused`: input 0 is a fused read of a pending elementwise
/// computation (`pg_load`, defined before the body) instead of its sampler.
struct Glsl {
    t: Table,
    fused: bool,
}

impl Spelling for Glsl {
    fn int_ty(&self) -> &'static str {
        self.t.int_ty
    }
    fn int_lit(&self, v: i32) -> String {
        let s = format!("{v}{}", self.t.int_suffix);
        if v < 0 {
            format!("({s})")
        } else {
            s
        }
    }
    fn to_float(&self, a: &str) -> String {
        if self.t.int_ty == "float" {
            a.to_string()
        } else {
            format!("float({a})")
        }
    }
    fn is_nan(&self, a: &str) -> String {
        if self.t.bit_access {
            format!("((floatBitsToUint({a}) & 0x7fffffffu) > 0x7f800000u)")
        } else {
            format!("pg_isnan({a})")
        }
    }
    fn to_int(&self, a: &str) -> String {
        if self.t.int_ty == "float" {
            format!("floor({a})")
        } else {
            format!("int({a})")
        }
    }
    /// A fragment cannot report: the launcher renders a check pass of its own
    /// (`checks.rs`), which the next readback reads.
    fn fault(&self, code: u8) -> String {
        format!("// fault {code}: the launcher's check pass reports it")
    }
    fn param(&self, _i: usize, name: &str) -> String {
        format!("u_{name}")
    }
    // Loaded values and bound float values go through PG_H, the precision emulation's
    // rounding (the value itself when it is off).
    fn load(&self, i: usize, name: &str, at: &str) -> String {
        if self.fused && i == 0 {
            format!("PG_H(pg_load({at}))")
        } else if self.t.sized_fetch {
            format!("PG_H(fetch(u_{name}, u_{name}_size, {at}))")
        } else {
            format!("PG_H(fetch(u_{name}, {at}))")
        }
    }
    /// One texel (`at` is a multiple of 4, so its elements are one texel's lanes); through a
    /// fused read, its `pg_load4` where the read has one, else four `pg_load`s.
    fn load4(&self, i: usize, name: &str, at: &str, names: [&str; 4]) -> Vec<String> {
        let q = format!("q_{}", names[0]);
        let mut out = Vec::new();
        if self.fused && i == 0 {
            let each: Vec<String> =
                (0..4).map(|l| if l == 0 { format!("pg_load({at})") } else { format!("pg_load({at} + {})", self.int_lit(l)) }).collect();
            out.push("#ifdef PG_LOAD4".to_string());
            out.push(format!("vec4 {q} = pg_load4({at});"));
            out.push("#else".to_string());
            out.push(format!("vec4 {q} = vec4({});", each.join(", ")));
            out.push("#endif".to_string());
        } else if self.t.sized_fetch {
            // ES 1.00: indices are floats; at / 4 is exact (a power of two).
            out.push(format!("vec4 {q} = fetch4(u_{name}, u_{name}_size, {at} * 0.25);"));
        } else {
            out.push(format!("vec4 {q} = fetch4(u_{name}, {at} >> 2);"));
        }
        for (v, lane) in names.iter().zip(["x", "y", "z", "w"]) {
            out.push(format!("float {v} = PG_H({q}.{lane});"));
        }
        out
    }
    /// Without `PG_H`: an index is read exactly.
    fn load_index(&self, _i: usize, name: &str, at: &str) -> String {
        if self.t.sized_fetch {
            format!("fetch(u_{name}, u_{name}_size, {at})")
        } else {
            format!("fetch(u_{name}, {at})")
        }
    }
    fn div(&self, a: &str, b: &str) -> String {
        if self.t.divmod {
            format!("pg_divmod({a}, {b}).x")
        } else {
            format!("({a} / {b})")
        }
    }
    fn let_(&self, float: bool, name: &str, value: &str) -> String {
        if float {
            format!("float {name} = PG_H({value});")
        } else {
            format!("{} {name} = {value};", self.t.int_ty)
        }
    }
    /// Without `PG_H`, like [`Spelling::load_index`].
    fn let_index(&self, name: &str, value: &str) -> String {
        format!("float {name} = {value};")
    }
    fn var(&self, name: &str, value: &str) -> String {
        format!("float {name} = {value};")
    }
    fn for_open(&self, name: &str, lo: &str, hi: &str, bound: Bound) -> String {
        if self.t.constant_loops {
            let max = match bound {
                Bound::Window => "MAX_WINDOW",
                Bound::Loop => "MAX_LOOP",
            };
            format!("for (float d_{name} = 0.0; d_{name} < {max}; d_{name} += 1.0) {{ float {name} = {lo} + d_{name}; if ({name} >= {hi}) break;")
        } else {
            format!("for (int {name} = {lo}; {name} < {hi}; {name}++) {{")
        }
    }
    fn declarations(&self, p: &Program) -> String {
        let mut s = format!("// {}: rendered from its definition (pixelgrad_core::kernel::programs).\n", p.name);
        for name in &p.inputs {
            s.push_str(&format!("uniform highp sampler2D u_{name};\n"));
            if self.t.sized_fetch {
                s.push_str(&format!("uniform vec2 u_{name}_size;\n"));
            }
        }
        for name in &p.params {
            s.push_str(&format!("uniform {} u_{name};\n", self.t.int_ty));
        }
        s
    }
    fn function(&self, body: &str, result: &str) -> String {
        format!("float compute({} i) {{\n{body}    return {result};\n}}\n", self.t.int_ty)
    }
}

/// A hand-written variant of a program for one case, kept where a measured speed needs it
/// (GLSL ES 3.00 only; the numbers are in each file).
pub struct FastPath {
    pub program: KernelProgram,
    pub file: &'static str,
    pub source: &'static str,
    /// The `CONFIG`s the file implements: `1..=configs`.
    pub configs: u32,
}

/// Every fast path. A program without one is only rendered.
pub const FAST_PATHS: &[FastPath] = &[
    FastPath {
        program: KernelProgram::Window(WindowProgram::MaxPool),
        file: "max_pool_fast.glsl",
        source: include_str!("shaders/max_pool_fast.glsl"),
        configs: 1,
    },
    FastPath {
        program: KernelProgram::Window(WindowProgram::MaxPoolGrad),
        file: "max_pool_grad_fast.glsl",
        source: include_str!("shaders/max_pool_grad_fast.glsl"),
        configs: 2,
    },
    FastPath {
        program: KernelProgram::Column(ColumnProgram::Im2Col),
        file: "im2col_fast.glsl",
        source: include_str!("shaders/im2col_fast.glsl"),
        configs: 1,
    },
    FastPath {
        program: KernelProgram::Column(ColumnProgram::Col2Im),
        file: "col2im_fast.glsl",
        source: include_str!("shaders/col2im_fast.glsl"),
        configs: 2,
    },
];

/// Number of configs of a program in `version`: the rendered program (0) and its
/// hand-written fast paths.
pub fn configs(which: KernelProgram, version: GlslVersion) -> u32 {
    match version {
        GlslVersion::Es100 => 1,
        GlslVersion::Es300 => 1 + fast_path(which).map_or(0, |f| f.configs),
    }
}

fn fast_path(which: KernelProgram) -> Option<&'static FastPath> {
    FAST_PATHS.iter().find(|f| f.program == which)
}

/// The body of program `which` in `version` (the dialect adds preamble and `main`): its
/// uniforms, then `compute` rendered from the definition (config 0) or the fast path.
pub fn program_body(which: KernelProgram, version: GlslVersion, config: u32) -> Option<String> {
    let r = render_program(&which.program(), &Glsl { t: version.table(), fused: false });
    if config == 0 {
        return Some(format!("{}{}", r.declarations, r.function));
    }
    if version != GlslVersion::Es300 || config >= configs(which, version) {
        return None;
    }
    let fast = fast_path(which)?.source;
    Some(format!("{}{fast}", r.declarations))
}

/// The body of program `which` in `version` reading its input 0 through `pg_load(i)`, a fused
/// read of a pending elementwise computation that the source defines before it (a reduction's
/// fused prologue). Its sampler is still declared (unbound).
pub fn fused_program_body(which: KernelProgram, version: GlslVersion) -> String {
    let r = render_program(&which.program(), &Glsl { t: version.table(), fused: true });
    format!("{}{}", r.declarations, r.function)
}
