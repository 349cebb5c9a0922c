//! The GLSL ES 3.00 (WebGL2) side of the programs: how a program's source is assembled from
//! `shaders/*.glsl` (after the prologue of [`crate::glsl::Table`], which holds what the two
//! GLSL versions write differently, and the shared helpers of `shaders/header.glsl`), and how
//! the kernel IR's primitives are spelled ([`Glsl300`]: every elementwise function is
//! rendered from its one definition in `pixelgrad_core::kernel::defs`). Everything else names
//! a program by a [`ProgramSpec`] and never writes GLSL text.

use pixelgrad_core::kernel::ir::{DType, Kernel};
use pixelgrad_core::kernel::lower::{Prim1, Prim2};
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::reductions::ReduceProgram;
use pixelgrad_core::kernel::render::{render_function, Dialect};

use crate::glsl::GlslVersion;

/// Highest tensor rank the index helpers handle (shape uniforms are arrays of this length):
/// the engine-wide limit.
pub const MAX_RANK: usize = pixelgrad_core::MAX_RANK;

use crate::glsl::{HEADER, MAIN_ELEMENTWISE};

/// Every hand-written fragment program body, by name (the names are also cache keys and
/// pass-log labels). The programs with loops ([`KernelProgram`]: windows, gathers, scatters,
/// reductions) are rendered instead ([`crate::glsl`]).
pub const BODIES: &[(&str, &str)] = &[
    ("fill", include_str!("shaders/fill.glsl")),
    ("random", include_str!("shaders/random.glsl")),
    ("matmul", include_str!("shaders/matmul.glsl")),
    ("matmul_pack", include_str!("shaders/matmul_pack.glsl")),
    ("matmul_block_pack", include_str!("shaders/matmul_block_pack.glsl")),
    ("matmul_block", include_str!("shaders/matmul_block.glsl")),
    ("matmul_unblock", include_str!("shaders/matmul_unblock.glsl")),
    ("view", include_str!("shaders/view.glsl")),
    ("concat", include_str!("shaders/concat.glsl")),
    ("heatmap", include_str!("shaders/heatmap.glsl")),
    ("check_index", include_str!("shaders/check_index.glsl")),
    ("from_pixels", concat!(include_str!("shaders/from_pixels_common.glsl"), include_str!("shaders/from_pixels.glsl"))),
    ("from_pixels_rows", concat!(include_str!("shaders/from_pixels_common.glsl"), include_str!("shaders/from_pixels_rows.glsl"))),
    ("widen", include_str!("shaders/widen.glsl")),
    ("matmul_i8", include_str!("shaders/matmul_i8.glsl")),
    ("matmul_nbits", include_str!("shaders/matmul_nbits.glsl")),
    ("narrow_f16", include_str!("shaders/narrow_f16.glsl")),
    ("narrow8", include_str!("shaders/narrow8.glsl")),
    ("yuv_to_rgba", include_str!("shaders/yuv_to_rgba.glsl")),
];

/// How a body is driven: one `float compute(int i)` per element, or its own `main`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Elementwise,
    OwnMain,
}

/// Which program to run: a body name plus a small configuration (an opcode or a fast-path
/// flag), turned into `#define CONFIG n`, and for elementwise programs ([`MAP`]) the number
/// of the kernel in the backend's registry of rendered kernels. The spec is the cache key;
/// shapes are never part of it, they are uniforms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProgramSpec {
    pub name: &'static str,
    pub config: u32,
    /// Registry number of the rendered kernel ([`MAP`] programs; 0 otherwise).
    pub kernel: u32,
}

/// Body name of the elementwise programs rendered from the kernel IR.
pub const MAP: &str = "map";

impl ProgramSpec {
    pub fn new(name: &'static str, config: u32) -> Self {
        ProgramSpec { name, config, kernel: 0 }
    }

    /// An elementwise program: kernel `kernel` of the registry with `config`
    /// ([`map_config`]).
    pub fn map(kernel: u32, config: u32) -> Self {
        ProgramSpec { name: MAP, config, kernel }
    }

    /// Bodies that write whole texels themselves (matmul's 4 accumulators, its operand repacking,
    /// the heatmap's pixels).
    pub fn entry(&self) -> Entry {
        match self.name {
            "matmul" | "matmul_pack" | "matmul_block_pack" | "matmul_block" | "matmul_unblock" | "heatmap" | "matmul_i8" | "narrow_f16"
            | "narrow8" | "from_pixels_rows" | "yuv_to_rgba" | "matmul_nbits" => Entry::OwnMain,
            _ => Entry::Elementwise,
        }
    }
}

