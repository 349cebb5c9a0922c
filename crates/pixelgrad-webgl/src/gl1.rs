//! The GLSL ES 1.00 dialect (the `webgl1` mode of this backend): the same programs as
//! [`crate::dialect`], from the same `shaders/*.glsl` files, assembled under WebGL1's rules
//! (the [`GlslVersion::Es100`] column of [`crate::glsl::Table`]), and the kernel IR's
//! primitives spelled without bit access ([`Glsl100`]), so every elementwise function is still
//! rendered from its one definition in `pixelgrad_core::kernel::defs`.
//!
//! The rules, and where each is kept:
//! - no `texelFetch` / `textureSize`: `fetch` (the `PG_ES100` section of shaders/header.glsl)
//!   reads with `texture2D` at the texel centre `(i + 0.5) / size`, textures are NEAREST and
//!   CLAMP_TO_EDGE (`texture.rs`), and every sampler `u_NAME` has a `vec2 u_NAME_size` uniform
//!   (declared with it by `SAMPLER`) set by the launcher ([`size_uniform`]);
//! - no integer `%`, `>>` or `&`, ints only 16-bit: indices are floats holding whole numbers,
//!   exact because tensors stay below [`MAX_ELEMENTS`] = 2^22 elements (every index, stride
//!   product and intermediate is a whole number below 2^24, where f32 is exact; `pg_divmod`
//!   corrects the one rounding, division's) and every int uniform is sent as a float;
//! - loops have constant bounds and an early `break`: [`MAX_LOOP`] for the matmul k loop (the
//!   program rendered from `pixelgrad_core::kernel::products`) and
//!   scatter-add's source loop and the covering windows of max_pool_grad and col2im (col2im's
//!   launcher refuses more than [`MAX_WINDOW`] per axis, as before it was rendered),
//!   [`MAX_WINDOW`] for the taps inside the image of depthwise_conv and max pooling; the
//!   reductions' loops run under [`MAX_LOOP`] too (a constant bound of a group's 16 elements
//!   measured slower on llvmpipe: bench/notes/2026-12-07-reductions-texel-loop.md);
//!   longer loops are refused with [`pixelgrad_core::Error::Limit`];
//! - no `layout(location)` outputs: `gl_FragColor`, one render target (the 4-target matmul is
//!   never used, so `WEBGL_draw_buffers` is not needed);
//! - no `gl_VertexID`, no VAOs: a 3-vertex buffer at attribute 0 (`launch.rs`);
//! - no unsigned ints: random numbers are drawn on the host (the same Philox words as every
//!   backend) and uploaded.
//!
//! Programs whose algorithm must differ keep the ES 1.00 form in the `#else` of a
//! `#ifdef PG_ES300` in their one file: the 8-bit widen (byte textures) and the header's
//! texture reads. (The matmul is the program rendered from its one definition here.)

use pixelgrad_core::kernel::ir::{DType, Kernel};
use pixelgrad_core::kernel::lower::{Prim1, Prim2};
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::reductions::ReduceProgram;
use pixelgrad_core::kernel::render::{render_function, Dialect};

use crate::dialect::{ProgramSpec, MAP_INPUTS, MAP_MAX_INPUTS, MAP_MAX_PARAMS, MAP_PARAMS, MAP_STRIDES};
use crate::glsl::{GlslVersion, HEADER, MAIN_ELEMENTWISE};

/// Most elements of one tensor: keeps every index arithmetic value a whole number below 2^24
/// (see the module docs and `pg_divmod` in shaders/header.glsl).
pub const MAX_ELEMENTS: usize = 1 << 22;
/// Constant bound of the matmul k loop, of scatter-add's loop over source positions and of
/// max_pool_grad's loops over the windows covering a pixel.
pub const MAX_LOOP: usize = 65536;
/// Constant bound of the window loops: the taps inside the image per axis (depthwise_conv,
/// max pooling), whatever the window's size; also the most windows covering a pixel per axis
/// col2im's launcher accepts.
pub const MAX_WINDOW: usize = 64;

