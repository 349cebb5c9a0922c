//! The one place that knows the GLSL dialect: the `#version` line, precision qualifiers, the
//! shared helper functions and how a program's source is assembled from `shaders/*.glsl`.
//! Everything else names a program by a [`ProgramSpec`] and never writes GLSL text.

/// Highest tensor rank the index helpers handle (shape uniforms are arrays of this length).
pub const MAX_RANK: usize = 6;

const VERSION: &str = "#version 300 es\n";
/// highp everywhere: index arithmetic needs 32-bit ints and training needs f32. Whether the
/// fragment stage really has highp is measured at init (see `caps`).
const PRECISION: &str = "precision highp float;\nprecision highp int;\nprecision highp sampler2D;\n";

const HEADER: &str = include_str!("shaders/header.glsl");
const MAIN_ELEMENTWISE: &str = include_str!("shaders/main_elementwise.glsl");
const VERTEX: &str = include_str!("shaders/fullscreen.vert");

/// Every fragment program body, by name (the names are also cache keys and pass-log labels).
pub const BODIES: &[(&str, &str)] = &[
    ("fill", include_str!("shaders/fill.glsl")),
    ("random", include_str!("shaders/random.glsl")),
    ("unary", include_str!("shaders/unary.glsl")),
    ("binary", include_str!("shaders/binary.glsl")),
    ("where", include_str!("shaders/where.glsl")),
    ("reduce", include_str!("shaders/reduce.glsl")),
    ("matmul", include_str!("shaders/matmul.glsl")),
    ("matmul_pack", include_str!("shaders/matmul_pack.glsl")),
    ("matmul_block_pack", include_str!("shaders/matmul_block_pack.glsl")),
    ("matmul_block", include_str!("shaders/matmul_block.glsl")),
    ("matmul_unblock", include_str!("shaders/matmul_unblock.glsl")),
    ("im2col", include_str!("shaders/im2col.glsl")),
    ("col2im", include_str!("shaders/col2im.glsl")),
    ("gather", include_str!("shaders/gather.glsl")),
    ("scatter_add", include_str!("shaders/scatter_add.glsl")),
    ("view", include_str!("shaders/view.glsl")),
    ("concat", include_str!("shaders/concat.glsl")),
    ("heatmap", include_str!("shaders/heatmap.glsl")),
    ("check_index", include_str!("shaders/check_index.glsl")),
];

/// How a body is driven: one `float compute(int i)` per element, or its own `main`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Elementwise,
    OwnMain,
}

/// Which program to run: a body name plus a small configuration (an opcode or a fast-path
/// flag), turned into `#define CONFIG n`. `(name, config)` is the cache key; shapes are never
/// part of it, they are uniforms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProgramSpec {
    pub name: &'static str,
    pub config: u32,
}

impl ProgramSpec {
    pub fn new(name: &'static str, config: u32) -> Self {
        ProgramSpec { name, config }
    }

    /// Bodies that write whole texels themselves (matmul's 4 accumulators, its operand repacking,
    /// the heatmap's pixels).
    pub fn entry(&self) -> Entry {
        match self.name {
            "matmul" | "matmul_pack" | "matmul_block_pack" | "matmul_block" | "matmul_unblock" | "heatmap" => {
                Entry::OwnMain
            }
            _ => Entry::Elementwise,
        }
    }
}

impl ProgramSpec {
    /// A readable label for logs: the body name plus what its config means.
    pub fn label(&self) -> String {
        const UNARY: [&str; 15] = [
            "neg", "exp", "log", "sqrt", "recip", "tanh", "sigmoid", "abs", "sin", "cos", "affine", "powf", "max_scalar",
            "min_scalar", "gt_scalar",
        ];
        const BINARY: [&str; 10] = ["add", "sub", "mul", "div", "max", "min", "pow", "gt", "ge", "eq"];
        const REDUCE: [&str; 4] = ["sum", "max", "min", "first_equal"];
        const RANDOM: [&str; 2] = ["uniform", "normal"];
        const MATMUL: [&str; 3] = ["nn", "nt", "nt_any"];
        let table: &[&str] = match self.name {
            "unary" => &UNARY,
            "binary" => &BINARY,
            "reduce" => &REDUCE,
            "random" => &RANDOM,
            "matmul" => &MATMUL,
            _ => &[],
        };
        match table.get(self.config as usize) {
            Some(c) => format!("{}.{c}", self.name),
            None => self.name.to_string(),
        }
    }
}

/// The vertex shader shared by every program (a full-screen triangle from `gl_VertexID`).
pub fn vertex_source() -> String {
    format!("{VERSION}{PRECISION}{VERTEX}")
}

/// The full fragment source of `spec`, or `None` for an unknown body name.
pub fn fragment_source(spec: &ProgramSpec) -> Option<String> {
    let body = BODIES.iter().find(|(n, _)| *n == spec.name)?.1;
    let mut s = String::with_capacity(HEADER.len() + body.len() + 512);
    s.push_str(VERSION);
    s.push_str(PRECISION);
    s.push_str(&format!("#define MAX_RANK {MAX_RANK}\n#define CONFIG {}\n", spec.config));
    s.push_str(HEADER);
    s.push_str(body);
    if spec.entry() == Entry::Elementwise {
        s.push_str(MAIN_ELEMENTWISE);
    }
    Some(s)
}

/// Source with line numbers, for compile errors.
pub fn numbered(src: &str) -> String {
    src.lines().enumerate().map(|(i, l)| format!("{:4}: {l}\n", i + 1)).collect()
}

/// Number of configs of each body (opcodes or fast paths).
fn configs(name: &str) -> u32 {
    match name {
        "random" => 2,
        "unary" => 15,
        "binary" => 10,
        "reduce" => 4,
        "matmul" => 3,
        "matmul_block_pack" | "matmul_unblock" => 2,
        _ => 1,
    }
}

/// Every program the backend can ask for (for warm-up and for validating all shader sources).
pub fn all_specs() -> Vec<ProgramSpec> {
    BODIES
        .iter()
        .flat_map(|(name, _)| (0..configs(name)).map(move |c| ProgramSpec::new(name, c)))
        .collect()
}