impl ProgramSpec {
    /// A readable label for logs: the body name plus what its config means (elementwise
    /// programs are labelled by the backend, which knows what each kernel is).
    pub fn label(&self) -> String {
        // A reduction with an epilogue: its pass, by `reduce_config`.
        const REDUCE: [&str; 6] = ["sum", "max", "min", "log_sum_exp", "argmax", "first_equal"];
        const RANDOM: [&str; 2] = ["uniform", "normal"];
        const MATMUL: [&str; 6] = ["nn", "nt", "nt_any", "strided", "nt_shift", "nn_shift"];
        const WIDEN: [&str; 3] = ["i8", "u8", "f16"];
        const MATMUL_I8: [&str; 4] = ["i8", "u8", "i8_k4", "u8_k4"];
        const MATMUL_NBITS: [&str; 8] = ["8bit", "4bit", "8bit_t", "4bit_t", "8bit_k4", "4bit_k4", "8bit_t", "4bit_t"];
        // Config 0 (packed operands) keeps the plain name.
        const MATMUL_BLOCK: [&str; 4] = ["", "nn", "nt", "tn"];
        let table: &[&str] = match self.name {
            "matmul_block" => &MATMUL_BLOCK,
            "widen" => &WIDEN,
            "matmul_i8" => &MATMUL_I8,
            "matmul_nbits" => &MATMUL_NBITS,
            "reduce" => &REDUCE,
            "random" => &RANDOM,
            "matmul" => &MATMUL,
            _ => &[],
        };
        match table.get(self.config as usize) {
            Some(c) if !c.is_empty() => format!("{}.{c}", self.name),
            _ => self.name.to_string(),
        }
    }
}

/// `src` (a fragment source of either GLSL version) with the precision emulation on
/// ([`crate::WebGlOptions::emulate_precision`]): `PG_HALF` defined after the precision lines,
/// so the headers' `PG_H` / `PG_H4` round to half.
pub fn emulate_half(src: &str) -> String {
    src.replacen("precision highp int;\n", "precision highp int;\n#define PG_HALF 1\n", 1)
}

/// The vertex shader shared by every program (a full-screen triangle from `gl_VertexID`).
pub fn vertex_source() -> String {
    crate::glsl::vertex_source(GlslVersion::Es300)
}

/// The start of every fragment program: version, precision, the dialect table's defines
/// ([`crate::glsl::Table`]), the `MAX_RANK` and `CONFIG` defines and the shared helpers. `out`:
/// what the program's output is, a `vec4` or, into an integer texture, a `uvec4`
/// (`PG_OUT_UINT`) or an `ivec4` (`PG_OUT_INT`).
fn preamble(config: u32, out: OutKind) -> String {
    let mut s = crate::glsl::fragment_prologue(GlslVersion::Es300, config);
    match out {
        OutKind::Float => {}
        OutKind::Uint => s.push_str("#define PG_OUT_UINT 1\n"),
        OutKind::Int => s.push_str("#define PG_OUT_INT 1\n"),
    }
    s.push_str(HEADER);
    s
}

/// The type of a program's output texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutKind {
    /// `vec4`, into a float texture: every tensor program but the narrowing ones.
    Float,
    /// `uvec4`, into `RGBA16UI` (`narrow_f16`) or `RGBA8UI` (`narrow8`'s u8 and pixel configs).
    Uint,
    /// `ivec4`, into `RGBA8I` (`narrow8` CONFIG 0, i8).
    Int,
}

impl ProgramSpec {
    /// What the program draws: `narrow_f16` and `narrow8` draw into integer textures.
    pub fn out_kind(&self) -> OutKind {
        match (self.name, self.config) {
            ("narrow8", 0) => OutKind::Int,
            ("narrow_f16" | "narrow8", _) => OutKind::Uint,
            _ => OutKind::Float,
        }
    }
}

/// The full fragment source of a program with a `shaders/*.glsl` body, or `None` for an
/// unknown body name ([`MAP`] programs come from [`map_source`]).
pub fn fragment_source(spec: &ProgramSpec) -> Option<String> {
    if let Some(w) = KernelProgram::by_name(spec.name) {
        let body = crate::glsl::program_body(w, GlslVersion::Es300, spec.config)?;
        return Some(format!("{}{body}{MAIN_ELEMENTWISE}", preamble(spec.config, OutKind::Float)));
    }
    let body = BODIES.iter().find(|(n, _)| *n == spec.name)?.1;
    let mut s = preamble(spec.config, spec.out_kind());
    if spec.name == "random" {
        // The Box-Muller transform, rendered from its one definition.
        s.push_str(&render_function(&pixelgrad_core::kernel::defs::box_muller_kernel().ok()?, &Glsl300, "pg_box_muller").ok()?);
    }
    s.push_str(body);
    if spec.entry() == Entry::Elementwise {
        s.push_str(MAIN_ELEMENTWISE);
    }
    Some(s)
}

/// Most inputs and parameters of an elementwise program (sampler and uniform names below).
pub const MAP_MAX_INPUTS: usize = 8;
pub const MAP_MAX_PARAMS: usize = 16;
/// Uniform names of an elementwise program: input samplers, their broadcast strides, the
/// scalar parameters.
pub const MAP_INPUTS: [&str; MAP_MAX_INPUTS] = ["u_x0", "u_x1", "u_x2", "u_x3", "u_x4", "u_x5", "u_x6", "u_x7"];
pub const MAP_STRIDES: [&str; MAP_MAX_INPUTS] = ["u_s0", "u_s1", "u_s2", "u_s3", "u_s4", "u_s5", "u_s6", "u_s7"];
pub const MAP_PARAMS: [&str; MAP_MAX_PARAMS] =
    ["u_p0", "u_p1", "u_p2", "u_p3", "u_p4", "u_p5", "u_p6", "u_p7", "u_p8", "u_p9", "u_p10", "u_p11", "u_p12", "u_p13", "u_p14", "u_p15"];