/// The programs of this mode with a `shaders/*.glsl` body (the file shared with GLSL ES 3.00,
/// [`crate::dialect::BODIES`]; the programs with loops, the reductions among them, are
/// rendered, [`crate::glsl`]) and every config each has here (a
/// draw with another config is refused; warm-up compiles each). Programs
/// not listed (the hand-written matmul kernels and their repacking passes, the heatmap, pixel import, random
/// numbers, the narrowing passes) do not exist in this mode; asking for one is an error naming
/// WebGL1. All are elementwise here (`compute`, driven by main_elementwise.glsl).
pub const PROGRAMS: &[(&str, &[u32])] = &[("fill", &[0]), ("view", &[0]), ("concat", &[0]), ("check_index", &[0]), ("widen", &[0, 1])];

/// The body of program `name` in this mode: the file shared with GLSL ES 3.00
/// ([`crate::dialect::BODIES`]).
fn body(name: &str) -> Option<&'static str> {
    crate::dialect::BODIES.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// The name of the size uniform of sampler `name` (`u_x` -> `u_x_size`), for every sampler the
/// programs declare.
pub fn size_uniform(name: &str) -> Option<&'static str> {
    Some(match name {
        "u_x" => "u_x_size",
        "u_a" => "u_a_size",
        "u_b" => "u_b_size",
        "u_idx" => "u_idx_size",
        "u_k" => "u_k_size",
        "u_src" => "u_src_size",
        "u_best" => "u_best_size",
        "u_x0" => "u_x0_size",
        "u_x1" => "u_x1_size",
        "u_x2" => "u_x2_size",
        "u_x3" => "u_x3_size",
        "u_x4" => "u_x4_size",
        "u_x5" => "u_x5_size",
        "u_x6" => "u_x6_size",
        "u_x7" => "u_x7_size",
        _ => return None,
    })
}

/// The vertex shader shared by every program: attribute 0 holds the triangle's corners.
pub fn vertex_source() -> String {
    crate::glsl::vertex_source(GlslVersion::Es100)
}

/// Name of the vertex attribute (bound to location 0 before linking).
pub const POSITION: &str = "a_pos";

fn preamble(config: u32) -> String {
    let mut s = crate::glsl::fragment_prologue(GlslVersion::Es100, config);
    s.push_str(&format!("#define MAX_LOOP {MAX_LOOP}.0\n#define MAX_WINDOW {MAX_WINDOW}.0\n"));
    s.push_str(HEADER);
    s
}

/// The full fragment source of a program with a `shaders/*.glsl` body, or `None` when this
/// mode has no such program (or not in this config).
pub fn fragment_source(spec: &ProgramSpec) -> Option<String> {
    if let Some(w) = KernelProgram::by_name(spec.name) {
        let body = crate::glsl::program_body(w, GlslVersion::Es100, spec.config)?;
        return Some(format!("{}{body}{MAIN_ELEMENTWISE}", preamble(spec.config)));
    }
    let (_, configs) = PROGRAMS.iter().find(|(n, _)| *n == spec.name)?;
    if !configs.contains(&spec.config) {
        return None;
    }
    let mut s = preamble(spec.config);
    s.push_str(body(spec.name)?);
    s.push_str(MAIN_ELEMENTWISE);
    Some(s)
}

