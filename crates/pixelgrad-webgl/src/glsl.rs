//! One GLSL source for both WebGL modes: every difference between GLSL ES 3.00 (WebGL2) and
//! GLSL ES 1.00 (the `webgl1` mode) is one [`GlslVersion`] value's [`Table`]. Its Rust side
//! spells the kernel IR's programs with loops (`pixelgrad_core::kernel::program`); its GLSL
//! side ([`Table::macros`], the [`Table::prologue`] of every source) lets one `shaders/*.glsl`
//! file serve both versions (`fill`, `view`, `concat`, `check_index`, `widen`, `matmul`, the
//! header, the elementwise entry point and the vertex shader).

use pixelgrad_core::kernel::columns::ColumnProgram;
use pixelgrad_core::kernel::program::{Bound, Program};
use pixelgrad_core::kernel::program_render::{render_program, Spelling};
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::reductions::{ReduceProgram, Scan};
use pixelgrad_core::kernel::windows::WindowProgram;

/// Which GLSL the program is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GlslVersion {
    /// GLSL ES 3.00 (WebGL2).
    Es300,
    /// GLSL ES 1.00 (the `webgl1` mode; see [`crate::gl1`] for its rules).
    Es100,
}

/// Everything the two versions write differently: the Rust side (how the kernel IR's programs
/// are spelled) and the GLSL side, [`Table::macros`], defined at the top of every source so
/// that one file (`shaders/*.glsl`) serves both versions.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    /// The `#version` line.
    pub version: &'static str,
    /// Defined (to 1) in this version's sources: `PG_ES300` or `PG_ES100`. A file keeps an
    /// algorithm of one version only under `#ifdef PG_ES300` / `#else` (where ES 1.00 needs a
    /// different one: the matmul, the 8-bit widen, the helpers reading textures).
    pub flag: &'static str,
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
    /// The GLSL spellings of the differences, as `#define`s (name with parameters, value):
    /// - `INDEX`, `IVEC2`: an index and a pair of indices (`int` / `float`);
    /// - `IX(n)`: index literal `n` (`float(n)` in ES 1.00, folded by the compiler);
    /// - `PG_DIV(a, b)`, `PG_MOD(a, b)`: quotient and remainder of whole numbers (`/`, `%`;
    ///   ES 1.00: `pg_divmod`, exact float division);
    /// - `SAMPLER(s, size)`, `FETCH(s, size, i)`: a tensor sampler's declaration and element `i`
    ///   (ES 1.00 has no `textureSize`: a `vec2` size uniform comes with each sampler and
    ///   `fetch` reads with `texture2D` at the texel centre; ES 3.00 ignores `size` and reads
    ///   with `texelFetch`);
    /// - `PG_ISNAN(x)`: NaN test (`isnan`; ES 1.00: the header's arithmetic `pg_isnan`);
    /// - `PG_WRITE(v)`: the fragment's output (`o_color`, a `layout(location = 0) out`; ES 1.00:
    ///   `gl_FragColor`, through `pg_out`, which keeps the computation highp);
    /// - `PG_FOR(v, n, BOUND) { .. }`: index `v` from 0 while below `n` (ES 1.00: the
    ///   constant bound `BOUND` and a `break` at `n`, Appendix A's loop form; the statement
    ///   after the macro is the loop's body);
    /// - `PG_FOR_DOWN(v, hi, lo) { .. }`: int `v` from the constant `hi` down to `lo` >= 0
    ///   (ES 1.00: down to 0 with a `break`).
    pub macros: &'static [(&'static str, &'static str)],
}

const ES300_MACROS: &[(&str, &str)] = &[
    ("INDEX", "int"),
    ("IVEC2", "ivec2"),
    ("IX(n)", "(n)"),
    ("PG_DIV(a, b)", "((a) / (b))"),
    ("PG_MOD(a, b)", "((a) % (b))"),
    ("SAMPLER(s, size)", "uniform highp sampler2D s"),
    ("FETCH(s, size, i)", "fetch(s, i)"),
    ("PG_ISNAN(x)", "(isnan(x) || !((x) == (x)))"),
    ("PG_WRITE(v)", "o_color = (v)"),
    ("PG_FOR(v, n, BOUND)", "for (int v = 0; v < (n); ++v)"),
    ("PG_FOR_DOWN(v, hi, lo)", "for (int v = hi; v >= (lo); --v)"),
];

const ES100_MACROS: &[(&str, &str)] = &[
    ("INDEX", "float"),
    ("IVEC2", "vec2"),
    ("IX(n)", "float(n)"),
    ("PG_DIV(a, b)", "pg_divmod(a, b).x"),
    ("PG_MOD(a, b)", "pg_divmod(a, b).y"),
    ("SAMPLER(s, size)", "uniform highp sampler2D s; uniform vec2 size"),
    ("FETCH(s, size, i)", "fetch(s, size, i)"),
    ("PG_ISNAN(x)", "pg_isnan(x)"),
    ("PG_WRITE(v)", "gl_FragColor = pg_out(v)"),
    ("PG_FOR(v, n, BOUND)", "for (float v = 0.0; v < BOUND; v += 1.0) if (v >= (n)) break; else"),
    ("PG_FOR_DOWN(v, hi, lo)", "for (int v = hi; v >= 0; --v) if (float(v) < (lo)) break; else"),
];