/// The `CONFIG` of an elementwise program: bit 0 set when no input needs index arithmetic
/// (each has the output's shape or one element). With bit 0, bit `1 + i` marks input `i` as
/// one element; without it (a broadcast read), as having the output's shape, and
/// [`MAP_TEXEL_RUNS`] may be set.
pub fn map_config(fast: bool, scalars: u32) -> u32 {
    u32::from(fast) | (scalars << 1)
}

/// A broadcast read's config bit: the output's last axis is a multiple of 4 long, so the 4
/// elements of a texel share one run of it and are read texel by texel (`pg_load4`).
pub const MAP_TEXEL_RUNS: u32 = 1 << (MAP_MAX_INPUTS + 1);

/// The declarations of a fused read of `kernel` (input samplers, `u_shape`, strides and
/// parameter uniforms, `pg_apply(a0, a1, ..)`) and `float pg_load(int i)`: element `i` of the
/// result, each input fetched at its broadcast index (right-aligned shapes padded to
/// `MAX_RANK`, stride 0 on broadcast axes; the index loop stops once the remaining
/// coordinates are all 0). `config` names the macro holding its [`map_config`].
fn fused_read(kernel: &Kernel, config: &str) -> pixelgrad_core::Result<String> {
    read_function(kernel, config, None)
}