/// The fused read of `kernel` in GLSL ES 1.00 (as [`crate::dialect`]'s): samplers with their
/// sizes, `u_shape`, strides and parameters as float uniforms, `pg_apply(a0, ..)` and
/// `float pg_load(float i)`. `config` is the read's `map_config` (fast path and one-element
/// inputs), decided here rather than by the preprocessor.
fn fused_read(kernel: &Kernel, config: u32) -> pixelgrad_core::Result<String> {
    let n = kernel.inputs().len();
    if n > MAP_MAX_INPUTS || kernel.params() > MAP_MAX_PARAMS {
        return Err(pixelgrad_core::Error::invalid(
            "GLSL ES 1.00 kernel",
            format!("{n} inputs and {} parameters; at most {MAP_MAX_INPUTS} and {MAP_MAX_PARAMS}", kernel.params()),
        ));
    }
    let mut s = String::from("// Fused read rendered from the kernel IR (pixelgrad_core::kernel).\n");
    for name in &MAP_INPUTS[..n] {
        s.push_str(&format!("uniform highp sampler2D {name};\nuniform vec2 {name}_size;\n"));
    }
    s.push_str("uniform float u_shape[MAX_RANK];\n");
    for name in &MAP_STRIDES[..n] {
        s.push_str(&format!("uniform float {name}[MAX_RANK];\n"));
    }
    for name in &MAP_PARAMS[..kernel.params()] {
        s.push_str(&format!("uniform float {name};\n"));
    }
    s.push_str(&render_function(kernel, &Glsl100, "pg_apply")?);
    s.push_str("\nfloat pg_load(float i) {\n");
    if config & 1 != 0 {
        let fast: Vec<String> = (0..n)
            .map(|i| {
                let at = if config & (2 << i) != 0 { "0.0" } else { "i" };
                format!("fetch({0}, {0}_size, {at})", MAP_INPUTS[i])
            })
            .collect();
        s.push_str(&format!("    return pg_apply({});\n}}\n", fast.join(", ")));
        // No `pg_load4`: a fused reduction scans elements only, each through this (a texel
        // loop applying the kernel per lane, four copies of it per output lane, took
        // SwiftShader from seconds to minutes to compile for some top-k prologues:
        // bench/notes/2026-12-07-reductions-texel-loop.md).
        return Ok(s);
    }
    s.push_str("    float rest = i;\n");
    for i in 0..n {
        s.push_str(&format!("    float i{i} = 0.0;\n"));
    }
    s.push_str("    for (int d = MAX_RANK - 1; d >= 0; --d) {\n        if (rest == 0.0) break;\n");
    s.push_str("        vec2 qr = pg_divmod(rest, u_shape[d]);\n        rest = qr.x;\n");
    for (i, name) in MAP_STRIDES[..n].iter().enumerate() {
        s.push_str(&format!("        i{i} += qr.y * {name}[d];\n"));
    }
    s.push_str("    }\n");
    let slow: Vec<String> = (0..n).map(|i| format!("fetch({0}, {0}_size, i{i})", MAP_INPUTS[i])).collect();
    s.push_str(&format!("    return pg_apply({});\n}}\n", slow.join(", ")));
    Ok(s)
}

/// The fragment source of an elementwise program (see [`crate::dialect::map_source`]).
pub fn map_source(kernel: &Kernel, config: u32) -> pixelgrad_core::Result<String> {
    let mut s = preamble(config);
    s.push_str(&fused_read(kernel, config)?);
    s.push_str("\nfloat compute(float i) {\n    return pg_load(i);\n}\n");
    s.push_str(MAIN_ELEMENTWISE);
    Ok(s)
}

/// The fragment source of a fused reduction pass (see [`crate::dialect::reduce_fused_source`]).
pub fn reduce_fused_source(kernel: &Kernel, config: u32) -> pixelgrad_core::Result<String> {
    let which = crate::dialect::reduce_of_config(config & 15)?;
    let mut s = preamble(config & 15);
    s.push_str(&fused_read(kernel, config >> 4)?);
    s.push_str(&crate::glsl::fused_program_body(which, GlslVersion::Es100));
    s.push_str(MAIN_ELEMENTWISE);
    Ok(s)
}