impl GlslVersion {
    pub fn table(self) -> Table {
        match self {
            GlslVersion::Es300 => Table {
                version: "#version 300 es",
                flag: "PG_ES300",
                int_ty: "int",
                int_suffix: "",
                sized_fetch: false,
                divmod: false,
                constant_loops: false,
                bit_access: true,
                macros: ES300_MACROS,
            },
            GlslVersion::Es100 => Table {
                version: "#version 100",
                flag: "PG_ES100",
                int_ty: "float",
                int_suffix: ".0",
                sized_fetch: true,
                divmod: true,
                constant_loops: true,
                bit_access: false,
                macros: ES100_MACROS,
            },
        }
    }
}
/// The shared helpers of every fragment program, both versions (`PG_ES300` / `PG_ES100`
/// sections where the algorithm differs).
pub const HEADER: &str = include_str!("shaders/header.glsl");
/// The entry point of the programs computing one element at a time (`float compute(INDEX i)`).
pub const MAIN_ELEMENTWISE: &str = include_str!("shaders/main_elementwise.glsl");
const VERTEX: &str = include_str!("shaders/fullscreen.vert");
/// highp everywhere: index arithmetic needs 32-bit ints (ES 3.00) or 24-bit exact floats
/// (ES 1.00), and training needs f32. Whether the fragment stage really has highp is measured
/// at init (`caps`, `legacy.rs`).
const PRECISION: &str = "precision highp float;\nprecision highp int;\nprecision highp sampler2D;\n";

impl Table {
    /// The start of every source of this version: the `#version` line, the precision
    /// qualifiers, the version's flag and its [`Table::macros`].
    pub fn prologue(&self) -> String {
        let mut s = format!("{}\n{PRECISION}#define {} 1\n", self.version, self.flag);
        for (name, value) in self.macros {
            s.push_str(&format!("#define {name} {value}\n"));
        }
        s
    }
}

/// The vertex shader shared by every program of `version` (`shaders/fullscreen.vert`).
pub fn vertex_source(version: GlslVersion) -> String {
    format!("{}{VERTEX}", version.table().prologue())
}

/// The start of every fragment source of `version` before the header: the prologue, the
/// `MAX_RANK` and `CONFIG` defines.
pub fn fragment_prologue(version: GlslVersion, config: u32) -> String {
    format!("{}#define MAX_RANK {}\n#define CONFIG {config}\n", version.table().prologue(), pixelgrad_core::MAX_RANK)
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
    /// fused read, its `pg_load4` (a reduction reads texels only where the read has one:
    /// [`fused_program_body`]).
    fn load4(&self, i: usize, name: &str, at: &str, names: [&str; 4]) -> Vec<String> {
        let q = format!("q_{}", names[0]);
        let mut out = Vec::new();
        if self.fused && i == 0 {
            out.push(format!("vec4 {q} = pg_load4({at});"));
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

/// The body of reduction pass `which` in `version` reading its input 0 through `pg_load(i)`,
/// a fused read of a pending elementwise computation that the source defines before it (a
/// reduction's fused prologue). Its sampler is still declared (unbound).
///
/// A consecutive group is read a texel at a time only where the fused read has `pg_load4`
/// (four `pg_load`s would write a large fused kernel out four more times per output lane,
/// which took llvmpipe minutes to compile); otherwise the preprocessor keeps the pass that
/// scans elements only ([`Scan::Elements`]), so no compiler ever sees a texel loop that
/// cannot run: SwiftShader took minutes over such a dead loop of four broadcast fused reads
/// (bench/notes/2026-12-07-reductions-texel-loop.md).
pub fn fused_program_body(which: ReduceProgram, version: GlslVersion) -> String {
    let spell = Glsl { t: version.table(), fused: true };
    let both = render_program(&which.program_with(Scan::Both), &spell);
    let elements = render_program(&which.program_with(Scan::Elements), &spell);
    format!("{}#ifdef PG_LOAD4\n{}#else\n{}#endif\n", both.declarations, both.function, elements.function)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_reductions_read_texels_only_through_pg_load4() {
        for v in [GlslVersion::Es300, GlslVersion::Es100] {
            for r in ReduceProgram::ALL {
                let body = fused_program_body(r, v);
                // With pg_load4: the texel loop reads through it and the element loop through
                // pg_load; without: one loop, reading each element once through pg_load.
                let (texels, elements) = body.split_once("#ifdef PG_LOAD4\n").and_then(|(_, b)| b.split_once("#else\n")).unwrap();
                let elements = elements.strip_suffix("#endif\n").unwrap();
                assert_eq!(texels.matches("pg_load4(").count(), 1, "{r:?} {v:?}\n{texels}");
                assert_eq!(texels.matches("for (").count(), 2, "{r:?} {v:?}\n{texels}");
                assert_eq!(elements.matches("for (").count(), 1, "{r:?} {v:?}\n{elements}");
                assert!(!elements.contains("pg_load4") && !elements.contains("fetch4"), "{r:?} {v:?}\n{elements}");
                // Argmax loads its group's first element besides the loop's.
                let once = if r == ReduceProgram::ArgMax { 2 } else { 1 };
                assert_eq!(elements.matches("pg_load(").count(), once, "{r:?} {v:?}\n{elements}");
            }
        }
    }

    #[test]
    fn both_versions_define_the_same_macros() {
        let names = |v: GlslVersion| v.table().macros.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        assert_eq!(names(GlslVersion::Es300), names(GlslVersion::Es100));
        for v in [GlslVersion::Es300, GlslVersion::Es100] {
            let p = v.table().prologue();
            assert!(p.starts_with(&format!("{}\nprecision highp float;\n", v.table().version)), "{p}");
            assert!(p.contains(&format!("#define {} 1\n", v.table().flag)));
        }
    }
}