/// The declarations and read function of a fused read of `kernel`: `float pg_load(int i)`
/// (`fused_read`) or, with `given`, `float pg_epi(int i, float g)` where kernel input
/// `given` is the value `g` and every other input is fetched (samplers `u_x0..` in order,
/// skipping `given`: an epilogue's read, [`epilogue_source`]).
fn read_function(kernel: &Kernel, config: &str, given: Option<usize>) -> pixelgrad_core::Result<String> {
    let n = kernel.inputs().len();
    let fetched = n - usize::from(given.is_some_and(|g| g < n));
    if fetched > MAP_MAX_INPUTS || kernel.params() > MAP_MAX_PARAMS || given.is_some_and(|g| g >= n) {
        return Err(pixelgrad_core::Error::invalid(
            "GLSL kernel",
            format!(
                "{n} inputs (given {given:?}) and {} parameters; at most {MAP_MAX_INPUTS} fetched and {MAP_MAX_PARAMS}",
                kernel.params()
            ),
        ));
    }
    let mut s = String::from("// Fused read rendered from the kernel IR (pixelgrad_core::kernel).\n");
    for name in &MAP_INPUTS[..fetched] {
        s.push_str(&format!("uniform highp sampler2D {name};\n"));
    }
    s.push_str("uniform int u_shape[MAX_RANK];\n");
    for name in &MAP_STRIDES[..fetched] {
        s.push_str(&format!("uniform int {name}[MAX_RANK];\n"));
    }
    for name in &MAP_PARAMS[..kernel.params()] {
        s.push_str(&format!("uniform float {name};\n"));
    }
    s.push_str(&render_function(kernel, &Glsl300, "pg_apply")?);
    // Kernel input j is sampler c: the inputs before `given` keep their number, those after
    // it move down one.
    let args = |fetch: &dyn Fn(usize) -> String| -> String {
        (0..n)
            .map(|j| match given {
                Some(g) if j == g => "g".to_string(),
                Some(g) if j > g => fetch(j - 1),
                _ => fetch(j),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let signature = if given.is_some() { "float pg_epi(int i, float g)" } else { "float pg_load(int i)" };
    s.push_str(&format!("\n{signature} {{\n#if ({config} & 1) != 0\n"));
    s.push_str(&format!(
        "    return pg_apply({});\n#else\n",
        args(&|c| format!("fetch({}, ({config} & {}) != 0 ? 0 : i)", MAP_INPUTS[c], 2 << c))
    ));
    // Broadcast form: bit 1 + c of the config marks input c as having the output's shape
    // (read at i, no index arithmetic); the others are indexed through their strides.
    let full = |c: usize| format!("({config} & {}) != 0", 2 << c);
    s.push_str(&index_loop(fetched, &full, "i"));
    s.push_str(&format!("    return pg_apply({});\n#endif\n}}\n", args(&|c| format!("fetch({}, {} ? i : i{c})", MAP_INPUTS[c], full(c)))));
    {
        // Four consecutive elements from i (i % 4 == 0; past the end they are garbage, never
        // out of range) when the fast form or whole-texel runs of the last axis
        // (`MAP_TEXEL_RUNS`) allow: whole texels of the inputs read at i, one index
        // computation for the others (their lanes step by the last axis's stride), and the
        // kernel applied to each lane. An epilogue's is `pg_epi4(i, g)`, g the 4 given values.
        let (define, signature) =
            if given.is_some() { ("PG_EPI4", "vec4 pg_epi4(int i, vec4 g)") } else { ("PG_LOAD4", "vec4 pg_load4(int i)") };
        s.push_str(&format!(
            "\n#if ({config} & 1) != 0 || ({config} & {MAP_TEXEL_RUNS}) != 0\n#define {define}\n{signature} {{\n#if ({config} & 1) != 0\n"
        ));
        for (c, x) in MAP_INPUTS[..fetched].iter().enumerate() {
            s.push_str(&format!("    vec4 a{c} = ({config} & {}) != 0 ? vec4(fetch({x}, 0)) : fetch4({x}, i >> 2);\n", 2 << c));
        }
        s.push_str("#else\n");
        s.push_str(&index_loop(fetched, &full, "i"));
        for c in 0..fetched {
            let (x, st) = (MAP_INPUTS[c], MAP_STRIDES[c]);
            s.push_str(&format!("#if {}\n    vec4 a{c} = fetch4({x}, i >> 2);\n#else\n", full(c)));
            s.push_str(&format!("    int s{c} = {st}[MAX_RANK - 1];\n"));
            s.push_str(&format!(
                "    vec4 a{c} = s{c} == 0 ? vec4(fetch({x}, i{c})) : vec4(fetch({x}, i{c}), fetch({x}, i{c} + s{c}), fetch({x}, i{c} + 2 * s{c}), fetch({x}, i{c} + 3 * s{c}));\n#endif\n"
            ));
        }
        s.push_str("#endif\n");
        let lane = |l: &str| {
            (0..n)
                .map(|j| match given {
                    Some(g) if j == g => format!("g.{l}"),
                    Some(g) if j > g => format!("a{}.{l}", j - 1),
                    _ => format!("a{j}.{l}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "    return vec4(pg_apply({}), pg_apply({}), pg_apply({}), pg_apply({}));\n}}\n#endif\n",
            lane("x"),
            lane("y"),
            lane("z"),
            lane("w")
        ));
    }
    Ok(s)
}

/// GLSL declaring `int i0 .. i{fetched-1}` and setting each to its input's element index for
/// output element `at` (from `u_shape` and the inputs' strides), skipping the inputs `full`
/// marks (read at the output's index).
fn index_loop(fetched: usize, full: &dyn Fn(usize) -> String, at: &str) -> String {
    let mut s = format!("    int rest = {at};\n");
    for c in 0..fetched {
        s.push_str(&format!("    int i{c} = 0;\n"));
    }
    s.push_str("    for (int d = MAX_RANK - 1; d >= 0; --d) {\n        if (rest == 0) break;\n");
    s.push_str("        int c = rest % u_shape[d];\n        rest /= u_shape[d];\n");
    for (c, name) in MAP_STRIDES[..fetched].iter().enumerate() {
        s.push_str(&format!("#if !({})\n        i{c} += c * {name}[d];\n#endif\n", full(c)));
    }
    s.push_str("    }\n");
    s
}

/// The fragment source of an elementwise program: a fused read of `kernel` (`fused_read`)
/// written element by element; `config` is its [`map_config`].
pub fn map_source(kernel: &Kernel, config: u32) -> pixelgrad_core::Result<String> {
    let mut s = preamble(config, OutKind::Float);
    s.push_str(&fused_read(kernel, "CONFIG")?);
    s.push_str("\nfloat compute(int i) {\n    return pg_load(i);\n}\n");
    s.push_str("#ifdef PG_LOAD4\n#define PG_COMPUTE4\nvec4 compute4(int i) {\n    return pg_load4(i);\n}\n#endif\n");
    s.push_str(MAIN_ELEMENTWISE);
    Ok(s)
}

/// Body name of a reduction pass whose input is a fused read of a pending elementwise
/// computation: its `config` is the pass's [`reduce_config`] in the low 4 bits and the read's
/// [`map_config`] above them.
pub const REDUCE_FUSED: &str = "reduce_fused";

/// The number of reduction pass `which` in the `config` of [`REDUCE_FUSED`] and
/// [`REDUCE_EPI`] specs (its place in [`ReduceProgram::ALL`], below 8).
pub fn reduce_config(which: ReduceProgram) -> u32 {
    ReduceProgram::ALL.iter().position(|p| *p == which).unwrap_or(0) as u32
}

/// The reduction pass of [`reduce_config`] `config`.
pub fn reduce_of_config(config: u32) -> pixelgrad_core::Result<ReduceProgram> {
    ReduceProgram::ALL
        .get(config as usize)
        .copied()
        .ok_or_else(|| pixelgrad_core::Error::invalid("GLSL reduction", format!("no reduction pass {config}")))
}

/// The fragment source of a [`REDUCE_FUSED`] pass: the reduction program (rendered from its
/// definition, `pixelgrad_core::kernel::reductions`) loading its input through a fused read of
/// `kernel` instead of its sampler.
pub fn reduce_fused_source(kernel: &Kernel, config: u32) -> pixelgrad_core::Result<String> {
    let which = reduce_of_config(config & 15)?;
    let mut s = preamble(config & 15, OutKind::Float);
    s.push_str(&format!("#define MAP_CONFIG {}\n", config >> 4));
    s.push_str(&fused_read(kernel, "MAP_CONFIG")?);
    s.push_str(&crate::glsl::fused_program_body(which, GlslVersion::Es300));
    s.push_str(MAIN_ELEMENTWISE);
    Ok(s)
}

/// Body names of the matmul passes that write the flat product (`matmul.glsl` and the 4x4
/// block path's `matmul_unblock.glsl`) drawn with an *epilogue*: a pending elementwise
/// computation that reads the product (a bias add and activation, an optimizer update) is
/// applied to each product value as it is stored and written to a second render target, so
/// the chain needs no draw of its own. The spec's `config` packs the body's config (3 bits),
/// which kernel input is the product (3 bits) and the [`map_config`] of the other inputs
/// (`epilogue_config`); its `kernel` is the epilogue kernel's registry number.
pub const MATMUL_EPI: &str = "matmul_epi";
pub const MATMUL_UNBLOCK_EPI: &str = "matmul_unblock_epi";
/// The last pass of a reduction tree with an epilogue (a bias's update from its summed
/// gradient), `config` and `kernel` as for [`MATMUL_EPI`] (the body's config is the pass's
/// [`reduce_config`]).
pub const REDUCE_EPI: &str = "reduce_epi";

/// The body an epilogue program name draws (`None`: not one).
pub fn epilogue_body(name: &str) -> Option<&'static str> {
    match name {
        MATMUL_EPI => Some("matmul"),
        MATMUL_UNBLOCK_EPI => Some("matmul_unblock"),
        REDUCE_EPI => Some("reduce"),
        _ => None,
    }
}

/// The `config` of a [`MATMUL_EPI`] / [`MATMUL_UNBLOCK_EPI`] / [`REDUCE_EPI`] spec.
pub fn epilogue_config(body_config: u32, given: usize, read_config: u32) -> u32 {
    body_config | ((given as u32) << 3) | (read_config << 6)
}

/// The fragment source of a pass with an epilogue (see [`MATMUL_EPI`], [`REDUCE_EPI`]): the body
/// (`matmul`, `matmul_unblock` or `reduce`) compiled with `PG_EPILOGUE`, a second output, and
/// `vec4 pg_epilogue(int base, vec4 r)`: the kernel applied to the 4 product values `r` of
/// elements `base..base+3`, kernel input `given` being the product value and every other
/// input fetched as a fused read does (`fused_read`; samplers `u_x0..` in order, skipping
/// the product).
pub fn epilogue_source(body: &str, kernel: &Kernel, config: u32) -> pixelgrad_core::Result<String> {
    let bad = |what: String| pixelgrad_core::Error::invalid("GLSL epilogue", what);
    // The reduction is a program rendered from its definition, driven by
    // main_elementwise.glsl, which writes the epilogue too.
    let (text, entry) = if body == "reduce" {
        let which = KernelProgram::Reduce(reduce_of_config(config & 7)?);
        (
            crate::glsl::program_body(which, GlslVersion::Es300, 0).ok_or_else(|| bad(format!("no program {}", which.name())))?,
            MAIN_ELEMENTWISE,
        )
    } else {
        let text = BODIES.iter().find(|(n, _)| *n == body).map(|(_, b)| *b).ok_or_else(|| bad(format!("no body {body}")))?;
        (text.to_string(), "")
    };
    let given = ((config >> 3) & 7) as usize;
    let n = kernel.inputs().len();
    if given >= n || n > MAP_MAX_INPUTS + 1 || kernel.params() > MAP_MAX_PARAMS {
        return Err(bad(format!("product is input {given} of {n}; {} parameters", kernel.params())));
    }
    let mut s = preamble(config & 7, OutKind::Float);
    s.push_str(&format!("#define PG_EPILOGUE 1\n#define MAP_CONFIG {}\n", config >> 6));
    s.push_str("layout(location = 1) out vec4 o_color1;\n");
    s.push_str(&read_function(kernel, "MAP_CONFIG", Some(given))?);
    s.push_str("\nvec4 pg_epilogue(int base, vec4 r) {\n    vec4 e = vec4(0.0);\n#ifdef PG_EPI4\n");
    s.push_str("    e = pg_epi4(base, r);\n");
    s.push_str("    if (base + 3 >= u_out_n) e = mix(vec4(0.0), e, lessThan(ivec4(base) + ivec4(0, 1, 2, 3), ivec4(u_out_n)));\n#else\n");
    for (j, c) in ["x", "y", "z", "w"].iter().enumerate() {
        s.push_str(&format!("    if (base + {j} < u_out_n) e.{c} = pg_epi(base + {j}, r.{c});\n"));
    }
    s.push_str("#endif\n    return e;\n}\n\n");
    s.push_str(&text);
    s.push_str(entry);
    Ok(s)
}

/// Matmul passes with an epilogue, labelled, for offline validation: every elementwise
/// definition on the strided kernel (fast and broadcast reads), and every definition of two
/// inputs with the product as either input on each body and config of both product passes.
pub fn all_epilogue_sources() -> pixelgrad_core::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (label, k) in pixelgrad_core::kernel::defs::all()? {
        if k.inputs().is_empty() {
            continue;
        }
        let others = k.inputs().len() - 1;
        let mut forms = vec![
            ("fast", map_config(true, 0)),
            ("broadcast", map_config(false, 0)),
            ("broadcast_runs", map_config(false, 0) | MAP_TEXEL_RUNS),
        ];
        if others > 0 {
            forms.push(("scalars", map_config(true, (1 << others) - 1)));
        }
        let bodies: &[(&str, &str, u32)] = if others == 1 {
            &[
                (MATMUL_EPI, "matmul", 0),
                (MATMUL_EPI, "matmul", 1),
                (MATMUL_EPI, "matmul", 2),
                (MATMUL_EPI, "matmul", 3),
                (MATMUL_EPI, "matmul", 4),
                (MATMUL_EPI, "matmul", 5),
                (REDUCE_EPI, "reduce", reduce_config(ReduceProgram::Sum)),
                (REDUCE_EPI, "reduce", reduce_config(ReduceProgram::Max)),
                (REDUCE_EPI, "reduce", reduce_config(ReduceProgram::LogSumExp)),
                (MATMUL_UNBLOCK_EPI, "matmul_unblock", 0),
                (MATMUL_UNBLOCK_EPI, "matmul_unblock", 1),
            ]
        } else {
            &[(MATMUL_EPI, "matmul", 3)]
        };
        for &(name, body, body_config) in bodies {
            for given in 0..k.inputs().len().min(if others == 1 { 2 } else { 1 }) {
                for (form, read) in &forms {
                    let config = epilogue_config(body_config, given, *read);
                    out.push((format!("{name}{body_config}.{label}.{given}.{form}"), epilogue_source(body, &k, config)?));
                }
            }
        }
    }
    Ok(out)
}

/// Body name of a grouped elementwise draw: several kernels over the same inputs, each
/// written to its own render target (`group.rs`). Its `kernel` is the number of the group in
/// the backend's registry and its `config` the [`map_config`] of the shared inputs (always the
/// fast path: no input needs index arithmetic).
pub const MAP_GROUP: &str = "map_group";

/// Most scalar parameters of a grouped draw (all its members' together).
pub const GROUP_MAX_PARAMS: usize = 32;
/// Uniform names of a grouped draw's parameters: [`MAP_PARAMS`], then more.
pub const GROUP_PARAMS: [&str; GROUP_MAX_PARAMS] = [
    "u_p0", "u_p1", "u_p2", "u_p3", "u_p4", "u_p5", "u_p6", "u_p7", "u_p8", "u_p9", "u_p10", "u_p11", "u_p12", "u_p13", "u_p14", "u_p15",
    "u_p16", "u_p17", "u_p18", "u_p19", "u_p20", "u_p21", "u_p22", "u_p23", "u_p24", "u_p25", "u_p26", "u_p27", "u_p28", "u_p29", "u_p30",
    "u_p31",
];
/// Most render targets of a grouped draw (fewer where the context has fewer draw buffers).
pub const GROUP_MAX_TARGETS: usize = 8;
/// Uniform names of a grouped draw's output lengths: its outputs share a texture size, not
/// necessarily a length (`u_out_n` is the longest; each output is 0 past its own length, as
/// a single draw leaves it).
pub const GROUP_LENS: [&str; GROUP_MAX_TARGETS] = ["u_n0", "u_n1", "u_n2", "u_n3", "u_n4", "u_n5", "u_n6", "u_n7"];

/// One output of a grouped draw: its kernel and, for each kernel input, which of the draw's
/// inputs it is.
pub struct GroupMember<'a> {
    pub kernel: &'a Kernel,
    pub inputs: &'a [usize],
}