/// GLSL ES 1.00. As [`crate::dialect::Glsl300`], except for what needs bit access: NaN and
/// infinity constants are computed at run time from a uniform zero the compiler cannot see,
/// and the bit tests are arithmetic (`is_inf`: beyond the largest finite f32; `is_nan`: `x * 0`
/// is not 0 and `x` is not infinite; `sign_bit`: below 0 or a zero whose reciprocal is negative,
/// so the sign of a NaN is not seen).
pub struct Glsl100;

impl Dialect for Glsl100 {
    fn name(&self) -> &'static str {
        "GLSL ES 1.00"
    }
    fn ty(&self, t: DType) -> Option<&'static str> {
        match t {
            DType::F32 => Some("float"),
            DType::I32 => Some("int"),
            DType::Bool => Some("bool"),
            DType::F16 | DType::I8 | DType::U8 => None,
        }
    }
    fn float(&self, v: f32) -> String {
        crate::dialect::Glsl300.float(v)
    }
    fn special_float(&self, bits: u32) -> String {
        let v = f32::from_bits(bits);
        if v.is_nan() {
            "(u_zero / u_zero)".to_string()
        } else if v > 0.0 {
            "(1.0 / u_zero)".to_string()
        } else {
            "(-1.0 / u_zero)".to_string()
        }
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
            Prim1::IsNan => format!("pg_isnan({a})"),
            Prim1::IsInf => format!("pg_isinf({a})"),
            Prim1::SignBit => format!("pg_signbit({a})"),
            Prim1::Exp => format!("exp({a})"),
            Prim1::Log => format!("log({a})"),
            Prim1::Exp2 => format!("exp2({a})"),
            Prim1::Log2 => format!("log2({a})"),
            Prim1::Sqrt => format!("sqrt({a})"),
            Prim1::Floor => format!("floor({a})"),
        }
    }
    fn prim2(&self, op: Prim2, a: &str, b: &str) -> String {
        crate::dialect::Glsl300.prim2(op, a, b)
    }
    fn select(&self, c: &str, a: &str, b: &str) -> String {
        format!("({c} ? {a} : {b})")
    }
    fn cast(&self, to: DType, from: DType, a: &str) -> Option<String> {
        crate::dialect::Glsl300.cast(to, from, a)
    }
    fn declare(&self, ty: &str, name: &str, value: &str) -> String {
        crate::dialect::Glsl300.declare(ty, name, value)
    }
    fn function(&self, name: &str, args: &[(&str, String)], ret: &str, body: &str) -> String {
        crate::dialect::Glsl300.function(name, args, ret, body)
    }
}

/// Every program of this mode in every config (for warm-up).
pub fn all_specs() -> Vec<ProgramSpec> {
    let windows = KernelProgram::ALL.into_iter().map(|w| ProgramSpec::new(w.name(), 0));
    PROGRAMS.iter().flat_map(|(name, configs)| configs.iter().map(move |&c| ProgramSpec::new(name, c))).chain(windows).collect()
}

/// Every GLSL ES 1.00 program source, labelled (for offline validation): each body in each
/// config, every elementwise definition in each form, and as a fused reduction input.
pub fn all_sources() -> pixelgrad_core::Result<Vec<(String, String)>> {
    let mut out = vec![("fullscreen.vert".to_string(), vertex_source())];
    for spec in all_specs() {
        if let Some(s) = fragment_source(&spec) {
            out.push((format!("{}.{}", spec.name, spec.config), s));
        }
    }
    for (label, k) in pixelgrad_core::kernel::defs::all()? {
        let every = (1u32 << k.inputs().len()) - 1;
        for (form, config) in [("fast", 1), ("scalars", 1 | (every << 1)), ("broadcast", 0)] {
            out.push((format!("{label}.{form}"), map_source(&k, config)?));
            for reduce in [ReduceProgram::Sum, ReduceProgram::FirstEqual].map(crate::dialect::reduce_config) {
                out.push((format!("reduce{reduce}.{label}.{form}"), reduce_fused_source(&k, reduce | (config << 4))?));
            }
        }
    }
    Ok(out)
}