/// [`Glsl300`] with parameter `i` spelled as the group's parameter `base + i`: each member of
/// a grouped draw renders exactly as it would alone, reading its own slice of the uniforms.
struct Shifted(usize);

impl Dialect for Shifted {
    fn name(&self) -> &'static str {
        Glsl300.name()
    }
    fn ty(&self, t: DType) -> Option<&'static str> {
        Glsl300.ty(t)
    }
    fn float(&self, v: f32) -> String {
        Glsl300.float(v)
    }
    fn special_float(&self, bits: u32) -> String {
        Glsl300.special_float(bits)
    }
    fn boolean(&self, b: bool) -> String {
        Glsl300.boolean(b)
    }
    fn input(&self, i: usize) -> String {
        Glsl300.input(i)
    }
    fn param(&self, i: usize) -> String {
        GROUP_PARAMS.get(self.0 + i).map_or_else(|| format!("u_p{}", self.0 + i), |n| n.to_string())
    }
    fn prim1(&self, op: Prim1, a: &str) -> String {
        Glsl300.prim1(op, a)
    }
    fn prim2(&self, op: Prim2, a: &str, b: &str) -> String {
        Glsl300.prim2(op, a, b)
    }
    fn select(&self, c: &str, a: &str, b: &str) -> String {
        Glsl300.select(c, a, b)
    }
    fn cast(&self, to: DType, from: DType, a: &str) -> Option<String> {
        Glsl300.cast(to, from, a)
    }
    fn declare(&self, ty: &str, name: &str, value: &str) -> String {
        Glsl300.declare(ty, name, value)
    }
    fn ret(&self, value: &str) -> String {
        Glsl300.ret(value)
    }
    fn function(&self, name: &str, args: &[(&str, String)], ret: &str, body: &str) -> String {
        Glsl300.function(name, args, ret, body)
    }
}

/// The fragment source of a [`MAP_GROUP`] draw: `inputs` samplers, the members' parameters
/// one after the other, and member `k` (rendered as `pg_apply{k}`, the same code as its single
/// program's `pg_apply`) written to render target `k` up to its length `u_n{k}`, element by
/// element as `main_elementwise.glsl` writes one output. Each input is fetched once per
/// element (an input has its member's length, so its texture has the targets' size, or is one
/// element).
pub fn map_group_source(members: &[GroupMember<'_>], inputs: usize, config: u32) -> pixelgrad_core::Result<String> {
    let params: usize = members.iter().map(|m| m.kernel.params()).sum();
    let bad = |what: String| pixelgrad_core::Error::invalid("GLSL grouped kernel", what);
    if inputs > MAP_MAX_INPUTS || params > GROUP_MAX_PARAMS || members.is_empty() || members.len() > GROUP_MAX_TARGETS {
        return Err(bad(format!(
            "{} outputs, {inputs} inputs and {params} parameters; at most {GROUP_MAX_TARGETS}, {MAP_MAX_INPUTS} and {GROUP_MAX_PARAMS}",
            members.len()
        )));
    }
    let mut s = preamble(config, OutKind::Float);
    s.push_str("// Grouped elementwise draw rendered from the kernel IR (pixelgrad_core::kernel).\n");
    for k in 1..members.len() {
        s.push_str(&format!("layout(location = {k}) out vec4 o_color{k};\n"));
    }
    for name in &MAP_INPUTS[..inputs] {
        s.push_str(&format!("uniform highp sampler2D {name};\n"));
    }
    for name in &GROUP_PARAMS[..params] {
        s.push_str(&format!("uniform float {name};\n"));
    }
    for name in &GROUP_LENS[..members.len()] {
        s.push_str(&format!("uniform int {name};\n"));
    }
    let mut base = 0;
    for (k, m) in members.iter().enumerate() {
        if m.inputs.len() != m.kernel.inputs().len() || m.inputs.iter().any(|&i| i >= inputs) {
            return Err(bad(format!("member {k} reads inputs {:?} of {inputs}", m.inputs)));
        }
        s.push_str(&render_function(m.kernel, &Shifted(base), &format!("pg_apply{k}"))?);
        base += m.kernel.params();
    }
    s.push_str("\nvoid main() {\n    int base = out_base();\n");
    for k in 0..members.len() {
        s.push_str(&format!("    vec4 r{k} = vec4(0.0);\n"));
    }
    for (j, c) in ["x", "y", "z", "w"].iter().enumerate() {
        s.push_str(&format!("    if (base + {j} < u_out_n) {{\n        int i = base + {j};\n"));
        for (i, name) in MAP_INPUTS[..inputs].iter().enumerate() {
            s.push_str(&format!("        float v{i} = fetch({name}, (CONFIG & {}) != 0 ? 0 : i);\n", 2 << i));
        }
        for (k, m) in members.iter().enumerate() {
            let args: Vec<String> = m.inputs.iter().map(|i| format!("v{i}")).collect();
            s.push_str(&format!("        if (i < {}) r{k}.{c} = pg_apply{k}({});\n", GROUP_LENS[k], args.join(", ")));
        }
        s.push_str("    }\n");
    }
    s.push_str("    o_color = PG_H4(r0);\n");
    for k in 1..members.len() {
        s.push_str(&format!("    o_color{k} = PG_H4(r{k});\n"));
    }
    s.push_str("}\n");
    Ok(s)
}

/// Grouped draws of every elementwise definition (up to [`GROUP_MAX_TARGETS`] per draw, all
/// reading the same inputs), with no one-element input and with every input one element,
/// labelled: for offline validation.
pub fn all_group_sources() -> pixelgrad_core::Result<Vec<(String, String)>> {
    let defs = pixelgrad_core::kernel::defs::all()?;
    let mut groups: Vec<Vec<&Kernel>> = vec![Vec::new()];
    for (_, k) in &defs {
        let last = groups.last().map_or(0, |g| g.iter().map(|k| k.params()).sum::<usize>());
        if groups.last().is_some_and(|g| g.len() == GROUP_MAX_TARGETS || last + k.params() > GROUP_MAX_PARAMS) {
            groups.push(Vec::new());
        }
        if let Some(g) = groups.last_mut() {
            g.push(k);
        }
    }
    let mut out = Vec::new();
    let order: Vec<Vec<usize>> = defs.iter().map(|(_, k)| (0..k.inputs().len()).collect()).collect();
    let mut at = 0;
    for (n, g) in groups.iter().enumerate() {
        let members: Vec<GroupMember<'_>> = g.iter().zip(&order[at..]).map(|(kernel, inputs)| GroupMember { kernel, inputs }).collect();
        at += g.len();
        let inputs = g.iter().map(|k| k.inputs().len()).max().unwrap_or(0);
        let every = (1u32 << inputs) - 1;
        for (form, config) in [("fast", map_config(true, 0)), ("scalars", map_config(true, every))] {
            out.push((format!("group{n}.{form}"), map_group_source(&members, inputs, config)?));
        }
    }
    Ok(out)
}

/// GLSL ES 3.00, as the WebGL2 programs are written (highp everywhere). Values are `a0..`
/// (inputs) and `u_p0..` (parameters).
pub struct Glsl300;

impl Dialect for Glsl300 {
    fn name(&self) -> &'static str {
        "GLSL ES 3.00"
    }
    /// Constants too are rounded under the precision emulation (a 1e-8 epsilon is 0 in half).
    fn float(&self, v: f32) -> String {
        format!("PG_H({v:?})")
    }
    fn ty(&self, t: DType) -> Option<&'static str> {
        match t {
            DType::F32 => Some("float"),
            DType::I32 => Some("int"),
            DType::Bool => Some("bool"),
            // Half floats are stored in RGBA16F but computed in highp float; 8-bit values
            // come from integer textures. Not rendered yet.
            DType::F16 | DType::I8 | DType::U8 => None,
        }
    }
    fn special_float(&self, bits: u32) -> String {
        format!("uintBitsToFloat({bits:#010x}u)")
    }
    fn input(&self, i: usize) -> String {
        format!("a{i}")
    }
    fn param(&self, i: usize) -> String {
        MAP_PARAMS.get(i).map_or_else(|| format!("u_p{i}"), |n| n.to_string())
    }
    fn prim1(&self, op: Prim1, a: &str) -> String {
        match op {
            Prim1::Neg => format!("(-{a})"),
            Prim1::Abs => format!("abs({a})"),
            Prim1::Not => format!("(!{a})"),
            // Bit tests on the float's bits: no compiler may fold these.
            Prim1::IsNan => format!("((floatBitsToUint({a}) & 0x7fffffffu) > 0x7f800000u)"),
            Prim1::IsInf => format!("((floatBitsToUint({a}) & 0x7fffffffu) == 0x7f800000u)"),
            Prim1::SignBit => format!("((floatBitsToUint({a}) >> 31u) != 0u)"),
            Prim1::Exp => format!("exp({a})"),
            Prim1::Log => format!("log({a})"),
            Prim1::Exp2 => format!("exp2({a})"),
            Prim1::Log2 => format!("log2({a})"),
            Prim1::Sqrt => format!("sqrt({a})"),
            Prim1::Floor => format!("floor({a})"),
        }
    }
    fn prim2(&self, op: Prim2, a: &str, b: &str) -> String {
        match op {
            Prim2::Add => format!("({a} + {b})"),
            Prim2::Sub => format!("({a} - {b})"),
            Prim2::Mul => format!("({a} * {b})"),
            Prim2::Div => format!("({a} / {b})"),
            Prim2::Max => format!("max({a}, {b})"),
            Prim2::Min => format!("min({a}, {b})"),
            Prim2::Lt => format!("({a} < {b})"),
            Prim2::Le => format!("({a} <= {b})"),
            Prim2::Eq => format!("({a} == {b})"),
            Prim2::And => format!("({a} && {b})"),
            Prim2::Or => format!("({a} || {b})"),
        }
    }
    fn select(&self, c: &str, a: &str, b: &str) -> String {
        format!("({c} ? {a} : {b})")
    }
    fn cast(&self, to: DType, from: DType, a: &str) -> Option<String> {
        match (from, to) {
            (f, t) if f == t => Some(a.to_string()),
            (DType::Bool | DType::I32, DType::F32) => Some(format!("float({a})")),
            (DType::F32, DType::I32) => Some(format!("int({a})")),
            _ => None,
        }
    }
    fn declare(&self, ty: &str, name: &str, value: &str) -> String {
        // Every float value through PG_H: the precision emulation's rounding when it is on,
        // the value itself otherwise (`shaders/header.glsl`).
        if ty == "float" {
            format!("    {ty} {name} = PG_H({value});")
        } else {
            format!("    {ty} {name} = {value};")
        }
    }
    fn function(&self, name: &str, args: &[(&str, String)], ret: &str, body: &str) -> String {
        let args: Vec<String> = args.iter().map(|(t, n)| format!("{t} {n}")).collect();
        format!("{ret} {name}({}) {{\n{body}}}\n", args.join(", "))
    }
}

/// Source with line numbers, for compile errors.
pub fn numbered(src: &str) -> String {
    src.lines().enumerate().map(|(i, l)| format!("{:4}: {l}\n", i + 1)).collect()
}

/// Number of configs of each body (opcodes or fast paths).
fn configs(name: &str) -> u32 {
    match name {
        "random" => 2,
        "matmul" => 6,
        "widen" | "narrow8" => 3,
        "matmul_i8" => 4,
        "matmul_nbits" => 8,
        "matmul_block_pack" | "matmul_unblock" => 2,
        "matmul_block" => 3,
        _ => 1,
    }
}

/// Every program with a `shaders/*.glsl` body the backend can ask for (for warm-up and for
/// validating shader sources; elementwise programs are enumerated from the kernel table).
pub fn all_specs() -> Vec<ProgramSpec> {
    let windows = KernelProgram::ALL
        .into_iter()
        .flat_map(|w| (0..crate::glsl::configs(w, GlslVersion::Es300)).map(move |c| ProgramSpec::new(w.name(), c)));
    BODIES.iter().flat_map(|(name, _)| (0..configs(name)).map(move |c| ProgramSpec::new(name, c))).chain(windows).collect()
}

/// The fragment source of every elementwise definition in each form (same shapes with no
/// one-element input, same shapes with every input one element, broadcast), and as the fused
/// input of a sum and of argmax's candidate pass, labelled: for offline validation.
pub fn all_map_sources() -> pixelgrad_core::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (label, k) in pixelgrad_core::kernel::defs::all()? {
        let every = (1u32 << k.inputs().len()) - 1;
        for (form, config) in [
            ("fast", map_config(true, 0)),
            ("scalars", map_config(true, every)),
            ("broadcast", map_config(false, 0)),
            ("broadcast_full", map_config(false, every >> 1)),
            ("broadcast_runs", map_config(false, every >> 1) | MAP_TEXEL_RUNS),
        ] {
            out.push((format!("{label}.{form}"), map_source(&k, config)?));
            for reduce in [ReduceProgram::Sum, ReduceProgram::FirstEqual].map(reduce_config) {
                out.push((format!("reduce{reduce}.{label}.{form}"), reduce_fused_source(&k, reduce | (config << 4))?));
            }
        }
    }
    Ok(out)
}
